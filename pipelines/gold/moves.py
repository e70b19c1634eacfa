"""Coordinator moves in a member's story: rule rejoin_after_coordinator_move (a member's rejoin right after its group
changed coordinator) and whether a member the move expired came back (rule expiry_after_coordinator_move)."""

from __future__ import annotations

from bisect import bisect_right

import pandas as pd

from pipelines.gold.records import Evidence
from pipelines.gold.replay_state import ReplayState, secs
from pipelines.gold.rulebook import Verdict, decide, window


def rejoin_after_move(state: ReplayState, verdict: Verdict, ts: pd.Timestamp
                      ) -> tuple[Verdict, list[Evidence], str | None] | None:
    """Rule rejoin_after_coordinator_move over a member's rejoin of a Stable group at `ts` (the leader re-joining, a
    member `updating metadata`): when the group moved coordinator at most `after_outage_s` before, the rejoin is the
    member's JoinGroup, SyncGroup or heartbeat that failed while it had no coordinator (the Java client then asks to
    rejoin: `rebalance failed due to ...`), not a metadata change. A rejoin whose client reason names a change of its
    own (`cached metadata has changed`, ...) never reaches this rule: `causes.CLIENT_REASONS` decides it first. None
    when the rule does not apply."""
    limit = window("after_outage_s")
    moved = [m for m in state.moves if 0 <= secs(ts - m[0]) <= limit]
    if not moved:
        state.consider("rejoin_after_coordinator_move", False,
                       f"no coordinator move of the group in the {limit:g} s before {ts:%H:%M:%S}")
        return None
    moved_at, old, new, loaded = moved[-1]
    origin = f"from coordinator {old}" if old is not None else "from another broker or none"
    text = (f"{verdict.explanation}; the group had moved {origin} to coordinator {new} at {moved_at:%H:%M:%S}, "
            f"{secs(ts - moved_at):.1f} s before: a member whose rebalance or heartbeat failed while it had no "
            "coordinator joins again once it finds the new one")
    state.consider("rejoin_after_coordinator_move", True, text)
    return (decide("rejoin_after_coordinator_move", verdict.trigger_member_id, text),
            [{"event_id": loaded, "explanation": f"coordinator {new} loaded the group"}], None)


def came_back(state: ReplayState, member: str, expired_at: pd.Timestamp) -> pd.Timestamp | None:
    """When `member`, expired at `expired_at`, showed up again within `move_return_s`: a join of the same member id
    or of a member of the same client (`<client.id>-<uuid>`), or a line of its own process's client; `expired_at`
    itself when the group's lines end before that window does (they cannot tell); None when it did not come back.
    A consumer alive through a coordinator move that cost it its session is told so by its next heartbeat and joins
    again at once; one that stays away had stopped before the move (a restarted coordinator reads back the members
    of the group's last generation, live or not, and expires the dead ones a session timeout later)."""
    until = expired_at + pd.Timedelta(seconds=window("move_return_s"))
    if state.horizon is None or state.horizon < until:
        return expired_at
    client = state.ctx.client_of(member)
    start = bisect_right(state.arrivals, expired_at, key=lambda a: a[0])
    for ts, who in state.arrivals[start:]:
        if ts > until:
            break
        if who == member or (client is not None and state.ctx.client_of(who) == client):
            return ts
    instance = state.ctx.instance_of(member)
    later = [t for t in state.ctx.activity.get(instance or "", ()) if expired_at < t <= until]
    return later[0] if later else None
