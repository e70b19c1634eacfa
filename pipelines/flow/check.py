"""`rebalance check`: what the pipeline can and cannot read in a landing directory, without writing any table.

The landing is parsed by the pipeline's own bronze-to-silver build (`build_silver`, as `rebalance parse` and every
ingest batch call it), so each count here is the one a run stores: typed lines are the rows of silver_events and
silver_gc_pauses, quarantined lines those of silver_quarantine. Spark aggregates; the driver collects only one row
per instance folder, per group and per unknown shape kept as a sample. What each group's causes can reach is read
from the rule book (pipelines/flow/check_reach.py)."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines.bronze.damaged import damaged_gzips, spark_file_uri, with_torn_rows
from pipelines.flow.check_reach import reach
from pipelines.gold.placement import place_in_processes
from pipelines.session.spark import compiled_code
from pipelines.settings.config import Config
from pipelines.settings.sources import resolve_sources
from pipelines.silver.build import build_silver
from pipelines.silver.outputs import to_events
from pipelines.silver.privacy import hash_salt
from pipelines.storage import inputs, lake

Progress = Callable[[str], None]
SAMPLE_SHAPES = 3  # unknown-wording shapes shown per instance folder (each with its count and one raw line)
_SNIFF_BYTES = 8192  # how much of a file is looked at to call it binary


def screen_file(path: Path) -> str | None:
    """Why a landed file cannot be read as a log (empty, unreadable, binary), or None when it looks like text. A
    damaged gzip is found by `damaged_gzips` instead (its readable lines still count)."""
    try:
        if path.stat().st_size == 0:
            return "empty file: no lines to read"
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except (OSError, EOFError) as exc:
        if isinstance(exc, PermissionError):
            return f"cannot be read ({exc.strerror}): skipped"
        if isinstance(exc, gzip.BadGzipFile):
            return f"named .gz but is not gzip data ({exc})"
        return None if isinstance(exc, EOFError) else f"cannot be read ({exc}): skipped"
    if b"\x00" in head:
        return "binary content, not a text log: its lines are read but none can be typed"
    return None


def _shape(text: Column) -> Column:
    """A line's wording with its values masked (ids, numbers, quoted text), so that repeats of one unknown wording
    count together."""
    masked = F.regexp_replace(text, r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", "<id>")
    masked = F.regexp_replace(masked, r"'[^']*'|\"[^\"]*\"", "'…'")
    masked = F.regexp_replace(masked, r"[0-9]+", "#")
    return F.substring(F.trim(masked), 1, 140)


def _instances(parsed: DataFrame, files: DataFrame) -> list[dict[str, Any]]:
    """Per instance folder: files and lines read, typed lines by kind, quarantined lines by reason, lines without a
    usable time and the time span (one aggregate over the files, one over the parsed records)."""
    per_file = {r["instance"]: r.asDict() for r in files.groupBy("instance").agg(
        F.count("*").alias("files"), F.sum("lines_read").alias("lines_read"),
        F.sum(F.when(F.col("duplicate_of").isNotNull(), F.col("lines_read")).otherwise(0)).alias("duplicate_lines"),
    ).collect()}
    disp = F.col("disposition")
    timed = F.when(disp == "event", F.col("event_ts")).when(disp == "gc_pause", F.col("gc_end_ts"))
    kind = F.when(disp == "event", F.concat(F.lit("event:"), F.col("source_kind"))) \
        .when(disp == "quarantine", F.concat(F.lit("quarantine:"), F.col("quarantine_reason"))).otherwise(disp)
    rows = parsed.filter(disp != "noise").groupBy("instance", kind.alias("kind")).agg(
        F.count("*").alias("n"), F.min(timed).alias("first_ts"), F.max(timed).alias("last_ts"),
        F.sum(F.when(disp == "event", F.col("ts_inferred").cast("long"))).alias("borrowed"),
        F.sum(F.when(disp == "event", F.col("ts_line_order").cast("long"))).alias("line_order"),
    ).collect()
    out: dict[str, dict[str, Any]] = {}
    for name, f in per_file.items():
        out[name] = {"instance": name, "files": f["files"], "lines_read": f["lines_read"],
                     "duplicate_lines": f["duplicate_lines"], "typed": 0, "broker_events": 0, "client_events": 0,
                     "gc_pauses": 0, "quarantined": 0, "quarantine_reasons": {}, "untimed": 0,
                     "time_borrowed": 0, "time_from_line_order": 0, "first_ts": None, "last_ts": None}
    for r in rows:
        d = out[r["instance"]]
        group, _, detail = r["kind"].partition(":")
        d["typed"] += r["n"] if group in ("event", "gc_pause") else 0
        if group == "event":
            d[f"{detail}_events"] = d.get(f"{detail}_events", 0) + r["n"]
            d["time_borrowed"] += r["borrowed"] or 0
            d["time_from_line_order"] += r["line_order"] or 0
        elif group == "gc_pause":
            d["gc_pauses"] += r["n"]
        else:
            d["quarantined"] += r["n"]
            d["quarantine_reasons"][detail] = r["n"]
        for end, pick in (("first_ts", min), ("last_ts", max)):
            if r[end] is not None:
                d[end] = r[end] if d[end] is None else pick(d[end], r[end])
    for d in out.values():
        d["quarantine_reasons"] = dict(sorted(d["quarantine_reasons"].items()))
        d["untimed"] = d["quarantine_reasons"].get("no_timestamp", 0)
        d["unknown_wording"] = d["quarantine_reasons"].get("no_template", 0)
    return [out[k] for k in sorted(out, key=str)]


def _unknown_shapes(parsed: DataFrame) -> dict[str, dict[str, Any]]:
    """Per instance folder: how many shapes of group-related lines matched no wording, and the commonest few with
    their count and one raw line."""
    unknown = parsed.filter((F.col("disposition") == "quarantine") & (F.col("quarantine_reason") == "no_template"))
    shapes = unknown.groupBy("instance", _shape(F.coalesce("msg", "value")).alias("shape")).agg(
        F.count("*").alias("n"), F.min(F.struct("source_file", "line_no", "value")).alias("sample"))
    by_count = Window.partitionBy("instance").orderBy(F.col("n").desc(), "shape")
    ranked = shapes.withColumns({"rank": F.row_number().over(by_count),
                                 "shapes": F.count("*").over(Window.partitionBy("instance"))})
    out: dict[str, dict[str, Any]] = {}
    for r in ranked.filter(F.col("rank") <= SAMPLE_SHAPES).orderBy("instance", "rank").collect():
        entry = out.setdefault(r["instance"], {"shapes": r["shapes"], "top": []})
        sample = r["sample"]
        entry["top"].append({"shape": r["shape"], "lines": r["n"], "file": sample["source_file"],
                             "line_no": sample["line_no"], "sample": sample["value"].splitlines()[0][:300]})
    return out


_EPOCH_EVENTS = ("group_epoch_bumped", "member_epoch_updated", "target_assignment_computed")


def _groups(events: DataFrame, gc_instances: set[str]) -> list[dict[str, Any]]:
    """Per group: the brokers whose log holds its coordinator's lines, its member processes (client instance
    folders) and those tied to member ids or with a GC log, and what its causes can reach."""
    broker, client = F.col("source_kind") == "broker", F.col("source_kind") == "client"
    epoch = F.col("event_type").isin(*_EPOCH_EVENTS) | F.col("group_epoch").isNotNull() \
        | F.col("member_epoch").isNotNull()
    rows = events.filter(F.col("group_id").isNotNull()).groupBy("group_id").agg(
        F.count("*").alias("events"),
        F.sort_array(F.collect_set(F.when(broker, F.col("instance")))).alias("brokers"),
        F.sort_array(F.collect_set(F.when(client, F.col("instance")))).alias("members"),
        F.sort_array(F.collect_set(F.when(client & F.col("member_id").isNotNull(), F.col("instance")))).alias("tied"),
        F.max(broker & epoch).alias("epoch_protocol"),
        F.max(broker & ~epoch & F.col("generation").isNotNull()).alias("classic_protocol"),
        F.min("event_ts").alias("first_ts"), F.max("event_ts").alias("last_ts"),
    ).orderBy("group_id").collect()
    out = []
    for r in rows:
        members = [m for m in r["members"] if m is not None]
        with_gc = [m for m in members if m in gc_instances]
        got = reach(coordinator_log=bool(r["brokers"]), epoch_protocol=bool(r["epoch_protocol"]),
                    classic_protocol=bool(r["classic_protocol"]), members=len(members), members_with_gc=len(with_gc))
        out.append({
            "group_id": r["group_id"], "events": r["events"], "coordinator_log": r["brokers"], "members": members,
            "members_tied": r["tied"], "members_with_gc": with_gc, "first_ts": r["first_ts"], "last_ts": r["last_ts"],
            "rule_paths": list(got.paths), "causes_full": list(got.full),
            "causes_partial": {c: {"confidence": a, "best": b} for c, (a, b) in got.partial.items()},
            "causes_out_of_reach": list(got.none),
        })
    return out


def clock_offsets(events: DataFrame) -> dict[str, dict[str, Any]]:
    """Per client instance folder: how far its clock runs ahead of the coordinator's (negative: behind), as the
    median over its joins of (the member's `joined generation N` - the coordinator's `Stabilized group generation
    N`), each join paired with the nearest stabilization of its group and generation. The coordinator answers the
    joins when it stabilizes, so the figure also holds the answer's travel time (milliseconds)."""
    joins = events.filter((F.col("event_type") == "client_joined") & F.col("generation").isNotNull()
                          & F.col("group_id").isNotNull() & F.col("ts_inferred").isNull()).select(
        "instance", "group_id", "generation", "event_id", F.col("event_ts").alias("joined_at"))
    stable = events.filter((F.col("event_type") == "group_stabilized") & F.col("ts_inferred").isNull()).select(
        "group_id", "generation", F.col("event_ts").alias("stable_at"))
    gap = F.unix_millis("joined_at") - F.unix_millis("stable_at")
    pairs = joins.join(stable, ["group_id", "generation"]).groupBy("instance", "event_id").agg(
        F.min_by(gap, F.abs(gap)).alias("gap_ms"))
    return {r["instance"]: {"offset_ms": r["offset_ms"], "pairs": r["pairs"]} for r in pairs.groupBy("instance").agg(
        F.percentile_approx("gap_ms", 0.5).alias("offset_ms"), F.count("*").alias("pairs")).collect()}


def _read(spark: SparkSession, paths: list[Path], problems: dict[str, str]) -> DataFrame:
    """The landed lines as `rebalance parse` reads them (inputs.read_files), each damaged gzip's problem noted."""
    uris = [spark_file_uri(p) for p in paths]
    damaged = damaged_gzips(uris)
    for d in damaged:
        problems[d.path] = f"{d.problem}; its torn line is quarantined (truncated_gzip)"
    raw = spark.read.format("text").option("ignoreCorruptFiles", "true").load([str(p) for p in paths])
    return with_torn_rows(spark, raw.select("value", "_metadata"), damaged)


# What a name the JVM cannot read is told.
NOT_UTF8 = "its name is not UTF-8: Spark cannot name it"


def check_landing(spark: SparkSession, cfg: Config, *, progress: Progress | None = None) -> dict[str, Any]:
    """What a run would read from `cfg.landing`: per instance folder, per group, and one line per file it cannot
    read as a log. Writes nothing."""
    say = progress or (lambda _m: None)
    landing, shown = cfg.landing, _shown(str(cfg.landing))
    report: dict[str, Any] = {"landing": shown, "files": 0, "problems": [], "instances": [], "groups": []}
    if not landing.is_dir():
        report["problems"].append({"file": shown, "problem": "no such directory: nothing to check"})
        return report
    listing = inputs.list_landing(cfg)
    files = listing.files
    report["files"] = len(files)
    problems: dict[str, str] = {str(p): f"{NOT_UTF8}, so no run reads it (rename it)" for p in listing.unnamed}
    readable = []
    for path in files:
        problem = screen_file(path)
        if problem is not None:
            problems[str(path)] = problem
        if problem is None or not problem.startswith(("cannot be read", "named .gz")):
            readable.append(inputs.absolute(path))
    if readable:
        size_mb = sum(p.stat().st_size for p in readable) / 1_000_000
        say(f"parsing {len(readable)} files ({size_mb:.0f} MB) under {landing} (nothing is written)")
        # As an ingest batch of this size would run (pipelines/flow/ingest.py): compiled code from compiled_from_mb on.
        with compiled_code(spark, size_mb >= cfg.spark.compiled_from_mb):
            report.update(_summaries(spark, cfg, readable, problems, say))
    report["problems"] = [{"file": _shown(_local(f)), "problem": p} for f, p in sorted(problems.items())]
    return report


def _summaries(spark: SparkSession, cfg: Config, readable: list[Path], problems: dict[str, str],
               say: Progress) -> dict[str, Any]:
    """The instance and group summaries of the readable files, parsed in one batch."""
    staged = build_silver(_read(spark, readable, problems), resolve_sources(cfg),
                          existing_files=lake.empty(spark, "bronze_files"), batch_id=0,
                          now=F.current_timestamp(), hash_salt=hash_salt(cfg))
    try:
        say("counting per instance folder and per group")
        instances = _instances(staged.parsed, staged.files)
        shapes = _unknown_shapes(staged.parsed)
        events = to_events(staged.parsed)
        offsets = clock_offsets(events)
        gc = {d["instance"] for d in instances if d["gc_pauses"]}
        groups = _groups(place_in_processes(events), gc)  # the groups a run builds, a process's own included
    finally:
        staged.unpersist()
    for d in instances:
        d["unknown_shapes"] = shapes.get(d["instance"], {"shapes": 0, "top": []})
        d["clock_offset"] = offsets.get(d["instance"])
    return {"instances": instances, "groups": groups}


def _shown(path: str) -> str:
    """A path as the report shows it: bytes that are not UTF-8 as escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _local(path: str) -> str:
    return path.removeprefix("file://") if path.startswith("file:///") else path.removeprefix("file:")
