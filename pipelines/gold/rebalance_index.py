"""One group's rebalances indexed by start time, and the rule that ties a member's partition moves (a revoke,
assign or loss cycle) to the rebalance they belong to."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pandas as pd

from pipelines.gold.records import RebalanceRow
from pipelines.gold.replay_state import secs
from pipelines.gold.rulebook import window

# A cycle without an assignment (a member that leaves revokes before its LeaveGroup reaches the coordinator) goes
# to a rebalance that starts this soon after it, when none is under way; an assignment goes to the rebalance under
# way, or to the last one when it ended this recently (the member's callback runs in its next poll). Beyond that a
# cycle belongs to no rebalance: a static member's restart receives its partitions back without one.
LEAD_S = window("churn_lead_s")
TAIL_S = window("churn_tail_s")
# A member that goes away without a LeaveGroup (a crash, a Streams thread's clean shutdown, a static member) is
# removed when its session expires: its last revocation goes to the first rebalance its own member id triggers within
# this long (the broker caps a session timeout at group.max.session.timeout.ms, 30 minutes by default).
DEPARTURE_S = window("churn_departure_s")

@dataclass(frozen=True)
class Starts:
    """One group's rebalances in start order (ties in their given order), searched by time: a cycle finds its
    rebalance by bisection, not by a scan of all of them (a 30-day group has thousands of each)."""

    rows: list[RebalanceRow]
    at: list[pd.Timestamp]

    @classmethod
    def of(cls, rebalances: Iterable[RebalanceRow]) -> Starts:
        """The index of `rebalances` (rows with `started_at`)."""
        rows = sorted(rebalances, key=lambda r: r["started_at"])
        return cls(rows, [r["started_at"] for r in rows])

    def last_started(self, ts: pd.Timestamp) -> RebalanceRow | None:
        """The latest rebalance started at or before `ts` (the first of those that started at the same instant)."""
        before = bisect.bisect_right(self.at, ts)
        return self.rows[bisect.bisect_left(self.at, self.at[before - 1])] if before else None

    def starting_after(self, ts: pd.Timestamp, within_s: float) -> Iterator[RebalanceRow]:
        """The rebalances started after `ts`, no more than `within_s` seconds after it, in start order."""
        for index in range(bisect.bisect_right(self.at, ts), len(self.rows)):
            if secs(self.at[index] - ts) > within_s:
                return
            yield self.rows[index]


def attribute(ts: pd.Timestamp, assigned: bool, rebalances: Starts, *, instance: str | None = None,
              instance_of: dict[str, str] | None = None, until: pd.Timestamp | None = None) -> str | None:
    """The rebalance (of `rebalances`, one group's) a cycle anchored at `ts` belongs to. A cycle closed by an
    assignment: the last one started by then, if under way or ended within TAIL_S. One without (a member leaving,
    or losing its partitions): the one under way at `ts`, else one starting within LEAD_S after it, else the first one
    triggered by a member id of its process (`instance_of`: member id -> process) within DEPARTURE_S and before the
    member's next line (`until`: it came back first). None when no rebalance accounts for it."""
    instance_of = instance_of or {}
    last = rebalances.last_started(ts)
    under_way = last is not None and (last["completed_at"] is None or last["completed_at"] >= ts)
    if assigned:
        ended = last["completed_at"] if last is not None else None
        recent = under_way or (ended is not None and secs(ts - ended) <= TAIL_S)
        return str(last["rebalance_id"]) if last is not None and recent else None
    if last is not None and under_way:
        return str(last["rebalance_id"])
    soon = next(rebalances.starting_after(ts, LEAD_S), None)
    if soon is None and instance is not None:
        # No rebalance near: the one the member's own departure caused, once its session expired.
        soon = next((r for r in rebalances.starting_after(ts, DEPARTURE_S)
                     if (until is None or r["started_at"] < until)
                     and instance_of.get(r.get("trigger_member_id") or "") == instance), None)
    return str(soon["rebalance_id"]) if soon is not None else None
