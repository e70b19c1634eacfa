"""Coordinator moves in a member's story: rule rejoin_after_coordinator_move (a member's rejoin right after its group
changed coordinator) and whether a member the move expired came back (rule expiry_after_coordinator_move)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import pandas as pd

from pipelines.gold.records import Evidence
from pipelines.gold.replay_state import NEIGHBOUR_S, ReplayState, secs
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



def came_back(state: ReplayState, member: str, expired_at: pd.Timestamp) -> tuple[bool, str]:
    """Whether `member`, expired at `expired_at` just after its group moved coordinator, was alive through the move,
    and why: True when it showed up again within `move_return_s` (a join of its member id or of a member of its
    client id, a line of its own process's client) or when the lines cannot tell; False only when the expiry left
    the group empty and nothing of it came back while the group's lines went on. A consumer alive through the move is
    told by its next heartbeat and joins again at once; a restarted coordinator reads back the group's last
    generation, live members or not, and expires the dead ones a session timeout after the load. Only an emptied
    group shows a return for sure: a join into a group already rebalancing is logged at DEBUG by brokers before 4.0."""
    until = expired_at + pd.Timedelta(seconds=window("move_return_s"))
    client = state.ctx.client_of(member)
    for k in range(bisect_right(state.arrivals, expired_at, key=lambda a: a[0]), len(state.arrivals)):
        ts, who = state.arrivals[k]
        if ts > until:
            break
        if who == member or (client is not None and state.ctx.client_of(who) == client):
            return True, f"and came back at {ts:%H:%M:%S}"
    activity = state.ctx.activity.get(state.ctx.instance_of(member) or "", [])
    later = bisect_right(activity, expired_at)
    if later < len(activity) and activity[later] <= until:
        return True, f"and its client logged again at {activity[later]:%H:%M:%S}"
    emptied = bisect_left(state.empties, expired_at)
    if emptied == len(state.empties) or state.empties[emptied] > expired_at + pd.Timedelta(seconds=NEIGHBOUR_S):
        return True, "(whether it came back is not shown: the group did not empty)"
    if state.horizon is None or state.horizon < until:
        return True, f"(the group's lines end before {window('move_return_s'):g} s had passed)"
    return False, (f"but nothing of {member} came back within {window('move_return_s'):g} s of its expiry, which "
                   "emptied the group, while the group's lines went on: its consumer had most likely stopped before "
                   "the move")
