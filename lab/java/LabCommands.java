import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;

/**
 * What the lab's Java programs share: their `key=value` arguments (keys starting with `lab.` are the program's own,
 * the others the client's configuration), status lines on standard output (`LAB ...`), commands read from standard
 * input on a daemon thread, one a line (`name argument`; `halt` exits at once with no cleanup, an unknown name is
 * reported, and when standard input ends, the harness went away, `onEnd` runs), and the processing delays a scenario
 * asks for (`sleep MS` once, `slow MS` every time).
 */
final class LabCommands {
    /** The client's configuration and the program's own `lab.` settings, from the command line. */
    static final class Args {
        final Properties client = new Properties();
        final Properties lab = new Properties();

        Args(String[] args) {
            for (String arg : args) {
                int eq = arg.indexOf('=');
                String key = arg.substring(0, eq);
                (key.startsWith("lab.") ? lab : client).setProperty(key, arg.substring(eq + 1));
            }
        }

        /** The comma-separated list under `key` of the program's settings (none when it is absent). */
        List<String> list(String key) {
            return csv(lab.getProperty(key, ""));
        }
    }

    /** The non-blank items of a comma-separated list, trimmed. */
    static List<String> csv(String text) {
        List<String> out = new ArrayList<>();
        for (String item : text.split(",")) {
            if (!item.isBlank()) {
                out.add(item.trim());
            }
        }
        return out;
    }

    private static volatile long sleepOnceMs = 0;
    private static volatile long slowMs = 0;

    private LabCommands() {
    }

    /** The `sleep` and `slow` commands, with `more` (the program's other commands) added. */
    static Map<String, Consumer<String>> withPacing(Map<String, Consumer<String>> more) {
        Map<String, Consumer<String>> handlers = new HashMap<>(more);
        handlers.put("sleep", arg -> {
            sleepOnceMs = Long.parseLong(arg);
            say("ack sleep " + arg);
        });
        handlers.put("slow", arg -> {
            slowMs = Long.parseLong(arg);
            say("ack slow " + arg);
        });
        return handlers;
    }

    /** Sleep as long as the last `sleep` (once) and `slow` (every time) commands say, with status lines. */
    static void pace() throws InterruptedException {
        long ms = sleepOnceMs + slowMs;
        sleepOnceMs = 0;
        if (ms > 0) {
            say("processing ms=" + ms);
            Thread.sleep(ms);
            say("processed ms=" + ms);
        }
    }

    static void say(String line) {
        synchronized (System.out) {
            System.out.println("LAB " + line);
            System.out.flush();
        }
    }

    static void start(Map<String, Consumer<String>> handlers, Runnable onEnd) {
        Thread reader = new Thread(() -> read(handlers, onEnd), "lab-commands");
        reader.setDaemon(true);
        reader.start();
    }

    private static void read(Map<String, Consumer<String>> handlers, Runnable onEnd) {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            String line;
            while ((line = in.readLine()) != null) {
                String[] parts = line.trim().split("\\s+", 2);
                String arg = parts.length > 1 ? parts[1] : "";
                Consumer<String> handler = handlers.get(parts[0]);
                if (handler != null) {
                    handler.accept(arg);
                } else if (parts[0].equals("halt")) {
                    say("halting");
                    Runtime.getRuntime().halt(3);
                } else if (!parts[0].isEmpty()) {
                    say("unknown-command " + line);
                }
            }
        } catch (Exception e) {
            say("command-reader-failed " + e);
        }
        onEnd.run();
    }
}
