"""ruby-kafka's own wordings (pipelines/silver/wordings/client_ruby_kafka.yml): each row takes a line written in
ruby-kafka's exact wording (read in its source at the tags the file's header names) through the real bronze-to-silver
parse, in Ruby's default `Logger` format both with the group tag ruby-kafka 0.7.6+ puts before a consumer's lines
(`[[<group>] {<topic>: <partitions>}:] `, which gives the group to lines that do not name it) and without it; a
ruby-kafka process is told by its lines; and the error classes it logs read as the cause rules' expiry and
coordinator signs."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.bronze.prefilter import PREFILTER_LITERALS
from pipelines.gold.client_signs import COORDINATOR_GONE, EXPIRED
from pipelines.gold.kinds import client_kinds
from pipelines.silver.templates import load_rows
from tests.conftest import parse_file_lines

GROUP = "orders-app"
MEMBER = "orders-worker-3c1d5a9e-7b2f-4e11-9a0c-5d8e2f6b1a47"

# (template id, Ruby level, message, fields the row must extract without the tag).
LINES = [
    ("y_joined", "INFO", f"Joined group `{GROUP}` with member id `{MEMBER}`", {"group_id": GROUP, "member_id": MEMBER}),
    ("y_joining", "INFO", f"Joining group `{GROUP}`", {"group_id": GROUP}),
    ("y_leader", "INFO", f"Chosen as leader of group `{GROUP}`", {"group_id": GROUP}),
    ("y_assigned", "INFO", "Partitions assigned for `orders`: 0, 1, 2", {"topics": "orders"}),
    ("y_leaving", "INFO", f"Leaving group `{GROUP}`", {"group_id": GROUP}),
    ("y_join_reset", "ERROR", "Failed to join group; resetting member id and retrying in 1s...", {}),
    ("y_join_loading", "ERROR", "Coordinator broker still loading, retrying in 1s...", {}),
    ("y_join_not_coordinator", "ERROR", f"Failed to find coordinator for group `{GROUP}`; retrying...",
     {"group_id": GROUP}),
    ("y_join_connection", "ERROR", f"Connection error while trying to join group `{GROUP}`; retrying...",
     {"group_id": GROUP}),
    ("y_coordinator_not_available", "ERROR", f"Group coordinator not available for group `{GROUP}`",
     {"group_id": GROUP}),
    ("y_heartbeat_error", "WARN", "Error sending heartbeat: Kafka::RebalanceInProgress",
     {"reason": "Kafka::RebalanceInProgress"}),
    ("y_commit_error", "ERROR", "Error committing offsets: Kafka::UnknownMemberId",
     {"reason": "Kafka::UnknownMemberId"}),
    ("y_final_commit_retry", "ERROR", "Retrying to make final offsets commit (2 attempts left)", {}),
    ("y_rebalance_rejoin", "WARN", "Group rebalance in progress, re-joining...", {}),
    ("y_kicked_out", "ERROR", "Kicked out of group; rejoining", {}),
    ("y_group_rebalancing", "ERROR", "Group is rebalancing; rejoining", {}),
    ("y_heartbeat_connection", "ERROR", "Connection error while sending heartbeat; rejoining", {}),
    ("y_illegal_generation", "ERROR", "Illegal generation 7; rejoining group", {"generation": 7}),
    ("y_coordinator_is", "DEBUG", f"Coordinator for group `{GROUP}` is kafka-2:9092 (node_id=2)",
     {"group_id": GROUP}),
    ("y_coordinator_is_0_7", "DEBUG", f"Coordinator for `{GROUP}` is kafka-2:9092 (node_id=2). Connecting...",
     {"group_id": GROUP}),
    ("y_connected_coordinator", "DEBUG", f"Connected to coordinator: kafka-2:9092 (node_id=2) for group `{GROUP}`",
     {"group_id": GROUP}),
    ("y_connected_coordinator_0_7", "DEBUG", f"Connected to coordinator: kafka-2:9092 (node_id=2) for `{GROUP}`",
     {"group_id": GROUP}),
    ("y_getting_coordinator", "DEBUG", f"Getting group coordinator for `{GROUP}`", {"group_id": GROUP}),
    ("y_coordinator_retry", "DEBUG", "Coordinator not available; retrying in 1s", {}),
]
TAG = f"[[{GROUP}] {{orders: 0, 1, 2}}:] "


def _ruby(level: str, message: str) -> str:
    """Ruby's default Logger::Formatter: a severity letter, ISO time with microseconds, pid, right-aligned level."""
    return f"{level[0]}, [2024-05-14T10:21:07.482113 #4242] {level:>5} -- : {message}"


@pytest.fixture(scope="module")
def parsed(spark):
    return parse_file_lines(spark, [_ruby(level, prefix + message) for _, level, message, _ in LINES
                                    for prefix in ("", TAG)], instance="orders-worker-0")


def test_every_row_of_the_file_has_a_line_here():
    assert {t.id for t in load_rows("client_ruby_kafka")} == {tid for tid, *_ in LINES}


@pytest.mark.parametrize("index", range(len(LINES)), ids=[row[0] for row in LINES])
def test_each_wording_takes_its_row_time_and_level_and_the_tag_gives_its_group(parsed, index):
    template_id, level, _, fields = LINES[index]
    event = {t.id: t.event for t in load_rows("client_ruby_kafka")}[template_id]
    bare, tagged = parsed[2 * index + 1], parsed[2 * index + 2]
    for row in (bare, tagged):
        assert (row["template_id"], row["event_type"]) == (template_id, event), row
        assert {f: row[f] for f in fields} == fields
        assert row["level"] == level
        assert row["event_ts"] == dt.datetime(2024, 5, 14, 10, 21, 7, 482113)
    assert tagged["group_id"] == GROUP


def test_a_ruby_kafka_process_is_told_by_its_lines():
    def line(instance: str, template_id: str) -> dict:
        return {"instance": instance, "template_id": template_id, "source_kind": "client"}

    events = [line("rb-0", "y_joining"), line("rb-0", "y_joined"), line("java-0", "c_joining")]
    assert client_kinds(events) == {"rb-0": "ruby-kafka", "java-0": "java"}


@pytest.mark.parametrize(("reason", "expired", "coordinator_gone"), [
    ("Kafka::UnknownMemberId", True, False),
    ("Kafka::NotCoordinatorForGroup", False, True),
    ("Kafka::RebalanceInProgress", False, False),
])
def test_the_error_classes_it_logs_read_as_the_cause_rules_signs(reason, expired, coordinator_gone):
    assert (bool(EXPIRED.search(reason)), bool(COORDINATOR_GONE.search(reason))) == (expired, coordinator_gone)


def test_each_wording_passes_the_bronze_prefilter_in_its_bare_form():
    missed = [tid for tid, level, message, _ in LINES
              if not any(literal in _ruby(level, message) for literal in PREFILTER_LITERALS)]
    assert missed == []
