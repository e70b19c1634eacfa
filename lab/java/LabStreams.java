import java.time.Duration;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;

/**
 * The lab's Kafka Streams application: one input topic counted per key into a state store (so its tasks are
 * stateful, have a changelog, and a new instance warms up before it takes them over), commanded from standard
 * input like LabConsumer. Arguments are `key=value` pairs: keys starting with `lab.` belong to this program, every
 * other pair is a Streams configuration.
 *
 * `lab.input=T` is the input topic; `lab.produce=N` writes N keyed records to it before the application starts (so
 * the state store and its changelog hold data), then `lab.rate=R` records a second while it runs (so a stalled
 * record always comes). Commands: `sleep MS` (the next record processed takes MS: the stream thread overruns
 * max.poll.interval.ms), `slow MS` (every record does), `close` (KafkaStreams.close()), `halt` (exit at once). Status lines on
 * standard output start with `LAB `; `LAB assigned member=<consumer client id> state=RUNNING` follows every
 * transition to RUNNING (the broker's member id is that client id and a UUID).
 */
public final class LabStreams {
    private static volatile boolean closing = false;

    private LabStreams() {
    }

    static void say(String line) {
        LabCommands.say(line);
    }

    static KafkaProducer<String, String> producer(Properties streamsProps) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", streamsProps.getProperty("bootstrap.servers"));
        p.setProperty("client.id", streamsProps.getProperty("client.id", "lab-streams") + "-loader");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    /** `count` keyed records at once, then `perSecond` a second until the program closes. */
    static void produce(KafkaProducer<String, String> producer, String topic, int count, int perSecond) {
        for (int i = 0; i < count; i++) {
            producer.send(new ProducerRecord<>(topic, "k" + (i % 240), Integer.toString(i)));
        }
        producer.flush();
        say("produced " + count);
        if (perSecond <= 0) {
            return;
        }
        Thread feeder = new Thread(() -> {
            long i = count;
            while (!closing) {
                producer.send(new ProducerRecord<>(topic, "k" + (i % 240), Long.toString(i)));
                i++;
                try {
                    Thread.sleep(1000L / perSecond);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "lab-feeder");
        feeder.setDaemon(true);
        feeder.start();
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("PID", Long.toString(ProcessHandle.current().pid()));
        LabCommands.Args parsed = new LabCommands.Args(args);
        Properties props = parsed.client;
        Properties lab = parsed.lab;
        String input = lab.getProperty("lab.input");
        int toProduce = Integer.parseInt(lab.getProperty("lab.produce", "0"));
        int rate = Integer.parseInt(lab.getProperty("lab.rate", "0"));
        if (toProduce > 0 || rate > 0) {
            produce(producer(props), input, toProduce, rate);
        }
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .peek((k, v) -> {
                    try {
                        LabCommands.pace();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                })
                .groupByKey()
                .count(Materialized.as("lab-counts"));
        props.putIfAbsent(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        props.putIfAbsent(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        String clientId = props.getProperty("client.id", "lab-streams");
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((newState, oldState) -> {
            say("state from=" + oldState + " to=" + newState);
            if (newState == KafkaStreams.State.RUNNING) {
                say("assigned member=" + clientId + "-StreamThread-1-consumer state=RUNNING");
            }
        });
        LabCommands.start(LabCommands.withPacing(Map.of("close", arg -> closing = true)),
                () -> closing = true);
        streams.start();
        say("started pid=" + ProcessHandle.current().pid());
        while (!closing) {
            Thread.sleep(100);
        }
        say("closing");
        streams.close(Duration.ofSeconds(30));
        say("closed");
    }
}
