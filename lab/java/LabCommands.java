import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What the lab's Java programs share: status lines on standard output (`LAB ...`), and commands read from standard
 * input on a daemon thread, one a line (`name argument`). `halt` exits at once with no cleanup; an unknown name is
 * reported; when standard input ends (the harness went away) `onEnd` runs.
 */
final class LabCommands {
    private LabCommands() {
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
