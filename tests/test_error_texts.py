"""Group errors an application logs on their own or in a failed commit (pipelines/silver/wordings/client_errors.yml),
SmallRye's connector lines (client_callbacks.yml), and the damage text extraction does to Java's prefix: each text as
its client's error table words it (read in the clients' source), inside the wrappings applications give it, through
the real bronze-to-silver parse; and the client-only verdict a logged error leads to."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.bronze.prefilter import PREFILTER_LITERALS
from pipelines.silver.templates import load_rows, load_templates
from tests.conftest import parse_file_lines

PY_ERROR = "2024-03-01 10:00:00,123 ERROR consumer: "
GO_LOG = "2024/03/01 10:00:00 "
EXCEPTION = "org.apache.kafka.common.errors."
SMALLRYE = ('{"@timestamp":"2024-03-01T10:00:00.123Z","logger_name":"io.smallrye.reactive.messaging.kafka",'
            '"level":"INFO","message":"')

# (template id, the line as an application prints it, fields the row must extract).
LINES = [
    ("e_java_rebalancing", f"{EXCEPTION}RebalanceInProgressException: The group is rebalancing, so a rejoin is "
     "needed.", {}),
    ("e_java_unknown_member", f"Caused by: {EXCEPTION}UnknownMemberIdException: The coordinator is not aware of this "
     "member.", {}),
    ("e_java_illegal_generation", f"{EXCEPTION}IllegalGenerationException: Specified group generation id is not "
     "valid.", {}),
    ("e_java_not_coordinator", "NOT_COORDINATOR: This is not the correct coordinator.", {}),
    ("e_java_not_coordinator_0_10", f"{EXCEPTION}NotCoordinatorForGroupException: This is not the correct "
     "coordinator for this group.", {}),
    ("e_java_coordinator_unavailable", "[kafkajs] KafkaJSProtocolError: The coordinator is not available", {}),
    ("e_java_coordinator_unavailable_0_10", f"{EXCEPTION}GroupCoordinatorNotAvailableException: The group "
     "coordinator is not available.", {}),
    ("e_java_coordinator_loading", "COORDINATOR_LOAD_IN_PROGRESS: The coordinator is loading and hence can't process "
     "requests.", {}),
    ("e_java_coordinator_loading_0_10", f"{EXCEPTION}GroupLoadInProgressException: The coordinator is loading and "
     "hence can't process requests for this group.", {}),
    ("e_java_fenced_instance", f"{EXCEPTION}FencedInstanceIdException: The broker rejected this static consumer "
     "since another consumer with the same group.instance.id has registered with a different member.id.", {}),
    ("e_java_fenced_epoch", f"{EXCEPTION}FencedMemberEpochException: The member epoch is fenced by the group "
     "coordinator. The member must abandon all its partitions and rejoin.", {}),
    # The Java consumer's commit exceptions, their message logged without the class.
    ("e_java_commit_failed", "2024-03-01 10:00:00.123 ERROR [main] c.e.Listener - Commit cannot be completed since the "
     "group has already rebalanced and assigned the partitions to another member. This means that the time between "
     "subsequent calls to poll() was longer than the configured max.poll.interval.ms.", {}),
    ("e_java_commit_kicked_out", "commit failed: Offset commit cannot be completed since the consumer is not part of "
     "an active group for auto partition assignment; it is likely that the consumer was kicked out of the group.", {}),
    # confluent-kafka-python's KafkaError repr, .NET's KafkaException, a Go error, node-rdkafka's message.
    ("e_rd_rebalancing", 'KafkaError{code=REBALANCE_IN_PROGRESS,val=27,str="Broker: Group rebalance in progress"}',
     {}),
    ("e_rd_unknown_member", "Confluent.Kafka.KafkaException: Broker: Unknown member", {}),
    # librdkafka words ILLEGAL_GENERATION as Java does: the Java row takes it.
    ("e_java_illegal_generation", f"{GO_LOG}Consumer error: Broker: Specified group generation id is not valid", {}),
    ("e_rd_not_coordinator", PY_ERROR + "commit failed: Broker: Not coordinator", {}),
    ("e_rd_not_coordinator_0_9", "Error: Broker: Not coordinator for group", {}),
    ("e_rd_coordinator_unavailable", PY_ERROR + "KafkaException: Broker: Coordinator not available", {}),
    ("e_rd_coordinator_loading", "Broker: Group coordinator load in progress", {}),
    ("e_rd_fenced_instance", "Fatal: Broker: Static consumer fenced by other consumer with same group.instance.id",
     {}),
    ("e_rd_fenced_epoch", "KafkaError{code=FENCED_MEMBER_EPOCH,val=110,str=\"Broker: The member epoch is fenced by "
     "the group coordinator\"}", {}),
    ("e_sarama_rebalancing", f"{GO_LOG}Error from consumer: kafka server: A rebalance for the group is in progress. "
     "Please re-join the group", {}),
    ("e_sarama_unknown_member", f"{GO_LOG}kafka server: The provided member is not known in the current generation.",
     {}),
    ("e_sarama_illegal_generation", "kafka server: The provided generation id is not the current generation", {}),
    ("e_sarama_not_coordinator", f"{GO_LOG}kafka server: Request was for a consumer group that is not coordinated "
     "by this broker.", {}),
    ("e_sarama_coordinator_unavailable", "kafka server: Offset's topic has not yet been created", {}),
    ("e_sarama_coordinator_loading", "kafka server: The broker is still loading offsets after a leader change for "
     "that offset's topic partition", {}),
    ("e_go_rebalancing", "[27] Rebalance In Progress: the coordinator has begun rebalancing the group, the client "
     "should rejoin the group", {}),
    ("e_go_unknown_member", f"{GO_LOG}read error: [25] Unknown Member Id: the member id is not in the current "
     "generation", {}),
    ("e_go_illegal_generation", "Illegal Generation: the generation id provided in the request is not the current "
     "generation", {}),
    ("e_go_not_coordinator", "[16] Not Coordinator For Group: the broker returns this error code if it receives an "
     "offset fetch or commit request for a group that it is not a coordinator for", {}),
    ("e_go_coordinator_unavailable", "[15] Group Coordinator Not Available: the broker returns this error code for "
     "group coordinator requests, offset commits, and most group management requests if the offsets topic has not "
     "yet been created, or if the group coordinator is not active", {}),
    ("e_go_coordinator_loading", "[14] Group Load In Progress: the broker returns this error code for an offset "
     "fetch request if it is still loading offsets", {}),
    # SmallRye Reactive Messaging's Kafka connector, in Quarkus's JSON console layout and its default text layout.
    ("cb_smallrye_revoking", SMALLRYE + "SRMSG18224: Executing consumer revoked re-balance listener for group "
     "'orders'\"}", {"group_id": "orders"}),
    ("cb_smallrye_revoked", "2024-03-01 10:00:00,456 INFO  [io.sma.rea.mes.kafka] (vert.x-eventloop-thread-0) "
     "SRMSG18226: Executed consumer revoked re-balance listener for group 'orders'", {"group_id": "orders"}),
    ("cb_smallrye_assigned", SMALLRYE + "SRMSG18225: Executed consumer assigned re-balance listener for group "
     "'orders'\"}", {"group_id": "orders"}),
    ("cb_smallrye_revoke_failed", "2024-03-01 10:00:00,456 ERROR [io.sma.rea.mes.kafka] (vert.x-eventloop-thread-0) "
     "SRMSG18222: Unable to execute consumer revoked re-balance listener for group 'orders'", {"group_id": "orders"}),
    ("cb_smallrye_reenabled", "2024-03-01 10:00:00,456 WARN  [io.sma.rea.mes.kafka] (vert.x-eventloop-thread-0) "
     "SRMSG18227: Re-enabling consumer for group 'orders'. This consumer was paused because of a re-balance failure.",
     {"group_id": "orders"}),
    ("cb_smallrye_rebalance_failure", "2024-03-01 10:00:00,456 WARN  [io.sma.rea.mes.kafka] (vert.x-eventloop-thread-0"
     ") SRMSG18242: A failure has been reported during a rebalance - the operation will be retried: '[orders]'", {}),
    ("cb_smallrye_started", "2024-03-01 10:00:00,456 INFO  [io.sma.rea.mes.kafka] (main) SRMSG18257: Kafka consumer "
     "kafka-consumer-orders, connected to Kafka brokers 'kafka:9092', belongs to the 'orders' consumer group and is "
     "configured to poll records from [orders]", {"group_id": "orders", "client_id": "kafka-consumer-orders"}),
]

# Java's prefix as a PDF or an OCR'd screenshot gives it back: the blank lost, the case changed.
DAMAGED = [
    ("[ConsumerClientId=consumer-3, groupId=group1] Setting newly assigned partitions: test-1", "group1"),
    ("[ConsumerclientId=consumer-2, groupId=group1] Successfully joined group with generation 11", "group1"),
    ("2020-05-01 10:00:00.123 INFO 1 --- [main] o.a.k.c.c.i.ConsumerCoordinator : [ConsumerClientId=consumer-1, "
     "groupId=g2] Revoking previously assigned partitions []", "g2"),
]


@pytest.fixture(scope="module")
def parsed(spark):
    lines = [line for _, line, _ in LINES] + [line for line, _ in DAMAGED]
    return parse_file_lines(spark, lines, instance="svc-0", file_name="app.log",
                            modified=dt.datetime(2024, 3, 1, 12))


def test_every_error_row_has_a_line_here():
    rows = {t.id for t in load_rows("client_errors")} | {
        t.id for t in load_rows("client_callbacks") if t.id.startswith("cb_smallrye_")}
    assert rows == {tid for tid, *_ in LINES}


def test_the_rows_read_as_a_commit_after_removal_exist():
    from pipelines.gold.member_states import COMMIT_AFTER_REMOVAL_ROWS

    assert {t.template.id for t in load_templates()} >= COMMIT_AFTER_REMOVAL_ROWS
    assert {t.template.event for t in load_templates() if t.template.id in COMMIT_AFTER_REMOVAL_ROWS} == {
        "client_commit_failed"}


@pytest.mark.parametrize("index", range(len(LINES)), ids=[row[0] for row in LINES])
def test_each_error_line_takes_its_row_and_fields(parsed, index):
    template_id, line, fields = LINES[index]
    event = {t.template.id: t.template.event for t in load_templates()}[template_id]
    row = parsed[index + 1]
    assert (row["template_id"], row["event_type"]) == (template_id, event), line
    assert {f: row[f] for f in fields} == fields
    assert any(literal in line for literal in PREFILTER_LITERALS), "the bronze prefilter would drop it"


@pytest.mark.parametrize("index", range(len(DAMAGED)))
def test_a_damaged_java_prefix_still_names_the_group(parsed, index):
    row = parsed[len(LINES) + index + 1]
    assert row["template_id"] is not None, DAMAGED[index][0]
    assert row["group_id"] == DAMAGED[index][1]
    assert any(literal in DAMAGED[index][0] for literal in PREFILTER_LITERALS)


def test_an_error_quoted_or_wrapped_keeps_its_row(spark):
    """The closing quote (and brackets) after a wording is not a different message: a quoted MAXPOLL error, a
    KafkaError repr and a Python `('...')` argument take the row the bare message takes."""
    maxpoll = "Application maximum poll interval (300000ms) exceeded by 88ms"
    lines = [maxpoll, f'"{maxpoll}"', f'KafkaError{{code=_MAX_POLL_EXCEEDED,val=-147,str="{maxpoll}"}}',
             f"cimpl.KafkaException: KafkaError{{code=_MAX_POLL_EXCEEDED,val=-147,str=\"{maxpoll}\"}}",
             f"consumer error: ('{maxpoll}')"]
    rows = parse_file_lines(spark, lines, instance="py-0", file_name="app.log")
    assert [rows[i]["template_id"] for i in range(1, len(lines) + 1)] == ["r_maxpoll_error"] * len(lines)


def test_rdkafka_rubys_error_code_after_the_error_string_keeps_its_row(spark):
    """rdkafka-ruby (Racecar, Karafka) prints librdkafka's error string, then the code's symbol and the client
    instance: `Local: ... exceeded (max_poll_exceeded) [rdkafka#consumer-1]` is the MAXPOLL error string."""
    text = "Local: Maximum application poll interval (max.poll.interval.ms) exceeded"
    lines = [f"(try 1/10): Error for topic subscription #<struct ...>: {text} (max_poll_exceeded)",
             f"E, [2024-03-01T10:00:00.123456 #1] ERROR -- : {text} (max_poll_exceeded) [rdkafka#consumer-1]",
             f"{text} (max poll exceeded)"]
    rows = parse_file_lines(spark, lines, instance="rb-0", file_name="app.log")
    assert [rows[i]["template_id"] for i in range(1, 4)] == ["r_maxpoll_error_string"] * 2 + [None]


def test_a_commit_refused_after_the_group_moved_on_is_read_as_the_poll_loop_unless_a_member_came_or_went():
    """A lone CommitFailedException (the group rebalanced without the member) is Kafka's own poll-loop diagnosis; a
    leader's assignment that adds a member still decides the rebalance was that member's join."""
    from pipelines.gold.timeline import reconstruct_group
    from tests.builders import client_line

    text = "Commit cannot be completed since the group has already rebalanced and assigned the partitions"
    alone = [client_line(0, "client_joined", generation=3),
             client_line(600, "client_commit_failed", message=f"{text} to another member.",
                         template_id="e_java_commit_failed"),
             client_line(601, "client_joining")]
    verdict = reconstruct_group("g", alone)[-1]
    assert (verdict["cause"], verdict["cause_rule"]) == ("poll_timeout", "client_commit_after_removal")
    assert {a["cause"] for a in verdict["cause_alternatives"]} == {"session_timeout", "membership_change", "gc_pause"}

    def assignment(seconds: float, generation: int, members: list[str]) -> dict:
        listing = ", ".join(f"{m}=Assignment(partitions=[t-0])" for m in members)
        return client_line(seconds, "client_assignment_computed", generation=generation, members=listing,
                           member_id="consumer-1-a")

    scale_out = [client_line(0, "client_joined", generation=3, member_id="consumer-1-a"),
                 assignment(0.1, 3, ["consumer-1-a"]),
                 client_line(600, "client_commit_failed", message=f"{text} to another member.",
                             template_id="e_java_commit_failed"),
                 client_line(601, "client_joining"),
                 client_line(602, "client_joined", generation=4, member_id="consumer-1-a"),
                 assignment(602.1, 4, ["consumer-1-a", "consumer-2-b"])]
    verdict = reconstruct_group("g", scale_out)[-1]
    assert (verdict["cause"], verdict["cause_rule"]) == ("membership_change", "client_assignment_diff")


def test_a_commit_the_coordinator_refused_for_an_unknown_member_says_the_session_expired(spark):
    """kafka-python 1.0 logs only its failed commits when its session ran out (real excerpt 2026-12-03/1218): the
    coordinator's UNKNOWN_MEMBER_ID in a commit answer is the same news as in a heartbeat answer."""
    from pipelines.gold.timeline import reconstruct_group
    from tests.builders import client_line

    line = ("2016-02-27 09:11:34,636 - kafka.coordinator.consumer - ERROR - OffsetCommit failed for group logreaders "
            "due to group error (UnknownMemberIdError - 25 - Returned from group requests (offset commits/fetches, "
            "heartbeats, etc) when the memberId is not in the current generation.), will rejoin")
    row = parse_file_lines(spark, [line], instance="py-0", file_name="app.log")[1]
    assert (row["event_type"], row["group_id"]) == ("client_commit_failed", "logreaders")
    events = [client_line(0, "client_joined", generation=3),
              client_line(600, "client_commit_failed", reason=row["reason"]),
              client_line(601, "client_joining")]
    verdict = reconstruct_group("logreaders", events)[-1]
    assert (verdict["cause"], verdict["cause_rule"]) == ("session_timeout", "client_session_expired")
