package rebalance.spark;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * The first of an ordered list of templates that matches a text, and its fields; null when none matches.
 *
 * <p>The same answer as one regex that alternates every template in order (parse.py's SQL path), found by trying
 * only the templates whose literal the text holds: a match contains its template's literal, so the others cannot
 * match, and the order among those left decides as the alternation would. One pass of an automaton over the text
 * finds the candidates; a line holds the literals of about two templates, where the alternation tried a few
 * hundred branches before the one that matched.
 *
 * <p>Each template's regex is {@code ^(?:MARK[\s\S]*?)?(inner)TAIL}: on a text that starts with the search mark it
 * finds the template anywhere, and there the alternation takes the earliest start (then the first template), so
 * every candidate is tried and the earliest start wins; on any other text the first candidate that matches wins.
 *
 * <p>The result is an array of strings: the 1-based number of the template, then one value per field slot (the
 * template's group for that slot, empty when it has none or the group took no part).
 */
public final class TemplateMatch implements UDF1<String, String[]> {
    private static final long serialVersionUID = 1L;
    /** Separates the entries of one packed argument (no template or literal holds it). */
    private static final String SEP = "\u0000";

    private final String[] literals;
    private final String[] patterns;
    private final int[][] slotGroups;
    private final char searchMark;
    private transient volatile Compiled compiled;

    private TemplateMatch(String[] literals, String[] patterns, int[][] slotGroups, char searchMark) {
        this.literals = literals;
        this.patterns = patterns;
        this.slotGroups = slotGroups;
        this.searchMark = searchMark;
    }

    /**
     * The matcher applied to {@code text}, named template_match. Each argument packs one entry per template, in
     * match order, joined by U+0000 (one call from Python instead of one per entry): its literal, its regex, and its
     * group per field slot as comma-separated numbers (0: no such field).
     */
    public static Column column(String literals, String patterns, String slotGroups, String searchMark,
                                Column text) {
        String[] lits = literals.split(SEP, -1);
        String[] pats = patterns.split(SEP, -1);
        String[] slots = slotGroups.split(SEP, -1);
        if (pats.length != lits.length || slots.length != lits.length) {
            throw new IllegalArgumentException("template_match: " + lits.length + " literals, " + pats.length
                    + " patterns and " + slots.length + " slot lists");
        }
        int[][] groups = new int[slots.length][];
        for (int i = 0; i < slots.length; i++) {
            groups[i] = Arrays.stream(slots[i].split(",")).mapToInt(Integer::parseInt).toArray();
        }
        UserDefinedFunction udf = functions.udf(
                new TemplateMatch(lits, pats, groups, searchMark.charAt(0)),
                DataTypes.createArrayType(DataTypes.StringType, false));
        return udf.withName("template_match").apply(text);
    }

    /**
     * The compiled templates of this JVM, by their text: every task deserializes its own copy of the function, and
     * compiling some 700 regexes and the automaton per task cost more than matching a small batch's lines.
     */
    private static final Map<String, Compiled> SHARED = new ConcurrentHashMap<>();
    private static final int SHARED_MAX = 8;

    private Compiled compiled() {
        Compiled found = compiled;
        if (found == null) {
            String key = String.join(SEP, literals) + SEP + SEP + String.join(SEP, patterns);
            if (SHARED.size() >= SHARED_MAX) {
                SHARED.clear();  // a long-lived JVM that saw many template sets (tests): keep it bounded
            }
            found = SHARED.computeIfAbsent(key, k -> new Compiled(literals, patterns));
            compiled = found;
        }
        return found;
    }

    @Override
    public String[] call(String text) {
        if (text == null) {
            return null;
        }
        Compiled found = compiled();
        long[] candidates = found.candidates(text);
        boolean searching = !text.isEmpty() && text.charAt(0) == searchMark;
        int best = -1;
        Matcher bestMatch = null;
        for (int word = 0; word < candidates.length; word++) {
            long bits = candidates[word];
            while (bits != 0) {
                int template = word * 64 + Long.numberOfTrailingZeros(bits);
                bits &= bits - 1;
                Matcher m = found.patterns[template].matcher(text);
                if (!m.find()) {
                    continue;
                }
                if (!searching) {
                    return packed(template, m);
                }
                if (bestMatch == null || m.start(1) < bestMatch.start(1)) {
                    best = template;
                    bestMatch = m;
                }
            }
        }
        return bestMatch == null ? null : packed(best, bestMatch);
    }

    private String[] packed(int template, Matcher m) {
        int[] groups = slotGroups[template];
        String[] out = new String[groups.length + 1];
        out[0] = Integer.toString(template + 1);
        for (int i = 0; i < groups.length; i++) {
            String value = groups[i] == 0 ? null : m.group(groups[i]);
            out[i + 1] = value == null ? "" : value;
        }
        return out;
    }

    /** The compiled regexes and an automaton that finds which templates' literals a text holds. */
    static final class Compiled {
        final Pattern[] patterns;
        private final LiteralAutomaton literals;

        Compiled(String[] literals, String[] regexes) {
            patterns = new Pattern[regexes.length];
            for (int i = 0; i < regexes.length; i++) {
                patterns[i] = Pattern.compile(regexes[i]);
            }
            this.literals = LiteralAutomaton.overChars(literals);
        }

        /** The templates whose literal {@code text} holds, as a bit set in template order. */
        long[] candidates(String text) {
            return literals.found(text);
        }
    }
}
