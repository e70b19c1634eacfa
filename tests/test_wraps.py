"""Hard-wrapped records (pipelines/bronze/wraps.py): a record a paste, a mail archive or a terminal broke over
several physical lines is read as one line; complete lines, lists under a head and stripped pastes of bare messages
keep their lines apart. One staged batch serves every test of the module."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines.silver.outputs import accounting
from tests.conftest import staged_files

PREFIX = "[Consumer clientId=consumer-orders-1, groupId=orders] "
POLL_TIMEOUT = ("This member will leave the group because consumer poll timeout has expired. This means the time "
                "between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which "
                "typically implies that the poll loop is spending too much time processing messages. You can address "
                "this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned "
                "in poll() with max.poll.records.")
BROD_HEADER = "Group member (billing,coor=#PID<0.812.0>,cb=#PID<0.811.0>,generation={generation}):"
FILES = {
    # A book's Streams log: the record broke after `assigned `, the blank kept at the end of the line.
    "streams.log": ["2017/07/05 15:03:18.045 INFO ... Setting newly assigned ",
                    "partitions [healthchecks-2, healthchecks-3]"],
    # KafkaJS's JSON object cut by a mail archive inside its strings (one blank before or after each cut).
    "kafkajs.log": ['{"level":"ERROR","timestamp":"2021-07-22T10:14:33.977Z","logger":"kafkajs","message":"[Runner]',
                    " The group is rebalancing, ",
                    're-joining","groupId":"shows","memberId":"m-1","error":"The',
                    ' group is rebalancing, so a rejoin is needed","retryCount":0,"retryTime":92}',
                    ""],
    # Spring Boot's line split after the logger's colon and after the client prefix, each on a line of its own.
    "spring.log": ["2022-01-01 10:00:00.000  INFO 1 --- [thread-1] o.a.k.c.c.i.AbstractCoordinator$HeartbeatThread : ",
                   PREFIX,
                   POLL_TIMEOUT],
    # Sarama's lines through an application's logger, hard-wrapped at 120 columns after a comma.
    "sarama.log": ["[sarama_logger]2022/08/18 16:07:59 consumergroup/orders loop check partition number coroutine "
                   "will exit,",
                   "topics [orders]"],
    # ... but librdkafka's example callback ends each partition list with `, `: the next callback is its own line.
    "callbacks.log": ["%7|1577836800.000|CGRPOP|rdkafka#consumer-1| [thrd:main]: Group \"g\" received op ASSIGN",
                      "RebalanceCb: Local: Assign partitions: BB[0], AA[0], AA[1], ",
                      "RebalanceCb: Local: Revoke partitions: BB[0], AA[0], AA[1], ",
                      "RebalanceCb: Local: Assign partitions: BB[0], "],
    # Not wraps: Streams' task list under `Handle new assignment with:` (tabs pasted as blanks) ...
    "list.log": ["[2021-11-23 09:20:52,844] INFO stream-thread [app-StreamThread-2] Handle new assignment with:",
                 "        New active tasks: [0_0]",
                 "        New standby tasks: []",
                 "[2021-11-23 09:20:52,845] INFO stream-thread [app-StreamThread-2] State transition from "
                 "PARTITIONS_ASSIGNED to RUNNING"],
    # ... a stripped paste of bare messages, one of them ending with a blank ...
    "bare.log": [PREFIX + "Revoke previously assigned partitions orders-0 ",
                 PREFIX + "(Re-)joining group"],
    # ... one cut short with `...` (a bracket left open for good) ...
    "cut.log": [PREFIX + "Setting newly assigned partitions [orders-0, orders-1 ...",
                PREFIX + "(Re-)joining group",
                PREFIX + "Adding newly assigned partitions: orders-0"],
    # ... and an empty revoke (Java's own trailing blank) before a line of the application's without a time.
    "empty.log": ["2024-05-14 10:21:07.482  INFO 1 --- [main] o.a.k.c.c.i.ConsumerCoordinator  : " + PREFIX
                  + "Revoke previously assigned partitions ",
                  "processed 12 records"],
    # ... and log4j's `(%c)` on a line of its own after Kafka's settings dump: that record's end, not a wrap.
    "config.log": ["[2024-05-14 10:21:07,482] INFO ConsumerConfig values: ",
                   "\tclient.id = consumer-orders-1",
                   "\tgroup.id = orders",
                   " (org.apache.kafka.clients.consumer.ConsumerConfig)"],
    # brod (Erlang): a header that names the group and generation, the message on the next line (its source's
    # format, `Group member (~s,coor=~p,cb=~p,generation=~p):\n` ++ Fmt, under Elixir's console layout); a join
    # failure's reason on a third line, a received assignment's topics and partitions indented under it.
    "brod.log": ["2026-11-20 10:00:01.100 [info] " + BROD_HEADER.format(generation=7),
                 "re-joining group, reason::unknown_member_id",
                 "2026-11-20 10:00:01.200 [info] " + BROD_HEADER.format(generation=7),
                 "failed to join group",
                 "reason: :rebalance_in_progress",
                 "2026-11-20 10:00:02.300 [info] " + BROD_HEADER.format(generation=8),
                 "elected=false",
                 "2026-11-20 10:00:02.400 [info] " + BROD_HEADER.format(generation=8),
                 "assignments received:",
                 "  payments:",
                 "    partition=0 begin_offset=42"],
}


@pytest.fixture(scope="module")
def staged(spark, tmp_path_factory):
    result = staged_files(spark, tmp_path_factory.mktemp("wraps") / "instance-1", FILES)
    yield result
    result.unpersist()


def _rows(staged, name):
    parsed = staged.parsed.filter(F.element_at(F.split("source_file", "/"), -1) == name)
    return [(r.line_no, r.record_lines, r.disposition, r.event_type, r.group_id)
            for r in parsed.orderBy("line_no").collect()]


def test_a_record_wrapped_after_a_blank_is_one_event(staged):
    assert _rows(staged, "streams.log") == [(1, 2, "event", "client_partitions_assigned", None)]


def test_a_group_line_wrapped_after_a_comma_is_one_event(staged):
    assert _rows(staged, "sarama.log") == [(1, 2, "event", "client_partitions_revoked", "orders")]
    assert [(line, n, event) for line, n, _, event, _ in _rows(staged, "callbacks.log")][1:] == [
        (2, 1, "client_partitions_assigned"), (3, 1, "client_partitions_revoked"), (4, 1, "client_partitions_assigned")]


def test_a_json_record_cut_inside_its_strings_is_one_event_with_its_group(staged):
    assert _rows(staged, "kafkajs.log") == [(1, 4, "event", "client_rejoin_requested", "shows")]


def test_a_record_cut_after_its_logger_and_its_prefix_is_one_event_with_its_group(staged):
    assert _rows(staged, "spring.log") == [(1, 3, "event", "client_poll_timeout", "orders")]


def test_a_list_under_a_head_and_bare_messages_keep_their_lines_apart(staged):
    listed = _rows(staged, "list.log")
    assert [(line, n, disposition) for line, n, disposition, *_ in listed] == [(1, 3, "event"), (4, 1, "event")]
    assert [event for *_, event, _ in _rows(staged, "bare.log")] == ["client_partitions_revoked", "client_joining"]


def test_a_paste_cut_short_and_an_empty_revoke_keep_their_lines_apart(staged):
    cut = _rows(staged, "cut.log")
    assert [(line, n) for line, n, *_ in cut] == [(1, 1), (2, 1), (3, 1)]
    assert [event for *_, event, _ in cut] == ["client_partitions_assigned", "client_joining",
                                                "client_partitions_assigned"]
    assert [(line, n, event) for line, n, _, event, _ in _rows(staged, "empty.log")] == [
        (1, 1, "client_partitions_revoked")]


def test_a_header_that_ends_before_its_message_is_one_record_with_it(staged):
    parsed = staged.parsed.filter(F.element_at(F.split("source_file", "/"), -1) == "brod.log")
    events = [(r.line_no, r.record_lines, r.event_type, r.group_id, r.generation)
              for r in parsed.filter(F.col("disposition") == "event").orderBy("line_no").collect()]
    assert events == [(1, 2, "client_rejoin_requested", "billing", 7), (3, 2, "client_join_failed", "billing", 7),
                      (6, 2, "client_joined", "billing", 8), (8, 4, "client_synced", "billing", 8)]


def test_a_logger_suffix_on_a_line_of_its_own_ends_the_record_before_it(staged):
    # the suffix line is plain noise, counted by the accounting (test_every_physical_line_is_counted_once)
    assert [(line, n, disposition, event) for line, n, disposition, event, _ in _rows(staged, "config.log")] == [
        (1, 3, "event", "client_config")]


def test_a_wrap_joins_with_one_blank_except_right_after_an_opening_bracket_or_quote(spark):
    from pipelines.bronze.wraps import WRAP, unwrapped

    texts = [f'Group "orders" {WRAP}received op ASSIGN', f'"message":"{WRAP}[Runner] The group', f": [{WRAP}Consumer",
             f"(300000ms){WRAP}      exceeded by 98ms", "first line\n\tat x.y(Z.java:1)"]
    got = [r.t for r in spark.createDataFrame([(t,) for t in texts], "v string").select(
        unwrapped(F.col("v")).alias("t")).collect()]
    assert got == ['Group "orders" received op ASSIGN', '"message":"[Runner] The group', ": [Consumer",
                   "(300000ms) exceeded by 98ms", "first line\n\tat x.y(Z.java:1)"]


def test_every_physical_line_is_counted_once(staged):
    acct = accounting(staged.parsed, staged.files, batch_id=0, ingested_at=F.current_timestamp())
    totals = {r.file: (r.lines_read, r.noise_lines + r.event_lines + r.quarantined_lines)
              for r in acct.select(F.element_at(F.split("source_file", "/"), -1).alias("file"), "lines_read",
                                   "noise_lines", "event_lines", "quarantined_lines").collect()}
    assert totals == {name: (len(lines), len(lines)) for name, lines in FILES.items()}
