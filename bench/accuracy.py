"""Cause accuracy on large simulated estates: the confusion matrix of issue #5.

    python -m bench.accuracy [--versions 2.4,2.8,3.6,4.1] [--groups 8] [--hours 24] [--lines N] [--seed 7]
                             [--group-protocol mixed] [--out bench/results] [--work DIR] [--keep]

For each Kafka version the simulator speaks, simulate an estate (every scenario: scale up/down, rolling deploys,
crashes and crash loops, GC pauses long and short, poll timeouts, partition additions, coordinator moves, service
restarts), run the batch pipeline (`pipelines.flow.batch.batch_tables`, the streaming run's oracle) over its landing
folder, match gold_rebalances to the truth on (group_id, generation_after) with `simulator.evaluate` and write one
markdown file: per version the counts (found/truth, invented, cause right) and the confusion matrix (true cause x
our cause), plus every mismatch. One Spark session for all versions. Not part of the test suite (minutes per
version); tests/test_accuracy.py runs the same check on small estates.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.gold.causes import CAUSES

MISSING = "-"


def mismatch_table(wrong: list[dict[str, Any]], *, absent: str = MISSING) -> list[str]:
    """Markdown rows of the rebalances not matched right: group, generation, the true and our cause (detail)."""
    rows = ["| group | generation_after | true cause (detail) | our cause (detail) |", "|---|---:|---|---|"]
    for w in wrong:
        true = f"{w['true_cause'] or absent} ({w['true_cause_detail'] or ''})"
        ours = f"{w['cause'] or absent} ({w['cause_detail'] or ''})"
        rows.append(f"| {w['group_id']} | {w['generation_after']} | {true} | {ours} |")
    return rows


def confusion_table(confusion: dict[tuple[str, str], int]) -> list[str]:
    """Markdown rows: one per true cause (and `-` for rebalances not in the truth), one column per our cause."""
    ours = [c for c in CAUSES if any(o == c for (_, o) in confusion)]
    ours += sorted({o for (_, o) in confusion} - set(ours) - {MISSING}) + [MISSING]
    theirs = [c for c in CAUSES if any(t == c for (t, _) in confusion)]
    theirs += sorted({t for (t, _) in confusion} - set(theirs) - {MISSING})
    if any(t == MISSING for (t, _) in confusion):
        theirs.append(MISSING)
    lines = ["| true \\ ours | " + " | ".join("not found" if o == MISSING else o for o in ours)
             + " | truth | right |", "|---|" + "---:|" * (len(ours) + 2)]
    for t in theirs:
        cells = [confusion.get((t, o), 0) for o in ours]
        total = sum(cells) if t != MISSING else 0
        right = confusion.get((t, t), 0)
        label = "not in truth (invented)" if t == MISSING else t
        lines.append(f"| {label} | " + " | ".join(str(c) if c else "" for c in cells)
                     + f" | {total or ''} | {f'{right / total:.1%}' if total else ''} |")
    return lines


def evaluate_version(spark, version: str, root: Path, *, seed: int, groups: int, hours: float,
                     lines: int | None, group_protocol: str = "classic", broker_stalls: int = 0,
                     deploy_waves: int = 0, client_kinds: dict[str, float] | None = None) -> dict:
    """Simulate one estate, run the batch pipeline, match the truth: counts, confusion, mismatches, timings."""
    from pyspark.sql import functions as F

    from pipelines.flow.batch import batch_tables
    from pipelines.settings.config import load_config
    from simulator import simulate
    from simulator.evaluate import accuracy, match_estates, match_truth

    t0 = time.monotonic()
    extra: dict[str, Any] = {} if group_protocol == "classic" else {"group_protocol": group_protocol}
    if client_kinds:
        extra["client_kinds"] = client_kinds
    sim = simulate(root / version, seed=seed, groups=groups, hours=hours, lines=lines, kafka_version=version,
                   broker_stalls=broker_stalls, deploy_waves=deploy_waves, **extra)
    estate_truth_file = sim.truth_file.parent / "estate_incidents.jsonl"
    estate_truth = ([json.loads(line) for line in estate_truth_file.read_text().splitlines()]
                    if estate_truth_file.exists() else [])
    t_sim = time.monotonic() - t0
    cfg = load_config(None, {"landing": sim.landing_dir, "lakehouse": root / version / "lakehouse"})
    t1 = time.monotonic()
    with batch_tables(spark, cfg) as tables:
        rebalances = tables["gold_rebalances"]
        matched = match_truth(rebalances, spark.read.json(str(sim.truth_file))).cache()
        result = accuracy(matched)
        wrong = (matched.filter(~F.col("cause").eqNullSafe(F.col("true_cause")))
                 .select("group_id", "generation_after", "true_cause", "true_cause_detail", "cause", "cause_detail")
                 .orderBy("group_id", "generation_after").collect())
        estates = match_estates([r.asDict() for r in tables["gold_estate_incidents"].collect()], estate_truth)
        total = rebalances.count()
        no_generation = rebalances.filter(F.col("generation_after").isNull()).count()
        matched.unpersist()
    t_pipe = time.monotonic() - t1
    return {"version": version, "protocol": group_protocol, "seed": seed, "lines": sim.lines, "files": sim.files,
            "groups": len(sim.groups),
            "truth_by_cause": sim.by_cause, "result": result, "wrong": [r.asDict() for r in wrong],
            "rebalance_rows": total, "rows_without_generation": no_generation,
            "simulate_s": t_sim, "pipeline_s": t_pipe, "estates": estates}


def markdown(runs: list[dict], command: str, started: datetime, elapsed: float) -> str:
    """The report: one section per version and a summary table."""
    out = [f"# Cause accuracy on simulated estates ({started:%Y-%m-%dT%H:%M:%SZ})", "",
           f"Command: `{command}`; run took {elapsed:.0f} s (simulation and batch pipeline, one Spark session).", "",
           "Rebalances of `gold_rebalances` matched to the simulator's truth on (group_id, generation_after) by "
           "`simulator.evaluate.match_truth`; a row with no counterpart is `not found` (in the truth only) or "
           "`invented` (ours only).", "",
           "| Kafka | seed | lines | files | groups | truth | found | invented | cause right | accuracy | simulate s | "
           "pipeline s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for run in runs:
        r = run["result"]
        out.append(f"| {run['version']} ({run['protocol']}) | {run['seed']} | {run['lines']:,} | {run['files']:,} | "
                   f"{run['groups']} | {r.truth} | {r.found} | {r.invented} | {r.cause_right} | "
                   f"{r.cause_accuracy:.2%} | {run['simulate_s']:.0f} | {run['pipeline_s']:.0f} |")
    total = {k: sum(getattr(run["result"], k) for run in runs) for k in ("truth", "found", "invented", "cause_right")}
    if len(runs) > 1:
        acc = total["cause_right"] / total["found"] if total["found"] else 0.0
        out.append(f"| all | | {sum(run['lines'] for run in runs):,} | | | {total['truth']} | {total['found']} | "
                   f"{total['invented']} | {total['cause_right']} | {acc:.2%} | | |")
    merged: dict[tuple[str, str], int] = {}
    for run in runs:
        for key, n in run["result"].confusion.items():
            merged[key] = merged.get(key, 0) + n
    out += ["", "## Confusion matrix, all versions (rows: true cause, columns: the pipeline's cause)", "",
            *confusion_table(merged)]
    for run in runs:
        r = run["result"]
        out += ["", f"## Kafka {run['version']} ({run['protocol']} groups)", "", r.line() + ".", "",
                run["estates"].line() + (f"; missed: {'; '.join(run['estates'].misses)}" if run["estates"].misses
                                         else "") + ".", "",
                f"Truth by cause: {', '.join(f'{k} {v}' for k, v in run['truth_by_cause'].items())}. "
                f"gold_rebalances rows: {run['rebalance_rows']} ({run['rows_without_generation']} without a "
                "generation_after: open at the end of the logs, not matched).", "", *confusion_table(r.confusion)]
        if run["wrong"]:
            out += ["", "Mismatches (true -> ours):", "", *mismatch_table(run["wrong"])]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Simulate and score each version; write the markdown; exit 1 when a version misses the issue's bar."""
    parser = argparse.ArgumentParser(prog="python -m bench.accuracy", description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="2.4,2.8,3.6", help="Kafka versions to simulate (comma-separated)")
    parser.add_argument("--groups", type=int, default=8, help="consumer groups per estate")
    parser.add_argument("--hours", type=float, default=24.0, help="simulated span (more hours, more incidents)")
    parser.add_argument("--lines", type=int, help="target lines instead of --hours (the simulator picks the span)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the first version's estate (+1 per version)")
    parser.add_argument("--out", type=Path, default=Path("bench/results"), help="directory of the markdown report")
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temp dir, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--min-accuracy", type=float, default=0.98)
    parser.add_argument("--broker-stalls", type=int, default=0,
                        help="estate events per estate: broker stalls that expire members of several groups at once "
                             "(truth/estate_incidents.jsonl; default 0, the estates of earlier reports)")
    parser.add_argument("--deploy-waves", type=int, default=0,
                        help="estate events per estate: deploy waves that restart one process of four to six groups "
                             "in turn (truth/estate_incidents.jsonl; default 0)")
    parser.add_argument("--group-protocol", choices=("classic", "consumer", "mixed"), default="mixed",
                        help="group protocol of the 4.x estates (older versions are always classic; default: mixed, "
                             "every other group a KIP-848 consumer group)")
    parser.add_argument("--client-kinds", metavar="KIND=SHARE[,...]",
                        help="frameworks of the classic groups' consumers (java, streams, connect, librdkafka), as "
                             "shares, e.g. java=5,librdkafka=2,streams=2,connect=1 (default: all java, the estates "
                             "of earlier reports)")
    args = parser.parse_args(argv)
    from simulator.frameworks import parse_shares
    try:
        kinds = parse_shares(args.client_kinds) if args.client_kinds else None
    except ValueError as e:
        parser.error(f"--client-kinds: {e}")
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]

    from pipelines.session.spark import get_spark
    from pipelines.settings.config import load_config

    started = datetime.now(timezone.utc)
    t0 = time.monotonic()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-accuracy-"))
    work.mkdir(parents=True, exist_ok=True)
    spark = get_spark(load_config(None, {"spark": {"master": "local[2]", "shuffle_partitions": 4,
                                                  "driver_memory": "3g"}}), app_name="bench-accuracy")
    runs = []
    try:
        for index, version in enumerate(versions):
            print(f"Kafka {version}: simulating and running the batch pipeline", file=sys.stderr, flush=True)
            # a different seed per version, so each estate plays its own incidents
            protocol = args.group_protocol if int(version.split(".")[0]) >= 4 else "classic"
            run = evaluate_version(spark, version, work, seed=args.seed + index, groups=args.groups,
                                   hours=args.hours, lines=args.lines, group_protocol=protocol,
                                   broker_stalls=args.broker_stalls, deploy_waves=args.deploy_waves,
                                   client_kinds=kinds)
            print(f"  {run['lines']:,} lines: {run['result'].line()}; {run['estates'].line()} "
                  f"({run['simulate_s']:.0f} s simulate, {run['pipeline_s']:.0f} s pipeline)", file=sys.stderr,
                  flush=True)
            runs.append(run)
    finally:
        spark.stop()
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    command = "python -m bench.accuracy " + " ".join(argv if argv is not None else sys.argv[1:])
    report = markdown(runs, command.strip(), started, time.monotonic() - t0)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{started:%Y%m%dT%H%M%S}-accuracy.md"
    path.write_text(report, encoding="utf-8")
    print(report)
    print(f"written: {path}", file=sys.stderr)
    ok = all(r["result"].found == r["result"].truth and r["result"].invented == 0 and r["estates"].invented == 0
             and r["estates"].found >= 0.95 * r["estates"].truth
             and r["result"].cause_accuracy >= args.min_accuracy for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
