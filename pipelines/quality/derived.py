"""Rules that span rows, computed as one boolean column per row so that an expectation can check it.

A null flag means there is nothing to compare with (a group's first state, an epoch's first generation); GX
leaves nulls out of its column checks.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.gold.machines import CLASSIC_TRANSITIONS, CONSUMER_ONLY_STATES, CONSUMER_TRANSITIONS
from pipelines.gold.state_order import state_time_order


def with_transition_check(states: DataFrame) -> DataFrame:
    """Add `previous_state` and `legal_transition` (previous -> this state is a transition the coordinator can
    make) to gold_group_states rows, per group in time order; null for a group's first state. A state of the
    consumer or streams protocol is held to CONSUMER_TRANSITIONS, one of the classic protocol to CLASSIC_TRANSITIONS
    (both in pipelines/gold/machines.py; rows without a protocol: a group with an Assigning or Reconciling state is a
    consumer group); the first state after a live protocol conversion may follow any state of the other protocol."""
    if "protocol" not in states.columns:  # rows written before the column
        states = states.withColumn("protocol", F.lit(None).cast("string"))
    order = Window.partitionBy("group_id").orderBy(*state_time_order())
    previous = F.lag("state").over(order)
    protocol = F.col("protocol")
    consumer = F.when(protocol.isNotNull(), protocol.isin("consumer", "streams")).otherwise(
        F.max(F.col("state").isin(*CONSUMER_ONLY_STATES)).over(Window.partitionBy("group_id")))
    classic_legal, consumer_legal = F.lit(False), F.lit(False)
    for before, after in CLASSIC_TRANSITIONS:
        classic_legal = classic_legal | ((previous == before) & (F.col("state") == after))
    for before, after in CONSUMER_TRANSITIONS:
        consumer_legal = consumer_legal | ((previous == before) & (F.col("state") == after))
    legal = F.when(consumer, consumer_legal).otherwise(classic_legal)
    # A new coordinator loads the group afresh (the old one unloads it without a logged state change), so the first
    # state under another coordinator may follow any state of the previous one.
    previous_coordinator = F.lag("coordinator").over(order)
    moved = F.coalesce(previous_coordinator != F.col("coordinator"), F.lit(False))
    converted = F.coalesce(F.lag("protocol").over(order) != protocol, F.lit(False))
    legal = legal | moved | converted
    return (
        states.withColumn("previous_state", previous)
        .withColumn("legal_transition", F.when(F.col("previous_state").isNotNull(), legal))
    )


def with_generation_check(rebalances: DataFrame) -> DataFrame:
    """Add `coordinator_epoch` and `generation_grows` to gold_rebalances rows: within one coordinator epoch of a
    group (consecutive rebalances under the same coordinator; a group re-created from generation 0 starts a new
    one) each `generation_after` is above the previous one. Null where either generation is unknown."""
    order = Window.partitionBy("group_id").orderBy("started_at", "rebalance_id")
    # A rebalance whose coordinator is unknown belongs to the coordinator seen last.
    known = F.last("coordinator", ignorenulls=True).over(order.rowsBetween(Window.unboundedPreceding, 0))
    with_known = rebalances.withColumn("_coordinator", known)
    previous = F.lag("_coordinator").over(order)
    starts = (
        (F.row_number().over(order) == 1)
        | F.coalesce(previous != F.col("_coordinator"), F.lit(False))
        | F.coalesce(F.col("generation_before") == 0, F.lit(False))
    ).cast("int")
    epochs = with_known.withColumn("coordinator_epoch", F.sum(starts).over(order))
    in_epoch = Window.partitionBy("group_id", "coordinator_epoch").orderBy("started_at", "rebalance_id").rowsBetween(
        Window.unboundedPreceding, -1)
    before = F.last("generation_after", ignorenulls=True).over(in_epoch)
    return epochs.withColumn(
        "generation_grows",
        F.when(before.isNotNull() & F.col("generation_after").isNotNull(), F.col("generation_after") > before),
    ).drop("_coordinator")
