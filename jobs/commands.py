"""The work behind each `rebalance` sub-command (imported lazily so that `--help` stays instant)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.settings.config import Config, ConfigError, load_config

if TYPE_CHECKING:  # pyspark is imported by the commands that need it, so that `--help` stays instant
    from pyspark.sql import DataFrame

    from pipelines.flow.run import RunSummary

Progress = Callable[[str], None]


def _spark(cfg: Config, app: str, args: argparse.Namespace):
    """The session of a command: through the Spark Connect server of --remote (or SPARK_REMOTE), else local."""
    from pipelines.session.spark import get_spark

    return get_spark(cfg, app_name=app, remote=getattr(args, "remote", None))


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, dt.date):  # a DATE column: JSON has no date type
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if hasattr(value, "asDict"):
        return {k: _json_value(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def _display_path(uri: str) -> str:
    return uri.removeprefix("file://") if uri.startswith("file:///") else uri.removeprefix("file:")


# ---- simulate -------------------------------------------------------------------------------------------------


def cmd_simulate(args: argparse.Namespace, *, progress: Progress) -> int:
    """Write simulated logs and truth under --out."""
    from simulator import simulate

    summary = simulate(
        args.out, seed=args.seed, groups=args.groups, hours=args.hours, lines=args.lines,
        kafka_version=args.kafka_version, gzip_files=args.gzip, progress=progress, group_protocol=args.group_protocol,
        noise_density=args.noise_density, cycle_every_hours=args.cycle_every_hours, client_kinds=args.client_kinds,
    )
    causes = ", ".join(f"{cause} {n}" for cause, n in sorted(summary.by_cause.items()))
    print(f"wrote {summary.lines} lines in {summary.files} files under {summary.landing_dir}")
    print(f"truth: {summary.rebalances} rebalances ({causes}) in {summary.truth_file}")
    return 0


# ---- run ------------------------------------------------------------------------------------------------------


def _config(args: argparse.Namespace, **extra: Any) -> Config:
    overrides = {"lakehouse": getattr(args, "lakehouse", None), **extra}
    return load_config(getattr(args, "conf", None), overrides)


def sql_command(cfg: Config, conf: Path | None) -> str:
    """The `rebalance sql` command line that opens this lakehouse (its configuration file, or its folder)."""
    opens = f" --conf {conf}" if conf else ""
    return f"rebalance sql{opens}" + ("" if cfg.uses_catalog else f" --lakehouse {cfg.lakehouse}")


def cmd_run(args: argparse.Namespace, *, progress: Progress) -> int:
    """Run the pipeline over the landing directory, then say what it found."""
    from pipelines.flow.idle import idle_run, local_session_expected
    from pipelines.flow.run import RunSummary, check_inputs, run
    from pipelines.flow.stopping import StopRequest
    from pipelines.session.gateway import halt, jvm_started

    kafka = {"bootstrap_servers": args.bootstrap_servers, "envelope": args.envelope,
             "topics": ",".join(args.topic) if args.topic else None}
    cfg = _config(args, landing=args.landing, source=args.source, kafka=kafka)
    check_inputs(cfg)
    origin = f"Kafka topics {', '.join(cfg.kafka.topics)}" if cfg.source == "kafka" else str(cfg.landing)
    progress(f"reading {origin}, writing Delta tables under {cfg.lakehouse}")
    if args.trigger == "available-now" and not args.rebuild and local_session_expected(getattr(args, "remote", None)):
        started = time.perf_counter()
        idle = idle_run(cfg, run_ts=dt.datetime.now(dt.timezone.utc))
        if idle is not None:
            for line in idle.said:
                progress(line)
            progress("nothing is new since the last complete run: Spark was not started")
            return _finished(RunSummary(quality=idle.quality, seconds={"checks": time.perf_counter() - started}),
                             cfg, args)
    # From here on SIGINT and SIGTERM ask the run to stop (between micro-batches) instead of ending the process.
    with StopRequest() as stop:
        try:
            started = time.perf_counter()
            spark = _spark(cfg, "rebalance-run", args)
            spark_seconds = time.perf_counter() - started
            summary = run(spark, cfg, trigger=args.trigger, rebuild=args.rebuild, on_progress=progress, stop=stop)
            if summary.stopped_by is not None:
                return _stopped(summary)
        except BaseException as exc:
            # After a stop request the streams may hold a batch at their gate: end them with the JVM, in one line.
            if stop.requested.is_set() and jvm_started():
                why = "a second signal" if isinstance(exc, KeyboardInterrupt) else type(exc).__name__
                print(f"rebalance run: stopped at once ({why}); what was under way is read again by the next run",
                      file=sys.stderr)
                halt(1)
            raise
    summary.seconds = {"spark start": spark_seconds, **summary.seconds}
    return _finished(summary, cfg, args)


def _finished(summary: RunSummary, cfg: Config, args: argparse.Namespace) -> int:
    """The end of a run: what it wrote, the quality verdicts, what it found, where its time went."""
    from jobs.summary import print_found

    print(f"run finished: {summary.line()}")
    if summary.quality is not None:
        print(summary.quality.line())
    print_found(summary, sql=sql_command(cfg, getattr(args, "conf", None)))
    print(summary.time_line())
    return 0


def _stopped(summary: Any) -> int:
    """Say how a run stopped on request ended; exit 0 (a requested stop is how a continuous run ends, which a
    scheduler must not count as a failure) unless a quality rule failed before it. A local run ends here with its
    JVM: its streams hold their next batch at the gate (pipelines/flow/stopping.py)."""
    from pipelines.session.gateway import halt, jvm_started

    print(summary.stop_line())
    code = 0
    if summary.quality is not None:
        print(summary.quality.line())
        code = 1 if summary.quality.error() is not None else 0
    if jvm_started():
        halt(code)
    return code


# ---- parse ----------------------------------------------------------------------------------------------------

_PARSE_FIELDS = (
    "source_file", "line_no", "event_type", "event_ts", "group_id", "member_id", "generation", "reason",
    "client_reason", "template_id", "source_kind", "instance", "broker_id", "client_id", "group_instance_id",
    "state", "member_count", "level", "message", "ts_inferred", "ts_line_order",
)


def cmd_parse(args: argparse.Namespace, *, progress: Progress) -> int:
    """Parse files in batch: JSON events on stdout, a JSON accounting summary on stderr."""
    from pyspark.sql import functions as F

    from pipelines.settings.sources import resolve_sources
    from pipelines.silver.build import build_silver
    from pipelines.silver.outputs import accounting, to_events, to_gc_pauses
    from pipelines.silver.privacy import hash_salt
    from pipelines.storage import inputs, lake

    missing = [str(p) for p in args.files if not p.is_file()]
    if missing:
        raise ConfigError(f"no such file: {', '.join(missing)}")
    extra = {"sources": [{"instances": "*", "tz": args.tz}]} if args.tz else {}
    cfg = load_config(args.conf, extra)
    spark = _spark(cfg, "rebalance-parse", args)
    raw = inputs.read_files(spark, list(args.files))
    now = F.current_timestamp()
    staged = build_silver(raw, resolve_sources(cfg), existing_files=lake.empty(spark, "bronze_files"), batch_id=0,
                          now=now, hash_salt=hash_salt(cfg))
    try:
        events: DataFrame | None
        pauses: DataFrame | None  # --kind drops one of the two
        events = to_events(staged.parsed, untimed=True).select(*_PARSE_FIELDS)
        pauses = to_gc_pauses(staged.parsed).select(
            "source_file", "line_no", F.lit("gc_pause").alias("event_type"), F.col("ended_at").alias("event_ts"),
            "instance", "started_at", "duration_ms", "collector", "pause_kind", "cause",
            F.concat(F.lit("gc_"), F.lower(F.regexp_replace("pause_kind", " ", "_"))).alias("template_id"),
        )
        if args.kind in ("broker", "client"):
            events, pauses = events.filter(F.col("source_kind") == args.kind), None
        elif args.kind == "gc":
            events = None
        out = sys.stdout
        rows: list[dict[str, Any]] = []
        for frame in (events, pauses):
            if frame is not None:
                rows.extend(r.asDict() for r in frame.collect())
        # Records glued onto one line share its number: their times order them.
        rows.sort(key=lambda r: (r["source_file"], r["line_no"], str(r.get("event_ts") or r.get("ended_at") or "")))
        for row in rows:
            row["source_file"] = _display_path(row["source_file"])
            out.write(json.dumps({k: _json_value(v) for k, v in row.items() if v is not None}) + "\n")
        # The same per-file accounting a run stores in silver_accounting (lines read = noise + events + GC pauses +
        # quarantined, and the lines a source's own pattern did not match).
        per_file = []
        counted = accounting(staged.parsed, staged.files, batch_id=0, ingested_at=now)
        for r in counted.join(staged.files.select("source_file", "duplicate_of"), "source_file") \
                .orderBy("source_file").collect():
            per_file.append({
                "file": _display_path(r["source_file"]), "lines": r["lines_read"], "events": r["event_lines"],
                "gc_pauses": r["gc_pause_lines"], "quarantined": r["quarantined_lines"], "noise": r["noise_lines"],
                "duplicate_of": _display_path(r["duplicate_of"]) if r["duplicate_of"] else None,
            })
            if r["own_layout_missed_lines"]:
                per_file[-1] |= {"own_layout_missed": r["own_layout_missed_lines"],
                                 "own_layout_miss_sample": r["own_layout_miss_sample"]}
        totals = {k: sum(f[k] for f in per_file) for k in ("lines", "events", "gc_pauses", "quarantined", "noise")}
        relevant = totals["events"] + totals["quarantined"]
        totals["coverage"] = round(totals["events"] / relevant, 4) if relevant else None
        print(json.dumps({"files": per_file, "totals": totals}), file=sys.stderr)
    finally:
        staged.unpersist()
    return 0


# ---- check ----------------------------------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace, *, progress: Progress) -> int:
    """What a run could and could not read in a landing directory, without writing tables: see jobs.check."""
    from jobs.check import cmd_check as run_check

    return run_check(args, progress=progress)


# ---- sql ------------------------------------------------------------------------------------------------------


def _format_cell(value: Any) -> str:
    value = _json_value(value)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def print_table(columns: list[str], rows: list[list[Any]], *, out=sys.stdout, max_width: int = 60) -> None:
    """Print rows as an aligned text table."""
    cells = [[_format_cell(v) for v in row] for row in rows]
    cells = [[c if len(c) <= max_width else c[: max_width - 1] + "…" for c in row] for row in cells]
    widths = [max([len(col)] + [len(row[i]) for row in cells]) for i, col in enumerate(columns)]
    out.write("  ".join(col.ljust(w) for col, w in zip(columns, widths, strict=True)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for row in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() + "\n")


def _open_lakehouse(args: argparse.Namespace, app: str):
    """The configuration, a session and the registered table views of an existing lakehouse (ConfigError if none)."""
    from pipelines.storage.lake import register_views

    cfg = _config(args)
    if not cfg.uses_catalog and not cfg.lakehouse.is_dir():
        raise ConfigError(f"no lakehouse at {cfg.lakehouse}; run `rebalance demo` or `rebalance run` first, "
                          "or pass --lakehouse DIR")
    spark = _spark(cfg, app, args)
    views = register_views(spark, cfg)
    if not views and not cfg.uses_catalog:
        raise ConfigError(f"{cfg.lakehouse} holds no tables yet; run `rebalance run` first")
    return cfg, spark, views


def cmd_sql(args: argparse.Namespace, *, progress: Progress) -> int:
    """Run one SQL query over the tables (or open a prompt) and print the result: see jobs.sql."""
    from jobs.sql import cmd_sql as run_sql

    return run_sql(args, _config(args))


# ---- whatif ---------------------------------------------------------------------------------------------------


def parsed_changes(changes: list[str] | None):
    """The `--set` values as what-if changes (ConfigError naming the supported settings otherwise)."""
    from pipelines.gold.whatif import parse_change

    try:
        return None if not changes else [parse_change(spec) for spec in changes]
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def group_whatif(spark, cfg: Config, group_id: str, changes: list[str] | None) -> list[dict[str, Any]]:
    """gold_whatif-shaped rows of one group weighed under `changes` (`setting=value`; None: the standard changes
    of its history), replayed from its silver events and GC pauses as the pipeline replays it."""
    from jobs.explain import group_timeline
    from pipelines.gold.whatif import whatif_rows

    parsed = parsed_changes(changes)
    return whatif_rows(group_timeline(spark, cfg, group_id).what_if(), parsed)


def cmd_whatif(args: argparse.Namespace, *, progress: Progress) -> int:
    """Weigh a group's rebalances under changed settings and print the verdicts, then a summary per change."""
    parsed_changes(args.changes)  # a bad --set fails before a session starts
    cfg, spark, _ = _open_lakehouse(args, "rebalance-whatif")
    progress(f"replaying group {args.group}")
    rows = group_whatif(spark, cfg, args.group, args.changes)
    if args.format == "json":
        for row in rows:
            print(json.dumps({k: _json_value(v) for k, v in row.items()}))
        return 0
    if not rows:
        print(f"group {args.group}: nothing in its history that these settings bear on (no rebalance to weigh)")
        return 0
    columns = ["change", "started_at", "cause", "verdict", "saved_s", "delay_s", "detail"]
    print_table(columns, [[r["change"], f"{r['started_at']:%Y-%m-%d %H:%M:%S}", r["cause"], r["verdict"],
                           _seconds(r["saved_ms"]), _seconds(r["delay_ms"]), r["detail"]] for r in rows],
                max_width=120)
    for change in dict.fromkeys(r["change"] for r in rows):
        print(summary_line(change, [r for r in rows if r["change"] == change]))
    return 0


def cmd_explain(args: argparse.Namespace, *, progress: Progress) -> int:
    """Why one rebalance got its cause: the rule trace, the deciding rule, its lines and thresholds."""
    from jobs.explain import run_explain

    return run_explain(args, progress=progress)


def _seconds(ms: Any) -> str:
    return "" if ms is None or ms != ms else f"{ms / 1000:.1f}"


def summary_line(change: str, rows: list[dict[str, Any]]) -> str:
    """One change's verdicts in a sentence: how many rebalances it avoids, delays or narrows, and the time saved."""
    counts = {v: sum(1 for r in rows if r["verdict"] == v) for v in ("avoided", "later", "fewer_partitions")}
    saved = sum(r["saved_ms"] or 0 for r in rows if r["verdict"] == "avoided") / 1000
    delay = max((r["delay_ms"] or 0 for r in rows if r["verdict"] == "later"), default=0) / 1000
    parts = [f"{counts['avoided']} of {len(rows)} rebalances avoided ({saved:.1f} s of rebalancing saved)"]
    if counts["later"]:
        parts.append(f"{counts['later']} later (by up to {delay:.1f} s: the risk this change brings)")
    if counts["fewer_partitions"]:
        parts.append(f"{counts['fewer_partitions']} stop fewer partitions")
    return f"{change}: " + "; ".join(parts)


# ---- report ---------------------------------------------------------------------------------------------------


def write_report(spark, cfg: Config, out: Path, *, group_types: tuple[str, ...] = ()) -> Path:
    """Render the HTML report of a lakehouse, read through `spark`, into `out` (written atomically); `group_types`
    keeps only groups of those types."""
    from pipelines.report.data import collect

    return _write_page(collect(spark, cfg, group_types=group_types), out, cfg)


def _write_page(data: dict[str, list[dict[str, Any]]], out: Path, cfg: Config) -> Path:
    from pipelines.report.render import render
    from pipelines.state.pending import lag_note
    from schemas.tables import DERIVED_TABLES

    note = lag_note(cfg, list(DERIVED_TABLES))
    page = render(data, notes=[note] if note else [])
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(out)
    return out


def cmd_report(args: argparse.Namespace, *, progress: Progress) -> int:
    """Write the HTML report: on the local default from the fast engine (no JVM), else through Spark."""
    from jobs.sql import uses_spark
    from pipelines.report.data import collect_fast
    from pipelines.storage.fastsql import FastSqlUnsupportedError, delta_tables

    cfg = _config(args)
    group_types = tuple(args.group_type or ())
    if uses_spark(args, cfg) is None:
        if not cfg.lakehouse.is_dir() or not delta_tables(cfg.lakehouse):
            _open_lakehouse(args, "rebalance-report")  # says what is missing, as the Spark path does
        try:
            out = _write_page(collect_fast(cfg, group_types=group_types), args.out, cfg)
        except FastSqlUnsupportedError as exc:
            print(f"rebalance report: {exc}; reading the tables with Spark (a few seconds more)", file=sys.stderr)
        else:
            print(f"report written to {out}")
            return 0
    cfg, spark, _ = _open_lakehouse(args, "rebalance-report")
    out = write_report(spark, cfg, args.out, group_types=group_types)
    print(f"report written to {out}")
    return 0


# ---- demo -----------------------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace, *, progress: Progress) -> int:
    """Simulate, run the whole pipeline locally, print what happened and how to look further."""
    from jobs.summary import print_found
    from pipelines.flow.run import run
    from pipelines.storage import lake
    from simulator import simulate
    from simulator.evaluate import accuracy, match_truth

    workdir: Path = args.workdir
    for sub in ("landing", "truth", "lakehouse"):
        shutil.rmtree(workdir / sub, ignore_errors=True)
    progress(f"simulating {args.groups} consumer groups over {args.hours:g} h (seed {args.seed}) into {workdir}")
    sim = simulate(workdir, seed=args.seed, groups=args.groups, hours=args.hours,
                   kafka_version=getattr(args, "kafka_version", None) or "3.6",
                   group_protocol=getattr(args, "group_protocol", "classic"))
    progress(f"wrote {sim.lines} log lines in {sim.files} files; starting Spark with Delta Lake")
    cfg = load_config(None, {"landing": workdir / "landing", "lakehouse": workdir / "lakehouse"})
    spark = _spark(cfg, "rebalance-demo", args)
    summary = run(spark, cfg, on_progress=progress)
    progress(f"pipeline finished: {summary.line()}")
    if summary.quality is not None:
        progress(summary.quality.line())

    print_found(summary, sql=sql_command(cfg, None))
    rebalances = lake.read_table(spark, cfg, "gold_rebalances")
    truth = spark.read.json(str(sim.truth_file))
    result = accuracy(match_truth(rebalances, truth))
    print(f"\nAgainst the simulator's ground truth: {result.line()}")
    report = write_report(spark, cfg, workdir / "report.html")
    alerts = lake.read_table(spark, cfg, "gold_alerts").groupBy("rule").count().collect()
    if alerts:
        print("Alerts: " + ", ".join(f"{r['rule']} {r['count']}" for r in sorted(alerts, key=lambda r: r["rule"]))
              + f" (feed: {cfg.alerts_jsonl})")
    print(f"HTML report: {report}")
    lakehouse = cfg.lakehouse
    tables = ", ".join(sorted(p.name for p in lakehouse.iterdir() if not p.name.startswith("_")))
    print(f"\nDelta tables are under {lakehouse}/ ({tables}).")
    print("Query them with SQL, for example:")
    sql = f"  rebalance sql --lakehouse {lakehouse}"
    print(f"{sql} \"SELECT cause, count(*) AS n FROM gold_rebalances GROUP BY cause\"")
    print(f"{sql} \"SELECT group_id, started_at, duration_ms, cause, trigger_member_id "
          "FROM gold_rebalances ORDER BY duration_ms DESC LIMIT 10\"")
    return 0
