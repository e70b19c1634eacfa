"""The aggregates behind the dashboards, from the gold tables (Spark SQL only)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.gold.state_order import state_time_order
from schemas.gold import GOLD_GROUP_HEALTH, GOLD_REBALANCE_STATS_HOURLY


def health_from(rebalances: DataFrame, states: DataFrame) -> DataFrame:
    """gold_group_health: per group, its current state, last rebalance, and rebalances and unavailable time in the
    hour and the day before `as_of` — the time of the newest rebalance in the data (logs may be replayed late, so
    the data's own clock, not the wall clock, defines "the last hour")."""
    as_of = rebalances.agg(F.max(F.coalesce("completed_at", "started_at")).alias("as_of"))
    latest_state = Window.partitionBy("group_id").orderBy(*state_time_order(newest_first=True))
    current = (
        states.withColumn("_n", F.row_number().over(latest_state)).filter("_n = 1")
        .select("group_id", "state", F.col("started_at").alias("state_since"), "generation")
    )
    recent = rebalances.crossJoin(as_of)
    hour = F.col("started_at") >= F.col("as_of") - F.expr("INTERVAL 1 HOUR")
    day = F.col("started_at") >= F.col("as_of") - F.expr("INTERVAL 24 HOURS")
    per_group = recent.groupBy("group_id", "as_of").agg(
        F.max("started_at").alias("last_rebalance_at"),
        F.max_by("cause", "started_at").alias("last_cause"),
        F.sum(hour.cast("long")).alias("rebalances_1h"),
        F.coalesce(F.sum(F.when(hour, F.col("duration_ms"))), F.lit(0)).alias("unavailable_ms_1h"),
        F.sum(day.cast("long")).alias("rebalances_24h"),
        F.coalesce(F.sum(F.when(day, F.col("duration_ms"))), F.lit(0)).alias("unavailable_ms_24h"),
    )
    by_cause = (
        recent.filter(day).groupBy("group_id", "cause").agg(F.count(F.lit(1)).alias("n"))
        .withColumn("_r", F.row_number().over(Window.partitionBy("group_id").orderBy(F.desc("n"), "cause")))
        .filter("_r = 1").select("group_id", F.col("cause").alias("dominant_cause_24h"))
    )
    return (
        current.join(per_group, "group_id", "full_outer").join(by_cause, "group_id", "left")
        .na.fill(0, ["rebalances_1h", "unavailable_ms_1h", "rebalances_24h", "unavailable_ms_24h"])
        .select([f.name for f in GOLD_GROUP_HEALTH.fields])
    )


def hourly_stats_from(rebalances: DataFrame) -> DataFrame:
    """gold_rebalance_stats_hourly: per hour, group and cause, the count, unavailable time and p50/p95 duration."""
    return (
        rebalances.withColumn("hour", F.date_trunc("hour", "started_at"))
        .groupBy("hour", "group_id", "cause")
        .agg(
            F.count(F.lit(1)).alias("rebalances"),
            F.sum("duration_ms").alias("unavailable_ms"),
            F.percentile_approx("duration_ms", 0.5).cast("long").alias("p50_duration_ms"),
            F.percentile_approx("duration_ms", 0.95).cast("long").alias("p95_duration_ms"),
        )
        .select([f.name for f in GOLD_REBALANCE_STATS_HOURLY.fields])
    )
