"""silver_events to gold: rebuild the groups a micro-batch touched, from all their events, and MERGE the result."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines import io
from pipelines.config import Config
from pipelines.gold.rebalances import rebuild_rebalances


def make_reconstruct_batch(
    cfg: Config,
    *,
    on_progress: Callable[[str], None] | None = None,
    on_batch: Callable[[str, dict[str, int]], None] | None = None,
):
    """The foreachBatch function of the reconstruct stream (new silver events in, gold tables rebuilt)."""

    def reconstruct_batch(batch_df: DataFrame, batch_id: int) -> None:
        spark = batch_df.sparkSession
        touched = batch_df.filter(F.col("group_id").isNotNull()).select("group_id").distinct()
        groups = sorted(row.group_id for row in touched.collect())
        if not groups:
            return
        events = io.read_table(spark, cfg, "silver_events").join(
            F.broadcast(touched), "group_id"
        )
        rows = rebuild_rebalances(events).persist()
        try:
            count = rows.count()
            io.replace_keys(
                spark, rows, cfg, "gold_rebalances", key="rebalance_id", scope=F.col("t.group_id").isin(groups)
            )
        finally:
            rows.unpersist()
        if on_batch is not None:
            on_batch("reconstruct", {"gold_rebalances": count})
        if on_progress is not None:
            on_progress(f"reconstruct batch {batch_id}: {len(groups)} groups rebuilt, {count} rebalances")

    return reconstruct_batch
