package rebalance.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * True when a text (its UTF-8 bytes) contains any of a fixed set of literals; null for a null text.
 *
 * <p>The same answer as OR-ing one Spark {@code contains} per literal, found in one pass over the bytes: the literals
 * become one deterministic automaton (Aho-Corasick with every transition precomputed), and the walk stops at the
 * first literal found. Bytes no literal holds share one column of the transition table, so the table stays small.
 *
 * <p>Only the literals are serialized with a task; each executor builds the automaton once, on first use.
 */
public final class AnyLiteral implements UDF1<byte[], Boolean> {
    private static final long serialVersionUID = 1L;

    private final byte[][] literals;
    private transient volatile Automaton automaton;

    public AnyLiteral(String[] literals) {
        this.literals = new byte[literals.length][];
        for (int i = 0; i < literals.length; i++) {
            this.literals[i] = literals[i].getBytes(StandardCharsets.UTF_8);
        }
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
        Automaton found = automaton;
        if (found == null) {
            found = new Automaton(literals);
            automaton = found;
        }
        return found.matches(text);
    }

    /** The precomputed automaton: states times byte classes, and which states end a literal. */
    static final class Automaton {
        private final int[] byteClass = new int[256];
        private final int classes;
        private final int[] next;
        private final boolean[] accepting;
        private final boolean matchesEverything;

        Automaton(byte[][] literals) {
            boolean empty = false;
            int nextClass = 1;  // class 0: bytes that are in no literal
            for (byte[] literal : literals) {
                empty |= literal.length == 0;
                for (byte b : literal) {
                    if (byteClass[b & 0xff] == 0) {
                        byteClass[b & 0xff] = nextClass++;
                    }
                }
            }
            classes = nextClass;
            matchesEverything = empty;

            // The trie, with -1 for a missing edge.
            List<int[]> edges = new ArrayList<>();
            List<Boolean> ends = new ArrayList<>();
            edges.add(newRow());
            ends.add(false);
            for (byte[] literal : literals) {
                int state = 0;
                for (byte b : literal) {
                    int c = byteClass[b & 0xff];
                    if (edges.get(state)[c] < 0) {
                        edges.get(state)[c] = edges.size();
                        edges.add(newRow());
                        ends.add(false);
                    }
                    state = edges.get(state)[c];
                }
                ends.set(state, true);
            }

            int states = edges.size();
            next = new int[states * classes];
            accepting = new boolean[states];
            int[] fail = new int[states];
            ArrayDeque<Integer> queue = new ArrayDeque<>();
            // Breadth first: a state's fallback is shallower, so its row is complete before the state's own.
            for (int c = 0; c < classes; c++) {
                int child = edges.get(0)[c];
                next[c] = Math.max(child, 0);
                if (child > 0) {
                    fail[child] = 0;
                    queue.add(child);
                }
            }
            accepting[0] = ends.get(0);
            while (!queue.isEmpty()) {
                int state = queue.poll();
                accepting[state] = ends.get(state) || accepting[fail[state]];
                for (int c = 0; c < classes; c++) {
                    int child = edges.get(state)[c];
                    if (child >= 0) {
                        fail[child] = next[fail[state] * classes + c];
                        next[state * classes + c] = child;
                        queue.add(child);
                    } else {
                        next[state * classes + c] = next[fail[state] * classes + c];
                    }
                }
            }
        }

        private int[] newRow() {
            int[] row = new int[classes == 0 ? 1 : classes];
            Arrays.fill(row, -1);
            return row;
        }

        boolean matches(byte[] text) {
            if (matchesEverything) {
                return true;
            }
            int state = 0;
            for (byte b : text) {
                state = next[state * classes + byteClass[b & 0xff]];
                if (accepting[state]) {
                    return true;
                }
            }
            return false;
        }
    }
}
