"""Layouts: JSON lines (logstash, ECS), Strimzi, Spring Boot 3.2+, container envelopes, a source's own pattern."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.settings.config import ConfigError, load_config
from pipelines.silver import layouts
from pipelines.silver.layouts import strip_envelope
from tests.conftest import parse_file_lines, parse_with

PREFIX = "[Consumer clientId=consumer-orders-1, groupId=orders] "
JOINED = "Successfully joined group with generation Generation{generationId=7, memberId='m-1', protocol='range'}"
BROKER = ("[GroupCoordinator 2]: Stabilized group orders generation 7 (__consumer_offsets-3) with 2 members")

LINES = [
    # instance, line
    ("orders-svc-0", '{"@timestamp":"2024-05-14T10:21:07.512+02:00","@version":"1","message":"' + PREFIX + JOINED
     + '","logger_name":"org.apache.kafka.clients.consumer.internals.ConsumerCoordinator","thread_name":"main",'
     '"level":"INFO","level_value":20000}'),
    ("orders-svc-0", '{"@timestamp":"2024-05-14T08:21:07.513Z","log.level":"WARN","message":"' + PREFIX
     + 'consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than '
     'the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time '
     'processing messages. You can address this either by increasing max.poll.interval.ms or by reducing the '
     'maximum size of batches returned in poll() with max.poll.records.","ecs.version":"1.2.0",'
     '"process.thread.name":"kafka-coordinator-heartbeat-thread | orders",'
     '"log.logger":"o.a.k.c.c.i.ConsumerCoordinator"}'),
    # A line the exporter cut short: not valid JSON, the message is still read.
    ("orders-svc-0", '{"@timestamp":"2024-05-14T08:21:07.514+0000","message":"' + PREFIX
     + 'Revoke previously assigned partitions orders-0","logger_name":"o.a.k.c.c.i.ConsumerRebalanceListenerInvoker",'
     '"thread_name":"KafkaConsumerDestination{consumerDestinationName=\'orders\''),
    ("broker-1", "2024-05-14 08:21:07,515 INFO " + BROKER + " (kafka.coordinator.group.GroupCoordinator) "
     "[data-plane-kafka-request-handler-3]"),
    ("orders-svc-0", "2024-05-14T08:21:07.516Z  INFO 88909 --- [orders-svc] [ntainer#0-0-C-1] "
     "k.c.c.i.ConsumerRebalanceListenerInvoker : " + PREFIX + "Adding newly assigned partitions: orders-0, orders-1"),
    ("broker-1", "kafka1    | [2024-05-14 08:21:07,517] INFO " + BROKER
     + " (kafka.coordinator.group.GroupCoordinator)"),
    ("broker-1", "2024-05-14T08:21:07.518123456Z stdout F \x1b[32m[2024-05-14 08:21:07,518] INFO " + BROKER
     + " (kafka.coordinator.group.GroupCoordinator)\x1b[0m"),
    ("broker-1", '{"log":"[2024-05-14 08:21:07,519] INFO ' + BROKER + ' (kafka.coordinator.group.GroupCoordinator)\\n",'
     '"stream":"stdout","time":"2024-05-14T08:21:07.519Z"}'),
    # The source's own layout `thread|time|message|level`, only for instances matching "legacy-*".
    ("legacy-7", "billing|2024-05-14 08:21:07.520|" + PREFIX.replace("orders", "billing") + "(Re-)joining group|INFO"),
    ("orders-svc-0", "billing|2024-05-14 08:21:07.521|" + PREFIX + "(Re-)joining group|INFO"),
]
COLUMNS = ["line_no", "layout", "level", "thread", "logger", "event_type", "event_ts", "group_id", "generation",
           "member_count", "partitions"]


def _parse(spark, lines, cfg):
    rows = [(f"l{i}", f"file:/landing/{inst}/app.log", inst, "app.log", dt.datetime(2024, 5, 14, 12), i, line,
             len(line), 0) for i, (inst, line) in enumerate(lines, start=1)]
    bronze = spark.createDataFrame(
        rows, "line_id string, source_file string, instance string, file_name string, file_modified_at timestamp, "
              "line_no long, value string, line_length long, batch_id long",
    )
    return parse_with(bronze, cfg)


def test_every_layout_reads_time_level_and_message(spark):
    cfg = load_config(None, {"sources": [
        {"instances": "legacy-*", "pattern": r"^(?P<thread>\w+)\|(?P<ts>[\d: .-]+)\|(?P<msg>.*)\|(?P<level>\w+)$"},
        {"instances": "*", "tz": "UTC"},
    ]})
    actual = _parse(spark, LINES, cfg).select(COLUMNS)
    ts = lambda ms: dt.datetime(2024, 5, 14, 8, 21, 7, ms * 1000)  # noqa: E731 - all times are 08:21:07 UTC
    cci = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
    invoker = "k.c.c.i.ConsumerRebalanceListenerInvoker"
    gc_logger = "kafka.coordinator.group.GroupCoordinator"
    expected = spark.createDataFrame([
        (1, "json", "INFO", "main", cci, "client_joined", ts(512), "orders", 7, None, None),
        (2, "json", "WARN", "kafka-coordinator-heartbeat-thread | orders", "o.a.k.c.c.i.ConsumerCoordinator",
         "client_poll_timeout", ts(513), "orders", None, None, None),
        (3, "json", None, None, "o.a.k.c.c.i.ConsumerRebalanceListenerInvoker", "client_partitions_revoked",
         ts(514), "orders", None, None, "orders-0"),
        (4, "strimzi", "INFO", "data-plane-kafka-request-handler-3", gc_logger, "group_stabilized", ts(515),
         "orders", 7, 2, None),
        (5, "spring_boot", "INFO", "ntainer#0-0-C-1", invoker, "client_partitions_assigned", ts(516), "orders",
         None, None, "orders-0, orders-1"),
        (6, "kafka_log4j", "INFO", None, gc_logger, "group_stabilized", ts(517), "orders", 7, 2, None),
        (7, "kafka_log4j", "INFO", None, gc_logger, "group_stabilized", ts(518), "orders", 7, 2, None),
        (8, "kafka_log4j", "INFO", None, gc_logger, "group_stabilized", ts(519), "orders", 7, 2, None),
        (9, "user_0", "INFO", "billing", None, "client_joining", ts(520), "billing", None, None, None),
        # The pattern is only for legacy-*: elsewhere the general path finds the message at its Kafka prefix (up to
        # the next column separator) and the time in what precedes it; the level, printed after it, stays unknown.
        (10, "anywhere", None, None, None, "client_joining", ts(521), "orders", None, None, None),
    ], actual.schema)
    assertDataFrameEqual(actual, expected)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"^(?P<ts>\S+) (?P<level>\w+) (.*)$", "has no (?P<msg>...) group"),
        (r"^(?P<ts>[\d-+) (?P<msg>.*)$", "is not a valid regex"),
        (r"^(?P<time>\S+) (?P<msg>.*)$", "unknown group(s) ['time']"),
    ],
)
def test_a_source_pattern_must_compile_and_name_the_message(pattern, message):
    with pytest.raises(ConfigError, match=r"sources\.0\.pattern: .*" + re.escape(message)):
        load_config(None, {"sources": [{"instances": "legacy-*", "pattern": pattern}]})


def test_an_envelope_is_removed_wherever_its_regex_matches_and_other_lines_are_left_as_they_are(spark):
    # strip_envelope runs the envelope regexes only on lines holding one of their literals (or docker lines, whose
    # escapes may hide them): on every line below it must give what the three regexes give run on every line.
    lines = [
        "[2024-05-14 08:21:07,517] INFO " + BROKER,
        "[2024-05-14T08:21:07.517+0000][gc] GC(12) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.2ms",
        "kafka1    | [2024-05-14 08:21:07,517] INFO " + BROKER,
        "kafka1 |[2024-05-14 08:21:07,517] a pipe without its blank",
        "2024-05-14T08:21:07.518123456Z stderr P [2024-05-14 08:21:07,518] INFO " + BROKER,
        "2024-05-14T08:21:07Z stdout F first line\n2024-05-14T08:21:07Z stdout F second line",
        '> > {"level":"INFO","message":"' + PREFIX + JOINED + '"}',
        '>>{"level":"INFO"}',
        "> a quoted text line keeps its marks",
        '{"log":"\\u003e {\\"level\\":\\"INFO\\"}\\n","stream":"stdout"}',
        '{"log":"kafka1    | [2024-05-14 08:21:07,517] INFO x\\n","stream":"stdout"}',
        "\x1b[32mcoloured\x1b[0m",
        "\u2502 [2024-05-14 08:21:07,517] INFO " + BROKER + "   \u2502",
        "a line with a \u2502 bar inside keeps it",
        "2016-08-31 04:15:54,433 [StreamThread-1] INFO o.a.k.c.c.i.AbstractCoordinator - (Re-)joining group g1 | |",
        "| [2024-05-14 08:21:07,517] INFO " + BROKER + " |",
        "2018-05-12 10:58:42,561 | INFO | [main] | a vendor's pipe layout keeps its columns | kafka.Logging",
    ]
    frame = spark.createDataFrame([(i, line) for i, line in enumerate(lines)], "n int, value string")
    value = F.col("value")
    everywhere = layouts.docker_unwrapped(value)
    for pattern in (layouts._CRI, layouts._COMPOSE, layouts._QUOTE, layouts._PANE, layouts._TABLE_ROW,
                    layouts._ANSI_AND_CONTROLS):
        everywhere = F.regexp_replace(everywhere, pattern, "")
    actual = frame.select("n", strip_envelope(value).alias("text"))
    assertDataFrameEqual(actual, frame.select("n", everywhere.alias("text")))
    stripped = {row.n: row.text for row in actual.collect()}
    assert stripped[2].startswith("[2024-05-14") and stripped[6].startswith('{"level"')
    assert stripped[9] == '{"level":"INFO"}' and stripped[5] == "first line\nsecond line"
    assert stripped[12] == "[2024-05-14 08:21:07,517] INFO " + BROKER
    assert stripped[13] == "a line with a \u2502 bar inside keeps it"
    assert stripped[14].endswith("(Re-)joining group g1")
    assert stripped[15] == "[2024-05-14 08:21:07,517] INFO " + BROKER
    assert stripped[16] == lines[16]


# The `<ts>|<LEVEL>|<msg>` layout of a review: ISO-8601 basic time, and Kafka's log4j logger left after the message.
PIPE_PATTERN = r"^(?P<ts>[^|]+)\|(?P<level>[A-Z]+)\|(?P<msg>.*)$"
PIPE_LINES = [
    ("pipe-broker", "20261119T090000.000|INFO|[GroupCoordinator 1]: Preparing to rebalance group orders in state "
     "PreparingRebalance with old generation 3 (__consumer_offsets-12) (reason: Adding new member m-2 with group "
     "instance id None) (kafka.coordinator.group.GroupCoordinator)"),
    ("pipe-broker", "20261119T090001.250|INFO|[GroupCoordinator 1]: Stabilized group orders generation 4 "
     "(__consumer_offsets-12) with 2 members (kafka.coordinator.group.GroupCoordinator)"),
]
PIPE_EXPECTED = [
    (1, "rebalance_started", "kafka.coordinator.group.GroupCoordinator", dt.datetime(2026, 11, 19, 9, 0, 0)),
    (2, "group_stabilized", "kafka.coordinator.group.GroupCoordinator", dt.datetime(2026, 11, 19, 9, 0, 1, 250000)),
]


@pytest.mark.parametrize("with_pattern", [True, False], ids=["own-pattern", "built-in"])
def test_a_sources_own_pattern_never_reads_a_line_worse_than_the_built_in_layouts(spark, with_pattern):
    # The message a pattern captures is cleaned like a found one (the logger suffix goes to `logger`), and an
    # ISO-8601 basic time is read both from the pattern's ts group and from the text before a found message.
    rule = {"instances": "pipe-*", "pattern": PIPE_PATTERN} if with_pattern else {"instances": "pipe-*"}
    parsed = _parse(spark, PIPE_LINES, load_config(None, {"sources": [rule]}))
    rows = parsed.orderBy("line_no").select("line_no", "event_type", "logger", "event_ts", "ts_inferred",
                                            "layout").collect()
    assert [(r.line_no, r.event_type, r.logger, r.event_ts) for r in rows] == PIPE_EXPECTED
    assert all(r.ts_inferred is None for r in rows)
    assert {r.layout for r in rows} == ({"user_0"} if with_pattern else {"anywhere"})


def test_a_sources_time_format_reads_a_shape_the_catalogue_does_not_know(spark):
    lines = [("odd-1", "19.11.2026 10h00m02|INFO|[GroupCoordinator 1]: Stabilized group orders generation 4 "
              "(__consumer_offsets-12) with 2 members")]
    cfg = load_config(None, {"sources": [{"instances": "odd-*", "pattern": PIPE_PATTERN, "tz": "Europe/Paris",
                                          "ts_format": "dd.MM.yyyy HH'h'mm'm'ss"}]})
    row = _parse(spark, lines, cfg).select("event_type", "event_ts", "ts_inferred").first()
    assert (row.event_type, row.event_ts, row.ts_inferred) == ("group_stabilized", dt.datetime(2026, 11, 19, 9, 0, 2),
                                                              None)


def test_schema_registrys_leader_election_is_read_as_a_group_member(spark):
    # Confluent Schema Registry elects its leader through Kafka's group protocol (AbstractCoordinator) under a
    # LogContext of its own: the group and client come from that prefix, in Kafka's layout and in any other.
    prefix = "[Schema registry clientId=sr-1, groupId=schema-registry] "
    joined = ("Successfully joined group with generation Generation{generationId=4, memberId='sr-1-5b2c', "
              "protocol='v1'}")
    lines = [("sr-0", f"[2026-11-19 09:00:00,000] INFO {prefix}{joined} "
              "(io.confluent.kafka.schemaregistry.leaderelector.kafka.SchemaRegistryCoordinator)"),
             ("sr-0", f"2026-11-19T09:00:01.000Z sr-0 schema-registry {prefix}(Re-)joining group")]
    rows = _parse(spark, lines, load_config(None)).orderBy("line_no").select(
        "event_type", "group_id", "client_id", "generation", "member_id").collect()
    assert [tuple(r) for r in rows] == [("client_joined", "schema-registry", "sr-1", 4, "sr-1-5b2c"),
                                        ("client_joining", "schema-registry", "sr-1", None, None)]


def test_a_pastes_typography_and_padded_levels_keep_the_time_and_level(spark):
    # A blog's typography turns a date's dashes into en or em dashes; a layout may pad the level inside its
    # brackets and print the next bracket group without a blank.
    poll = ("[Consumer clientId=consumer-orders-1, groupId=orders] consumer poll timeout has expired. This means "
            "the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, "
            "which typically implies that the poll loop is spending too much time processing messages. You can "
            "address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches "
            "returned in poll() with max.poll.records.")
    lines = [("app-1", f"2026\u201311\u201319 09:00:00.250 [WARN ][o.a.k.c.c.i.ConsumerCoordinator] {poll}"),
             ("app-1", f"[2026\u201411\u201419 09:00:01,500] [WARN ][kafka-coordinator-heartbeat-thread] {poll}")]
    rows = _parse(spark, lines, load_config(None)).orderBy("line_no").select("event_type", "level", "event_ts",
                                                                             "ts_inferred").collect()
    assert [tuple(r) for r in rows] == [
        ("client_poll_timeout", "WARN", dt.datetime(2026, 11, 19, 9, 0, 0, 250000), None),
        ("client_poll_timeout", "WARN", dt.datetime(2026, 11, 19, 9, 0, 1, 500000), None)]


def test_a_json_entry_after_a_prefix_is_read_as_json_and_a_trailing_payload_is_not(spark):
    """A runtime or a paste may put text before a JSON log entry (a compose service with Docker Desktop's time,
    syslog's time and host, a dev tool's `[service] ` tag): the entry's own message, time and group are read. A line
    that merely ends with a JSON payload holding no entry's time or level keeps its own layout."""
    entry = ('{"level":"INFO","timestamp":"2024-07-21T22:00:09.494Z","logger":"kafkajs","message":"[ConsumerGroup] '
             'Consumer has joined the group","groupId":"orders","memberId":"m-1"}')
    lines = [f"2024-07-21 22:00:09 orders-consumer-1  | {entry}", f"Jul 21 22:00:09 host-7 node[311]: {entry}",
             f"[orders-svc] {entry}", 'KafkaFlow: Partitions assigned | Data: {"GroupId":"orders","Partitions":[0]}',
             '2024-07-21 22:00:09 INFO c.e.Handler - received {"message":"[ConsumerGroup] Consumer has joined"}']
    rows = parse_file_lines(spark, lines, instance="svc-0", file_name="app.log")
    for i in (1, 2, 3):
        assert (rows[i]["layout"], rows[i]["template_id"], rows[i]["group_id"]) == ("json", "j_joined", "orders")
        assert rows[i]["event_ts"] == dt.datetime(2024, 7, 21, 22, 0, 9, 494000)
    assert rows[4]["layout"] != "json" and rows[4]["template_id"] == "cb_kafkaflow_assigned"
    assert rows[5]["layout"] == "logback_dated" and rows[5]["template_id"] is None


def test_kafkajs_through_a_text_logger_keeps_its_wording_and_its_group(spark):
    """KafkaJS through a framework's text logger (NestJS's `[Nest] 1 - <time> LOG [ServerKafka] INFO [Consumer]
    Stopped {"timestamp":..,"logger":"kafkajs","groupId":..}`): the trailing object of the entry's own fields is not
    the message, and its `groupId` names the group; a line whose own text ends with a JSON payload keeps it."""
    extras = '{"timestamp":"2024-11-08T21:58:15.120Z","logger":"kafkajs","groupId":"orders"}'
    nest = "[Nest] 1  - 11/08/2024, 9:58:15 PM     LOG [ServerKafka] INFO "
    lines = [f"{nest}[Consumer] Stopped {extras}", f"{nest}[Consumer] Starting {extras}",
             'Partitions assigned | Data: {"GroupId":"orders","logger":"x"}']
    rows = parse_file_lines(spark, lines, instance="svc-0", file_name="app.log")
    assert [(rows[i]["template_id"], rows[i]["group_id"]) for i in (1, 2)] == [("j_stopped", "orders"),
                                                                              ("j_starting", "orders")]
    assert (rows[3]["template_id"], rows[3]["group_id"]) == ("cb_kafkaflow_assigned", "orders")


def test_a_pipe_separated_layout_with_blanks_ends_the_message_at_the_next_column(spark):
    """`%d | %p | [%t] | %m | %c` (a vendor's broker layout): the message is the column, not the rest of the line."""
    line = ("2018-05-12 10:58:42,561 | INFO | [executor-Heartbeat] | [GroupCoordinator 2]: Preparing to restabilize "
            "group DemoConsumer with old generation 119 | kafka.coordinator.GroupCoordinator (Logging.scala:68)")
    row = parse_file_lines(spark, [line], instance="broker-2", file_name="server.log")[1]
    assert (row["template_id"], row["group_id"], row["generation"]) == ("b_prep_0_10", "DemoConsumer", 119)


def test_a_group_id_ending_a_wording_is_not_taken_for_pythons_module_function_and_line(spark):
    """Python's `, %(module)s-%(funcName)s-%(lineno)d` after a message (`, base-__call__-633`) is dropped; a group id
    of the same shape ending a wording (kafka-go's `..., Countries-Group-1`) stays the group."""
    lines = ["2024/11/05 09:47:18 entering loop for consumer group, Countries-Group-1",
             "2024/11/05 09:47:18 sync group finished for group, orders-group-2",
             "2024-05-14 10:21:07,482 - kafka.coordinator - INFO - Successfully joined group orders with generation 7"
             ", base-__call__-633"]
    rows = parse_file_lines(spark, lines, instance="svc-0", file_name="app.log")
    assert [(rows[i]["template_id"], rows[i]["group_id"]) for i in (1, 2)] == [
        ("g_entering_loop", "Countries-Group-1"), ("g_sync_finished", "orders-group-2")]
    assert rows[3]["group_id"] == "orders" and rows[3]["generation"] == 7


def test_brackets_a_layout_prints_before_the_kafka_prefix_are_not_the_message(spark):
    """A pattern that prints the thread after the level (`[%d] %p [%t] %m (%c)`) or an MDC before the message
    (`... %logger - [%X{trace}] %msg`, empty: `[] `) puts brackets between its own fields and the Kafka prefix;
    the message starts at the prefix, and a Kafka Streams thread's line names its application as the group."""
    thread = "payments-enricher-3f1c2a9e-0b7d-4e11-9c5a-2d8e6f4a1b70-StreamThread-2"
    lines = [
        f"[2023-03-02 11:04:17,201] INFO [{thread}] stream-thread [{thread}] State transition from RUNNING to "
        "PARTITIONS_REVOKED (org.apache.kafka.streams.processor.internals.StreamThread)",
        "2023-03-02 11:04:17.305 [listener-0-C-1] INFO o.a.k.c.c.i.ConsumerCoordinator - [] [Consumer "
        "clientId=consumer-ledger-4, groupId=ledger] Request joining group due to: group is already rebalancing",
        "2023-03-02 11:04:17.306 [listener-0-C-1] INFO o.a.k.c.c.i.ConsumerCoordinator - [trace=ab12] [Consumer "
        "clientId=consumer-ledger-4, groupId=ledger] Revoke previously assigned partitions ledger-3",
        "[2023-03-02 11:04:17,401] INFO [GroupCoordinator 1]: Stabilized group ledger generation 12 "
        "(__consumer_offsets-7) with 3 members (kafka.coordinator.group.GroupCoordinator)",
    ]
    rows = parse_file_lines(spark, lines, instance="svc-0", file_name="app.log")
    assert [(rows[i]["event_type"], rows[i]["group_id"]) for i in (1, 2, 3, 4)] == [
        ("streams_state_changed", "payments-enricher"), ("client_rejoin_requested", "ledger"),
        ("client_partitions_revoked", "ledger"), ("group_stabilized", "ledger")]


def test_an_empty_list_ending_a_wording_may_have_lost_its_trailing_blank(spark):
    """Kafka prints an empty assignment as nothing after the wording (`Adding newly assigned partitions: `); an editor
    or a paste trims the blank, and the line is still the wording, with no partitions."""
    prefix = "2021-06-09 17:40:02.118  INFO 4411 --- [ntainer#2-0-C-1] o.a.k.c.c.internals.ConsumerCoordinator  : " \
             "[Consumer clientId=consumer-audit-7, groupId=audit] "
    rows = parse_file_lines(spark, [prefix + "Adding newly assigned partitions:",
                                    prefix + "Revoke previously assigned partitions",
                                    prefix + "Adding newly assigned partitions: audit-0, audit-1"],
                            instance="svc-0", file_name="app.log")
    assert [(rows[i]["event_type"], rows[i]["group_id"], rows[i]["partitions"]) for i in (1, 2, 3)] == [
        ("client_partitions_assigned", "audit", None), ("client_partitions_revoked", "audit", None),
        ("client_partitions_assigned", "audit", "audit-0, audit-1")]


def test_a_log_pasted_as_a_table_keeps_its_group(spark):
    """A page that renders a log as a table (a gist's cells, a Markdown table) leaves each row's bars around the line:
    they are no part of the group id or the message."""
    lines = ["2016-08-31 04:15:54,433 [StreamThread-1] INFO o.a.k.c.c.i.ConsumerCoordinator - Revoking previously "
             "assigned partitions [] for group orders | |",
             "| 2016-08-31 04:15:54,434 [StreamThread-1] INFO o.a.k.c.c.i.AbstractCoordinator - (Re-)joining group "
             "orders |"]
    rows = parse_file_lines(spark, lines, instance="svc-0", file_name="app.log")
    assert [(rows[i]["event_type"], rows[i]["group_id"]) for i in (1, 2)] == [("client_partitions_revoked", "orders"),
                                                                            ("client_joining", "orders")]


def test_structlog_json_is_read_by_its_event_key_and_an_ecs_event_object_is_no_message(spark):
    """structlog's JSON renderer puts the message under `event` (aiokafka and Faust services log through it); in
    Elastic's ECS `event` is an object, never the message."""
    lines = ['{"event": "Heartbeat failed for group orders because it is rebalancing", "level": "warning", '
             '"logger": "aiokafka.consumer.group_coordinator", "timestamp": "2021-04-14T16:54:58.612669Z"}',
             '{"@timestamp": "2021-04-14T16:54:59.000Z", "event": {"dataset": "kafka.log"}, "log.level": "INFO"}',
             # A cut line whose `message` lost its closing quote: its `event` is not taken for the message.
             '{"event": "rebalance", "message": "[Consumer clientId=c-1, groupId=orders] Revoke previously assigned '
             'partitions orders-0',
             # An `event` object with a string `event` deeper down: still no message.
             '{"@timestamp": "2021-04-14T16:55:00.000Z", "event": {"kind": "x"}, "labels": {"event": "y"}}']
    rows = parse_file_lines(spark, lines, instance="svc-0", file_name="app.log")
    assert (rows[1]["layout"], rows[1]["group_id"], rows[1]["logger"]) == (
        "json", "orders", "aiokafka.consumer.group_coordinator")
    assert rows[1]["event_type"] is not None and rows[1]["event_ts"] == dt.datetime(2021, 4, 14, 16, 54, 58, 612669)
    # No message of its own: the entry is read as a plain line, not as the text of its `event` object.
    assert rows[2]["body"].startswith('{"@timestamp"') and rows[2]["template_id"] is None
    assert rows[3]["body"] != "rebalance" and rows[4]["body"].startswith('{"@timestamp"')


def test_a_group_request_cancelled_on_a_disconnect_is_the_coordinator_lost(spark):
    """Group requests go to the coordinator alone: one that NetworkClient cancels because its node disconnected says
    the member lost its coordinator's connection; a fetch cancelled the same way says nothing of the group."""
    prefix = "2025-03-02 10:00:00,000 INFO [Consumer clientId=c-1, groupId=orders] "
    tail = ("being disconnected (elapsed time since creation: 5ms, elapsed time since send: 5ms, request timeout: "
            "30000ms)")
    lines = [prefix + f"Cancelled in-flight HEARTBEAT request with correlation id 7 due to node 2147483646 {tail}",
             prefix + f"Cancelled in-flight FETCH request with correlation id 8 due to node 1 {tail}"]
    rows = parse_file_lines(spark, lines, instance="svc-0", file_name="app.log")
    assert (rows[1]["event_type"], rows[1]["group_id"]) == ("client_coordinator_disconnected", "orders")
    assert (rows[2]["event_type"], rows[2]["template_id"]) == ("noise", "c_cancelled_in_flight")
