"""The causes a rebalance's verdict does not rule out (`gold_rebalances.cause_alternatives`), from the rule book.

The rule that decided names the causes its lines are consistent with and the log that would decide each; an
alternative stays only while that log is missing from what the replay read: the trigger member's client log (its
process is known), the GC log of its process (long pauses of it were read), the coordinator's log (the group has
broker lines). Consulted and silent, a log rules its alternative out.
"""

from __future__ import annotations

from typing import Any

from pipelines.gold.context import GroupContext
from pipelines.gold.records import RebalanceRow
from pipelines.gold.rulebook import BY_ID


def cause_alternatives(row: RebalanceRow, ctx: GroupContext, *, has_broker: bool) -> list[dict[str, Any]] | None:
    """The alternatives of one gold_rebalances row (None when its rule leaves none open)."""
    entry = BY_ID.get(row.get("cause_rule") or "")
    if entry is None:
        return None
    instance = ctx.instance_of(row.get("trigger_member_id"))
    read = {"client": instance is not None, "gc": bool(instance and ctx.pauses.get(instance)), "broker": has_broker}
    open_ = [{"cause": a.cause, "confidence": a.confidence, "decided_by": f"{a.needs} log: {a.decided_by}"}
             for a in entry.alternatives if a.cause != row["cause"] and not read[a.needs]]
    return open_ or None
