"""gold_estate_incidents with Spark: the estate's rebalances and the facts the estate rules read, gathered in a few
narrow reads, handed to pipelines/gold/estate.py, and its rows made a DataFrame; and the rebalances' own
`estate_incident_id` from those rows."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.gold.estate import LIFECYCLE_EVENTS, EstateFacts, EstateParams, find_estate_incidents
from pipelines.gold.estate_model import Later, SparedFacts, eligible
from pipelines.gold.estate_rules import estate_window
from pipelines.settings.limits import Thresholds
from schemas.gold import GOLD_ESTATE_INCIDENTS

_REBALANCE_COLUMNS = ("rebalance_id", "group_id", "started_at", "completed_at", "duration_ms", "coordinator", "cause",
                      "cause_detail", "members_before", "trigger_member_id")


def params_from(thresholds: Thresholds) -> EstateParams:
    """The estate rules' configured windows (thresholds.estate_*, and the coordinator move window) and the session
    timeout of a member that logged none."""
    return EstateParams(window_s=thresholds.estate_window_s, min_groups=thresholds.estate_min_groups,
                        move_window_s=thresholds.coordinator_move_window_s,
                        default_session_timeout_ms=thresholds.default_session_timeout_ms)


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


def _lifecycle_row(e: Any) -> dict[str, Any]:
    row: dict[str, Any] = e.asDict()
    row["event_ts"] = pd.Timestamp(row.pop("us"), unit="us")
    return row


def spared_facts(groups: set[str], events: DataFrame, states: DataFrame, sessions: DataFrame) -> SparedFacts:
    """The states and member sessions of the groups an incident spared, and the session timeout each of their
    members' processes logged (three reads narrowed to those groups)."""
    names = sorted(groups)
    reads = {"states": (states, ("group_id", "state", "started_at", "ended_at", "protocol"),
                        ("started_at", "state_id")),
             "sessions": (sessions, ("group_id", "member_id", "group_instance_id", "instance", "joined_at", "left_at"),
                          ("joined_at", "member_id"))}
    by_group: dict[str, dict[str, list[dict[str, Any]]]] = {key: {} for key in reads}
    for key, (frame, columns, order) in reads.items():
        for row in _records(frame.filter(F.col("group_id").isin(*names)).orderBy(*order).select(*columns)):
            by_group[key].setdefault(row["group_id"], []).append(row)
    instances = sorted({m["instance"] for rows in by_group["sessions"].values() for m in rows if m.get("instance")})
    timeouts: dict[tuple[str, str], int] = {}
    if instances:  # the client configuration each member's process logged (silver_events.settings), newest last
        logged = events.filter((F.col("event_type") == "client_config") & F.col("instance").isin(*instances)) \
            .orderBy("event_ts", "event_id").select(
                F.coalesce("group_id", F.col("settings")["group.id"], F.lit("")).alias("group"), "instance",
                F.col("settings")["session.timeout.ms"].alias("ms")).collect()
        timeouts = {(r["group"], r["instance"]): int(r["ms"]) for r in logged if r["ms"] and str(r["ms"]).isdigit()}
    return SparedFacts(states=by_group["states"], sessions=by_group["sessions"], session_timeouts=timeouts)


def estate_facts(events: DataFrame, pauses: DataFrame, states: DataFrame, sessions: DataFrame) -> EstateFacts:
    """What the estate rules read beside the rebalances: one aggregate over silver_events; the brokers' GC pauses,
    the groups' coordinators and the rows of spared groups are read only if a rule asks."""
    lifecycle = F.struct("event_id", F.unix_micros("event_ts").alias("us"), "event_type", "group_id",
                         "offsets_partition", "instance", F.col("broker_id").cast("string").alias("broker"))
    row = events.agg(
        F.collect_set(F.when(F.col("ts_line_order"), F.col("group_id"))).alias("line_order"),
        F.collect_set(F.when((F.col("source_kind") == "broker") & F.col("broker_id").isNotNull()
                             & F.col("instance").isNotNull(),
                             F.struct(F.col("broker_id").cast("string").alias("b"), F.col("instance").alias("i"))))
        .alias("folders"),
        F.collect_set(F.when(F.col("group_id").isNotNull() & F.col("offsets_partition").isNotNull(),
                             F.struct(F.col("group_id").alias("g"), F.col("offsets_partition").alias("p"))))
        .alias("partitions"),
        F.collect_list(F.when(F.col("event_type").isin(*LIFECYCLE_EVENTS), lifecycle)).alias("lifecycle"),
    ).first()
    assert row is not None  # an aggregate without grouping has one row
    folders = {f["b"]: f["i"] for f in sorted(row["folders"], key=lambda f: (f["b"], f["i"]))}
    return EstateFacts(
        line_order_groups=set(row["line_order"]), broker_folders=folders,
        lifecycle=[_lifecycle_row(e) for e in row["lifecycle"]],
        group_partitions={p["g"]: p["p"] for p in row["partitions"]},
        broker_pauses=Later(lambda: _records(pauses.filter(F.col("instance").isin(*sorted(set(folders.values()))))
                                             .select("pause_id", "instance", "started_at", "ended_at",
                                                     "duration_ms")) if folders else []),
        coordinated=Later(lambda: _records(states.filter(F.col("coordinator").isNotNull())
                                           .groupBy("group_id", "coordinator")
                                           .agg(F.min("started_at").alias("started_at"),
                                                F.max(F.coalesce("ended_at", "started_at")).alias("ended_at")))),
        spared=lambda groups: spared_facts(groups, events, states, sessions),
    )


def estate_rows(rebalances: DataFrame, sessions: DataFrame, states: DataFrame, events: DataFrame,
                pauses: DataFrame, params: EstateParams) -> list[dict[str, Any]]:
    """gold_estate_incidents rows of the whole estate (every group's rebalances, sessions and states), as Python
    rows (naive UTC times)."""
    weighed = estate_rebalances(rebalances, sessions)
    if not could_tie(weighed, params):
        return []  # the usual batch of a quiet estate: no silver read at all
    return find_estate_incidents(weighed, estate_facts(events, pauses, states, sessions), params)


def could_tie(rebalances: list[dict[str, Any]], params: EstateParams) -> bool:
    """Whether two rebalances of different groups (fresh starts aside) start within the widest window any estate rule
    reads: if not, no rule can tie anything."""
    widest = max(params.window_s, params.move_window_s, estate_window("estate_wave_gap_s"))
    ordered = sorted((r for r in rebalances if eligible(r, EstateFacts())), key=lambda r: r["started_at"])
    return any(b["group_id"] != a["group_id"] and (b["started_at"] - a["started_at"]).total_seconds() <= widest
               for a, b in itertools.pairwise(ordered))


def rows_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """Estate rows as a gold_estate_incidents DataFrame."""
    utc = []
    for row in rows:
        # The session's clock is UTC (toPandas gave naive UTC times); a naive datetime would be read as local time.
        utc.append({**row, **{name: pd.Timestamp(row[name]).tz_localize("UTC").to_pydatetime()
                              for name in ("started_at", "ended_at")}})
    return spark.createDataFrame(utc, GOLD_ESTATE_INCIDENTS)


def estate_incidents_from(rebalances: DataFrame, sessions: DataFrame, states: DataFrame, events: DataFrame,
                          pauses: DataFrame, params: EstateParams) -> DataFrame:
    """gold_estate_incidents of the whole estate (every group's rebalances, sessions and states)."""
    return rows_frame(rebalances.sparkSession, estate_rows(rebalances, sessions, states, events, pauses, params))


def canonical(rows: list[dict[str, Any]]) -> set[str]:
    """Estate rows as comparable text, times as microseconds since the epoch (rows read back from the table with
    `unix_micros` over their two times compare equal to the rows that wrote them)."""
    def micros(value: Any) -> Any:
        return value if value is None or isinstance(value, int) else int(pd.Timestamp(value).value // 1000)
    return {json.dumps({**r, "started_at": micros(r["started_at"]), "ended_at": micros(r["ended_at"])},
                       sort_keys=True, default=str) for r in rows}


def estate_ids(estate: DataFrame) -> DataFrame:
    """(`rebalance_id`, `estate_incident_id`) for every rebalance of an estate incident."""
    return estate.select(F.explode("rebalance_ids").alias("rebalance_id"), "estate_incident_id")


def with_estate_ids(rebalances: DataFrame, estate: DataFrame) -> DataFrame:
    """gold_rebalances rows with `estate_incident_id` from gold_estate_incidents (null outside any)."""
    return rebalances.drop("estate_incident_id").join(estate_ids(estate), "rebalance_id", "left").select(
        rebalances.columns if "estate_incident_id" in rebalances.columns
        else [*rebalances.columns, "estate_incident_id"])
