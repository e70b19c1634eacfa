package rebalance.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
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
        private final int words;
        private final int[] asciiClass = new int[128];
        private final Map<Character, Integer> otherClass = new HashMap<>();
        private final int classes;
        private final int[] next;
        // Per state: the templates whose literal ends there (directly or through its fallbacks), as a bit set.
        private final long[][] output;
        private final boolean[] emits;

        Compiled(String[] literals, String[] regexes) {
            patterns = new Pattern[regexes.length];
            for (int i = 0; i < regexes.length; i++) {
                patterns[i] = Pattern.compile(regexes[i]);
            }
            words = (literals.length + 63) / 64;
            int nextClass = 1;  // class 0: characters that are in no literal
            for (String literal : literals) {
                for (char c : literal.toCharArray()) {
                    if (classOf(c) == 0) {
                        if (c < 128) {
                            asciiClass[c] = nextClass++;
                        } else {
                            otherClass.put(c, nextClass++);
                        }
                    }
                }
            }
            classes = nextClass;

            List<int[]> edges = new ArrayList<>();
            List<long[]> ends = new ArrayList<>();
            edges.add(newRow());
            ends.add(new long[words]);
            for (int t = 0; t < literals.length; t++) {
                int state = 0;
                for (char c : literals[t].toCharArray()) {
                    int k = classOf(c);
                    if (edges.get(state)[k] < 0) {
                        edges.get(state)[k] = edges.size();
                        edges.add(newRow());
                        ends.add(new long[words]);
                    }
                    state = edges.get(state)[k];
                }
                ends.get(state)[t / 64] |= 1L << (t % 64);
            }

            int states = edges.size();
            next = new int[states * classes];
            output = new long[states][];
            emits = new boolean[states];
            int[] fail = new int[states];
            int[] queue = new int[states];
            int head = 0;
            int tail = 0;
            output[0] = ends.get(0);
            for (int k = 0; k < classes; k++) {
                int child = edges.get(0)[k];
                next[k] = Math.max(child, 0);
                if (child > 0) {
                    queue[tail++] = child;
                }
            }
            // Breadth first: a state's fallback is shallower, so its row and output are complete first.
            while (head < tail) {
                int state = queue[head++];
                long[] own = ends.get(state);
                long[] inherited = output[fail[state]];
                long[] merged = own.clone();
                for (int w = 0; w < words; w++) {
                    merged[w] |= inherited[w];
                }
                output[state] = merged;
                for (long w : merged) {
                    emits[state] |= w != 0;
                }
                for (int k = 0; k < classes; k++) {
                    int child = edges.get(state)[k];
                    if (child >= 0) {
                        fail[child] = next[fail[state] * classes + k];
                        next[state * classes + k] = child;
                        queue[tail++] = child;
                    } else {
                        next[state * classes + k] = next[fail[state] * classes + k];
                    }
                }
            }
        }

        private int classOf(char c) {
            return c < 128 ? asciiClass[c] : otherClass.getOrDefault(c, 0);
        }

        private int[] newRow() {
            int[] row = new int[classes == 0 ? 1 : classes];
            Arrays.fill(row, -1);
            return row;
        }

        /** The templates whose literal {@code text} holds, as a bit set in template order. */
        long[] candidates(String text) {
            long[] found = output[0].clone();  // an empty literal is in every text
            int state = 0;
            for (int i = 0, n = text.length(); i < n; i++) {
                state = next[state * classes + classOf(text.charAt(i))];
                if (emits[state]) {
                    long[] out = output[state];
                    for (int w = 0; w < words; w++) {
                        found[w] |= out[w];
                    }
                }
            }
            return found;
        }
    }
}
