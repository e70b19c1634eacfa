import java.time.Duration;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The lab's share consumer (KIP-932, a member of a share group): subscribes and polls like LabConsumer, commanded from
 * standard input. Arguments are `key=value` pairs: keys starting with `lab.` belong to this program (`lab.topics`),
 * every other pair is a share consumer configuration.
 *
 * A share consumer owns no partitions and has no rebalance listener, so `LAB polling` (after the first poll returned)
 * is the status a harness waits for; the member id is the client's own (its membership manager logs it). Commands:
 * `close` (clean close: the member leaves the share group), `halt` (exit at once, no leave).
 */
public final class LabShareConsumer {
    private static volatile boolean closing = false;

    private LabShareConsumer() {
    }

    public static void main(String[] args) throws Exception {
        LabCommands.Args parsed = new LabCommands.Args(args);
        Properties props = parsed.client;
        props.setProperty("key.deserializer", ByteArrayDeserializer.class.getName());
        props.setProperty("value.deserializer", ByteArrayDeserializer.class.getName());
        LabCommands.start(Map.of("close", arg -> closing = true), () -> closing = true);

        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(parsed.list("lab.topics"));
            LabCommands.say("started pid=" + ProcessHandle.current().pid());
            boolean first = true;
            while (!closing) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (first) {
                    LabCommands.say("polling");
                    first = false;
                }
                if (!records.isEmpty()) {
                    LabCommands.say("records " + records.count());
                }
            }
            LabCommands.say("closing");
        }
        LabCommands.say("closed");
    }
}
