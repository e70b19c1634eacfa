"""`rebalance explain`: why one rebalance got its cause, replayed from the group's stored events with the rule trace
on (pipelines/gold/explain.py), with the raw lines it rests on read back from bronze_log_lines."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from pipelines.settings.config import Config, ConfigError


def group_timeline(spark: Any, cfg: Config, group_id: str, *, trace: bool = False) -> Any:
    """One group's replay from silver_events and silver_gc_pauses as reconstruct hands them over (the group's
    events and its processes' group-less lines, the group-less client warnings that may be its own, its members'
    long GC pauses)."""
    from pyspark.sql import functions as F

    from pipelines.gold.placement import gold_events
    from pipelines.gold.rebalances import rules_from, timeline_input, timeline_records
    from pipelines.gold.timeline import Timeline

    events = gold_events(spark.table("silver_events"), [group_id])
    rules = rules_from(cfg.thresholds)
    inputs = timeline_input(events, spark.table("silver_gc_pauses"), min_pause_ms=rules.gc_pause_min_ms)
    pdf = inputs.filter(F.col("group_id") == group_id).toPandas()
    if pdf.empty:
        known = [r.group_id for r in spark.table("gold_rebalances").select("group_id").distinct()
                 .orderBy("group_id").limit(20).collect()]
        raise ConfigError(f"no events of group {group_id!r}; groups with rebalances: {', '.join(known) or 'none'}")
    return Timeline(group_id, timeline_records(pdf), rules, trace=trace)


def _how_to_list(group: str | None) -> str:
    where = f" WHERE group_id = '{group}'" if group else ""
    return ("list them with: rebalance sql \"SELECT rebalance_id, group_id, started_at, cause FROM gold_rebalances"
            f"{where} ORDER BY started_at\"")


def find_rebalance(spark: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The stored gold_rebalances row `args` names: by id, or the group's rebalance under way at `--at` (the last
    one started at or before it). ConfigError (exit 2) naming how to list them when there is none."""
    from pyspark.sql import functions as F

    table = spark.table("gold_rebalances")
    if args.rebalance_id:
        rows = table.filter(F.col("rebalance_id") == args.rebalance_id).limit(1).collect()
        if not rows:
            raise ConfigError(f"no rebalance {args.rebalance_id!r} in gold_rebalances; {_how_to_list(None)}")
        return rows[0].asDict(recursive=True)
    if not args.group or not args.at:
        raise ConfigError("give a REBALANCE_ID, or --group G with --at TIME")
    try:
        at = pd.Timestamp(args.at)
    except ValueError:
        raise ConfigError(f"--at {args.at!r} is not a time (ISO-8601, e.g. 2026-11-20T08:12:00Z)") from None
    at = (at.tz_localize("UTC") if at.tzinfo is None else at.tz_convert("UTC")).tz_localize(None)
    rows = (table.filter((F.col("group_id") == args.group) & (F.col("started_at") <= F.lit(at.to_pydatetime())))
            .orderBy(F.desc("started_at")).limit(1).collect())
    if not rows:
        raise ConfigError(f"group {args.group!r} has no rebalance started at or before {args.at}; "
                          f"{_how_to_list(args.group)}")
    return rows[0].asDict(recursive=True)


def raw_lines(spark: Any, timeline: Any, event_ids: list[str]) -> list[dict[str, Any]]:
    """The landed lines of the events `event_ids` names: file, line number and text (from bronze_log_lines)."""
    from pyspark.sql import functions as F

    by_id = {e["event_id"]: e for e in timeline._events}
    places = [(by_id[i]["source_file"], int(by_id[i]["line_no"])) for i in event_ids
              if i in by_id and by_id[i].get("source_file") and by_id[i].get("line_no") is not None]
    if not places:
        return []
    wanted = F.lit(False)
    for source_file, line_no in dict.fromkeys(places):
        wanted = wanted | ((F.col("source_file") == source_file) & (F.col("line_no") == line_no))
    ids = set(event_ids)
    found: dict[tuple[str, int], str] = {}
    # A line that held several records keeps, with ids hashed on, one bronze row per record: the event's own first.
    for r in sorted(spark.table("bronze_log_lines").filter(wanted).select("source_file", "line_no", "line_id",
                                                                         "value").collect(),
                    key=lambda r: r.line_id in ids):
        found[(r.source_file, r.line_no)] = r.value
    return [{"source_file": f, "line_no": n, "text": (found.get((f, n)) or "").rstrip("\n")[:400]}
            for f, n in dict.fromkeys(places) if (f, n) in found]


def estate_incident_of(spark: Any, estate_incident_id: str | None) -> dict[str, Any] | None:
    """The gold_estate_incidents row a rebalance belongs to (None outside any, or before the table existed)."""
    from pyspark.sql import functions as F

    if not estate_incident_id:
        return None
    rows = spark.table("gold_estate_incidents").filter(
        F.col("estate_incident_id") == estate_incident_id).limit(1).collect()
    return rows[0].asDict(recursive=True) if rows else None


def run_explain(args: argparse.Namespace, *, progress: Any) -> int:
    """Print why one rebalance got its cause (text, or one JSON object with --format json)."""
    from jobs.commands import _json_value, _open_lakehouse
    from pipelines.gold.explain import explain, render_text

    cfg, spark, _ = _open_lakehouse(args, "rebalance-explain")
    stored = find_rebalance(spark, args)
    progress(f"replaying group {stored['group_id']} with the rule trace on")
    timeline = group_timeline(spark, cfg, stored["group_id"], trace=True)
    try:
        found = explain(timeline, stored["rebalance_id"], thresholds=cfg.thresholds,
                        configured=set(cfg.thresholds.model_fields_set))
    except KeyError:
        raise ConfigError(f"rebalance {stored['rebalance_id']} is stored but its group's replay no longer makes it "
                          "(the tables were written by another release or other settings: run `rebalance run "
                          f"--rebuild`); {_how_to_list(stored['group_id'])}") from None
    lines = raw_lines(spark, timeline, found["event_ids"])
    found["estate_incident"] = estate_incident_of(spark, stored.get("estate_incident_id"))
    differs = [k for k in ("cause", "cause_detail") if stored.get(k) != found["rebalance"].get(k)]
    if args.format == "json":
        print(json.dumps({**found, "lines": lines, "stored_differs": differs}, default=_json_value))
        return 0
    print(render_text(found, lines))
    if differs:
        print(f"\nnote: the stored row says {stored.get('cause')}/{stored.get('cause_detail')}; this release's "
              "rules say the above (run `rebalance run --rebuild` to store them)")
    return 0
