import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The lab's consumer: subscribes and polls like a service would, and obeys commands read from standard input so a
 * scenario can make it misbehave. Arguments are `key=value` pairs: keys starting with `lab.` belong to this program,
 * every other pair is a consumer configuration.
 *
 * Commands (one a line): `sleep MS` (the next loop iteration processes for MS), `slow MS` (every iteration does),
 * `gc MB` (build MB of live small objects, then one full GC), `subscribe t1,t2`, `close` (clean close, leaves the
 * group), `halt` (exit at once, no leave). Status lines on standard output start with `LAB `.
 *
 * `lab.calibrate.gc.mb=MB` runs one full GC over MB of live objects before the consumer is created and, with
 * `lab.session.from.gc=F`, sets session.timeout.ms to F times the measured pause (the heartbeat to a quarter of it),
 * so the GC scenarios hold on a fast or a loaded machine alike.
 */
public final class LabConsumer {
    private static volatile String newSubscription = null;
    private static volatile boolean closing = false;
    private static volatile Object liveHeap = null;

    private LabConsumer() {
    }

    static void say(String line) {
        LabCommands.say(line);
    }

    /** A small object of the live heap: one reference, so the collector has to follow every one of them. */
    static final class Node {
        Node next;
        long payload;
    }

    /**
     * Many chains of small objects, each new node pushed on a pseudo-random chain: following one chain jumps all over
     * the heap, so marking and compaction miss the CPU caches at every object and a full GC takes seconds.
     */
    static Node[] buildLiveHeap(long megabytes) {
        long count = megabytes * 1024L * 1024L / 24L;
        Node[] heads = new Node[4096];
        long seed = 0x9E3779B97F4A7C15L;
        for (long i = 0; i < count; i++) {
            seed = seed * 6364136223846793005L + 1442695040888963407L;
            int k = (int) (seed >>> 52);
            Node n = new Node();
            n.payload = i;
            n.next = heads[k];
            heads[k] = n;
        }
        return heads;
    }

    static long fullGcMillis() {
        long before = collectorMillis();
        long started = System.nanoTime();
        System.gc();
        long wall = (System.nanoTime() - started) / 1_000_000L;
        long measured = collectorMillis() - before;
        return Math.max(wall, measured);
    }

    static long collectorMillis() {
        long total = 0;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, bean.getCollectionTime());
        }
        return total;
    }

    static long gcPause(long megabytes) {
        liveHeap = buildLiveHeap(megabytes);
        long ms = fullGcMillis();
        liveHeap = null;
        // Reclaim it at once (a short full GC, nothing is live): left as garbage it would fill the old generation
        // and make the next live heap trigger an extra, unplanned full GC.
        System.gc();
        return ms;
    }

    public static void main(String[] args) throws Exception {
        // Spring Boot puts the process id into its log pattern this way; set before the first logger exists.
        System.setProperty("PID", Long.toString(ProcessHandle.current().pid()));
        LabCommands.Args parsed = new LabCommands.Args(args);
        Properties props = parsed.client;
        Properties lab = parsed.lab;
        props.setProperty("key.deserializer", ByteArrayDeserializer.class.getName());
        props.setProperty("value.deserializer", ByteArrayDeserializer.class.getName());

        long calibrateMb = Long.parseLong(lab.getProperty("lab.calibrate.gc.mb", "0"));
        if (calibrateMb > 0) {
            long pause = gcPause(calibrateMb);
            double factor = Double.parseDouble(lab.getProperty("lab.session.from.gc", "0"));
            if (factor > 0) {
                long floor = Long.parseLong(lab.getProperty("lab.session.floor.ms", "1000"));
                long session = Math.max(floor, Math.round(pause * factor));
                props.setProperty("session.timeout.ms", Long.toString(session));
                props.setProperty("heartbeat.interval.ms", Long.toString(Math.max(100, session / 4)));
            }
            say("calibrated pause_ms=" + pause + " session_ms=" + props.getProperty("session.timeout.ms", "default"));
        }

        LabCommands.start(LabCommands.withPacing(Map.of(
                "gc", arg -> {
                    say("gc-start mb=" + arg);
                    long ms = gcPause(Long.parseLong(arg));
                    say("gc-done mb=" + arg + " ms=" + ms);
                },
                "subscribe", arg -> newSubscription = arg,
                "close", arg -> closing = true)),
                () -> closing = true);  // the harness went away: leave cleanly rather than linger

        long pollMs = Long.parseLong(lab.getProperty("lab.poll.ms", "200"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    say("revoked " + partitions);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    say("assigned member=" + consumer.groupMetadata().memberId() + " generation="
                            + consumer.groupMetadata().generationId() + " partitions=" + partitions);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    say("lost " + partitions);
                }
            };
            consumer.subscribe(parsed.list("lab.topics"), listener);
            say("started pid=" + ProcessHandle.current().pid());
            while (!closing) {
                String subscription = newSubscription;
                if (subscription != null) {
                    newSubscription = null;
                    consumer.subscribe(LabCommands.csv(subscription), listener);
                    say("subscribed " + subscription);
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(pollMs));
                if (!records.isEmpty()) {
                    say("records " + records.count());
                }
                LabCommands.pace();
            }
            say("closing");
        }
        say("closed");
    }
}
