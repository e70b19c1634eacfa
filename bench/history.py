"""`python -m bench.history`: what one hour of new logs costs after a short and after a long history (issue #20).

One estate spanning `--days` is simulated (thinned with `--noise-density`, so that weeks of group activity fit one
machine), and its busiest hour of the last two incident cycles is the increment. Its files before that hour are run
through a whole `rebalance run` process (untimed setup), once all of them (long) and once only the last
`--short-hours` of them (short), then the increment's files are landed and timed three ways after each, each in its
own process: a whole `rebalance run` (the increment), a `rebalance run` with nothing new (the re-run), and a
whole-process `spark.read.text(files).count()` over the increment's files (the baseline: the JVM start and the
reading are in both). The same files after both histories: their ratio is what the history costs. Peak memory is the
whole process tree's, as proportional set sizes (`bench.memory.tree_bytes`).

Figures (ratios in one run, on one machine; the seconds are context):
- `increment_long_over_short`: the increment's time after the long history / after the short one (target <= 1.2);
- `increment_vs_count_long`, `_short`: the increment / the baseline count (target <= 3);
- `rerun_vs_count_long`: the re-run with nothing new / the baseline count (target <= 2);
- `memory_long_over_short`: the increment's peak memory after the long history / after the short one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from bench.dataset import hour_of, increment_hour, last_hours, lines_in, split_at
from bench.facts import own_cpu_s
from bench.memory import MB, descendants, process_parents, pss_bytes, tree_bytes
from pipelines.settings.config import DEFAULT_CONF
from simulator import simulate

COUNT_SCRIPT = """
import sys
from pipelines.settings.config import load_config
from pipelines.session.spark import get_spark
cfg = load_config(None, {"landing": sys.argv[1], "lakehouse": sys.argv[2]})
spark = get_spark(cfg, app_name="bench-count")
print(spark.read.text(sys.argv[3:]).count())
"""


@dataclass(frozen=True)
class Measured:
    """One whole process: its wall time and the peak memory of its process tree (`bench.memory.tree_bytes`)."""

    seconds: float
    peak_mb: float
    # Seconds per step, from the `time:` line a `rebalance run` prints (empty for other commands).
    steps: dict[str, float] = field(default_factory=dict)
    # CPU seconds of the command's descendants (its JVM, Python workers), as last seen before they ended: nobody in
    # this process reaps them, so the benchmark's own CPU accounting would not see them otherwise.
    descendants_cpu_s: float = 0.0
    # Peak memory of the processes below the watched ones, meanwhile (a standalone cluster's executors and their
    # Python workers, below the Worker daemons).
    watched_peak_mb: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Seconds and MB, rounded, the steps when the command reported them and the watched processes' peak."""
        out: dict[str, Any] = {"seconds": round(self.seconds, 2), "peak_mb": round(self.peak_mb, 1)}
        if self.watched_peak_mb:
            out["watched_peak_mb"] = round(self.watched_peak_mb, 1)
        if self.steps:
            out["steps"] = self.steps
        return out


def run_steps(output: str) -> dict[str, float]:
    """The per-step seconds of a `rebalance run` from its `time: setup 16.6 s, ingest 28.3 s, ...` line."""
    for line in output.splitlines():
        if line.startswith("time: "):
            steps = (part.rsplit(" ", 2) for part in line.removeprefix("time: ").split(", "))
            return {step: float(seconds) for step, seconds, _unit in steps}
    return {}


def measure_process(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None,
                    watch: tuple[int, ...] = ()) -> Measured:
    """Run `cmd` to its end, sampling its process tree's memory (`bench.memory.tree_bytes`) every 0.2 s, and that of
    the processes below each of `watch`; fail loudly on a non-zero exit (a benchmark of a failed run measures
    nothing), and end the command when this process is interrupted."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0, 0]
    cpu: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            parents = process_parents()  # one scan of /proc for both the memory and the CPU of the tree
            peak[0] = max(peak[0], tree_bytes(proc.pid, parents))
            peak[1] = max(peak[1], sum(tree_bytes(pid, parents) - pss_bytes(pid) for pid in watch))
            below = descendants(proc.pid, parents)
            for pid in below:
                cpu[pid] = max(cpu.get(pid, 0.0), own_cpu_s(pid))
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        output, _ = proc.communicate()
    except BaseException:
        proc.kill()
        raise
    finally:
        done.set()
    seconds = time.perf_counter() - start
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{output[-4000:]}")
    return Measured(seconds, peak[0] / MB, run_steps(output), round(sum(cpu.values()), 1), peak[1] / MB)


def link_all(files: list[Path], source: Path, target: Path) -> None:
    """Hard-link `files` (under `source`) to the same relative paths under `target`."""
    for path in files:
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, dest)


def setup_conf(root: Path, conf: Path | None, *, max_files: int) -> Path:
    """The configuration of the untimed history run: the measured one with every history file in one micro-batch
    (the default bound makes a 30-day landing seven batches of fixed cost; the timed runs keep the default)."""
    raw = yaml.safe_load((conf or DEFAULT_CONF).read_text(encoding="utf-8")) or {}
    raw["max_files_per_trigger"] = max(max_files, int(raw.get("max_files_per_trigger") or 1))
    path = root / "setup.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def measure_estate(name: str, root: Path, estate: Path, hour: str, *, say: Any, history_hours: int | None = None,
                   conf: Path | None = None) -> dict[str, Any]:
    """Run the files of the simulated `estate` before `hour` (with `history_hours`, only that many hours of them) as
    one untimed run, then time the files of `hour` (the increment), a re-run and the baseline count."""
    history, increment = split_at(estate, hour)
    if history_hours is not None:
        history = last_hours(history, history_hours)
    landing, lakehouse = root / "landing", root / "lakehouse"
    rebalance = [str(Path(sys.executable).with_name("rebalance")), "run", "--landing", str(landing),
                 "--lakehouse", str(lakehouse)]
    timed_conf = ["--conf", str(conf)] if conf else []
    link_all(history, estate, landing)
    history_lines = lines_in(history)
    hours = len({h for p in history if (h := hour_of(p)) is not None})
    say(f"{name}: {hours} h before hour {hour}, {len(history)} history files ({history_lines:,} lines); "
        "running the history")
    setup = measure_process([*rebalance, "--conf", str(setup_conf(root, conf, max_files=len(history)))],
                            cwd=Path.cwd())
    rebalance += timed_conf
    link_all(increment, estate, landing)
    increment_lines = lines_in(increment)
    say(f"{name}: history took {setup.seconds:.0f} s; timing the increment ({increment_lines:,} lines)")
    timed = measure_process(rebalance, cwd=Path.cwd())
    rerun = measure_process(rebalance, cwd=Path.cwd())
    count = measure_process([sys.executable, "-c", COUNT_SCRIPT, str(landing), str(root / "count-lakehouse"),
                             *[str(landing / p.relative_to(estate)) for p in increment]],
                            cwd=Path.cwd())
    return {"hours": hours, "history_lines": history_lines, "increment_hour": hour,
            "increment_lines": increment_lines, "history_run": setup.as_dict(), "increment": timed.as_dict(),
            "rerun": rerun.as_dict(), "count": count.as_dict()}


def figures(short: dict[str, Any], long: dict[str, Any]) -> dict[str, float]:
    """The ratios the targets are set on."""
    def s(estate: dict[str, Any], step: str) -> float:
        return float(estate[step]["seconds"])
    return {
        "increment_long_over_short": round(s(long, "increment") / s(short, "increment"), 3),
        "increment_vs_count_short": round(s(short, "increment") / s(short, "count"), 3),
        "increment_vs_count_long": round(s(long, "increment") / s(long, "count"), 3),
        "rerun_vs_count_long": round(s(long, "rerun") / s(long, "count"), 3),
        "memory_long_over_short": round(long["increment"]["peak_mb"] / short["increment"]["peak_mb"], 3),
    }


TARGETS = {"increment_long_over_short": 1.2, "increment_vs_count_short": 3.0, "increment_vs_count_long": 3.0,
           "rerun_vs_count_long": 2.0}


def measure_history(work: Path, *, days: float = 30.0, short_hours: int = 4, groups: int = 1,
                    noise_density: float = 0.02, cycle_every_hours: float = 12.0, seed: int = 7,
                    conf: Path | None = None, say: Any = print) -> dict[str, Any]:
    """One estate of `days` simulated under `work`; its busiest hour of the last two incident cycles is the increment
    of both runs: after every hour before it (long), then after only `short_hours` of them (short). The same files
    are timed after both histories, so their ratio is the history's cost alone (two estates simulated apart end in
    different hours: the long one's last hour held no rebalance). Returns {"short", "long", "figures"}."""
    summary = simulate(work / "sim", seed=seed, groups=groups, hours=days * 24, noise_density=noise_density,
                       cycle_every_hours=cycle_every_hours)
    # An hour with more than `short_hours` hours before it, so that the long history is the longer one.
    hour, starting = increment_hour(summary.truth_file, summary.landing_dir,
                                    within=max(1, round(2 * cycle_every_hours)), after=short_hours + 1)
    say(f"simulated {days:g} days ({summary.lines:,} lines, {summary.rebalances} rebalances); the increment is hour "
        f"{hour}, in which {starting} rebalances start")
    estates = {name: measure_estate(name, work / name, summary.landing_dir, hour, say=say, conf=conf,
                                    history_hours=history_hours)
               for name, history_hours in (("short", short_hours), ("long", None))}
    estates["long"]["increment_rebalances"] = estates["short"]["increment_rebalances"] = starting
    return {**estates, "figures": figures(estates["short"], estates["long"])}


def step_lines(history: dict[str, Any]) -> list[str]:
    """One line per estate and one per timed run with its seconds by step, for the printed summary."""
    out = []
    for name in ("short", "long"):
        e = history[name]
        out.append(f"{name}: history {e['history_lines']:,} lines, increment {e['increment_lines']:,} lines in "
                   f"{e['increment']['seconds']} s (count {e['count']['seconds']} s, re-run {e['rerun']['seconds']} "
                   f"s, peak {e['increment']['peak_mb']} MB)")
        for step in ("increment", "rerun"):
            spent = ", ".join(f"{k} {v:g}" for k, v in e[step].get("steps", {}).items())
            out.append(f"  {name} {step} by step (s): {spent}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure both estates, print the figures against their targets and write them under --out."""
    parser = argparse.ArgumentParser(prog="python -m bench.history", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=float, default=30.0,
                        help="span of the simulated estate; the long history is its hours before the increment "
                             "(default 30)")
    parser.add_argument("--short-hours", type=int, default=4, help="hours of the short history (default 4)")
    parser.add_argument("--groups", type=int, default=1, help="consumer groups to simulate (default 1)")
    parser.add_argument("--noise-density", type=float, default=0.02,
                        help="share of application, GC and broker housekeeping lines kept (default 0.02)")
    parser.add_argument("--cycle-every-hours", type=float, default=12.0,
                        help="one cycle of incidents (every kind once) per this many hours (default 12)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--conf", type=Path, help="pipeline configuration of the timed runs (default conf/local.yml)")
    parser.add_argument("--out", type=Path, default=Path("bench/results"), help="results directory")
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temporary one, removed after)")
    args = parser.parse_args(argv)
    if args.days * 24 < args.short_hours + 2 or args.short_hours < 2:
        parser.error("--short-hours must be at least 2, and --days must leave at least two hours more")

    def say(message: str) -> None:
        print(f"[{datetime.now():%H:%M:%S}] {message}", flush=True)

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-history-"))
    try:
        measured = measure_history(work, days=args.days, short_hours=args.short_hours, groups=args.groups,
                                   noise_density=args.noise_density, cycle_every_hours=args.cycle_every_hours,
                                   seed=args.seed, conf=args.conf, say=say)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    found = measured["figures"]
    result = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "options": {
        k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, **measured}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-history.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name, value in found.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else (" met" if value <= target else f" missed (target <= {target:g})")
        print(f"{name}: {value}{verdict}")
    print("\n".join(step_lines(measured)))
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
