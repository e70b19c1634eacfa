"""Tolerance of damaged input: how many true rebalances, and their causes, survive the ways shipping damages logs.

    python -m bench.damage [--seed 7] [--groups 4] [--hours 4] [--out bench/results] [--work DIR] [--keep]

Simulate one estate (`simulator.simulate`), then for each kind of damage copy its landing folder and damage the
copy (pure Python on the text files, seeded): lines lost, lines duplicated, neighbouring lines of one broker file
swapped, one broker's clock ahead, one hour of one broker's log missing, and all of them at once. Run the batch
pipeline (`pipelines.flow.batch.batch_tables`) over each copy, match gold_rebalances to the truth with
`simulator.evaluate` and print a markdown table (written to `<out>/<timestamp>-damage.md` with --out), followed
by every rebalance missed, invented or given another cause. Not part of the test suite; tests/test_damage.py runs
the all-at-once damage on a small estate.
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path

from bench.accuracy import mismatch_table
from bench.dataset import landing_files

LOST_RATE = 0.01
DUPLICATED_RATE = 0.003
SWAPPED_RATE = 0.01
CLOCK_AHEAD_S = 20
# `shipping`: every damage a log shipper does to lines (lost, duplicated, reordered, a clock ahead), without the
# missing hour; `all`: everything.
KINDS = ("none", "lines_lost", "lines_duplicated", "lines_reordered", "clock_ahead", "hour_missing", "shipping", "all")
DESCRIBED = {
    "none": "undamaged copy (baseline)",
    "lines_lost": f"{LOST_RATE:.0%} of lines lost at random (every file)",
    "lines_duplicated": f"{DUPLICATED_RATE:.1%} of lines duplicated, the copy right after the original (every file)",
    "lines_reordered": f"~{SWAPPED_RATE:.0%} of neighbouring lines swapped in one broker file",
    "clock_ahead": f"one broker's clock {CLOCK_AHEAD_S} s ahead (every line of its server.log)",
    "hour_missing": "one hour of one broker's log missing",
    "shipping": "lines lost, duplicated and reordered, and a clock ahead, at once (no hour missing)",
    "all": "all of the above at once",
}
BROKER_TS = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3})\]")


@dataclass(frozen=True)
class Targets:
    """The seeded choices of the damages aimed at one broker or file (paths relative to the landing folder)."""

    clock_broker: str
    reordered_file: str
    missing_file: str


def lose(lines: list[str], rng: random.Random, rate: float = LOST_RATE) -> list[str]:
    """Each line dropped with probability `rate`."""
    return [line for line in lines if rng.random() >= rate]


def duplicate(lines: list[str], rng: random.Random, rate: float = DUPLICATED_RATE) -> list[str]:
    """Each line followed by a copy of itself with probability `rate`."""
    out: list[str] = []
    for line in lines:
        out.append(line)
        if rng.random() < rate:
            out.append(line)
    return out


def swap_neighbours(lines: list[str], rng: random.Random, rate: float = SWAPPED_RATE) -> list[str]:
    """About `rate` of the lines swapped with the next one (a swapped pair is not swapped again)."""
    out = list(lines)
    i = 0
    while i < len(out) - 1:
        if rng.random() < rate:
            out[i], out[i + 1] = out[i + 1], out[i]
            i += 2
        else:
            i += 1
    return out


def shift_clock(lines: list[str], seconds: float) -> list[str]:
    """Every leading log4j timestamp (`[yyyy-MM-dd HH:mm:ss,SSS]`) moved by `seconds`, in the same layout."""
    def shifted(match: re.Match[str]) -> str:
        at = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S") + timedelta(seconds=seconds, milliseconds=int(match[2]))
        return f"[{at:%Y-%m-%d %H:%M:%S},{at.microsecond // 1000:03d}]"

    return [BROKER_TS.sub(shifted, line, count=1) for line in lines]


def _read(path: Path) -> list[str]:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8").splitlines()


def _write(path: Path, lines: list[str]) -> None:
    data = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


def _files(landing: Path) -> list[Path]:
    return list(landing_files(landing))


def choose_targets(landing: Path, groups: list[str], seed: int) -> Targets:
    """Seeded picks among the broker files that log one of `groups`, so that no damage misses the coordinators."""
    names = re.compile("|".join(re.escape(g) for g in groups))
    broker_files = [p for p in _files(landing) if p.name.startswith("server.log")]
    telling = [p for p in broker_files if any(names.search(line) for line in _read(p))] or broker_files
    if not telling:
        raise ValueError(f"{landing} holds no broker server.log files to damage")
    rng = random.Random(f"{seed}:targets")
    rel = [str(p.relative_to(landing)) for p in telling]
    missing = rng.choice(rel)
    # another file than the missing one when there is one, so that `all` reorders lines that are there
    return Targets(clock_broker=rng.choice(sorted({r.split("/")[0] for r in rel})),
                   reordered_file=rng.choice([r for r in rel if r != missing] or rel), missing_file=missing)


def damage_landing(source: Path, target: Path, kind: str, targets: Targets, *, seed: int) -> None:
    """Copy the landing folder `source` to `target` with one kind of damage (or `all` of them) applied."""
    if kind not in KINDS:
        raise ValueError(f"unknown damage {kind!r}; choose one of {', '.join(KINDS)}")
    shutil.copytree(source, target)
    every = kind in ("all", "shipping")
    for path in _files(target):
        rel = str(path.relative_to(target))
        if kind in ("all", "hour_missing") and rel == targets.missing_file:
            path.unlink()
            continue
        steps: list[Callable[[list[str]], list[str]]] = []
        # one generator per damage and file, so that `all` loses and duplicates the lines the single damages do
        if every or kind == "lines_lost":
            steps.append(partial(lose, rng=random.Random(f"{seed}:lost:{rel}")))
        if every or kind == "lines_duplicated":
            steps.append(partial(duplicate, rng=random.Random(f"{seed}:duplicated:{rel}")))
        if (every or kind == "lines_reordered") and rel == targets.reordered_file:
            steps.append(partial(swap_neighbours, rng=random.Random(f"{seed}:reordered:{rel}")))
        if (every or kind == "clock_ahead") and rel.split("/")[0] == targets.clock_broker \
                and path.name.startswith("server.log"):
            steps.append(partial(shift_clock, seconds=CLOCK_AHEAD_S))
        if steps:
            lines = _read(path)
            for step in steps:
                lines = step(lines)
            _write(path, lines)


def evaluate(spark, cfg, truth_file: Path) -> dict:
    """Run the batch pipeline over `cfg.landing`, match the truth: counts and every rebalance not matched right."""
    from pyspark.sql import functions as F

    from pipelines.flow.batch import batch_tables
    from simulator.evaluate import accuracy, match_truth

    with batch_tables(spark, cfg) as tables:
        matched = match_truth(tables["gold_rebalances"], spark.read.json(str(truth_file))).cache()
        try:
            result = accuracy(matched)
            wrong = (matched.filter(~F.col("cause").eqNullSafe(F.col("true_cause")))
                     .select("group_id", "generation_after", "true_cause", "true_cause_detail", "cause",
                             "cause_detail")
                     .orderBy("group_id", "generation_after").collect())
        finally:
            matched.unpersist()
    return {"result": result, "wrong": [r.asDict() for r in wrong]}


def markdown(runs: list[dict], *, command: str, started: datetime, estate: str, targets: Targets) -> str:
    """The report: one row per damage, then the rebalances each damage cost."""
    out = [f"# Tolerance of damaged input ({started:%Y-%m-%dT%H:%M:%SZ})", "", f"Command: `{command}`.", "",
           (f"Estate: {estate}. Targets: clock of `{targets.clock_broker}`, lines reordered in "
            f"`{targets.reordered_file}`, missing hour `{targets.missing_file}`."), "",
           "| damage | true rebalances found | causes right among found | not in the truth | pipeline s |",
           "|---|---:|---:|---:|---:|"]
    for run in runs:
        r = run["result"]
        found = f"{r.found}/{r.truth} ({r.found / r.truth:.1%})" if r.truth else "0/0"
        right = f"{r.cause_right}/{r.found} ({r.cause_accuracy:.1%})" if r.found else "0/0"
        out.append(f"| {run['kind']}: {DESCRIBED[run['kind']]} | {found} | {right} | {r.invented} | "
                   f"{run['seconds']:.0f} |")
    for run in runs:
        if run["wrong"]:
            out += ["", f"## {run['kind']}: rebalances not matched right", "", *mismatch_table(run["wrong"])]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Simulate, damage each copy, score each; print the table (and write it with --out)."""
    parser = argparse.ArgumentParser(prog="python -m bench.damage", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7, help="seed of the estate and of every damage")
    parser.add_argument("--groups", type=int, default=4, help="consumer groups of the estate")
    parser.add_argument("--hours", type=float, default=4.0, help="simulated span")
    parser.add_argument("--kafka-version", default="3.6")
    parser.add_argument("--kinds", default=",".join(KINDS), help="damages to run (comma-separated)")
    parser.add_argument("--out", type=Path, help="directory to write <timestamp>-damage.md into (e.g. bench/results)")
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temp dir, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"unknown damage {', '.join(unknown)}; choose among {', '.join(KINDS)}")

    from pipelines.session.spark import get_spark
    from pipelines.settings.config import load_config
    from simulator import simulate

    started = datetime.now(timezone.utc)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-damage-"))
    work.mkdir(parents=True, exist_ok=True)
    sim = simulate(work / "sim", seed=args.seed, groups=args.groups, hours=args.hours,
                   kafka_version=args.kafka_version)
    targets = choose_targets(sim.landing_dir, sim.groups, args.seed)
    estate = (f"Kafka {args.kafka_version}, {len(sim.groups)} groups, {args.hours:g} h, {sim.lines:,} lines in "
              f"{sim.files} files, {sim.rebalances} true rebalances, seed {args.seed}")
    print(estate, file=sys.stderr, flush=True)
    spark = get_spark(load_config(None, {"spark": {"master": "local[2]", "shuffle_partitions": 4,
                                                  "driver_memory": "3g"}}), app_name="bench-damage")
    runs = []
    try:
        for kind in kinds:
            landing = work / kind / "landing"
            shutil.rmtree(landing.parent, ignore_errors=True)
            damage_landing(sim.landing_dir, landing, kind, targets, seed=args.seed)
            cfg = load_config(None, {"landing": landing, "lakehouse": work / kind / "lakehouse"})
            t0 = time.monotonic()
            run = {"kind": kind, **evaluate(spark, cfg, sim.truth_file), "seconds": time.monotonic() - t0}
            print(f"  {kind}: {run['result'].line()} ({run['seconds']:.0f} s)", file=sys.stderr, flush=True)
            runs.append(run)
    finally:
        spark.stop()
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    command = "python -m bench.damage " + " ".join(argv if argv is not None else sys.argv[1:])
    report = markdown(runs, command=command.strip(), started=started, estate=estate, targets=targets)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"{started:%Y%m%dT%H%M%S}-damage.md"
        path.write_text(report, encoding="utf-8")
        print(f"written: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
