"""The per-group state machine and cause rules (pure Python), and the Spark wrapper around them."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from pipelines.gold.causes import classify_reason
from pipelines.gold.rebalances import rebuild_rebalances
from pipelines.gold.timeline import reconstruct_group

T0 = pd.Timestamp("2026-11-20 08:00:00")


def ev(seconds: float, event_type: str, **fields) -> dict:
    n = ev.counter = getattr(ev, "counter", 0) + 1
    base = {"event_id": f"e{n}", "event_ts": T0 + pd.Timedelta(seconds=seconds), "event_type": event_type,
            "source_kind": "broker", "group_id": "g", "member_id": None, "generation": None, "reason": None,
            "client_reason": None, "member_count": None, "broker_id": 1, "source_file": "f", "line_no": n}
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("reason", "client_reason", "cause", "detail", "trigger"),
    [
        ("removing member m1 on heartbeat expiration", None, "session_timeout", "heartbeat_expiration", "m1"),
        ("Removing member m1 on LeaveGroup", "consumer poll timeout has expired.", "poll_timeout",
         "leave_on_poll_timeout", "m1"),
        ("Removing member m1 on LeaveGroup", "the consumer is being closed", "membership_change", "member_leave", "m1"),
        ("removing member m1 on LeaveGroup", None, "membership_change", "member_leave", "m1"),
        ("Adding new member m2 with group instance id None", "need to re-join with the given member-id: m2",
         "membership_change", "member_join", "m2"),
        ("Leader m1 re-joining group during Stable", "cached metadata has changed", "metadata_change",
         "partition_count_change", "m1"),
        ("Updating metadata for member m1 during Stable", None, "metadata_change", "subscription_change", "m1"),
        ("something new in Kafka 5", None, "unknown", None, None),
    ],
)
def test_reason_rules(reason, client_reason, cause, detail, trigger):
    verdict = classify_reason(reason, client_reason)
    assert (verdict.cause, verdict.detail, verdict.trigger_member_id) == (cause, detail, trigger)
    assert reason in verdict.explanation


def test_timeline_of_one_group():
    events = [
        ev(0, "rebalance_started", generation=0, reason="Adding new member m1 with group instance id None"),
        ev(3, "group_stabilized", generation=1, member_count=1),
        ev(3.1, "assignment_received", generation=1, member_id="m1"),
        ev(60, "member_failed", member_id="m1"),
        ev(60.01, "rebalance_started", generation=1, reason="removing member m1 on heartbeat expiration"),
        ev(60.02, "group_emptied", generation=2),
        ev(90, "rebalance_started", generation=2, reason="Adding new member m2 with group instance id None"),
        ev(91, "group_stabilized", generation=3, member_count=1),
        ev(91.5, "rebalance_started", generation=3, reason="Adding new member m3 with group instance id None"),
    ]
    rows = reconstruct_group("g", events)
    summary = [(r["generation_before"], r["generation_after"], r["outcome"], r["cause"], r["duration_ms"],
                r["members_before"], r["members_after"]) for r in rows]
    assert summary == [
        (0, 1, "stabilized", "membership_change", 3100, 0, 1),
        (1, 2, "emptied", "session_timeout", 10, 1, 0),
        (2, 3, "superseded", "membership_change", 1500, 0, 1),
        (3, None, "open", "membership_change", None, 1, None),
    ]
    assert len({r["rebalance_id"] for r in rows}) == 4


def test_brokers_before_2_1_print_no_reason_so_neighbours_decide():
    events = [
        ev(0, "member_failed", member_id="m1"),
        ev(0.01, "rebalance_started", generation=4),
        ev(1, "group_stabilized", generation=5),
        ev(100, "rebalance_started", generation=5),
        ev(101, "group_stabilized", generation=6),
    ]
    rows = reconstruct_group("g", events)
    assert [(r["cause"], r["trigger_member_id"]) for r in rows] == [("session_timeout", "m1"), ("unknown", None)]


def test_spark_wrapper_matches_the_pure_function(spark):
    events = [
        ev(0, "rebalance_started", generation=0, reason="Adding new member m1 with group instance id None"),
        ev(3, "group_stabilized", generation=1, member_count=1),
        ev(3.1, "assignment_received", generation=1, member_id="m1"),
    ]
    events = [{**e, "event_ts": e["event_ts"].to_pydatetime()} for e in events]
    schema = ("event_id string, event_ts timestamp, event_type string, source_kind string, group_id string, "
              "member_id string, generation int, reason string, client_reason string, member_count int, "
              "broker_id int, source_file string, line_no long")
    df = spark.createDataFrame([tuple(e.values()) for e in events], schema)
    rows = rebuild_rebalances(df).collect()
    assert len(rows) == 1
    row = rows[0]
    assert (row.group_id, row.generation_before, row.generation_after, row.cause, row.duration_ms) == (
        "g", 0, 1, "membership_change", 3100)
    assert row.started_at == dt.datetime(2026, 11, 20, 8, 0)
    assert row.evidence[0].event_id == events[0]["event_id"]


def test_a_reasonless_first_generation_is_members_joining():
    rows = reconstruct_group("g", [ev(0, "rebalance_started", generation=0), ev(3, "group_stabilized", generation=1)])
    assert [(r["cause"], r["cause_detail"]) for r in rows] == [("membership_change", "member_join")]


def test_kafka_4_leave_reason_names_the_member():
    verdict = classify_reason("explicit `LeaveGroup` request for (consumer-lab-poll-1-04d4) members.", None)
    assert (verdict.cause, verdict.detail, verdict.trigger_member_id) == ("membership_change", "member_leave",
                                                                         "consumer-lab-poll-1-04d4")
