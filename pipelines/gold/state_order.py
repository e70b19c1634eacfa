"""The one order of a group's gold_group_states rows, used wherever a state's predecessor or the newest state is
needed (the transition check, health, the stuck-group alert).

A group's intervals are contiguous, and several can start in the same millisecond (a zero-length
PreparingRebalance before the Empty that follows it): ties on the start are broken by the end (a zero-length
interval first, an open one last), then by the order in which the state machine passes through the states, then
by the state id so that the order is total.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_MACHINE_ORDER = ("Stable", "Empty", "Dead", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


def _machine_rank(state: Column) -> Column:
    rank = F.lit(len(_MACHINE_ORDER))
    for value, name in reversed(list(enumerate(_MACHINE_ORDER))):
        rank = F.when(state == name, value).otherwise(rank)
    return rank


def state_time_order(*, newest_first: bool = False) -> list[Column]:
    """Sort expressions for gold_group_states rows of one group: oldest first, or newest first when asked."""
    if newest_first:
        return [F.desc("started_at"), F.col("ended_at").desc_nulls_first(), _machine_rank(F.col("state")).desc(),
                F.desc("state_id")]
    return [F.asc("started_at"), F.col("ended_at").asc_nulls_last(), _machine_rank(F.col("state")).asc(),
            F.asc("state_id")]
