"""`python -m bench --scale`: a simulated day of a large estate, on `local[*]` and on a Spark standalone cluster
(issue #54).

The simulator writes a day of an estate of `--brokers` brokers and `--groups` consumer groups (2 to 6 member
processes each: about 1,160 host folders at the default 300), thinned with `--density` (application, GC and broker
housekeeping lines; the group activity stays whole), and the same estate at a quarter of its brokers and groups.
Each estate's day but its last hour runs through a whole `rebalance run` process with the configuration as a user
has it (the day), then its last hour is landed and run (the increment). The full estate's first two hours are run
the same way (the increment after an hour). With the cluster (default), the wheel built from this checkout, alone in
a virtualenv, drives a standalone master and two one-core workers (`bench/cluster.py`) over the quarter and the full
day, and the driver's memory is its own process tree (the workers' and executors' are measured apart).

Figures (ratios within one run; seconds are context):
- `us_per_line_full_over_quarter`: the day's microseconds per line, full estate / quarter (target <= 1.3);
- `driver_memory_full_over_quarter`: the day's peak driver memory, full / quarter (target <= 1.3; on the cluster
  the driver alone, on `local[*]` the whole process tree, where the executors live in the driver's JVM);
- `increment_day_over_hour`: the last hour's increment after the day / after one hour (target <= 1.2);
- the replay's share: the `reconstruct` step's seconds over the run's steps.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from bench import cluster
from bench.history import last_hour_files, link_all, measure_process
from simulator import simulate

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


def _lines(files: list[Path]) -> int:
    return sum(1 for p in files for _ in p.open("rb"))


def _conf(root: Path, driver: Driver) -> list[str]:
    if driver.spark is None:
        return []
    path = root / "spark.yml"
    path.write_text(yaml.safe_dump({"spark": driver.spark}), encoding="utf-8")
    return ["--conf", str(path)]


def _share(steps: dict[str, float], step: str) -> float | None:
    total = sum(steps.values())
    return round(steps.get(step, 0.0) / total, 3) if total else None


def run_estate(name: str, root: Path, landing: Path, driver: Driver, say: Say) -> dict[str, Any]:
    """The estate's files but the last hour's as one run (the day), then the last hour's (the increment)."""
    history, increment = last_hour_files(landing)
    root.mkdir(parents=True, exist_ok=True)
    work_landing, lakehouse = root / "landing", root / "lakehouse"
    command = [*driver.command, "run", "--landing", str(work_landing), "--lakehouse", str(lakehouse),
               *_conf(root, driver)]
    link_all(history, landing, work_landing)
    lines = _lines(history)
    say(f"{name}: {len(history):,} files, {lines:,} lines before the last hour; running them")
    day = measure_process(command, cwd=root, env=driver.env, watch=driver.watch)
    link_all(increment, landing, work_landing)
    increment_lines = _lines(increment)
    say(f"{name}: took {day.seconds:.0f} s; the last hour ({len(increment):,} files, {increment_lines:,} lines)")
    inc = measure_process(command, cwd=root, env=driver.env, watch=driver.watch)
    say(f"{name}: the increment took {inc.seconds:.0f} s")
    return {"files": len(history), "lines": lines, "us_per_line": round(day.seconds * 1e6 / lines, 2),
            "replay_share": _share(day.steps, "reconstruct"), "day": day.as_dict(),
            "increment_files": len(increment), "increment_lines": increment_lines, "increment": inc.as_dict()}


def simulate_estate(root: Path, opts: ScaleOptions, *, groups: int, brokers: int, hours: float) -> dict[str, Any]:
    """One simulated estate under `root`/sim: its landing directory, lines, files and rebalances."""
    summary = simulate(root / "sim", seed=opts.seed, groups=groups, brokers=brokers, hours=hours,
                       noise_density=opts.density, cycle_every_hours=opts.cycle_every_hours)
    members = sum(1 for p in summary.landing_dir.iterdir() if not p.name.startswith("broker"))
    return {"landing": summary.landing_dir, "groups": groups, "brokers": brokers, "hours": hours,
            "lines": summary.lines, "files": summary.files, "rebalances": summary.rebalances,
            "instance_folders": members}


def _figures(quarter: dict[str, Any], full: dict[str, Any], memory: str) -> dict[str, float]:
    return {"us_per_line_full_over_quarter": round(full["us_per_line"] / quarter["us_per_line"], 3),
            "driver_memory_full_over_quarter": round(full["day"][memory] / quarter["day"][memory], 3)}


def _on_cluster(work: Path, estates: dict[str, dict[str, Any]], say: Say) -> dict[str, Any]:
    root = work / "cluster"
    say("cluster: building the wheel and its virtualenv")
    python = cluster.wheel_venv(root / "wheel")
    out: dict[str, Any] = {}
    with cluster.standalone_cluster(python, root, worker_memory="3g") as running:
        spark = {"master": running.url, "driver_memory": "2g", "shuffle_partitions": 4,
                 "conf": {"spark.executor.memory": "2g", "spark.executor.cores": 1,
                          "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}}
        workers = tuple(p.pid for p in running.processes[1:])
        driver = Driver([str(python.with_name("rebalance"))], cluster.clean_env(), spark, workers)
        for name in ("quarter", "full"):
            out[name] = run_estate(f"cluster {name}", root / name, estates[name]["landing"], driver, say)
    return {**out, "figures": _figures(out["quarter"], out["full"], "peak_mb")}


def measure_scale(work: Path, opts: ScaleOptions, say: Say) -> dict[str, Any]:
    """Simulate the estates, run them locally (and on the cluster), and their figures."""
    shapes = {"quarter": (max(1, opts.groups // 4), max(2, opts.brokers // 4), opts.hours),
              "full": (opts.groups, opts.brokers, opts.hours), "hour": (opts.groups, opts.brokers, 2.0)}
    estates = {}
    for name, (groups, brokers, hours) in shapes.items():
        estates[name] = simulate_estate(work / "estates" / name, opts, groups=groups, brokers=brokers, hours=hours)
        say(f"simulated {name}: {groups} groups on {brokers} brokers, {hours:g} h, {estates[name]['lines']:,} "
            f"lines in {estates[name]['files']:,} files, {estates[name]['rebalances']} rebalances")
    result: dict[str, Any] = {
        "estates": {k: {key: v for key, v in e.items() if key != "landing"} for k, e in estates.items()}}
    if opts.cluster and not cluster.java_missing():  # first: the part most likely to fail fails early
        result["cluster"] = _on_cluster(work, estates, say)
    local = Driver([str(Path(sys.executable).with_name("rebalance"))])
    runs = {name: run_estate(f"local {name}", work / "local" / name, estates[name]["landing"], local, say)
            for name in shapes}
    figures = {**_figures(runs["quarter"], runs["full"], "peak_mb"),
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
    rows += ["", "| run | estate | files | lines | seconds | µs/line | peak MB (driver tree) | workers' peak MB | "
             "replay share | last hour: files, lines, seconds |", "|---|---|---|---|---|---|---|---|---|---|"]
    for where in ("local", "cluster"):
        for name, run in (result["local"] if where == "local" else result.get("cluster", {})).items():
            if name == "figures":
                continue
            shape = result["estates"][name]
            rows.append(f"| {where} | {name}: {shape['groups']} groups, {shape['brokers']} brokers, "
                        f"{shape['hours']:g} h | {run['files']:,} | {run['lines']:,} | {run['day']['seconds']} | "
                        f"{run['us_per_line']} | {run['day']['peak_mb']} | {run['day'].get('watched_peak_mb', '')} "
                        f"| {run['replay_share']} | {run['increment_files']:,}, {run['increment_lines']:,}, "
                        f"{run['increment']['seconds']} |")
    return "\n".join(rows)


def main(opts: ScaleOptions) -> int:
    """Measure, print the table and write `<time>-scale.json` and `.md` under the results directory."""
    def say(message: str) -> None:
        print(f"[{datetime.now():%H:%M:%S}] {message}", flush=True)

    work = opts.work or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    started = datetime.now(timezone.utc)
    try:
        result = measure_scale(work, opts, say)
    finally:
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
    parser.add_argument("--hours", type=float, default=24.0, help="span of the day (default 24)")
    parser.add_argument("--density", type=float, default=0.05,
                        help="share of application, GC and broker housekeeping lines kept (default 0.05)")
    parser.add_argument("--cycle-every-hours", type=float, default=4.0,
                        help="one cycle of incidents (every kind once) per this many hours (default 4)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-cluster", action="store_true", help="local[*] only")
    parser.add_argument("--out", type=Path, default=Path("bench/results"), help="results directory")
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temporary one, removed after)")
    args = parser.parse_args(argv)
    if args.groups < 4 or args.brokers < 2 or args.hours < 3 or not 0 < args.density <= 1:
        parser.error("--groups must be at least 4, --brokers at least 2, --hours at least 3 and --density in (0, 1]")
    return ScaleOptions(brokers=args.brokers, groups=args.groups, hours=args.hours, density=args.density,
                        cycle_every_hours=args.cycle_every_hours, seed=args.seed, cluster=not args.no_cluster,
                        out=args.out, work=args.work)


if __name__ == "__main__":
    sys.exit(main(parse_args(sys.argv[1:])))
