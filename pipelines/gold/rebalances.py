"""Run the per-group timeline (pipelines/gold/timeline.py) over Spark: one applyInPandas call per output table.

A rebuild of the touched groups gives the same rows whatever order the files arrived in: every row is a function of
all the group's events, and every id is derived from the events themselves.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipelines.config import Thresholds
from pipelines.gold.timeline import Rules, Timeline
from schemas.gold import GOLD_GROUP_STATES, GOLD_MEMBER_SESSIONS
from schemas.tables import EVIDENCE, GOLD_REBALANCES

TIMELINE_INPUT = (
    "event_id string, event_ts timestamp, event_type string, source_kind string, group_id string, member_id string, "
    "old_member_id string, generation int, reason string, client_reason string, member_count int, broker_id int, "
    "instance string, client_id string, group_instance_id string, client_host string, members string, "
    "source_file string, line_no long, pause_end_ts timestamp, pause_ms double, group_epoch int, target_epoch int, "
    "state string, topics string"
)
_ORDER = ["event_ts", "source_file", "line_no"]


def rules_from(thresholds: Thresholds) -> Rules:
    """The timeline's rules from the configured thresholds."""
    names = {f.name for f in dataclasses.fields(Rules)}
    return Rules(**{k: v for k, v in thresholds.model_dump().items() if k in names})


def timeline_input(events: DataFrame, pauses: DataFrame, *, min_pause_ms: float) -> DataFrame:
    """Broker and client events of each group, plus the long GC pauses of the processes its members ran in."""
    columns = [c.split()[0] for c in TIMELINE_INPUT.split(", ")]
    grouped = events.filter(F.col("group_id").isNotNull())
    ev = grouped.select(
        *[c for c in columns if c not in ("pause_end_ts", "pause_ms")],
        F.lit(None).cast("timestamp").alias("pause_end_ts"), F.lit(None).cast("double").alias("pause_ms"),
    )
    member_instances = grouped.filter(F.col("source_kind") == "client").select("group_id", "instance").distinct()
    long_pauses = pauses.filter(F.col("duration_ms") >= min_pause_ms).join(member_instances, "instance")
    gc = long_pauses.select(
        F.col("pause_id").alias("event_id"), F.col("started_at").alias("event_ts"),
        F.lit("gc_pause").alias("event_type"), F.lit("gc").alias("source_kind"), "group_id",
        *[F.lit(None).cast(t).alias(n) for n, t in (
            ("member_id", "string"), ("old_member_id", "string"), ("generation", "int"), ("reason", "string"),
            ("client_reason", "string"), ("member_count", "int"), ("broker_id", "int"))],
        "instance",
        *[F.lit(None).cast("string").alias(n) for n in ("client_id", "group_instance_id", "client_host", "members")],
        "source_file", "line_no", F.col("ended_at").alias("pause_end_ts"), F.col("duration_ms").alias("pause_ms"),
        *[F.lit(None).cast(t).alias(n) for n, t in (
            ("group_epoch", "int"), ("target_epoch", "int"), ("state", "string"), ("topics", "string"))],
    )
    return ev.unionByName(gc)


def _records(pdf: pd.DataFrame) -> list[dict]:
    pdf = pdf.sort_values(_ORDER, kind="mergesort")
    return pdf.astype(object).where(pdf.notna(), None).to_dict("records")


def _pandas_schema(schema: StructType) -> str:
    return ", ".join(
        f"{f.name} {f.dataType.simpleString()}" if f.name != "evidence" else "evidence_json string"
        for f in schema.fields
    )


def _apply(inputs: DataFrame, rules: Rules, attribute: str, schema: StructType) -> DataFrame:
    columns = [f.name if f.name != "evidence" else "evidence_json" for f in schema.fields]

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        timeline = Timeline(pdf["group_id"].iloc[0], _records(pdf), rules)
        rows = getattr(timeline, attribute)
        rows = list(rows.values()) if isinstance(rows, dict) else rows
        return pd.DataFrame(rows, columns=columns)

    return inputs.groupBy("group_id").applyInPandas(run, schema=_pandas_schema(schema))


def rebuild_rebalances(inputs: DataFrame, rules: Rules | None = None) -> DataFrame:
    """gold_rebalances rows for every group in `inputs` (a `timeline_input` frame, or silver_events rows)."""
    inputs = _as_input(inputs)
    rows = _apply(inputs, rules or Rules(), "rebalances", GOLD_REBALANCES)
    return rows.withColumn("evidence", F.from_json("evidence_json", EVIDENCE)).select(
        [f.name for f in GOLD_REBALANCES.fields]
    )


def rebuild_states(inputs: DataFrame, rules: Rules | None = None) -> DataFrame:
    """gold_group_states rows: each state interval of each group, with its generation."""
    return _apply(_as_input(inputs), rules or Rules(), "states", GOLD_GROUP_STATES)


def rebuild_sessions(inputs: DataFrame, rules: Rules | None = None) -> DataFrame:
    """gold_member_sessions rows: each member's lifetime in its group."""
    return _apply(_as_input(inputs), rules or Rules(), "sessions", GOLD_MEMBER_SESSIONS)


def _as_input(df: DataFrame) -> DataFrame:
    """Accept silver_events-shaped frames too (tests, ad-hoc use): add the timeline columns they lack."""
    missing = [c.split() for c in TIMELINE_INPUT.split(", ") if c.split()[0] not in df.columns]
    for name, dtype in missing:
        df = df.withColumn(name, F.lit(None).cast(dtype))
    return df.select([c.split()[0] for c in TIMELINE_INPUT.split(", ")])
