"""The what-if (pipelines/gold/whatif.py) over plain rows, as the replay hands them: no Spark.

The lab corpora give the same verdicts on real clients' histories (tests/test_kafka_lab.py); these pin each rule.
"""

from __future__ import annotations

import pytest

from pipelines.gold.context import GroupContext
from pipelines.gold.whatif import Change, WhatIf, parse_change, standard_changes, whatif_rows
from pipelines.settings.config import Thresholds
from tests.builders import client_config, client_line, gc_pause
from tests.builders import rebalance as stored


def rebalance(rebalance_id: str, start: float, cause: str, detail: str, trigger: str,
              duration_ms: int = 1000) -> dict[str, object]:
    return stored(rebalance_id, start, start + duration_ms / 1000, cause=cause, cause_detail=detail,
                  trigger_member_id=trigger)


def weigh(events, rebalances, spec: str, churn=()) -> dict[str, dict[str, object]]:
    whatif = WhatIf("g", rebalances, list(churn), events, GroupContext.build(events),
                    rules=Thresholds(gc_pause_min_ms=500))
    return {row["rebalance_id"]: row for row in whatif.weigh(parse_change(spec))}


GC_EVENTS = [
    client_config("c1", **{"session.timeout.ms": "10000", "heartbeat.interval.ms": "3000"}),
    client_line(1, "client_joining", instance="c1", member_id="m1"),
    gc_pause(50, 12000, "c1"),
    client_line(62.5, "client_rejoin_requested", instance="c1", member_id="m1"),
]
GC_REBALANCES = [rebalance("expiry", 60, "gc_pause", "heartbeat_expiration", "m1", 800),
                 rebalance("back", 63, "gc_pause", "rejoin", "m1", 900)]


def test_a_session_timeout_above_the_pause_avoids_the_removal_and_its_rejoin():
    rows = weigh(GC_EVENTS, GC_REBALANCES, "session.timeout.ms=20000")
    assert {k: r["verdict"] for k, r in rows.items()} == {"expiry": "avoided", "back": "avoided"}
    assert rows["expiry"]["observed_ms"] == 15000  # the pause plus one heartbeat interval
    assert (rows["expiry"]["saved_ms"], rows["back"]["saved_ms"]) == (800, 900)
    assert "10000 ms (its logged ConsumerConfig)" in rows["expiry"]["detail"]


def test_a_session_timeout_below_the_pause_changes_nothing():
    rows = weigh(GC_EVENTS, GC_REBALANCES, "session.timeout.ms=12000")
    assert {k: r["verdict"] for k, r in rows.items()} == {"expiry": "unchanged", "back": "unchanged"}


def test_a_longer_session_timeout_detects_a_dead_member_later():
    events = [client_line(1, "client_joining", instance="c1", member_id="m1")]  # it never speaks again: killed
    rows = weigh(events, [rebalance("expiry", 46, "session_timeout", "heartbeat_expiration", "m1")],
                 "session.timeout.ms=60000")
    assert (rows["expiry"]["verdict"], rows["expiry"]["delay_ms"]) == ("later", 15000)  # the 45 s default before


def test_a_poll_interval_above_the_gap_avoids_the_leave():
    events = [
        client_config("c1", **{"max.poll.interval.ms": "6000"}),
        client_line(1, "client_joining", instance="c1", member_id="m1"),
        client_line(20, "client_poll_timeout", instance="c1", member_id="m1"),
        client_line(26, "client_joining", instance="c1", member_id="m1"),
    ]
    rebalances = [rebalance("leave", 20.1, "poll_timeout", "member_leave", "m1"),
                  rebalance("back", 26.1, "poll_timeout", "rejoin", "m1")]
    rows = weigh(events, rebalances, "max.poll.interval.ms=60000")
    assert {k: r["verdict"] for k, r in rows.items()} == {"leave": "avoided", "back": "avoided"}
    assert rows["leave"]["observed_ms"] == 12000  # 6 s to the timeout, 6 more until it polled again
    assert weigh(events, rebalances, "max.poll.interval.ms=10000")["leave"]["verdict"] == "unchanged"


def test_static_members_restarting_within_their_session_make_no_rebalance_and_leaving_for_good_one_later():
    events = [
        client_config("c1", **{"session.timeout.ms": "30000"}),
        client_line(1, "client_joining", instance="c1", member_id="m1"),
        client_line(40, "client_joining", instance="c1", member_id="m1b"),
        client_line(41, "client_joining", instance="c2", member_id="m2"),
    ]
    rebalances = [rebalance("restart-leave", 30, "membership_change", "member_leave", "m1"),
                  rebalance("restart-join", 40, "membership_change", "member_join", "m1b"),
                  rebalance("scale-down", 90, "membership_change", "member_leave", "m2")]
    rows = weigh(events, rebalances, "group.instance.id=static")
    assert {k: r["verdict"] for k, r in rows.items()} == {
        "restart-leave": "avoided", "restart-join": "avoided", "scale-down": "later"}
    assert rows["scale-down"]["delay_ms"] == 45000  # its own session timeout: the client default


def test_cooperative_assignment_stops_only_what_moves():
    churn = [{"rebalance_id": "r", "revoked": 4, "owned_before": 4, "kept": 2},
             {"rebalance_id": "r", "revoked": 0, "owned_before": 0, "kept": 0}]
    rows = weigh([], [rebalance("r", 10, "membership_change", "member_join", "m9")],
                 "partition.assignment.strategy=cooperative-sticky", churn)
    assert (rows["r"]["verdict"], rows["r"]["observed_ms"]) == ("fewer_partitions", 4)
    assert "only the 2 that moved" in rows["r"]["detail"]


def test_the_standard_changes_come_from_the_groups_own_history():
    whatif = WhatIf("g", GC_REBALANCES, [], GC_EVENTS, GroupContext.build(GC_EVENTS),
                    rules=Thresholds(gc_pause_min_ms=500))
    assert standard_changes(whatif) == [Change("session.timeout.ms", "20000")]  # 15 s observed, 1.2x, to 5 s
    assert {r["verdict"] for r in whatif_rows(whatif)} == {"avoided"}


@pytest.mark.parametrize("spec, message", [
    ("heartbeat.interval.ms=1000", "one of: session.timeout.ms"),
    ("session.timeout.ms=abc", "positive number of milliseconds"),
    ("session.timeout.ms=0", "positive number of milliseconds"),
    ("group.instance.id=pod-1", "takes 'static'"),
    ("session.timeout.ms", "give setting=value"),
])
def test_a_setting_it_cannot_weigh_is_refused_with_what_it_can(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_change(spec)
