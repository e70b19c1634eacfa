"""The snapshot-replay probe (`python -m bench.prefix`): which rows a snapshot at a cut of a group's history would
freeze differently from the full replay. Pure Python over the replay's inputs (no Spark)."""

from __future__ import annotations

import pandas as pd

from bench.prefix import Stability, cuts, different_fields, group_stability
from pipelines.gold.timeline import Rules
from tests.builders import at, client_line, event, gc_pause

HOUR = 3600


def _expiry(start: float, generation: int) -> list[dict]:
    """Member m1 of app-0 expires, and the rebalance that follows is stabilized and assigned."""
    return [
        event(start, "member_expired", member_id="m1"),
        event(start + 0.01, "rebalance_started", generation=generation,
              reason="removing member m1 on heartbeat expiration"),
        event(start + 3, "group_stabilized", generation=generation + 1, member_count=1),
        event(start + 3.02, "assignment_received", generation=generation + 1, member_id="m2"),
    ]


def _rebalance(start: float, generation: int, reason: str, members: int, *, assigned: bool = True) -> list[dict]:
    """A rebalance opened by `reason`, stabilized 3 s later, and assigned by leader m2 unless not `assigned`."""
    lines = [event(start + 0.01, "rebalance_started", generation=generation, reason=reason),
             event(start + 3, "group_stabilized", generation=generation + 1, member_count=members)]
    if assigned:
        lines.append(event(start + 3.02, "assignment_received", generation=generation + 1, member_id="m2"))
    return lines


def _ordered(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (r["event_ts"], r["line_no"]))


def _measure(records: list[dict]) -> dict:
    stability = Stability()
    group_stability("g", _ordered(records), Rules(), step=pd.Timedelta(hours=1), lateness=pd.Timedelta(minutes=5),
                    into=stability)
    return stability.summary()


def test_the_cuts_step_through_a_groups_history_and_a_row_compares_by_its_public_fields():
    records = _ordered(_expiry(0, 1) + _expiry(2.5 * HOUR, 2) + _expiry(2.7 * HOUR, 3))
    # 1 h and 2 h see the same lines: only the later one is kept; 3 h is after the last line.
    assert list(cuts(records, pd.Timedelta(hours=1))) == [at(2 * HOUR)]
    assert different_fields({"cause": "a", "n": 1, "_trace": [1]}, {"cause": "b", "n": 1, "_trace": [2]}) == ["cause"]
    assert different_fields({"cause": "a"}, {"cause": "a", "outcome": "x"}) == ["outcome"]
    assert different_fields({"cause": "a"}, None) == ["(gone)"]


def test_a_history_no_later_line_changes_is_stable_at_every_cut():
    """m3 joins and leaves, m4 joins hours later: at each cut (1, 2, 3 h) the prefix's frozen rebalances, states,
    sessions and what-if rows are the full replay's."""
    summary = _measure(
        [event(0, "member_joining", member_id="m3")]
        + _rebalance(0, 1, "Adding new member m3 with group instance id None", 2)
        + [event(1800, "member_left", member_id="m3")]
        + _rebalance(1800, 2, "removing member m3 on LeaveGroup", 1)
        + [event(3 * HOUR, "member_joining", member_id="m4")]
        + _rebalance(3 * HOUR, 3, "Adding new member m4 with group instance id None", 2))
    assert {name: (summary[name]["compared"], summary[name]["differing"])
            for name in ("rebalances", "states", "sessions", "whatif")} == {
        "rebalances": (4, 0), "states": (10, 0), "sessions": (2, 0), "whatif": (4, 0)}
    assert summary["fields"] == {}


def test_a_gc_log_that_lands_later_changes_the_alternatives_of_a_frozen_rebalance():
    """Member m1's expiry at 0 s: until its process's GC log shows a pause (at 2 h), a GC pause is an open
    alternative of the session timeout; the full history closes it. Both cuts (1 h, and 2 h, which sees the client
    line but not the pause) freeze that row with the alternative the full replay no longer has."""
    summary = _measure(_expiry(0, 1) + [
        client_line(2 * HOUR, "client_joined", generation=2, member_id="m1", instance="app-0"),
        gc_pause(2 * HOUR + 5, 40_000, instance="app-0")])
    assert (summary["rebalances"]["compared"], summary["rebalances"]["differing"]) == (2, 2)
    assert summary["fields"] == {"rebalances.cause_alternatives": 2}


def test_a_rebalance_stabilized_but_never_assigned_is_closed_by_the_end_of_a_prefix_and_superseded_in_the_whole():
    """The coordinator stabilizes m3's leave but logs no assignment: at the end of a history the replay closes the
    rebalance as stabilized; when a later rebalance follows, it was superseded by it. A snapshot must keep such a
    rebalance open instead of freezing it: the probe reports it."""
    summary = _measure(
        [event(0, "member_joining", member_id="m3")]
        + _rebalance(0, 1, "Adding new member m3 with group instance id None", 2)
        + [event(1800, "member_left", member_id="m3")]
        + _rebalance(1800, 2, "removing member m3 on LeaveGroup", 1, assigned=False)
        + [event(3 * HOUR, "member_joining", member_id="m4")]
        + _rebalance(3 * HOUR, 3, "Adding new member m4 with group instance id None", 2))
    assert summary["rebalances"]["distinct_rows_differing"] == 1
    assert {"rebalances.outcome", "rebalances.completed_at"} <= set(summary["fields"])


def test_a_timed_replay_counts_the_groups_events_and_rebalances():
    from bench.prefix import replay_seconds

    timed = replay_seconds("g", _ordered(_expiry(0, 1) + _expiry(HOUR, 2)), Rules())
    assert (timed["events"], timed["rebalances"]) == (8, 2)
    assert timed["seconds"] >= 0
