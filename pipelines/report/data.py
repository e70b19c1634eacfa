"""Collect what the report shows from the gold tables (the only Spark part of the report)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import io
from pipelines.config import Config

MAX_GROUPS = 30
MAX_ROWS = 200


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def collect(spark: SparkSession, cfg: Config, *, group_types: tuple[str, ...] = ()) -> dict[str, list[dict[str, Any]]]:
    """Rows for each section of the report, bounded so that the page stays light; with `group_types`, only groups
    of those types (`consumer`, `streams`, `connect`)."""
    rebalances = io.read_table(spark, cfg, "gold_rebalances")
    if group_types:
        rebalances = rebalances.filter(F.coalesce(F.col("group_type"), F.lit("consumer")).isin(list(group_types)))
    lost = (
        rebalances.groupBy("group_id")
        .agg(F.count(F.lit(1)).alias("rebalances"), F.sum("duration_ms").alias("unavailable_ms"),
             F.max_by("cause", "started_at").alias("last_cause"),
             F.coalesce(F.max("group_type"), F.lit("consumer")).alias("group_type"))
        .orderBy(F.desc("unavailable_ms"), "group_id").limit(MAX_GROUPS)
    )
    groups = [r["group_id"] for r in lost.select("group_id").collect()]
    in_scope = F.col("group_id").isin(groups) if group_types else F.lit(True)
    return {
        "groups": _rows(lost),
        "states": _rows(io.read_table(spark, cfg, "gold_group_states").filter(F.col("group_id").isin(groups))
                        .select("group_id", "state", "generation", "started_at", "ended_at").orderBy("started_at")),
        "rebalances": _rows(rebalances.filter(F.col("group_id").isin(groups)).select(
            "rebalance_id", "group_id", "started_at", "completed_at", "duration_ms", "cause", "cause_detail",
            "generation_after", "trigger_member_id").orderBy("started_at")),
        "hourly": _rows(io.read_table(spark, cfg, "gold_rebalance_stats_hourly").filter(in_scope)
                        .groupBy("hour", "cause").agg(F.sum("rebalances").alias("rebalances")).orderBy("hour")),
        "incidents": _rows(io.read_table(spark, cfg, "gold_incidents").filter(in_scope)
                           .orderBy(F.desc("unavailable_ms")).limit(MAX_ROWS)),
        "evidence": _rows(rebalances.filter(F.col("incident_id").isNotNull()).select(
            "incident_id", "rebalance_id", "started_at", "cause", "cause_detail", "evidence").orderBy("started_at")
            .limit(MAX_ROWS * 5)),
        "advice": _rows(io.read_table(spark, cfg, "gold_config_advice").filter(in_scope).orderBy("group_id", "rule")),
        "alerts": _rows(io.read_table(spark, cfg, "gold_alerts").filter(in_scope).orderBy(F.desc("opened_at"))
                        .limit(MAX_ROWS)),
    }
