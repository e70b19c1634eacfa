package rebalance.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A deterministic automaton (Aho-Corasick with every transition precomputed) that finds which of a fixed list of
 * literals a text holds, in one pass over it.
 *
 * <p>A literal is a sequence of symbols: the UTF-8 bytes of a string ({@link #overUtf8}) or its chars
 * ({@link #overChars}); a text must be walked in the same unit. Symbols no literal holds share one column of the
 * transition table, so the table stays small. Each state knows, as a bit set in literal order, the literals that end
 * there directly or through its fallbacks.
 */
final class LiteralAutomaton {
    private static final long[] NONE = new long[0];

    private final int[] lowClass = new int[256];
    private final Map<Integer, Integer> highClass = new HashMap<>();
    private final int classes;
    private final int words;
    private final int[] next;
    // Per state: the literals found on reaching it; states that find none share NONE.
    private final long[][] output;

    /** The automaton over the UTF-8 bytes of {@code literals}: walk it with {@link #holdsAny(byte[])}. */
    static LiteralAutomaton overUtf8(String[] literals) {
        int[][] symbols = new int[literals.length][];
        for (int i = 0; i < literals.length; i++) {
            byte[] bytes = literals[i].getBytes(StandardCharsets.UTF_8);
            symbols[i] = new int[bytes.length];
            for (int j = 0; j < bytes.length; j++) {
                symbols[i][j] = bytes[j] & 0xff;
            }
        }
        return new LiteralAutomaton(symbols);
    }

    /** The automaton over the chars of {@code literals}: walk it with {@link #found(String)}. */
    static LiteralAutomaton overChars(String[] literals) {
        int[][] symbols = new int[literals.length][];
        for (int i = 0; i < literals.length; i++) {
            symbols[i] = literals[i].chars().toArray();
        }
        return new LiteralAutomaton(symbols);
    }

    private LiteralAutomaton(int[][] literals) {
        words = (literals.length + 63) / 64;
        int nextClass = 1;  // class 0: symbols that are in no literal
        for (int[] literal : literals) {
            for (int symbol : literal) {
                if (classOf(symbol) == 0) {
                    if (symbol < lowClass.length) {
                        lowClass[symbol] = nextClass++;
                    } else {
                        highClass.put(symbol, nextClass++);
                    }
                }
            }
        }
        classes = nextClass;

        // The trie, with -1 for a missing edge, and the literals that end at each node (null: none).
        List<int[]> edges = new ArrayList<>();
        List<long[]> ends = new ArrayList<>();
        edges.add(newRow());
        ends.add(null);
        for (int i = 0; i < literals.length; i++) {
            int state = 0;
            for (int symbol : literals[i]) {
                int k = classOf(symbol);
                if (edges.get(state)[k] < 0) {
                    edges.get(state)[k] = edges.size();
                    edges.add(newRow());
                    ends.add(null);
                }
                state = edges.get(state)[k];
            }
            if (ends.get(state) == null) {
                ends.set(state, new long[words]);
            }
            ends.get(state)[i / 64] |= 1L << (i % 64);
        }

        int states = edges.size();
        next = new int[states * classes];
        output = new long[states][];
        int[] fail = new int[states];
        int[] queue = new int[states];
        int head = 0;
        int tail = 0;
        output[0] = ends.get(0) == null ? NONE : ends.get(0);
        for (int k = 0; k < classes; k++) {
            int child = edges.get(0)[k];
            next[k] = Math.max(child, 0);
            if (child > 0) {
                queue[tail++] = child;
            }
        }
        // Breadth first: a state's fallback is shallower, so its row and output are complete before the state's own.
        while (head < tail) {
            int state = queue[head++];
            output[state] = union(ends.get(state), output[fail[state]]);
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

    private long[] union(long[] own, long[] inherited) {
        if (own == null) {
            return inherited;
        }
        if (inherited.length == 0) {
            return own;
        }
        long[] merged = own.clone();
        for (int w = 0; w < words; w++) {
            merged[w] |= inherited[w];
        }
        return merged;
    }

    private int classOf(int symbol) {
        return symbol < lowClass.length ? lowClass[symbol] : highClass.getOrDefault(symbol, 0);
    }

    private int[] newRow() {
        int[] row = new int[classes == 0 ? 1 : classes];
        Arrays.fill(row, -1);
        return row;
    }

    /** True when the bytes of {@code text} hold any literal (built by {@link #overUtf8}); stops at the first. */
    boolean holdsAny(byte[] text) {
        if (output[0].length != 0) {
            return true;  // an empty literal is in every text
        }
        int state = 0;
        for (byte b : text) {
            state = next[state * classes + lowClass[b & 0xff]];
            if (output[state].length != 0) {
                return true;
            }
        }
        return false;
    }

    /** The literals the chars of {@code text} hold (built by {@link #overChars}), as a bit set in literal order. */
    long[] found(String text) {
        long[] found = Arrays.copyOf(output[0], words);  // an empty literal is in every text
        int state = 0;
        for (int i = 0, n = text.length(); i < n; i++) {
            state = next[state * classes + classOf(text.charAt(i))];
            long[] out = output[state];
            for (int w = 0; w < out.length; w++) {
                found[w] |= out[w];
            }
        }
        return found;
    }
}
