"""aiokafka's own wordings (pipelines/silver/wordings/client_aiokafka.yml): each row takes a line written in
aiokafka's exact wording (read in its source at the tags the file's header names) in two layouts of Python's
`logging`, through the real bronze-to-silver parse, with the fields it must extract; an aiokafka process is told
from a kafka-python one, in the real aiokafka excerpt 705 of the corpus too."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pipelines.bronze.prefilter import PREFILTER_LITERALS
from pipelines.gold.causes import CLIENT_REASONS
from pipelines.gold.kinds import client_kinds
from pipelines.silver.templates import load_rows
from tests.conftest import parse_file_lines

EXCERPT_705 = (Path(__file__).parent / "data" / "real-excerpts"
               / "705-aiokafka-bracket-time-colon-level-unknown-member-session-expired-loop" / "consumer.log")

COORDINATOR_LOGGER = "aiokafka.consumer.group_coordinator"
MEMBER = "aiokafka-0.12.0-5f0c2a8e-1b7d-4c3e-9a61-0d2f4b6e8a01"
TP = "TopicPartition(topic='orders', partition=0)"

# (template id, level, logger, message, fields the row must extract).
LINES = [
    ("a_synced", "INFO", COORDINATOR_LOGGER, "Successfully synced group orders-app with generation 42",
     {"group_id": "orders-app", "generation": 42}),
    ("a_join_unexpected", "ERROR", COORDINATOR_LOGGER,
     "Unexpected error in join group 'orders-app' response: [Error 27] RebalanceInProgressError",
     {"group_id": "orders-app", "reason": "[Error 27] RebalanceInProgressError"}),
    ("a_join_error_0_1", "ERROR", "aiokafka.group_coordinator",
     "Error in join group 'orders-app' response: [Error 25] UnknownMemberIdError",
     {"group_id": "orders-app", "reason": "[Error 25] UnknownMemberIdError"}),
    ("a_sync_unexpected", "ERROR", COORDINATOR_LOGGER,
     "Unexpected error from SyncGroup: [Error 58] SaslAuthenticationFailedError",
     {"reason": "[Error 58] SaslAuthenticationFailedError"}),
    ("a_sync_error_0_1", "ERROR", "aiokafka.group_coordinator",
     "Error from SyncGroup: [Error 16] NotCoordinatorForGroupError",
     {"reason": "[Error 16] NotCoordinatorForGroupError"}),
    ("a_performing_assignment", "DEBUG", COORDINATOR_LOGGER,
     "Performing assignment for group orders-app using strategy roundrobin with subscriptions "
     f"{{'{MEMBER}': ConsumerProtocolMemberMetadata(version=0, subscription=['orders'], user_data=b'')}}",
     {"group_id": "orders-app", "protocol": "roundrobin"}),
    ("a_finished_assignment", "DEBUG", COORDINATOR_LOGGER,
     f"Finished assignment for group orders-app: {{'{MEMBER}': ConsumerProtocolMemberAssignment(version=0, "
     "assignment=[(topic='orders', partitions=[0, 1])], user_data=b'')}", {"group_id": "orders-app"}),
    ("a_sync_request", "DEBUG", COORDINATOR_LOGGER,
     "Sending leader SyncGroup for group orders-app to coordinator 1: SyncGroupRequest_v1(group='orders-app', "
     f"generation_id=42, member_id='{MEMBER}', group_assignment=[])", {"group_id": "orders-app", "coordinator": "1"}),
    ("a_hb_unknown_member", "WARNING", COORDINATOR_LOGGER,
     "Heartbeat failed: local member_id was not recognized; resetting and re-joining group", {}),
    ("a_hb_send_failed", "ERROR", COORDINATOR_LOGGER,
     "Heartbeat send request failed: [Error 7] RequestTimedOutError. Will retry.",
     {"reason": "[Error 7] RequestTimedOutError"}),
    ("a_hb_failed", "ERROR", COORDINATOR_LOGGER,
     "Heartbeat failed: KafkaError('Unexpected exception in heartbeat task: InvalidSessionTimeoutError()')",
     {"reason": "KafkaError('Unexpected exception in heartbeat task: InvalidSessionTimeoutError()')"}),
    ("a_hb_skipping_0_1", "ERROR", "aiokafka.group_coordinator",
     "Skipping heartbeat: no active group: GroupCoordinatorNotAvailableError()",
     {"reason": "GroupCoordinatorNotAvailableError()"}),
    ("a_coordinator_dead_0_2", "WARNING", "aiokafka.group_coordinator",
     "Marking the coordinator dead (node 1)for group orders-app: [Error 16] NotCoordinatorForGroupError.",
     {"coordinator": "1", "group_id": "orders-app", "reason": "[Error 16] NotCoordinatorForGroupError"}),
    ("a_coordinator_dead", "WARNING", COORDINATOR_LOGGER, "Marking the coordinator dead (node 1)for group orders-app.",
     {"coordinator": "1", "group_id": "orders-app"}),
    ("a_send_failed_coordinator_dead", "ERROR", COORDINATOR_LOGGER,
     "Error sending HeartbeatRequest_v1 to node 1 [[Error 7] RequestTimedOutError] -- marking coordinator dead",
     {"coordinator": "1", "reason": "[Error 7] RequestTimedOutError"}),
    ("a_coordinator_lookup_failed", "ERROR", COORDINATOR_LOGGER,
     "Group Coordinator Request failed: [Error 15] GroupCoordinatorNotAvailableError",
     {"reason": "[Error 15] GroupCoordinatorNotAvailableError"}),
    ("a_find_coordinator", "DEBUG", "aiokafka.client", "Sending FindCoordinator request for key orders-app to broker 2",
     {"group_id": "orders-app"}),
    ("a_find_coordinator_0_2", "DEBUG", "aiokafka.group_coordinator",
     "Sending group coordinator request for group orders-app to broker 2", {"group_id": "orders-app"}),
    ("a_coordination_failed", "ERROR", COORDINATOR_LOGGER, "Unexpected error in coordinator routine", {}),
    ("a_leave_succeeded", "INFO", COORDINATOR_LOGGER, "LeaveGroup request succeeded", {}),
    ("a_leave_failed", "ERROR", COORDINATOR_LOGGER, "LeaveGroup request failed: [Error 7] RequestTimedOutError",
     {"reason": "[Error 7] RequestTimedOutError"}),
    ("a_metadata_changed", "INFO", COORDINATOR_LOGGER, "Metadata for topic has changed from {'orders': 2} to "
     "{'orders': 4}. ", {}),
    ("a_subscription_changed", "DEBUG", COORDINATOR_LOGGER,
     "Subscription changed during rebalance from {'orders'} to {'orders', 'payments'}. Rejoining group.",
     {"topics": "{'orders', 'payments'}"}),
    ("a_subscribed_pattern", "INFO", "aiokafka.consumer.consumer", "Subscribed to topic pattern: ^orders-(eu|us)$",
     {"topics": "^orders-(eu|us)$"}),
    ("a_subscription_updated", "INFO", "aiokafka.consumer.subscription_state",
     "Updating subscribed topics to: frozenset({'orders'})", {"topics": "frozenset({'orders'})"}),
    ("a_revoke_listener_failed", "ERROR", COORDINATOR_LOGGER,
     "User provided subscription listener <app.Rebalancer object at 0x7f3a2c1d5e80> for group orders-app failed "
     "on_partitions_revoked", {"group_id": "orders-app"}),
    ("a_assign_listener_failed", "ERROR", COORDINATOR_LOGGER,
     "User provided listener <app.Rebalancer object at 0x7f3a2c1d5e80> for group orders-app failed on partition "
     f"assignment: {{{TP}}}", {"group_id": "orders-app", "partitions": f"{{{TP}}}"}),
    ("a_commit_partition_retry", "INFO", COORDINATOR_LOGGER,
     f"OffsetCommit failed for group orders-app on partition {TP} due to RequestTimedOutError, will retry",
     {"group_id": "orders-app", "partitions": TP, "reason": "RequestTimedOutError"}),
    ("a_commit_partition_error", "ERROR", COORDINATOR_LOGGER,
     f"OffsetCommit failed for group orders-app on partition {TP} with offset OffsetAndMetadata(offset=42, "
     "metadata=''): TopicAuthorizationFailedError",
     {"group_id": "orders-app", "partitions": TP, "reason": "TopicAuthorizationFailedError"}),
    ("a_commit_initializing", "INFO", COORDINATOR_LOGGER,
     "OffsetCommit failed for group orders-app because group is initializing (GroupLoadInProgressError), will retry",
     {"group_id": "orders-app", "reason": "GroupLoadInProgressError"}),
    ("a_commit_coordinator", "INFO", COORDINATOR_LOGGER,
     "OffsetCommit failed for group orders-app due to a coordinator error (NotCoordinatorForGroupError), will find "
     "new coordinator and retry", {"group_id": "orders-app", "reason": "NotCoordinatorForGroupError"}),
    ("a_commit_before_join", "ERROR", COORDINATOR_LOGGER,
     "OffsetCommit failed before join, ignoring: [Error 22] IllegalGenerationError",
     {"reason": "[Error 22] IllegalGenerationError"}),
    ("a_commit_on_close", "ERROR", COORDINATOR_LOGGER,
     "Failed to commit on finallization: [Error 7] RequestTimedOutError",
     {"reason": "[Error 7] RequestTimedOutError"}),
    ("a_commit_failed", "ERROR", COORDINATOR_LOGGER,
     "OffsetCommit failed for group orders-app - RebalanceInProgressError",
     {"group_id": "orders-app", "reason": "RebalanceInProgressError"}),
    # Typed by an older client's row that aiokafka shares: the Java 0.10 discovery wording without its final period
    # (kafka-python's too), whose coordinator and group must come apart.
    ("c_discovered_0_10", "INFO", COORDINATOR_LOGGER, "Discovered coordinator 1 for group orders-app",
     {"coordinator": "1", "group_id": "orders-app"}),
]
LEVELS = {"WARNING": "WARN", "CRITICAL": "ERROR"}


def _layouts(level: str, logger: str, message: str) -> list[str]:
    """basicConfig's default `LEVEL:logger:message`, and `%(asctime)s %(levelname)s %(name)s %(message)s`."""
    return [f"{level}:{logger}:{message}", f"2024-05-14 10:21:07,482 {level} {logger} {message}"]


@pytest.fixture(scope="module")
def parsed(spark):
    return parse_file_lines(spark, [line for _, level, logger, message, _ in LINES
                                    for line in _layouts(level, logger, message)], instance="orders-svc-0")


def test_every_row_of_the_file_has_a_line_here():
    assert {t.id for t in load_rows("client_aiokafka")} == {tid for tid, *_ in LINES if tid.startswith("a_")}


@pytest.mark.parametrize("index", range(len(LINES)), ids=[row[0] for row in LINES])
def test_each_wording_takes_its_row_and_fields_in_both_layouts(parsed, index):
    template_id, level, _, _, fields = LINES[index]
    event = {t.id: t.event for t in load_rows("client_aiokafka") + load_rows("client_classic")}[template_id]
    for line_no in (2 * index + 1, 2 * index + 2):
        row = parsed[line_no]
        assert (row["template_id"], row["event_type"]) == (template_id, event), row
        assert {f: row[f] for f in fields} == fields
        assert row["level"] == LEVELS.get(level, level)
    assert parsed[2 * index + 2]["event_ts"] == dt.datetime(2024, 5, 14, 10, 21, 7, 482000)


def test_an_aiokafka_process_is_told_from_a_kafka_python_one():
    def line(instance: str, template_id: str) -> dict:
        return {"instance": instance, "template_id": template_id, "source_kind": "client"}

    # aiokafka also prints kafka-python's `Joined group ...` and `Heartbeat session expired - ...`.
    events = [line("aio-0", "p_joined_1_0"), line("aio-0", "p_session_expired_1_0"), line("aio-0", "a_synced"),
              line("kp-0", "p_joined_generation"), line("kp-0", "c_joining_0_10")]
    assert client_kinds(events) == {"aio-0": "aiokafka", "kp-0": "kafka-python"}


def test_the_real_aiokafka_excerpt_reads_as_an_aiokafka_process(spark):
    rows = list(parse_file_lines(spark, EXCERPT_705.read_text(encoding="utf-8").splitlines(),
                                 instance="orders-svc-0").values())
    assert [r["template_id"] for r in sorted(rows, key=lambda r: r["line_no"])] == [
        "a_hb_unknown_member", "p_session_expired_1_0", "a_coordinator_dead", "a_hb_unknown_member",
        "a_coordinator_dead"]
    assert {r["group_id"] for r in rows} == {"edgy-v3"}
    assert client_kinds(rows) == {"orders-svc-0": "aiokafka"}


def test_aiokafka_metadata_change_names_its_cause():
    message = "Metadata for topic has changed from {'orders': 2} to {'orders': 4}. "
    causes = [(cause, detail) for pattern, cause, detail in CLIENT_REASONS if pattern.search(message)]
    assert causes[0] == ("metadata_change", "partition_count_change")


def test_each_wording_passes_the_bronze_prefilter_without_its_logger_name():
    # A Celery-like `[time: LEVEL]: message` layout prints no logger, whose `...coordinator` would let the line in.
    missed = [tid for tid, level, _, message, _ in LINES
              if not any(literal in f"[2018-02-27 23:19:01,112: {level}]: {message}" for literal in PREFILTER_LITERALS)]
    assert missed == []
