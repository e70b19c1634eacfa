"""Run the per-group timeline (pipelines/gold/timeline.py) over Spark: one applyInPandas call per output table.

A rebuild of the touched groups gives the same rows whatever order the files arrived in: every row is a function of
all the group's events, and every id is derived from the events themselves.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from pipelines.config import Thresholds
from pipelines.gold.timeline import Rules, Timeline
from schemas.gold import GOLD_GROUP_STATES, GOLD_MEMBER_SESSIONS
from schemas.tables import EVIDENCE, GOLD_REBALANCES
from schemas.timeline import TIMELINE_INPUT

_ORDER = ["event_ts", "source_file", "line_no"]
_PAUSE_COLUMNS = ("pause_end_ts", "pause_ms")
# A long GC pause as a timeline event of each group with a member in its process: these columns come from
# silver_gc_pauses, event_type and source_kind are constants, the others are null.
_FROM_PAUSE = {
    "event_id": "pause_id", "event_ts": "started_at", "group_id": "group_id", "instance": "instance",
    "source_file": "source_file", "line_no": "line_no", "pause_end_ts": "ended_at", "pause_ms": "duration_ms",
}
_PAUSE_CONSTANTS = {"event_type": "gc_pause", "source_kind": "gc"}


def rules_from(thresholds: Thresholds) -> Rules:
    """The timeline's rules from the configured thresholds."""
    names = {f.name for f in dataclasses.fields(Rules)}
    return Rules(**{k: v for k, v in thresholds.model_dump().items() if k in names})


def timeline_input(events: DataFrame, pauses: DataFrame, *, min_pause_ms: float) -> DataFrame:
    """Broker and client events of each group, plus the long GC pauses of the processes its members ran in
    (columns of schemas.timeline.TIMELINE_INPUT)."""
    grouped = events.filter(F.col("group_id").isNotNull())
    ev = grouped.select([
        F.lit(None).cast(f.dataType).alias(f.name) if f.name in _PAUSE_COLUMNS else _event_column(grouped, f.name)
        for f in TIMELINE_INPUT.fields
    ])
    member_instances = grouped.filter(F.col("source_kind") == "client").select("group_id", "instance").distinct()
    long_pauses = pauses.filter(F.col("duration_ms") >= min_pause_ms).join(member_instances, "instance")
    gc = long_pauses.select([_pause_column(f).alias(f.name) for f in TIMELINE_INPUT.fields])
    return ev.unionByName(gc)


def _pause_column(field: StructField) -> Column:
    if field.name in _FROM_PAUSE:
        return F.col(_FROM_PAUSE[field.name])
    if field.name in _PAUSE_CONSTANTS:
        return F.lit(_PAUSE_CONSTANTS[field.name])
    return F.lit(None).cast(field.dataType)


def _event_column(events: DataFrame, name: str) -> Column:
    """A timeline column of silver_events rows (the settings map travels as JSON)."""
    if name == "settings_json":
        return F.to_json("settings").alias(name) if "settings" in events.columns else F.lit(None).cast("string")
    return F.col(name)


def _records(pdf: pd.DataFrame) -> list[dict[str, Any]]:
    pdf = pdf.sort_values(_ORDER, kind="mergesort")
    # The ignore: pandas-stubs leaves None out of `where`'s `other`, which pandas takes (object columns keep it).
    cells = pdf.astype(object).where(pdf.notna(), None)  # type: ignore[call-overload]
    records: list[dict[str, Any]] = cells.to_dict("records")
    return records


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
    for f in TIMELINE_INPUT.fields:
        if f.name not in df.columns:
            df = df.withColumn(f.name, _event_column(df, f.name).cast(f.dataType) if f.name == "settings_json"
                               else F.lit(None).cast(f.dataType))
    return df.select(TIMELINE_INPUT.fieldNames())
