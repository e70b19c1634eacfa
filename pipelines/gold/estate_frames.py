"""gold_estate_incidents with Spark: the estate's rebalances and the facts the estate rules read, gathered in a few
narrow reads, handed to pipelines/gold/estate.py, and its rows made a DataFrame; and the rebalances' own
`estate_incident_id` from those rows."""

from __future__ import annotations

from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.gold.estate import LIFECYCLE_EVENTS, EstateFacts, EstateParams, find_estate_incidents
from pipelines.settings.limits import Thresholds
from schemas.gold import GOLD_ESTATE_INCIDENTS

_REBALANCE_COLUMNS = ("rebalance_id", "group_id", "started_at", "completed_at", "duration_ms", "coordinator", "cause",
                      "cause_detail", "members_before", "trigger_member_id")


def params_from(thresholds: Thresholds) -> EstateParams:
    """The estate rules' configured windows (thresholds.estate_*, and the coordinator move window)."""
    return EstateParams(window_s=thresholds.estate_window_s, min_groups=thresholds.estate_min_groups,
                        move_window_s=thresholds.coordinator_move_window_s)


def _records(df: DataFrame) -> list[dict[str, Any]]:
    pdf = df.toPandas()
    return [{str(k): (None if not isinstance(v, (list, dict)) and pd.isna(v) else v) for k, v in r.items()}
            for r in pdf.to_dict("records")]


def estate_rebalances(rebalances: DataFrame, sessions: DataFrame) -> list[dict[str, Any]]:
    """The rebalances the estate rules weigh, each with its trigger member's process folder and its first line."""
    folders = sessions.filter(F.col("instance").isNotNull()).groupBy(
        "group_id", F.col("member_id").alias("trigger_member_id")).agg(F.min("instance").alias("trigger_instance"))
    narrow = rebalances.select(*_REBALANCE_COLUMNS, F.col("evidence")[0]["event_id"].alias("start_event_id"))
    return _records(narrow.join(folders, ["group_id", "trigger_member_id"], "left"))


def estate_facts(events: DataFrame, pauses: DataFrame, states: DataFrame) -> EstateFacts:
    """What the estate rules read beside the rebalances, from silver_events, silver_gc_pauses and gold_group_states
    (one aggregate and one filter over the events)."""
    row = events.agg(
        F.collect_set(F.when(F.col("ts_line_order"), F.col("group_id"))).alias("line_order"),
        F.collect_set(F.when((F.col("source_kind") == "broker") & F.col("broker_id").isNotNull()
                             & F.col("instance").isNotNull(),
                             F.struct(F.col("broker_id").cast("string").alias("b"), F.col("instance").alias("i"))))
        .alias("folders"),
        F.collect_set(F.when(F.col("group_id").isNotNull() & F.col("offsets_partition").isNotNull(),
                             F.struct(F.col("group_id").alias("g"), F.col("offsets_partition").alias("p"))))
        .alias("partitions"),
    ).first()
    assert row is not None  # an aggregate without grouping has one row
    folders = {f["b"]: f["i"] for f in sorted(row["folders"], key=lambda f: (f["b"], f["i"]))}
    lifecycle = _records(events.filter(F.col("event_type").isin(*LIFECYCLE_EVENTS)).select(
        "event_id", "event_ts", "event_type", "group_id", "offsets_partition", "instance",
        F.col("broker_id").cast("string").alias("broker")))
    broker_pauses: list[dict[str, Any]] = []
    if folders:
        broker_pauses = _records(pauses.filter(F.col("instance").isin(*sorted(set(folders.values())))).select(
            "pause_id", "instance", "started_at", "ended_at", "duration_ms"))
    coordinated = _records(states.filter(F.col("coordinator").isNotNull()).groupBy("group_id", "coordinator").agg(
        F.min("started_at").alias("started_at"), F.max(F.coalesce("ended_at", "started_at")).alias("ended_at")))
    return EstateFacts(line_order_groups=set(row["line_order"]), broker_folders=folders, lifecycle=lifecycle,
                       group_partitions={p["g"]: p["p"] for p in row["partitions"]}, broker_pauses=broker_pauses,
                       coordinated=coordinated)


def estate_incidents_from(rebalances: DataFrame, sessions: DataFrame, states: DataFrame, events: DataFrame,
                          pauses: DataFrame, params: EstateParams) -> DataFrame:
    """gold_estate_incidents of the whole estate (every group's rebalances, sessions and states)."""
    spark = rebalances.sparkSession
    rows = find_estate_incidents(estate_rebalances(rebalances, sessions), estate_facts(events, pauses, states),
                                 params)
    for row in rows:
        # The session's clock is UTC (toPandas gave naive UTC times); a naive datetime would be read as local time.
        for name in ("started_at", "ended_at"):
            row[name] = pd.Timestamp(row[name]).tz_localize("UTC").to_pydatetime()
    return spark.createDataFrame(rows, GOLD_ESTATE_INCIDENTS)


def estate_ids(estate: DataFrame) -> DataFrame:
    """(`rebalance_id`, `estate_incident_id`) for every rebalance of an estate incident."""
    return estate.select(F.explode("rebalance_ids").alias("rebalance_id"), "estate_incident_id")


def with_estate_ids(rebalances: DataFrame, estate: DataFrame) -> DataFrame:
    """gold_rebalances rows with `estate_incident_id` from gold_estate_incidents (null outside any)."""
    return rebalances.drop("estate_incident_id").join(estate_ids(estate), "rebalance_id", "left").select(
        rebalances.columns if "estate_incident_id" in rebalances.columns
        else [*rebalances.columns, "estate_incident_id"])
