"""Run the per-group timeline (pipelines/gold/timeline.py) over Spark: one replay per group (one applyInPandas)
gives the rows of all three timeline tables.

A rebuild of the touched groups gives the same rows whatever order the files arrived in: every row is a function of
all the group's events, and every id is derived from the events themselves.
"""

from __future__ import annotations

import json
from typing import Any, cast

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines.gold.records import TimelineEvent
from pipelines.gold.rulebook import window
from pipelines.gold.timeline import Rules, Timeline
from pipelines.settings.config import Thresholds
from schemas.gold import GOLD_GROUP_STATES, GOLD_MEMBER_SESSIONS, GOLD_PARTITION_CHURN, GOLD_WHATIF
from schemas.tables import GOLD_REBALANCES
from schemas.timeline import TIMELINE_INPUT

# The event id last: records glued onto one line (pipelines.silver.glued) share its number, and a tie must not fall
# to the order the rows arrived in.
_ORDER = ["event_ts", "source_file", "line_no", "event_id"]
_PAUSE_COLUMNS = ("pause_end_ts", "pause_ms")
# A long GC pause as a timeline event of each group with a member in its process: these columns come from
# silver_gc_pauses, event_type and source_kind are constants, the others are null.
_FROM_PAUSE = {
    "event_id": "pause_id", "event_ts": "started_at", "group_id": "group_id", "instance": "instance",
    "source_file": "source_file", "line_no": "line_no", "pause_end_ts": "ended_at", "pause_ms": "duration_ms",
}
_PAUSE_CONSTANTS = {"event_type": "gc_pause", "source_kind": "gc"}


def rules_from(thresholds: Thresholds) -> Rules:
    """The timeline's rules from the configured thresholds (the thresholds themselves: declared once)."""
    return thresholds


# A client's warning that names no group, in a file that names none either: librdkafka at its default log level
# prints its MAXPOLL and SESSTMOUT lines, and the FAIL lines of its coordinator handle, with neither group nor member
# id. Such a line goes to every group whose coordinator logged something from ORPHAN_BEFORE_S before it to
# ORPHAN_AFTER_S after it (librdkafka sends its LeaveGroup as it logs MAXPOLL, rejoins right after SESSTMOUT, and a
# coordinator it cannot reach expires it within the session timeout); there the group's own member-id rules tie it
# to a member, or leave it untied when the group has several processes of the same client id.
ORPHAN_TYPES = ("client_poll_timeout", "client_session_timeout", "client_coordinator_disconnected")
ORPHAN_BEFORE_S, ORPHAN_AFTER_S = window("orphan_before_s"), window("orphan_after_s")


def orphan_lines(events: DataFrame) -> DataFrame:
    """The group-less client warnings of `events` that `route_orphans` can place."""
    return events.filter(F.col("group_id").isNull() & (F.col("source_kind") == "client")
                         & F.col("event_type").isin(*ORPHAN_TYPES) & F.col("event_ts").isNotNull()
                         & F.col("instance").isNotNull())


def route_orphans(orphans: DataFrame, events: DataFrame) -> DataFrame:
    """`orphans` (rows of `orphan_lines`) with the group_id of each group whose broker events (in `events`) come
    near them: one row per orphan and group, none for an orphan no coordinator line is near."""
    second = F.col("event_ts").cast("long")
    minute = F.floor(second / 60)
    broker = (events.filter((F.col("source_kind") == "broker") & F.col("group_id").isNotNull())
              .select(F.col("group_id").alias("_group"), second.alias("_broker_s"), minute.alias("_minute"))
              .distinct())
    buckets = F.sequence(F.floor((second - ORPHAN_BEFORE_S) / 60), F.floor((second + ORPHAN_AFTER_S) / 60))
    near = orphans.withColumn("_orphan_s", second).withColumn("_minute", F.explode(buckets))
    routed = near.join(broker, "_minute").filter(
        F.col("_broker_s").between(F.col("_orphan_s") - ORPHAN_BEFORE_S, F.col("_orphan_s") + ORPHAN_AFTER_S))
    return (routed.withColumn("group_id", F.col("_group"))
            .drop("_group", "_broker_s", "_minute", "_orphan_s")
            .dropDuplicates(["event_id", "group_id"]))


def timeline_input(events: DataFrame, pauses: DataFrame, *, min_pause_ms: float) -> DataFrame:
    """Broker and client events of each group (with the group-less client warnings `route_orphans` places), plus
    the long GC pauses of the processes its members ran in (columns of schemas.timeline.TIMELINE_INPUT)."""
    named = events.filter(F.col("group_id").isNotNull())
    grouped = named.unionByName(route_orphans(orphan_lines(events), named))
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


def timeline_records(pdf: pd.DataFrame) -> list[TimelineEvent]:
    """A group's timeline input rows as the replay reads them: dicts in time order, nulls as None."""
    pdf = pdf.sort_values(_ORDER, kind="mergesort")
    names = [str(name) for name in pdf.columns]
    # Column by column, not `astype(object).where(...).to_dict("records")`: the same Python values (a timestamp
    # column gives pandas Timestamps either way), in half the time on a long history (80,207 events: 0.69 s
    # against 1.47 s), which every rebuild of the group pays before its replay.
    columns = []
    for name in names:
        column = pdf[name]
        values = column.tolist()
        if column.hasnans:
            values = [None if missing else value for value, missing in zip(values, column.isna().tolist(), strict=True)]
        columns.append(values)
    # The frame's columns are TIMELINE_INPUT's, the keys of TimelineEvent (tests/test_replay_parts.py).
    return cast(list[TimelineEvent], [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)])


# The timeline's outputs, replayed once per group: each output's columns travel side by side in one frame,
# prefixed by the output's tag, and each row fills only the columns of its own output.
OUTPUTS: dict[str, tuple[str, str, StructType]] = {
    "r": ("rebalances", "gold_rebalances", GOLD_REBALANCES),
    "s": ("states", "gold_group_states", GOLD_GROUP_STATES),
    "m": ("sessions", "gold_member_sessions", GOLD_MEMBER_SESSIONS),
    "c": ("churn", "gold_partition_churn", GOLD_PARTITION_CHURN),
    "w": ("whatif", "gold_whatif", GOLD_WHATIF),
}
_TAG = "output"


def _as_json(dtype: DataType) -> bool:
    """Whether a column travels through the replay's frame as JSON text (the nested ones: evidence, lists)."""
    return isinstance(dtype, (ArrayType, StructType))


def _wire_name(name: str, dtype: DataType) -> str:
    return f"{name}_json" if _as_json(dtype) else name


def _wire_fields(tag: str, schema: StructType) -> list[tuple[str, str, DataType]]:
    """(column in the timeline's rows, column in the combined frame, its Spark type) of one output."""
    return [(_wire_name(f.name, f.dataType), f"{tag}__{_wire_name(f.name, f.dataType)}",
             StringType() if _as_json(f.dataType) else f.dataType) for f in schema.fields]


# Each output's wire fields, and the combined frame's columns in order: fixed, so computed once, not per group.
_WIRE = {tag: _wire_fields(tag, schema) for tag, (_, _, schema) in OUTPUTS.items()}
_COLUMNS = [_TAG] + [wire for fields in _WIRE.values() for _, wire, _ in fields]


def _combined_schema() -> str:
    return ", ".join([f"{_TAG} string"] + [f"{wire} {dtype.simpleString()}"
                                           for fields in _WIRE.values() for _, wire, dtype in fields])


def _typed(column: pd.Series, dtype: DataType) -> pd.Series:
    """A combined column in a dtype that holds its nulls without changing its values (rows of the other outputs
    leave it empty: an integer column must not become float)."""
    if isinstance(dtype, IntegerType):
        return pd.to_numeric(column).astype("Int32")
    if isinstance(dtype, LongType):
        return pd.to_numeric(column).astype("Int64")
    if isinstance(dtype, DoubleType):
        return pd.to_numeric(column).astype("float64")
    if isinstance(dtype, TimestampType):
        return pd.to_datetime(column)
    # The ignore: pandas-stubs leaves None out of `where`'s `other`, which pandas takes (object columns keep it).
    cells: pd.Series = column.astype(object).where(column.notna(), None)  # type: ignore[call-overload]
    return cells


def _wire_value(row: dict[str, Any], name: str) -> Any:
    """A row's value for a wire column: nested values the row holds as Python objects go as JSON text."""
    if name in row or not name.endswith("_json"):
        return row.get(name)
    value = row.get(name.removesuffix("_json"))
    return None if value is None else json.dumps(value)


def _replay(group_id: str, records: list[TimelineEvent], rules: Rules) -> pd.DataFrame:
    """One replay of a group's timeline: every output's rows in the combined frame of `_combined_schema`."""
    timeline = Timeline(group_id, records, rules)
    rows: list[dict[str, Any]] = []
    for tag, (attribute, _, _) in OUTPUTS.items():
        produced = getattr(timeline, attribute)
        produced = list(produced.values()) if isinstance(produced, dict) else produced
        rows += [{_TAG: tag, **{wire: _wire_value(row, name) for name, wire, _ in _WIRE[tag]}} for row in produced]
    frame = pd.DataFrame(rows, columns=_COLUMNS, dtype=object)
    for fields in _WIRE.values():
        for _, wire, dtype in fields:
            frame[wire] = _typed(frame[wire], dtype)
    return frame


def replay_groups(inputs: DataFrame, rules: Rules | None = None) -> DataFrame:
    """Every group of `inputs` (a `timeline_input` frame, or silver_events rows) replayed once: the rows of all
    three timeline outputs in one frame, told apart by `output`. `timeline_outputs` splits it."""
    inputs = _as_input(inputs)
    rules = rules or Rules()

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        return _replay(pdf["group_id"].iloc[0], timeline_records(pdf), rules)

    return inputs.groupBy("group_id").applyInPandas(run, schema=_combined_schema())


def timeline_outputs(replayed: DataFrame) -> dict[str, DataFrame]:
    """gold_rebalances, gold_group_states and gold_member_sessions rows from a `replay_groups` frame."""
    tables = {}
    for tag, (_, table, schema) in OUTPUTS.items():
        rows = replayed.filter(F.col(_TAG) == tag).select(
            [F.col(wire).alias(name) for name, wire, _ in _WIRE[tag]])
        for f in schema.fields:
            if isinstance(f.dataType, (ArrayType, StructType)):
                rows = rows.withColumn(f.name, F.from_json(f"{f.name}_json", f.dataType))
        tables[table] = rows.select(schema.fieldNames())
    return tables


def rebuild_rebalances(inputs: DataFrame, rules: Rules | None = None) -> DataFrame:
    """gold_rebalances rows for every group in `inputs` (a `timeline_input` frame, or silver_events rows)."""
    return timeline_outputs(replay_groups(inputs, rules))["gold_rebalances"]


def rebuild_states(inputs: DataFrame, rules: Rules | None = None) -> DataFrame:
    """gold_group_states rows: each state interval of each group, with its generation."""
    return timeline_outputs(replay_groups(inputs, rules))["gold_group_states"]


def rebuild_sessions(inputs: DataFrame, rules: Rules | None = None) -> DataFrame:
    """gold_member_sessions rows: each member's lifetime in its group."""
    return timeline_outputs(replay_groups(inputs, rules))["gold_member_sessions"]


def _as_input(df: DataFrame) -> DataFrame:
    """Accept silver_events-shaped frames too (tests, ad-hoc use): add the timeline columns they lack."""
    for f in TIMELINE_INPUT.fields:
        if f.name not in df.columns:
            df = df.withColumn(f.name, _event_column(df, f.name).cast(f.dataType) if f.name == "settings_json"
                               else F.lit(None).cast(f.dataType))
    return df.select(TIMELINE_INPUT.fieldNames())
