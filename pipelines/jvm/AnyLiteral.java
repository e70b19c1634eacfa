package rebalance.spark;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * True when a text (its UTF-8 bytes) contains any of a fixed set of literals; null for a null text.
 *
 * <p>The same answer as OR-ing one Spark {@code contains} per literal, found in one pass over the bytes by a
 * {@link LiteralAutomaton} that stops at the first literal found.
 *
 * <p>Only the literals are serialized with a task; each executor builds the automaton once, on first use.
 */
public final class AnyLiteral implements UDF1<byte[], Boolean> {
    private static final long serialVersionUID = 1L;

    private final String[] literals;
    private transient volatile LiteralAutomaton automaton;

    public AnyLiteral(String[] literals) {
        this.literals = literals;
    }

    /**
     * The matcher applied to {@code text} (a string column, searched as its UTF-8 bytes), named any_literal. The
     * literals come joined by U+0000 (one call from Python instead of one per literal).
     */
    public static Column column(String literals, Column text) {
        UserDefinedFunction udf = functions.udf(new AnyLiteral(literals.split("\u0000", -1)),
                DataTypes.BooleanType);
        return udf.withName("any_literal").apply(text.cast(DataTypes.BinaryType));
    }

    @Override
    public Boolean call(byte[] text) {
        if (text == null) {
            return null;
        }
        LiteralAutomaton found = automaton;
        if (found == null) {
            found = LiteralAutomaton.overUtf8(literals);
            automaton = found;
        }
        return found.holdsAny(text);
    }
}
