"""The bronze prefilter: which raw lines are worth parsing at all.

A line is a candidate when it holds one of a few literals that every group-coordinator, group-client and GC line
holds; the test is a handful of `contains` calls (no regex), since it runs on every line of every file.
"""

from __future__ import annotations

from pyspark.sql import Column

from pipelines.bronze.literals import contains_any

# What every GC pause line of the JVM's logs holds (JDK 8 -XX:+PrintGC* and JDK 9+ unified logging).
GC_LITERALS: tuple[str, ...] = (
    "Pause ", "GC pause", "Full GC", "[GC (", "[GC--", "[GC [", "[GC remark", "[GC cleanup",
    "application threads were stopped", "Safepoint \"",
)

PREFILTER_LITERALS: tuple[str, ...] = (
    "roupCoordinator",
    "roupMetadataManager",
    "Group Metadata Manager",
    "[Consumer ",
    # The same prefix after text extraction lost its blank (a PDF or an OCR'd screenshot).
    "[ConsumerClientId=", "[ConsumerclientId=",
    "[Worker ",
    " group",
    "oordinator",
    "ConsumerConfig values:",
    # librdkafka (`Group "g" ...`, JoinGroup/SyncGroup/LeaveGroup, Heartbeat, any line of its `[thrd:..]` layout,
    # the MAXPOLL error an application logs itself, as its message or its error string) and Kafka Streams (its
    # thread prefix; state transitions of `stream-client [..]` and of pastes that lost the prefix; the assignor's
    # probing-rebalance lines).
    "Group",
    "Heartbeat",
    "[thrd:",
    "poll interval (",
    "stream-thread [",
    "State transition",
    "probing rebalance",
    # Bare messages (a stripped paste, a layout without the client's `[Consumer ...]` prefix, a logger that prints
    # no group): a literal of every wording that names no group by itself.
    "poll timeout", "Rebalance started", "Rebalance failed", "for rebalance", "last rebalance", "after rebalance",
    "eneration", "ssignment", "assigned partitions", "partition(s)", "tatic member",
    "member id", "ffset commit", "OffsetCommit", "auto-commit", "ubscribed", "with epoch",
    "ransitioned to", "econciliation", "onnectors and tasks", "onnector ", "configs updated", "config log",
    "subscription is up to date", "nassign", "config update", "loading offsets", "Herder st", "Starting task ",
    # The streams rebalance protocol (KIP-1071, 4.2): the client's membership manager and the broker's topic check.
    "stream-client [", "Membership is in", "active tasks", "topic configuration found",
    # Clients without the Java or librdkafka wordings: the group as a JSON field of its own (franz-go's JSON loggers,
    # KafkaJS's `groupId`, and its logger's `[Consumer]` namespace when a layout prints the message without JSON),
    # Sarama's and kafka-go's partition watchers (they name no group), franz-go's short messages (`synced`, `heartbeat
    # errored`, the leader's `balanced`).
    '"group":"', '"groupId":"', "[Consumer]", "loop check partition number", "getting partitions", "heartbeat",
    "synced", "syncing", "joined", "balanced",
    # sarama-cluster's rejoin, partition and error lines (no group named), kafka-go's balancing lines (its leader's).
    "cluster/consumer ", "found member: ", "found topic/partition", "member/topic/partitions", "rebalance error: ",
    # librdkafka's close of a consumer with a group (`Closing consumer`).
    "Closing consumer",
    # The Java client's connection to its coordinator, node Integer.MAX_VALUE - broker id (NetworkClient's lines).
    "node 2147",
    # Its group requests cancelled on a disconnect (`Cancelled in-flight HEARTBEAT request ...`): sent to the
    # coordinator alone, whatever node id the line prints.
    "HEARTBEAT request", "_GROUP request", "OFFSET_COMMIT request", "OFFSET_FETCH request",
    # Sarama's session lines (`consumergroup/session/<member>/<generation> released`).
    "consumergroup/session/",
    # What applications print in their rebalance listeners (wordings/client_callbacks.yml): `Revoked partitions`,
    # Spring's `<group>: partitions assigned: [..]`, the clients' examples' `RebalanceCb:` and `Got assigned:`.
    "evok", "partitions assigned", "Assigned partitions", "partitions lost", "were lost", "RebalanceCb",
    "re rebalance", "ost rebalance", "group rebalanced", "Got assigned", "incrementally assigned",
    # Exceptions printed as lines of their own, and Connect's own stop.
    "TaskMigrated", "Connect stopped",
    # librdkafka's assignor metadata request and a subscribed topic's new partition count, when printed bare.
    "partition assignor", "partition count changed",
    # kafka-python's assignors skipping a subscribed topic the leader has no metadata for (its logger names no group).
    "No partition metadata for topic",
    # aiokafka's lines that name neither group nor coordinator, in a layout without the logger name.
    "Metadata for topic has changed", "commit on finallization",
    # ruby-kafka's lines that name no group (its tag `[[<group>] {..}:] ` is not always there).
    "Partitions assigned", "committing offsets", "final offsets commit", "Kicked out of",
    # Frameworks' own lines (wordings/client_callbacks.yml): Karafka's poll errors, KafkaFlow's, Streamiz's prefixes
    # and listener lines, Spring's container.
    "Data polling error", "Max Poll Interval", "stream-thread[", "stream-application[", "revocation took",
    "Partitions lost", "Consumer stopped", "has been fenced", "stopping container", "Enforced rebalance",
    "could not be committed", "Rebalance callback", "Recreating consumer",
    # zio-kafka's rebalance listener (a count of partitions; its safe-commit lines name revoked partitions).
    "partitions are assigned", "partitions are lost",
    # The group errors' texts an application logs on their own (wordings/client_errors.yml) that hold none of the
    # literals above: librdkafka's `Broker: Unknown member`, Sarama's unknown member and missing offsets topic.
    "Unknown member", "member is not known", "Offset's topic has not",
    # SmallRye's connector reporting a failure during a rebalance (client_callbacks.yml).
    "during a rebalance",
    *GC_LITERALS,
)


def is_candidate(value: Column) -> Column:
    """True for lines that contain one of PREFILTER_LITERALS (`contains` only, no regex)."""
    return contains_any(value, PREFILTER_LITERALS)
