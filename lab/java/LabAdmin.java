import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Node;

/**
 * The lab's admin actions, one per run: `LabAdmin BOOTSTRAP COMMAND ARGS...`.
 *
 * `brokers N` waits until N brokers are registered; `create-topic NAME PARTITIONS RF`; `add-partitions NAME TOTAL`;
 * `coordinator GROUP` prints the id of the group's coordinator broker. Results go to standard output as `LAB ` lines.
 */
public final class LabAdmin {
    private LabAdmin() {
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        String command = args[1];
        try (Admin admin = Admin.create(props)) {
            switch (command) {
                case "brokers": {
                    int wanted = Integer.parseInt(args[2]);
                    long deadline = System.currentTimeMillis() + 60_000;
                    while (true) {
                        int n = admin.describeCluster().nodes().get(20, TimeUnit.SECONDS).size();
                        if (n >= wanted) {
                            System.out.println("LAB brokers " + n);
                            break;
                        }
                        if (System.currentTimeMillis() > deadline) {
                            throw new IllegalStateException("only " + n + " brokers after 60 s");
                        }
                        Thread.sleep(300);
                    }
                    break;
                }
                case "create-topic": {
                    NewTopic topic = new NewTopic(args[2], Integer.parseInt(args[3]), Short.parseShort(args[4]));
                    admin.createTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
                    System.out.println("LAB created " + args[2]);
                    break;
                }
                case "add-partitions": {
                    Map<String, NewPartitions> change =
                            Collections.singletonMap(args[2], NewPartitions.increaseTo(Integer.parseInt(args[3])));
                    admin.createPartitions(change).all().get(30, TimeUnit.SECONDS);
                    System.out.println("LAB partitions " + args[2] + " " + args[3]);
                    break;
                }
                case "coordinator": {
                    Node node = admin.describeConsumerGroups(List.of(args[2])).all().get(30, TimeUnit.SECONDS)
                            .get(args[2]).coordinator();
                    System.out.println("LAB coordinator " + node.id());
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown command " + command);
            }
        }
    }
}
