"""One benchmark run: generate the datasets, run every measurement in one Spark session, write the results."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from bench import history, latency, measure, report
from bench.dataset import Dataset, generate
from bench.facts import OtherWork, load_average, machine_facts
from bench.memory import MemorySampler
from pipelines.session.spark import get_spark

DEFAULT_LINES = 1_000_000
QUICK_LINES = 20_000
WARMUP_LINES = 2_000
DEFAULT_PROBES = 10
QUICK_PROBES = 3
HISTORY_SHORT_HOURS = 4
HANDWRITTEN = Path(__file__).resolve().with_name("handwritten.py")
SHARED = 0.25  # other processes keeping more than this share of the cores busy during a stage make it noisy


@dataclass(frozen=True)
class Options:
    """What to run: data size, probes, where results and scratch data go, and the configuration file."""

    lines: int = DEFAULT_LINES
    mode: str = "default"
    out: Path = Path("bench/results")
    work: Path | None = None
    keep: bool = False
    seed: int = 7
    groups: int = 8
    probes: int = DEFAULT_PROBES
    latency_trigger: str = "1 second"
    latency_every_s: float = 10.0
    conf: Path | None = None
    # The cost of an hour's increment after a short and a long history, each run a whole process (bench.history).
    history: bool = True
    history_days: float = 30.0


def python_script(data: Dataset, *, events_out: Path, prefilter: bool) -> dict[str, Any]:
    """Run bench/handwritten.py over a landing directory in a subprocess; its own summary plus the wall time."""
    cmd = [sys.executable, str(HANDWRITTEN), str(data.landing), "--out", str(events_out)]
    if prefilter:
        cmd.append("--prefilter")
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    lines_per_s = summary["lines"] / summary["seconds"] if summary["seconds"] > 0 else 0.0
    return {"seconds": round(summary["seconds"], 3), "lines": summary["lines"], "lines_per_s": round(lines_per_s),
            "events": summary["events"], "process_wall_s": round(wall, 3),
            "memory": {"process_mb": round(summary["peak_rss_mb"], 1)}}


def jvm_pid(spark: SparkSession) -> int:
    """The process id of the session's JVM (a child of this Python process in local mode)."""
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]


class Run:
    """The state of one benchmark run: options, sampler, stage results, progress output."""

    def __init__(self, opts: Options, say: Callable[[str], None]) -> None:
        self.opts = opts
        self._say = say
        self.started = time.monotonic()
        self.stages: dict[str, dict[str, Any]] = {}
        self.memory = MemorySampler()
        self.other_work = OtherWork()

    def say(self, message: str) -> None:
        """Progress on stderr, with the seconds since the run started."""
        self._say(f"[bench {time.monotonic() - self.started:6.1f}s] {message}")

    def record(self, name: str, result: dict[str, Any], memory: dict[str, float] | None = None, *,
               own_gone_cpu_s: float = 0.0) -> None:
        """Keep one stage's result with its memory peaks and the load at its end (`own_gone_cpu_s`: see
        `OtherWork.share`)."""
        entry = {**result, "load_1min": load_average()[0],
                 "other_cpu_share": self.other_work.share(own_gone_cpu_s)}
        if memory is not None:
            entry["memory"] = memory
        self.stages[name] = entry
        shown = {k: v for k, v in entry.items() if k in ("seconds", "lines_per_s", "p50_s", "p95_s", "other_cpu_share")}
        self.say(f"{name}: {shown}")

    def spark_stages(self, spark: SparkSession, work: Path, x1: Dataset, x4: Dataset, warmup: Dataset) -> None:
        """Baseline counts, a warm-up run, the parse stage and the ingest floor (each at 1x and 4x), and latency."""
        conf = self.opts.conf
        for name, data in (("baseline_count_x1", x1), ("baseline_count_x4", x4)):
            with self.memory.stage(name) as peak:
                timing = measure.count_lines(spark, data.files)
            self.record(name, timing.as_dict(), peak.as_dict())
        # The first run in a session pays for JIT and code generation; the baseline is warm, so the parse must be.
        warm_cfg = measure.bench_config(warmup.landing, work / "lh-warmup", conf)
        with self.memory.stage("warmup_pipeline_tiny") as peak:
            timing = measure.whole_pipeline(spark, warm_cfg, lines=warmup.lines)
        self.record("warmup_pipeline_tiny", timing.as_dict(), peak.as_dict())
        # At 4x too: whether the parse ratio is a fixed cost that more data would amortise, or a cost per line.
        for size, data in (("x1", x1), ("x4", x4)):
            for step, measured in (("parse", measure.ingest_only), ("ingest_floor", measure.ingest_floor)):
                name = f"{step}_{size}"
                with self.memory.stage(name) as peak:
                    timing = measured(spark, measure.bench_config(data.landing, work / f"lh-{name}", conf),
                                      lines=data.lines)
                self.record(name, timing.as_dict(), peak.as_dict())
        # The whole pipeline at 1x and 4x runs after this session, a process per size (process_stages). The probes
        # are new groups, so the tables of the warm-up run serve as the existing lakehouse they land on.
        self.say(f"latency: {self.opts.probes} probes, one every {self.opts.latency_every_s:g} s, processingTime "
                 f"{self.opts.latency_trigger!r}, on the warm-up run's tables")
        # The two-stream layout first (the baseline: the Databricks job's separate tasks keep it), then the one
        # stream a continuous run in one process runs, on the same lakehouse.
        for name, one_stream in (("latency_two_streams", False), ("latency", True)):
            self.say(f"{name}: {'one stream' if one_stream else 'two streams'}")
            with self.memory.stage(name) as peak:
                result = latency.measure_latency(spark, warm_cfg, staging=work / f"staging-{name}",
                                                 probes=self.opts.probes, trigger=self.opts.latency_trigger,
                                                 every_s=self.opts.latency_every_s, seed=self.opts.seed,
                                                 one_stream=one_stream, say=self.say)
            self.record(name, result.as_dict(), peak.as_dict())

    def process_stages(self, work: Path, x1: Dataset, x4: Dataset) -> None:
        """A whole-process count of the 1x files, then the whole pipeline at 1x and at 4x, each as its own
        `rebalance run` process on a fresh lakehouse (as a newcomer or a scheduled job runs it): one Spark session
        keeps the heap its earlier stages grew, so only a process per size tells whether memory grows with the
        lines, and the JVM start and table creation a first run pays are in the figures."""
        count = history.measure_process(
            [sys.executable, "-c", history.COUNT_SCRIPT, str(x1.landing), str(work / "lh-count"),
             *map(str, x1.files)], cwd=Path.cwd())
        self.record("count_process_x1", {"seconds": round(count.seconds, 3), "lines": x1.lines,
                                         "lines_per_s": round(x1.lines / count.seconds)},
                    {"process_mb": round(count.peak_mb, 1)}, own_gone_cpu_s=count.descendants_cpu_s)
        rebalance = str(Path(sys.executable).with_name("rebalance"))
        for size, data in (("x1", x1), ("x4", x4)):
            name = f"pipeline_process_{size}"
            cmd = [rebalance, "run", "--landing", str(data.landing), "--lakehouse", str(work / f"lh-{name}")]
            if self.opts.conf is not None:
                cmd += ["--conf", str(self.opts.conf)]
            self.say(f"{name}: a whole `rebalance run` process over {data.lines:,} lines")
            measured = history.measure_process(cmd, cwd=Path.cwd())
            self.record(name, {"seconds": round(measured.seconds, 3), "lines": data.lines,
                               "lines_per_s": round(data.lines / measured.seconds), "steps": measured.steps},
                        {"process_mb": round(measured.peak_mb, 1)}, own_gone_cpu_s=measured.descendants_cpu_s)


def _notes(opts: Options, stages: dict[str, dict[str, Any]]) -> list[str]:
    notes = [
        ("Every ratio uses baselines measured in this run: spark.read.text(files).count() (second, warm run) and "
         "the hand-written Python script (bench/handwritten.py, one process, no Spark) over the same 1x files."),
        ("Parse stage = the ingest query of pipelines.flow.run.run alone (landing to bronze and silver Delta tables, "
         "availableNow), in the benchmark's session; tables are created before the clock starts, each run on a "
         f"fresh lakehouse. A first whole run on {WARMUP_LINES:,} lines (warmup_pipeline_tiny) warms the JVM and "
         "code generation; its time is roughly the fixed cost of one run. The whole pipeline is measured as a user "
         "runs it: pipeline_process_x1 and _x4 are a `rebalance run` process each over the 1x and 4x files on a "
         "fresh lakehouse (JVM start and table creation included), against count_process_x1, a whole-process "
         "spark.read.text().count() of the 1x files."),
        ("Ingest floor = what any ingest of this design pays before parsing: the same landing stream "
         "(availableNow), one read of every line (a line count per file) and five transactional Delta appends per "
         "micro-batch. floor_vs_baseline is the most parse_vs_baseline can be in this design on this machine."),
        ("The Python script extracts 8 wordings and writes JSON lines; the Spark parse stage matches every "
         "template, numbers lines, fingerprints files, accounts for every line and commits six Delta tables."),
        (f"Latency: the queries of a continuous pipelines.flow.run.run (one stream; before it, as the baseline, the "
         f"ingest and reconstruct streams a Databricks job's tasks keep) started by the benchmark with processingTime "
         f"'{opts.latency_trigger}' on the warm-up run's tables (`rebalance run --trigger continuous` uses 5 seconds; "
         "each probe is a new group, so the size of the tables' past hardly matters); one "
         f"probe file every {opts.latency_every_s:g} s is renamed into a new instance folder (files keep arriving "
         "while earlier ones are processed, as log shipping delivers them), and the rows are looked up after each "
         "gold_rebalances commit; a probe still missing 180 s after the last landing counts as the time it waited. "
         "Each probe's rebalance lasts 61 s by its lines' times, so it raises a long_rebalance alert: the alerts "
         "are evaluated as in a continuous run (each rebuild's groups in its batch, all of them on the "
         "clock; the derived tables refresh on their own clock beside), and "
         "alert latency is the time from landing to the alert's line in the JSON-lines feed."),
        ("Driver memory of the in-session stages: peak RSS of this Python process plus its Spark JVM, sampled every "
         "0.2 s; the JVM keeps heap it has grown, so later stages carry the peaks of earlier ones. Workers: Spark's "
         "Python workers (sum of proportional set sizes: they share their daemon's pages). "
         "driver_memory_4x_over_1x therefore comes from pipeline_process_x1 and _x4, a process each: peak "
         "of the process tree's proportional set sizes sampled every 0.2 s (bench.memory.tree_bytes)."),
    ]
    busy = [name for name, st in stages.items() if st.get("other_cpu_share", 0) > SHARED]
    if busy:
        notes.append(f"Other processes kept more than {SHARED:.0%} of the cores busy during: {', '.join(busy)}; "
                     "those figures are noisy.")
    else:
        notes.append(f"No other process kept more than {SHARED:.0%} of the cores busy during any stage "
                     "(other_cpu_share; the load average counts Spark's own threads too).")
    return notes


def run_benchmark(opts: Options, *, spark: SparkSession | None = None,
                  say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every measurement, write the results under `opts.out`, and return them (see bench/README.md)."""
    bench = Run(opts, say or (lambda m: print(m, file=sys.stderr, flush=True)))
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    load_start = load_average()
    work = opts.work or Path(tempfile.mkdtemp(prefix="rebalance-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    own_session = spark is None
    try:
        with bench.memory.running():
            bench.say(f"generating {opts.lines:,} and {4 * opts.lines:,} lines under {work}")
            x1 = generate(work, "x1", lines=opts.lines, groups=opts.groups, seed=opts.seed)
            x4 = generate(work, "x4", lines=4 * opts.lines, groups=opts.groups, seed=opts.seed)
            warmup = generate(work, "warmup", lines=WARMUP_LINES, groups=2, seed=opts.seed + 1)
            for name, data, prefilter in (("python_regex_x1", x1, False), ("python_regex_prefiltered_x1", x1, True),
                                          ("python_regex_x4", x4, False)):
                bench.record(name, python_script(data, events_out=work / f"{name}.jsonl", prefilter=prefilter))
            cfg = measure.bench_config(x1.landing, work / "lh-session", opts.conf)
            session = spark if spark is not None else get_spark(cfg, app_name="rebalance-bench")
            settings = {"spark_master": session.conf.get("spark.master", cfg.spark.master),
                        "driver_memory": session.conf.get("spark.driver.memory", cfg.spark.driver_memory),
                        "shuffle_partitions": session.conf.get("spark.sql.shuffle.partitions")}
            bench.memory.jvm_pid = jvm_pid(session)
            try:
                bench.spark_stages(session, work, x1, x4, warmup)
            finally:
                if own_session:
                    session.stop()
        bench.process_stages(work, x1, x4)
        history_results = None
        if opts.history:
            bench.say(f"cost of an hour's increment after {HISTORY_SHORT_HOURS:g} hours and after "
                      f"{opts.history_days:g} days of history, each run a whole process")
            history_results = history.measure_history(work / "history", days=opts.history_days,
                                                      short_hours=HISTORY_SHORT_HOURS, seed=opts.seed,
                                                      conf=opts.conf, say=bench.say)
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    load_end = load_average()
    results: dict[str, Any] = {
        "mode": opts.mode,
        "started_at": started_at,
        "run_seconds": round(time.monotonic() - bench.started, 1),
        "machine": machine_facts(),
        "load_average": {"start": load_start, "end": load_end},
        "settings": {**{k: str(v) if isinstance(v, Path) else v for k, v in asdict(opts).items()}, **settings},
        "datasets": {"x1": x1.as_dict(), "x4": x4.as_dict()},
        "stages": bench.stages,
    }
    if history_results is not None:
        results["history"] = history_results
    results["figures"] = [f.as_dict() for f in report.figures(bench.stages, history_results)]
    results["notes"] = _notes(opts, bench.stages)
    results["verdict"] = report.verdict(results)
    results["files"] = [str(p) for p in report.write_results(results, opts.out)]
    return results
