"""The Java consumer's DEBUG lines (pipelines/silver/wordings/client_debug.yml): a paste with DEBUG on for the
coordinator classes becomes typed events of its group without a second join or leave, and the outcome a DEBUG line
alone prints (a SyncGroup failed on an unavailable coordinator) decides the client-only verdict."""

from __future__ import annotations

from pipelines.gold.timeline import reconstruct_group
from tests.builders import client_line
from tests.conftest import parse_file_lines

PREFIX = "2019-11-02 08:00:01.441 {level} 1 --- [ntainer#0-0-C-1] o.a.k.c.c.internals.{logger} : " \
         "[Consumer clientId=consumer-3, groupId=my-app] "
MEMBER = "consumer-3-0c6f3b4e-6a57-4f4e-9d0b-2f0f6a1b7c11"
COORDINATOR = "kafka-0.kafka-headless.default.svc.cluster.local:9092 (id: 2147483647 rack: null)"

# A 2.x member's rejoin at DEBUG, in the order AbstractCoordinator and ConsumerCoordinator print it.
REJOIN = [
    ("DEBUG", "ConsumerCoordinator", f"Executing onJoinPrepare with generation 7 and memberId {MEMBER}"),
    ("DEBUG", "AbstractCoordinator", "Disabling heartbeat thread"),
    ("INFO", "AbstractCoordinator", "(Re-)joining group"),
    ("DEBUG", "ConsumerCoordinator", "Joining group with current subscription: [topic-c]"),
    ("DEBUG", "AbstractCoordinator", f"Sending JoinGroup (JoinGroupRequestData(groupId='my-app', sessionTimeoutMs="
                                     f"10000, rebalanceTimeoutMs=300000, memberId='{MEMBER}', groupInstanceId=null, "
                                     f"protocolType='consumer', protocols=[])) to coordinator {COORDINATOR}"),
    ("DEBUG", "AbstractCoordinator", "Received successful JoinGroup response: JoinGroupResponseData(throttleTimeMs=0, "
                                     "errorCode=0, generationId=8, protocolName='range', leader='x', memberId='y')"),
    ("DEBUG", "AbstractCoordinator", f"Sending follower SyncGroup to coordinator {COORDINATOR}: SyncGroupRequestData("
                                     "groupId='my-app', generationId=8, assignments=[])"),
    ("DEBUG", "AbstractCoordinator", "Received successful SyncGroup response: SyncGroupResponseData(errorCode=0)"),
    ("INFO", "AbstractCoordinator", "Successfully joined group with generation 8"),
    ("DEBUG", "ConsumerCoordinator", f"Executing onJoinComplete with generation 8 and memberId {MEMBER}"),
    ("DEBUG", "AbstractCoordinator", "Enabling heartbeat thread"),
    ("DEBUG", "AbstractCoordinator", f"Sending Heartbeat request with generation 8 and member id {MEMBER} to "
                                     f"coordinator {COORDINATOR}"),
    ("DEBUG", "AbstractCoordinator", "Received successful Heartbeat response"),
]


def test_a_debug_rejoin_is_typed_without_a_second_join(spark):
    lines = [PREFIX.format(level=level, logger=logger) + message for level, logger, message in REJOIN]
    rows = parse_file_lines(spark, lines, instance="my-app-0")
    parsed = [rows[i] for i in range(1, len(lines) + 1)]
    assert [(r["disposition"], r["group_id"]) for r in parsed] == [("event", "my-app")] * len(lines)
    kinds = [r["event_type"] for r in parsed]
    # Only the INFO lines join and say the join completed; the round trips are activity or heartbeats.
    assert kinds.count("client_joining") == 1 and kinds.count("client_joined") == 1
    assert set(kinds) == {"client_group_activity", "client_joining", "client_joined", "client_heartbeat"}
    # The member id comes from the lines that print it; the generation of onJoinPrepare (the one being left) is no
    # field, so it is never read as the member's current generation.
    assert parsed[0]["member_id"] == MEMBER and parsed[0]["generation"] is None
    assert parsed[11]["member_id"] == MEMBER


def test_a_sync_failed_on_an_unavailable_coordinator_is_a_coordinator_change(spark):
    """Java's own text of COORDINATOR_NOT_AVAILABLE, in the DEBUG `SyncGroup failed: ..` of a member that was in the
    group, names the coordinator; the same line from a member still on its way in is its start."""
    line = PREFIX.format(level="DEBUG", logger="AbstractCoordinator") + \
        "SyncGroup failed: The coordinator is not available."
    row = parse_file_lines(spark, [line], instance="my-app-0")[1]
    assert (row["template_id"], row["event_type"]) == ("d_sync_failed", "client_sync_failed")
    events = [
        client_line(0, "client_joined", generation=7),
        client_line(300, "client_joining"),
        client_line(300.2, "client_sync_failed", reason=row["reason"]),
        client_line(301, "client_rejoin_requested",
                    reason="rebalance failed due to 'The coordinator is not available.'"),
    ]
    verdicts = reconstruct_group("g", events)
    assert verdicts[-1]["cause"] == "coordinator_change"
    assert verdicts[-1]["cause_rule"] == "client_coordinator_moved"
