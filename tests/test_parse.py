"""Parsing lines into typed events: whole frames compared, inputs inline."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.settings.config import load_config
from pipelines.silver.outputs import to_events
from tests.conftest import parse_with

UTC = dt.timezone.utc


def _bronze(spark, instance: str, file_name: str, lines: list[str]):
    rows = [
        (f"id{i}", f"file:/landing/{instance}/{file_name}", instance, file_name,
         dt.datetime(2026, 11, 20, 12, 0), i + 1, line, len(line), 0)
        for i, line in enumerate(lines)
    ]
    schema = ("line_id string, source_file string, instance string, file_name string, file_modified_at timestamp, "
              "line_no long, value string, line_length long, batch_id long")
    return spark.createDataFrame(rows, schema).withColumn("ingested_at", F.current_timestamp())


COLUMNS = ["line_no", "disposition", "event_type", "event_ts", "group_id", "member_id", "generation", "reason",
           "client_reason", "member_count", "broker_id"]


def test_broker_lines_become_typed_events(spark):
    lines = [
        "[2024-05-14 10:21:07,482] INFO [GroupCoordinator 1]: Preparing to rebalance group orders-app in state "
        "PreparingRebalance with old generation 41 (__consumer_offsets-17) (reason: Removing member c-1-aa on "
        "LeaveGroup; client reason: consumer poll timeout has expired.) (kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-14 10:21:10,502] INFO [GroupCoordinator 1]: Stabilized group orders-app generation 42 "
        "(__consumer_offsets-17) with 3 members (kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-14 10:21:11,000] INFO [GroupCoordinator 1]: Member c-2-bb in group orders-app has failed, "
        "removing it from the group (kafka.coordinator.group.GroupCoordinator)",
        "[2018-01-01 00:00:00,000] INFO [GroupCoordinator 0]: Preparing to rebalance group old.group with old "
        "generation 3 (__consumer_offsets-2) (kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-14 10:21:12,000] INFO [GroupCoordinator 1]: A wording no template knows for group orders-app "
        "generation 42 (kafka.coordinator.group.GroupCoordinator)",
        "[2024-05-14 10:21:13,000] INFO [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Truncating partition "
        "x-0 to offset 5 (kafka.server.ReplicaFetcherThread)",
    ]
    parsed = parse_with(_bronze(spark, "broker-1", "server.log", lines), load_config())
    ts = lambda *a: dt.datetime(*a)  # noqa: E731 - session time zone is UTC
    expected = spark.createDataFrame(
        [
            (1, "event", "rebalance_started", ts(2024, 5, 14, 10, 21, 7, 482000), "orders-app", None, 41,
             "Removing member c-1-aa on LeaveGroup", "consumer poll timeout has expired.", None, 1),
            (2, "event", "group_stabilized", ts(2024, 5, 14, 10, 21, 10, 502000), "orders-app", None, 42, None, None,
             3, 1),
            (3, "event", "member_failed", ts(2024, 5, 14, 10, 21, 11), "orders-app", "c-2-bb", None, None, None,
             None, 1),
            (4, "event", "rebalance_started", ts(2018, 1, 1), "old.group", None, 3, None, None, None, 0),
            (5, "quarantine", None, ts(2024, 5, 14, 10, 21, 12), None, None, None, None,
             None, None, 1),
            (6, "noise", None, ts(2024, 5, 14, 10, 21, 13), None, None, None, None, None, None, None),
        ],
        parsed.select(COLUMNS).schema,
    )
    assertDataFrameEqual(parsed.select(COLUMNS), expected)


def test_client_lines_in_other_layouts_and_zones(spark):
    lines = [
        "2023-06-01 10:21:07.512  INFO 4242 --- [ntainer#0-0-C-1] o.a.k.c.c.internals.ConsumerCoordinator  : "
        "[Consumer clientId=consumer-orders-1, groupId=orders] Request joining group due to: cached metadata has "
        "changed from (version1: {t=1}) at the beginning of the rebalance to (version2: {t=2})",
        "10:21:07.530 [main] INFO  o.a.k.c.c.i.ConsumerCoordinator -- [Consumer instanceId=orders-0, "
        "clientId=consumer-orders-1, groupId=orders] Successfully joined group with generation "
        "Generation{generationId=42, memberId='consumer-orders-1-9b0d', protocol='range'}",
        "\x1b[32m10:21:07.541 [main] INFO  o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-orders-1, "
        "groupId=orders] Adding newly assigned partitions: orders-0, orders-1\x1b[0m",
    ]
    cfg = load_config(None, {"sources": [{"instances": "orders-*", "tz": "Europe/Berlin"}]})
    parsed = parse_with(_bronze(spark, "orders-svc-0", "consumer.log.2023-06-01-10", lines), cfg)
    columns = ["line_no", "layout", "event_type", "event_ts", "group_id", "member_id", "generation",
               "client_id", "group_instance_id", "reason", "partitions"]
    expected = spark.createDataFrame(
        [
            (1, "spring_boot", "client_rejoin_requested", dt.datetime(2023, 6, 1, 8, 21, 7, 512000), "orders", None,
             None, "consumer-orders-1", None,
             "cached metadata has changed from (version1: {t=1}) at the beginning of the rebalance to "
             "(version2: {t=2})",
             None),
            (2, "logback_time", "client_joined", dt.datetime(2023, 6, 1, 8, 21, 7, 530000), "orders",
             "consumer-orders-1-9b0d", 42, "consumer-orders-1", "orders-0", None, None),
            (3, "logback_time", "client_partitions_assigned", dt.datetime(2023, 6, 1, 8, 21, 7, 541000), "orders",
             None, None, "consumer-orders-1", None, None, "orders-0, orders-1"),
        ],
        parsed.select(columns).schema,
    )
    assertDataFrameEqual(parsed.select(columns), expected)


def test_gc_pause_lines(spark):
    lines = [
        "[2024-05-14T10:21:01.135+0000][12.345s][info][gc] GC(1234) Pause Young (Normal) (G1 Evacuation Pause) "
        "2048M->512M(4096M) 12.345ms",
        "[2024-05-14T10:21:09.000+0000][20.000s][info][gc] GC(1240) Pause Full (System.gc()) 100M->50M(256M) 7000.0ms",
        "2019-03-28T20:07:41.120+0800: 3644613.587: [Full GC (Allocation Failure)  3989M->3012M(4096M), 21.3456789 "
        "secs]",
        "[12.345s][info][gc] GC(12) Pause Full (System.gc()) 100M->50M(256M) 123.456ms",
    ]
    parsed = parse_with(_bronze(spark, "orders-svc-0", "gc.log", lines), load_config())
    columns = ["line_no", "disposition", "gc_end_ts", "gc_duration_ms", "collector", "pause_kind", "gc_cause",
               "quarantine_reason"]
    expected = spark.createDataFrame(
        [
            (1, "gc_pause", dt.datetime(2024, 5, 14, 10, 21, 1, 135000), 12.345, "G1", "Young", "G1 Evacuation Pause",
             None),
            (2, "gc_pause", dt.datetime(2024, 5, 14, 10, 21, 9), 7000.0, "unknown", "Full", "System.gc()", None),
            # JDK 8 stamps a collection when it starts: the pause ends 21.3 s after 12:07:41.120 UTC.
            (3, "gc_pause", dt.datetime(2019, 3, 28, 12, 8, 2, 465679), 21345.6789, "unknown", "Full",
             "Allocation Failure", None),
            (4, "quarantine", None, 123.456, "unknown", "Full", "System.gc()", "no_timestamp"),
        ],
        parsed.select(columns).schema,
    )
    assertDataFrameEqual(parsed.select(columns), expected, rtol=1e-9)


def test_a_file_without_any_time_keeps_its_order_and_says_so(spark):
    # A stripped paste: bare messages, no time anywhere in the file. Its events keep their order from the file's
    # day (the modification date here), marked so that no duration is read from them.
    lines = [
        "Member consumer-1-0f4b7bc9-a0b2-4f58-a2f9-37d4e5d0c4a1 sending LeaveGroup request to coordinator b1:9092 "
        "(id: 2147483646 rack: null) due to consumer poll timeout has expired.",
        "[Consumer clientId=consumer-1, groupId=orders] Successfully joined group with generation 8",
    ]
    rows = to_events(parse_with(_bronze(spark, "app-0", "app.log", lines))).orderBy("line_no").collect()
    assert [(r.event_type, r.ts_inferred, r.ts_line_order) for r in rows] == [
        ("client_leaving", True, True), ("client_joined", True, True)]
    assert rows[0].event_ts < rows[1].event_ts
    assert rows[0].event_ts.date() == dt.date(2026, 11, 20)
    # One timed line in the file: the others take their neighbours' time, not an order-only one.
    timed = ["[2026-11-20 10:00:00,000] INFO " + lines[1]
             + " (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)", lines[0]]
    rows = to_events(parse_with(_bronze(spark, "app-1", "app.log", timed))).orderBy("line_no").collect()
    assert [(r.ts_inferred, r.ts_line_order) for r in rows] == [(None, None), (True, None)]
    # The same when the timed line comes after: the untimed one takes the next time.
    rows = to_events(parse_with(_bronze(spark, "app-2", "app.log", timed[::-1]))).orderBy("line_no").collect()
    assert [(r.ts_inferred, r.ts_line_order) for r in rows] == [(True, None), (None, None)]
    assert rows[0].event_ts == rows[1].event_ts == dt.datetime(2026, 11, 20, 10, 0)
    # Between two timed lines, the untimed one takes the earlier time when the two agree within five minutes, and
    # none (quarantined, no_timestamp) when they do not.
    for minutes, expected in ((4, dt.datetime(2026, 11, 20, 10, 0)), (6, None)):
        between = [timed[0], lines[0], timed[0].replace("10:00:00,000", f"10:0{minutes}:00,000")]
        rows = parse_with(_bronze(spark, f"app-{minutes}", "app.log", between)).orderBy("line_no").collect()
        assert [(r.event_ts, r.disposition, r.quarantine_reason) for r in rows][1] == (
            (expected, "event", None) if expected else (None, "quarantine", "no_timestamp"))


def test_pasted_lines_quoted_or_with_redacted_broker_names_parse_as_the_originals(spark):
    # A paste quoted with Markdown's `> ` (a JSON client line, a text line): the marks are no part of the layout. A
    # librdkafka line whose broker the poster redacted (`GroupCoordinator/<broker-1>: `) keeps its message.
    lines = [
        '> {"level":"info","ts":"2022-08-08T21:53:36.432+0800","msg":"synced","group":"orders",'
        '"assigned":"t[0]"}',
        "> [2024-05-14 10:21:07,482] INFO [GroupCoordinator 1]: Stabilized group orders generation 43 "
        "(__consumer_offsets-17) with 2 members (kafka.coordinator.group.GroupCoordinator)",
        "%7|1715682067.482|HEARTBEAT|rdkafka#consumer-1| [thrd:main]: GroupCoordinator/<broker-1>: "
        "SyncGroupRequest failed: Broker: Unknown member: actions Permanent",
    ]
    rows = parse_with(_bronze(spark, "app-0", "app.log", lines)).orderBy("line_no").collect()
    assert [(r.event_type, r.group_id, r.event_ts) for r in rows] == [
        ("client_synced", "orders", dt.datetime(2022, 8, 8, 13, 53, 36, 432000)),
        ("group_stabilized", "orders", dt.datetime(2024, 5, 14, 10, 21, 7, 482000)),
        # the file's one client group
        ("client_sync_failed", "orders", dt.datetime(2024, 5, 14, 10, 21, 7, 482000)),
    ]


def test_a_line_whose_message_names_no_group_takes_it_from_the_heartbeat_threads_name_or_its_json_field(spark):
    """The Java client's heartbeat thread is named after its group, so a pattern without the client's prefix still
    names the group; KafkaJS through an application's own log creator prints its messages without their
    `[Namespace] ` (the group in the entry's field), behind the level the application prints first."""
    lines = [
        "2024-03-04 10:00:01,100 [kafka-coordinator-heartbeat-thread | slow-consumer-demo] WARN ConsumerCoordinator - "
        "consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than "
        "the configured max.poll.interval.ms",
        'error {"timestamp":"2024-03-04T10:00:02.200Z","logger":"kafkajs","message":"The group is rebalancing, '
        're-joining","groupId":"adapter-v2","memberId":"adapter-01-aa22","retryCount":0} ',
    ]
    parsed = parse_with(_bronze(spark, "app-0", "consumer.log", lines), load_config())
    rows = [(r.line_no, r.event_type, r.group_id) for r in parsed.select("line_no", "event_type", "group_id")
            .orderBy("line_no").collect()]
    assert rows == [(1, "client_poll_timeout", "slow-consumer-demo"), (2, "client_rejoin_requested", "adapter-v2")]


def test_a_logger_in_brackets_after_the_message_and_an_elided_coordinator_leave_the_wording_whole(spark):
    """log4j's `%m   [%c]` (Debezium's Connect images) puts the logger in brackets after the message: it is not the
    group of `(Re-)joining group`; a paste that drops the coordinator's address keeps the leave's reason."""
    lines = [
        "2022-09-20 05:50:21,310 INFO   ||  [Worker clientId=connect-1, groupId=1] (Re-)joining group   "
        "[org.apache.kafka.connect.runtime.distributed.WorkerCoordinator]",
        "2021-06-01 11:03:58.893   Member consumer-orders-1-aa sending LeaveGroup request to coordinator due to "
        "consumer poll timeout has expired.",
    ]
    parsed = parse_with(_bronze(spark, "app-0", "worker.log", lines), load_config())
    rows = [(r.line_no, r.event_type, r.group_id, r.reason) for r in parsed.select(
        "line_no", "event_type", "group_id", "reason").orderBy("line_no").collect()]
    # The leave names no group: it takes the one group its file names.
    assert rows == [(1, "client_joining", "1", None),
                    (2, "client_leaving", "1", "consumer poll timeout has expired.")]
