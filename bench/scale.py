"""`python -m bench --scale`: a simulated day of a large estate, on `local[*]` and on a Spark standalone cluster
(issue #54).

The simulator writes a day of an estate of `--brokers` brokers and `--groups` consumer groups (2 to 6 member
processes each: about 1,160 host folders at the default 300), thinned with `--density` (application, GC and broker
housekeeping lines; the group activity stays whole), and the same estate at a quarter of its brokers and groups (and
of its incidents: one cycle of incidents per four times as many hours). The increment is one hour of the day's second
half, the latest in which the most true rebalances start (the last hours of a simulated day hold none):
each estate's files before that hour run through a whole `rebalance run` process with the configuration as a user
has it (the day), then that hour's files are landed and run (the increment). The same hour of the full estate is also
run after only the hour before it (the increment after an hour: the same files, after one hour of history instead
of the day's). With the cluster (default),
the wheel built from this checkout, alone in a virtualenv, drives a standalone master and two one-core workers
(`bench/cluster.py`) over the quarter and the full day; the driver's memory is then its own process tree, and the
executors' (the processes below the workers) is measured apart. Each driver first runs one small file untimed (its
JVM records the class-data archive later runs map, as a user's first run does).

Figures (ratios within one run; seconds are context):
- `us_per_line_full_over_quarter`: the day's microseconds per line, full estate / quarter (target <= 1.3);
- `driver_memory_full_over_quarter`: the day's peak driver memory, full / quarter (target <= 1.3; on the cluster
  the driver alone, on `local[*]` the whole process tree, where the executors live in the driver's JVM);
- `increment_day_over_hour`: the increment after the day / after one hour (target <= 1.2);
- context: microseconds per line over the ingest and reconstruct steps alone (no JVM start, setup, quality or
  alerts), and the replay's share (the `reconstruct` step's seconds over the run's steps).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from bench import cluster
from bench.dataset import increment_hour, last_hours, lines_in, split_at
from bench.history import link_all, measure_process
from pipelines.session.spark import JAR_CACHE
from simulator import simulate
from simulator.frameworks import parse_shares

TARGETS = {"us_per_line_full_over_quarter": 1.3, "driver_memory_full_over_quarter": 1.3,
           "increment_day_over_hour": 1.2}
Say = Callable[[str], None]


@dataclass(frozen=True)
class ScaleOptions:
    """The estate and where the results go."""

    brokers: int = 50
    groups: int = 300
    hours: float = 24.0
    density: float = 0.05
    cycle_every_hours: float = 4.0
    # Frameworks of the consumers (simulator/frameworks.py), as shares.
    client_kinds: str = "java=5,librdkafka=2,streams=2,connect=1"
    seed: int = 7
    cluster: bool = True
    out: Path = Path("bench/results")
    work: Path | None = None


@dataclass(frozen=True)
class Driver:
    """How a `rebalance run` is started: the command's first words, its environment, extra configuration (the
    cluster's master) and the processes whose memory is watched beside it (the cluster's workers)."""

    command: list[str]
    env: dict[str, str] | None = None
    spark: dict[str, Any] | None = None
    watch: tuple[int, ...] = ()


def _conf(root: Path, driver: Driver) -> list[str]:
    if driver.spark is None:
        return []
    path = root / "spark.yml"
    path.write_text(yaml.safe_dump({"spark": driver.spark}), encoding="utf-8")
    return ["--conf", str(path)]


def _share(steps: dict[str, float], step: str) -> float | None:
    total = sum(steps.values())
    return round(steps.get(step, 0.0) / total, 3) if total else None


def run_estate(name: str, root: Path, landing: Path, hour: str, driver: Driver, say: Say, *,
               history_hours: int | None = None) -> dict[str, Any]:
    """The estate's files before `hour` as one run (the day; with `history_hours`, only that many hours of it), then
    the files of `hour` (the increment)."""
    history, increment = split_at(landing, hour)
    if history_hours is not None:
        history = last_hours(history, history_hours)
    root.mkdir(parents=True, exist_ok=True)
    work_landing, lakehouse = root / "landing", root / "lakehouse"
    command = [*driver.command, "run", "--landing", str(work_landing), "--lakehouse", str(lakehouse),
               *_conf(root, driver)]
    link_all(history, landing, work_landing)
    lines = lines_in(history)
    say(f"{name}: {len(history):,} files, {lines:,} lines before hour {hour}; running them")
    day = measure_process(command, cwd=root, env=driver.env, watch=driver.watch)
    link_all(increment, landing, work_landing)
    increment_lines = lines_in(increment)
    say(f"{name}: took {day.seconds:.0f} s; hour {hour} ({len(increment):,} files, {increment_lines:,} lines)")
    inc = measure_process(command, cwd=root, env=driver.env, watch=driver.watch)
    say(f"{name}: the increment took {inc.seconds:.0f} s")
    work_s = day.steps.get("ingest", 0.0) + day.steps.get("reconstruct", 0.0)
    return {"files": len(history), "lines": lines, "us_per_line": round(day.seconds * 1e6 / lines, 2),
            "work_us_per_line": round(work_s * 1e6 / lines, 2) if work_s else None,
            "replay_share": _share(day.steps, "reconstruct"), "day": day.as_dict(),
            "increment_files": len(increment), "increment_lines": increment_lines, "increment": inc.as_dict()}


def warm_up(root: Path, landing: Path, driver: Driver) -> None:
    """One untimed run of the estate's smallest file, so that the timed runs start as a user's later runs do (the
    driver's class-data archive recorded, the jars in place)."""
    smallest = min((p for p in landing.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    root.mkdir(parents=True, exist_ok=True)
    link_all([smallest], landing, root / "landing")
    measure_process([*driver.command, "run", "--landing", str(root / "landing"), "--lakehouse",
                     str(root / "lakehouse"), *_conf(root, driver)], cwd=root, env=driver.env)


def simulate_estate(root: Path, opts: ScaleOptions, *, groups: int, brokers: int,
                    cycle_every_hours: float) -> dict[str, Any]:
    """One simulated day under `root`/sim: its landing directory, lines, files and rebalances."""
    summary = simulate(root / "sim", seed=opts.seed, groups=groups, brokers=brokers, hours=opts.hours,
                       noise_density=opts.density, cycle_every_hours=cycle_every_hours,
                       client_kinds=parse_shares(opts.client_kinds))
    members = sum(1 for p in summary.landing_dir.iterdir() if not p.name.startswith("broker"))
    hour, starting = increment_hour(summary.truth_file, summary.landing_dir)
    return {"landing": summary.landing_dir, "increment_hour": hour, "increment_rebalances": starting,
            "groups": groups, "brokers": brokers, "hours": opts.hours,
            "lines": summary.lines, "files": summary.files, "rebalances": summary.rebalances,
            "instance_folders": members}


def scale_figures(quarter: dict[str, Any], full: dict[str, Any]) -> dict[str, float]:
    """Microseconds per line and the driver's peak memory over the day, the full estate over its quarter."""
    return {"us_per_line_full_over_quarter": round(full["us_per_line"] / quarter["us_per_line"], 3),
            "driver_memory_full_over_quarter": round(full["day"]["peak_mb"] / quarter["day"]["peak_mb"], 3)}


def _on_cluster(work: Path, estates: dict[str, dict[str, Any]], say: Say) -> dict[str, Any]:
    root = work / "cluster"
    say("cluster: building the wheel and its virtualenv")
    python = cluster.wheel_venv(root / "wheel")
    out: dict[str, Any] = {}
    archives = set(JAR_CACHE.glob("*.jsa"))
    try:
        with cluster.standalone_cluster(python, root, worker_memory="3g") as running:
            spark = {"master": running.url, "driver_memory": "2g", "shuffle_partitions": 4,
                     "conf": {"spark.executor.memory": "2g", "spark.executor.cores": 1,
                              "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}}
            workers = tuple(p.pid for p in running.processes[1:])
            driver = Driver([str(python.with_name("rebalance"))], cluster.clean_env(), spark, workers)
            warm_up(root / "warm-up", estates["quarter"]["landing"], driver)
            for name in ("quarter", "full"):
                out[name] = run_estate(f"cluster {name}", root / name, estates[name]["landing"],
                                       estates[name]["increment_hour"], driver, say)
    finally:
        for archive in set(JAR_CACHE.glob("*.jsa")) - archives:  # the temporary virtualenv's own, ~200 MB
            archive.unlink(missing_ok=True)
    return {**out, "figures": scale_figures(out["quarter"], out["full"])}


def measure_scale(work: Path, opts: ScaleOptions, say: Say) -> dict[str, Any]:
    """Simulate the estates, run them on the cluster (unless left out) and locally, and their figures."""
    quarter_groups = max(1, opts.groups // 4)
    shapes = {"quarter": (quarter_groups, max(1, opts.brokers // 4),
                          opts.cycle_every_hours * opts.groups / quarter_groups),
              "full": (opts.groups, opts.brokers, opts.cycle_every_hours)}
    estates = {}
    for name, (groups, brokers, cycle) in shapes.items():
        estates[name] = simulate_estate(work / "estates" / name, opts, groups=groups, brokers=brokers,
                                        cycle_every_hours=cycle)
        say(f"simulated {name}: {groups} groups on {brokers} brokers, {opts.hours:g} h, "
            f"{estates[name]['lines']:,} lines in {estates[name]['files']:,} files, "
            f"{estates[name]['rebalances']} rebalances")
    result: dict[str, Any] = {
        "estates": {k: {key: v for key, v in e.items() if key != "landing"} for k, e in estates.items()}}
    if not opts.cluster:
        say("cluster: left out (--no-cluster)")
    elif cluster.java_missing():
        say("cluster: left out, no Java runtime on PATH")
    else:  # first: the part most likely to fail fails early
        result["cluster"] = _on_cluster(work, estates, say)
    local = Driver([str(Path(sys.executable).with_name("rebalance"))])
    warm_up(work / "local" / "warm-up", estates["quarter"]["landing"], local)
    runs = {name: run_estate(f"local {name}", work / "local" / name, estates[name]["landing"],
                             estates[name]["increment_hour"], local, say)
            for name in shapes}
    runs["hour"] = run_estate("local full after an hour", work / "local" / "hour", estates["full"]["landing"],
                              estates["full"]["increment_hour"], local, say, history_hours=1)
    figures = {**scale_figures(runs["quarter"], runs["full"]),
               "increment_day_over_hour": round(runs["full"]["increment"]["seconds"]
                                                / runs["hour"]["increment"]["seconds"], 3)}
    return {**result, "local": runs, "figures": figures}


def markdown(result: dict[str, Any]) -> str:
    """The figures against their targets, and one row per estate run."""
    rows = ["| figure | value | target | met |", "|---|---|---|---|"]
    for where in ("local", "cluster"):
        found = result["figures"] if where == "local" else result.get("cluster", {}).get("figures", {})
        for name, value in found.items():
            target = TARGETS[name]
            rows.append(f"| {where} {name} | {value} | <= {target:g} | {'yes' if value <= target else '**no**'} |")
    rows += ["", "| run | estate | files | lines | seconds | µs/line (ingest + reconstruct only) | peak MB (driver "
             "tree) | executors' peak MB | replay share | increment: hour, rebalances starting, files, lines, "
             "seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for where in ("local", "cluster"):
        for name, run in (result["local"] if where == "local" else result.get("cluster", {})).items():
            if name == "figures":
                continue
            shape = result["estates"]["full" if name == "hour" else name]
            span = "1 h of history" if name == "hour" else f"{shape['hours']:g} h"
            rows.append(f"| {where} | {name}: {shape['groups']} groups, {shape['brokers']} brokers, {span} | "
                        f"{run['files']:,} | {run['lines']:,} | {run['day']['seconds']} | {run['us_per_line']} "
                        f"({run['work_us_per_line']}) | {run['day']['peak_mb']} | "
                        f"{run['day'].get('watched_peak_mb', '')} | {run['replay_share']} | "
                        f"{shape['increment_hour']}, {shape['increment_rebalances']}, {run['increment_files']:,}, "
                        f"{run['increment_lines']:,}, {run['increment']['seconds']} |")
    return "\n".join(rows)


def _interrupted(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds the blocks that stop the cluster and the runs


def main(opts: ScaleOptions) -> int:
    """Measure, print the table and write `<time>-scale.json` and `.md` under the results directory. The scratch
    directory is kept when a run fails (its logs tell why)."""
    def say(message: str) -> None:
        print(f"[{datetime.now():%H:%M:%S}] {message}", flush=True)

    if opts.work is not None and opts.work.exists() and any(opts.work.iterdir()):
        raise SystemExit(f"--work {opts.work} is not empty: the estates are simulated into it")
    signal.signal(signal.SIGTERM, _interrupted)
    work = opts.work or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    started = datetime.now(timezone.utc)
    try:
        result = measure_scale(work, opts, say)
    except BaseException:
        say(f"failed; the scratch directory is kept: {work}")
        raise
    if opts.work is None:
        shutil.rmtree(work, ignore_errors=True)
    result = {"started": started.isoformat(timespec="seconds"), "cores": os.cpu_count(),
              "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(opts).items()}, **result}
    opts.out.mkdir(parents=True, exist_ok=True)
    stem = opts.out / f"{started:%Y%m%dT%H%M%S}-scale"
    table = markdown(result)
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
    print(table)
    print(f"results: {stem}.json, {stem}.md")
    return 0


def parse_args(argv: list[str]) -> ScaleOptions:
    """The scale options after `--scale` (`python -m bench --scale --help`)."""
    parser = argparse.ArgumentParser(prog="python -m bench --scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", type=int, default=50, help="brokers of the full estate (default 50)")
    parser.add_argument("--groups", type=int, default=300, help="consumer groups of the full estate (default 300)")
    parser.add_argument("--hours", type=float, default=24.0, help="span of the day, at least 3 (default 24)")
    parser.add_argument("--density", type=float, default=0.05,
                        help="share of application, GC and broker housekeeping lines kept (default 0.05)")
    parser.add_argument("--cycle-every-hours", type=float, default=4.0,
                        help="one cycle of incidents (every kind once) per this many hours (default 4)")
    parser.add_argument("--client-kinds", default=ScaleOptions.client_kinds, metavar="KIND=SHARE[,...]",
                        help="frameworks of the consumers, as shares of java, librdkafka, streams and connect "
                             f"(default {ScaleOptions.client_kinds})")
    parser.add_argument("--seed", type=int, default=7, help="simulation seed (default 7)")
    parser.add_argument("--no-cluster", action="store_true", help="local[*] only")
    parser.add_argument("--out", type=Path, default=Path("bench/results"), help="results directory")
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temporary one, removed after)")
    args = parser.parse_args(argv)
    if args.groups < 4 or args.brokers < 2 or args.hours < 3 or not 0 < args.density <= 1:
        parser.error("--groups must be at least 4, --brokers at least 2, --hours at least 3 and --density in (0, 1]")
    try:
        parse_shares(args.client_kinds)
    except ValueError as exc:
        parser.error(f"--client-kinds: {exc}")
    return ScaleOptions(brokers=args.brokers, groups=args.groups, hours=args.hours, density=args.density,
                        cycle_every_hours=args.cycle_every_hours, client_kinds=args.client_kinds, seed=args.seed,
                        cluster=not args.no_cluster,
                        out=args.out, work=args.work)


if __name__ == "__main__":
    sys.exit(main(parse_args(sys.argv[1:])))
