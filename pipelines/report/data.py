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


def _share_groups(sessions: DataFrame, group_types: tuple[str, ...]) -> DataFrame:
    """Share groups (KIP-932) have no rebalances; their members' comings and goings are what the report shows."""
    if group_types and "share" not in group_types:
        return sessions.limit(0).select("group_id")
    joins = F.count("joined_at")
    leaves = F.count("left_at")
    return (sessions.filter(F.col("group_type") == "share").groupBy("group_id")
            .agg((joins + leaves).alias("membership_changes"))
            .select("group_id", F.lit(0).cast("long").alias("rebalances"),
                    F.lit(0).cast("long").alias("unavailable_ms"), F.lit(None).cast("string").alias("last_cause"),
                    F.lit("share").alias("group_type"), "membership_changes")
            .orderBy(F.desc("membership_changes"), "group_id").limit(MAX_GROUPS))


def _optional(spark: SparkSession, cfg: Config, name: str) -> DataFrame | None:
    """A table added after 0.5.0, None in a lakehouse no run of this release has written yet."""
    ref = io.table(cfg, name)
    return io.read_table(spark, cfg, name) if ref.exists(spark) else None


def _incident_details(spark: SparkSession, cfg: Config, rebalances: DataFrame) -> dict[str, list[dict[str, Any]]]:
    """For the incidents the report shows: each rebalance's partition churn and reprocessing risk, and the what-if
    verdicts that change something."""
    in_incidents = rebalances.filter(F.col("incident_id").isNotNull()).select("rebalance_id", "incident_id")
    details: dict[str, list[dict[str, Any]]] = {"churn": [], "whatif": []}
    churn = _optional(spark, cfg, "gold_partition_churn")
    if churn is not None:
        details["churn"] = _rows(churn.join(in_incidents, "rebalance_id").select(
            "incident_id", "rebalance_id", "member", "revoked", "assigned", "lost", "kept", "reprocessing_risk",
            "exposed_partitions", "first_event_at").orderBy("first_event_at", "member").limit(MAX_ROWS * 5))
    whatif = _optional(spark, cfg, "gold_whatif")
    if whatif is not None:
        details["whatif"] = _rows(whatif.filter(F.col("verdict") != "unchanged").join(in_incidents, "rebalance_id")
                                  .select("incident_id", "rebalance_id", "change", "verdict", "saved_ms",
                                          "delay_ms", "detail", "started_at")
                                  .orderBy("started_at", "change").limit(MAX_ROWS * 5))
    return details


def collect(spark: SparkSession, cfg: Config, *, group_types: tuple[str, ...] = ()) -> dict[str, list[dict[str, Any]]]:
    """Rows for each section of the report, bounded so that the page stays light; with `group_types`, only groups
    of those types (`consumer`, `streams`, `connect`, `share`). A share group is listed with its membership changes
    (no rebalance ever)."""
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
    sessions = io.read_table(spark, cfg, "gold_member_sessions")
    share = _share_groups(sessions, group_types)
    groups = [r["group_id"] for r in lost.select("group_id").collect()]
    share_groups = [r["group_id"] for r in share.select("group_id").collect()]
    in_scope = F.col("group_id").isin(groups + share_groups) if group_types else F.lit(True)
    return {
        "groups": _rows(lost) + _rows(share),
        "states": _rows(io.read_table(spark, cfg, "gold_group_states").filter(F.col("group_id").isin(groups))
                        .select("group_id", "state", "generation", "protocol", "started_at", "ended_at")
                        .orderBy("started_at", "group_id", "generation", "state")),
        "memberships": _rows(sessions.filter(F.col("group_id").isin(share_groups))
                             .select("group_id", "member_id", "joined_at", "left_at", "end_reason")
                             .orderBy("joined_at", "group_id", "member_id").limit(MAX_ROWS * 5)),
        "rebalances": _rows(rebalances.filter(F.col("group_id").isin(groups)).select(
            "rebalance_id", "group_id", "started_at", "completed_at", "duration_ms", "cause", "cause_detail",
            "generation_after", "trigger_member_id", "incident_id").orderBy("started_at", "rebalance_id")),
        "hourly": _rows(io.read_table(spark, cfg, "gold_rebalance_stats_hourly").filter(in_scope)
                        .groupBy("hour", "cause").agg(F.sum("rebalances").alias("rebalances"))
                        .orderBy("hour", "cause")),
        "incidents": _rows(io.read_table(spark, cfg, "gold_incidents").filter(in_scope)
                           .orderBy(F.desc("unavailable_ms"), "incident_id").limit(MAX_ROWS)),
        "evidence": _rows(rebalances.filter(F.col("incident_id").isNotNull()).select(
            "incident_id", "rebalance_id", "started_at", "cause", "cause_detail", "evidence")
            .orderBy("started_at", "rebalance_id").limit(MAX_ROWS * 5)),
        # Each group's advice, the one whose what-if avoids the most rebalances first.
        **_incident_details(spark, cfg, rebalances),
        "advice": _rows(io.read_table(spark, cfg, "gold_config_advice").filter(in_scope)
                        .orderBy("group_id", F.desc_nulls_last("avoided_rebalances"), "rule")),
        "alerts": _rows(io.read_table(spark, cfg, "gold_alerts").filter(in_scope)
                        .orderBy(F.desc("opened_at"), "alert_id").limit(MAX_ROWS)),
    }
