"""The snapshot-replay probe (`python -m bench.prefix`): which frozen rows a replay over a prefix of a group's history
would leave different from the full replay. Pure Python over the replay's inputs (no Spark)."""

from __future__ import annotations

import pandas as pd

from bench.prefix import Stability, cuts, different_fields, group_stability
from pipelines.gold.timeline import Rules
from tests.builders import at, client_line, event, gc_pause

HOUR = 3600


def _rebalance(start: float, generation: int, member: str = "m1") -> list[dict]:
    """A member of app-0 expires and its rejoin opens and closes one rebalance, `start` seconds after T0."""
    return [
        event(start, "member_expired", member_id=member),
        event(start + 0.01, "rebalance_started", generation=generation,
              reason=f"removing member {member} on heartbeat expiration"),
        event(start + 3, "group_stabilized", generation=generation + 1, member_count=1),
        event(start + 3.02, "assignment_received", generation=generation + 1, member_id="m2"),
    ]


def _ordered(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (r["event_ts"], r["line_no"]))


def test_the_cuts_step_through_a_groups_history_and_a_row_compares_by_its_public_fields():
    records = _ordered(_rebalance(0, 1) + _rebalance(2.5 * HOUR, 2) + _rebalance(2.7 * HOUR, 3))
    # 1 h and 2 h see the same lines: only the later one is kept; 3 h is after the last line.
    assert list(cuts(records, pd.Timedelta(hours=1))) == [at(2 * HOUR)]
    assert different_fields({"cause": "a", "n": 1, "_trace": [1]}, {"cause": "b", "n": 1, "_trace": [2]}) == ["cause"]
    assert different_fields({"cause": "a"}, None) == ["(gone)"]


def test_a_history_no_later_line_changes_is_stable_at_every_cut():
    """Three rebalances hours apart: each is frozen at every cut after it, and each cut's prefix gives its row as the
    whole history does."""
    records = _ordered(_rebalance(0, 1) + _rebalance(2 * HOUR, 2) + _rebalance(4 * HOUR, 3))
    stability = Stability()
    group_stability("g", records, Rules(), step=pd.Timedelta(hours=1), lateness=pd.Timedelta(minutes=5),
                    into=stability)
    summary = stability.summary()
    # Cuts at 1, 2, 3 and 4 h (each sees more lines than the one before): the first two freeze the first rebalance,
    # the last two both.
    assert summary["rebalances"]["compared"] == 1 + 1 + 2 + 2
    assert summary["rebalances"]["distinct_rows"] == 2
    assert summary["rebalances"]["differing"] == 0, summary["fields"]
    assert summary["states"]["compared"] > 0


def test_a_log_that_lands_later_changes_a_frozen_row_and_the_probe_names_the_field():
    """The member's process logs its own line and a GC pause only after the cut: whatever the replay reads from
    them about the earlier rebalance (the logs it had for the member) differs between the prefix and the whole."""
    records = _ordered(
        _rebalance(0, 1)
        + [client_line(-30, "client_joined", generation=1, member_id="m1", instance="app-0"),
           client_line(2 * HOUR, "client_joined", generation=2, member_id="m1", instance="app-0"),
           gc_pause(2 * HOUR + 5, 40_000, instance="app-0")])
    stability = Stability()
    group_stability("g", records, Rules(), step=pd.Timedelta(hours=1), lateness=pd.Timedelta(minutes=5),
                    into=stability)
    summary = stability.summary()
    assert summary["rebalances"]["compared"] >= 1
    assert summary["rebalances"]["differing"] >= 1
    assert "rebalances.cause_alternatives" in summary["fields"]
