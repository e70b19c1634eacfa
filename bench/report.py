"""Figures as ratios to the baselines of the same run, their targets, and the JSON and markdown results."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, ">": operator.gt}


@dataclass(frozen=True)
class Figure:
    """One benchmark figure, its target (`op bound`, or none for context figures) and whether it is met."""

    name: str
    value: float
    what: str
    op: str | None = None
    bound: float | None = None

    @property
    def target(self) -> str:
        """The target as text, e.g. '>= 0.5' ('' when the figure has none)."""
        return f"{self.op} {self.bound:g}" if self.op and self.bound is not None else ""

    @property
    def met(self) -> bool | None:
        """True or False against the target; None for a context figure."""
        if self.op is None or self.bound is None:
            return None
        return OPS[self.op](self.value, self.bound)

    def as_dict(self) -> dict[str, Any]:
        """The figure with its target text and verdict."""
        return {**asdict(self), "value": round(self.value, 4), "target": self.target, "met": self.met}


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else float("nan")


def _fit(small: dict[str, Any], large: dict[str, Any]) -> tuple[float, float]:
    """Seconds per added line and fixed seconds per run of a step, from the line through its 1x and 4x times."""
    per_line = _ratio(large["seconds"] - small["seconds"], large["lines"] - small["lines"])
    return per_line, small["seconds"] - per_line * small["lines"]


def history_figures(found: dict[str, Any]) -> list[Figure]:
    """The figures of the history comparison (bench.history), with the targets of issue #20."""
    f, long, short = found["figures"], found["long"], found["short"]
    days, hours = round(long["hours"] / 24, 1), short["hours"]
    return [
        Figure("increment_vs_count_short", f["increment_vs_count_short"],
               f"an hour's increment ({short['increment_lines']:,} lines) as a whole `rebalance run` process after "
               f"{hours:g} hours of history / a whole-process spark.read.text().count() of the same files", "<=", 3.0),
        Figure("increment_vs_count_long", f["increment_vs_count_long"],
               f"the same after {days:g} days of history ({long['history_lines']:,} lines)", "<=", 3.0),
        Figure("increment_long_over_short", f["increment_long_over_short"],
               f"the increment's time after {days:g} days / after {hours:g} hours", "<=", 1.2),
        Figure("rerun_vs_count_long", f["rerun_vs_count_long"],
               f"a `rebalance run` with nothing new after {days:g} days / the count", "<=", 2.0),
        Figure("memory_long_over_short", f["memory_long_over_short"],
               "the increment's peak memory (process tree, proportional set sizes) after the long / the short "
               "history (context: a JVM's resident size depends on when it collects)"),
    ]


def figures(stages: dict[str, dict[str, Any]], history: dict[str, Any] | None = None) -> list[Figure]:
    """The figures of issues #4 and #20 from the stage results (each a ratio to a baseline of the same run), and
    those of the history comparison when it ran."""
    count, count4 = stages["baseline_count_x1"]["lines_per_s"], stages["baseline_count_x4"]["lines_per_s"]
    parse, floor = stages["parse_x1"], stages["ingest_floor_x1"]
    python, generous = stages["python_regex_x1"], stages["python_regex_prefiltered_x1"]
    latency = stages["latency"]
    parse_per_line, parse_fixed = _fit(parse, stages["parse_x4"])
    proc1, proc4 = stages["pipeline_process_x1"], stages["pipeline_process_x4"]
    run_per_line, run_fixed = _fit(proc1, proc4)
    found = [
        Figure("parse_us_per_added_line", parse_per_line * 1e6,
               "parse stage: microseconds per added line, the slope of its time through 1x and 4x", "<=", 1.0),
        Figure("parse_fixed_s", parse_fixed, "parse stage: seconds per run whatever the lines (the fit's intercept; "
               "context)"),
        Figure("spark_parse_vs_python_x4", _ratio(stages["python_regex_x4"]["seconds"], stages["parse_x4"]["seconds"]),
               "hand-written Python regex script time / Spark parse stage time over the 4x files (> 1: Spark "
               "faster)", ">", 1.0),
        Figure("parse_vs_baseline", _ratio(parse["lines_per_s"], count),
               "parse stage throughput / spark.read.text().count() throughput (context: the target >= 0.5 is "
               "withdrawn, the ingest floor alone is below it)"),
        Figure("floor_vs_baseline", _ratio(floor["lines_per_s"], count),
               "ingest floor (stream, one read of every line, 5 Delta appends; no parsing) throughput / count "
               "throughput (context: the ceiling of parse_vs_baseline)"),
        Figure("parse_vs_floor", _ratio(parse["lines_per_s"], floor["lines_per_s"]),
               "parse stage throughput / ingest floor throughput (context)"),
        Figure("parse_vs_baseline_x4", _ratio(stages["parse_x4"]["lines_per_s"], count4),
               "the same at 4x: parse throughput / count throughput over the 4x files (context: whether more data "
               "amortises the gap)"),
        Figure("floor_vs_baseline_x4", _ratio(stages["ingest_floor_x4"]["lines_per_s"], count4),
               "ingest floor throughput / count throughput over the 4x files (context)"),
        Figure("run_vs_count_x1", _ratio(proc1["seconds"], stages["count_process_x1"]["seconds"]),
               "a first `rebalance run` process over the 1x files (fresh lakehouse) / a whole-process "
               "spark.read.text().count() of the same files (the JVM start is in both)", "<=", 3.0),
        Figure("spark_parse_vs_python", _ratio(python["seconds"], parse["seconds"]),
               "hand-written Python regex script time / Spark parse stage time (> 1: Spark faster)", ">", 1.0),
        Figure("spark_parse_vs_python_prefiltered", _ratio(generous["seconds"], parse["seconds"]),
               "the same with a literal prefilter in the Python script (context)"),
        Figure("scaling_4x_over_1x", _ratio(proc4["seconds"], proc1["seconds"]),
               f"a whole `rebalance run` process's time at 4x / at 1x (lines ratio "
               f"{_ratio(proc4['lines'], proc1['lines']):.2f})", "<=", 4.4),
        Figure("latency_p95_s", latency["p95_s"],
               f"seconds from landing a file to its gold_rebalances row, p95 of {latency['probes']} probes, one "
               f"every {latency.get('every_s', 0):g} s ({latency['timeouts']} not seen; trigger {latency['trigger']})",
               "<=", 10.0),
        Figure("latency_p50_s", latency["p50_s"], "the same, p50 (context)"),
        *([Figure("latency_one_vs_two_streams", _ratio(latency["p95_s"], stages["latency_two_streams"]["p95_s"]),
                  f"landing-to-row p95 of the one stream a continuous run runs / the same probes through the ingest "
                  f"and reconstruct streams (p95 {stages['latency_two_streams']['p95_s']:.1f} s), same lakehouse, "
                  f"same run", "<=", 1.0)]
          if "latency_two_streams" in stages else []),
        *([Figure("alert_latency_p95_s", latency["alert_p95_s"],
                  f"seconds from landing a file to its alert in the JSON-lines feed, p95 of the same probes (the "
                  f"alerts step beside the streams, as in a continuous run; {latency['alert_timeouts']} not seen)",
                  "<=", 10.0),
           Figure("alert_latency_p50_s", latency["alert_p50_s"], "the same, p50 (context)")]
          if "alert_p95_s" in latency else []),
        Figure("driver_memory_4x_over_1x", _ratio(proc4["memory"]["process_mb"], proc1["memory"]["process_mb"]),
               f"peak memory of a whole `rebalance run` process tree (python, JVM, Python workers; proportional "
               f"set sizes) at 4x / at 1x, each size its own process ({proc4['memory']['process_mb']:.0f} / "
               f"{proc1['memory']['process_mb']:.0f} MB)", "<=", 1.5),
        Figure("run_us_per_added_line", run_per_line * 1e6,
               "a whole `rebalance run` process: microseconds per added line through 1x and 4x (context)"),
        Figure("run_fixed_s", run_fixed,
               "a whole `rebalance run` process: seconds per run whatever the lines, JVM start included (context)"),
    ]
    return found + (history_figures(history) if history else [])


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(results: dict[str, Any]) -> str:
    """The results as a markdown page: figures with targets, stages, datasets and machine."""
    m, s = results["machine"], results["settings"]
    out = [
        f"# Benchmark ({results['mode']} mode, {results['started_at']})",
        "",
        (f"{m['nproc']} cores ({m['cpu_model']}), {m['memory_gb']} GB; python {m['python']}, {m['java']}, "
         f"pyspark {m['pyspark']}, delta-spark {m['delta_spark']}. Spark {s['spark_master']}, driver memory "
         f"{s['driver_memory']}, {s['shuffle_partitions']} shuffle partitions. Load average at start "
         f"{results['load_average']['start']}, at end {results['load_average']['end']}; run took "
         f"{results['run_seconds']:.0f} s."),
        "",
        "| figure | value | target | met | what |",
        "|---|---:|---|---|---|",
    ]
    for f in results["figures"]:
        met = {True: "yes", False: "**no**", None: ""}[f["met"]]
        out.append(f"| {f['name']} | {_fmt(f['value'])} | {f['target']} | {met} | {f['what']} |")
    out += ["", ("| stage | seconds | lines | lines/s | peak MB: driver (python + JVM), or the script's process | "
                 "Python workers peak MB | load 1 min | other processes' share of the cores |"),
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, st in results["stages"].items():
        mem = st.get("memory", {})
        out.append(f"| {name} | {_fmt(st.get('seconds', st.get('p95_s', '')))} | {_fmt(st.get('lines', ''))} | "
                   f"{_fmt(st.get('lines_per_s', ''))} | {_fmt(mem.get('driver_mb', mem.get('process_mb', '')))} | "
                   f"{_fmt(mem.get('workers_mb', ''))} | {_fmt(st.get('load_1min', ''))} | "
                   f"{_fmt(st.get('other_cpu_share', ''))} |")
    for name in ("parse_x1",):
        out += _timeline(name, results["stages"].get(name, {}).get("timeline"))
    if results.get("history"):
        out += _history(results["history"])
    out += ["", "Datasets: " + "; ".join(
        f"{name}: {d['lines']:,} lines in {d['files']} files ({d['mb']} MB, {d['rebalances']} rebalances)"
        for name, d in results["datasets"].items()
    )]
    out += ["", *[f"- {note}" for note in results["notes"]], ""]
    return "\n".join(out)


def _timeline(stage: str, line: dict[str, Any] | None) -> list[str]:
    if not line:
        return []
    intro = (f"{stage}: {line['commits']} Delta commits; seconds from the stage start (or the previous commit) to "
             "each commit, which covers the work that produced it:")
    out = ["", intro, "",
           "| table | operation | seconds | of which Delta says (MERGE execution) |", "|---|---|---:|---:|"]
    for step in line["steps"]:
        out.append(f"| {step['table']} | {step['operation']} | {step['gap_s']:.2f} | "
                   f"{_fmt(step.get('delta_execution_s', ''))} |")
    out.append(f"| (after the last commit) | | {line['after_last_commit_s']:.2f} | |")
    return out


def _history(found: dict[str, Any]) -> list[str]:
    out = ["", ("History comparison: one simulated estate; the hours before its increment hour (all of them, long; the "
                "last few, short) run by one untimed `rebalance run` each, then the same increment's files landed "
                "and timed as whole processes; seconds by step from the `time:` line of each run:"), "",
           "| estate | history lines | run | lines | seconds | spark start | setup | ingest | reconstruct | derived | "
           "quality | alerts | peak MB |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    steps = ("spark start", "setup", "ingest", "reconstruct", "derived", "quality", "alerts")
    for name in ("short", "long"):
        e = found[name]
        for run, lines in (("increment", e["increment_lines"]), ("rerun", 0), ("count", e["increment_lines"])):
            measured = e[run]
            spent = [_fmt(measured.get("steps", {}).get(step, "")) for step in steps]
            out.append(f"| {name} ({e['hours']:g} h) | {e['history_lines']:,} | {run} | {lines:,} | "
                       f"{measured['seconds']:.1f} | " + " | ".join(spent) + f" | {measured['peak_mb']:,.0f} |")
    return out


def verdict(results: dict[str, Any]) -> str:
    """One line naming the targets met and missed."""
    met = [f["name"] for f in results["figures"] if f["met"] is True]
    missed = [f["name"] for f in results["figures"] if f["met"] is False]
    return (f"targets met: {len(met)} of {len(met) + len(missed)} ({', '.join(met) or 'none'}); "
            f"not met: {', '.join(missed) or 'none'}")


def _write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def write_results(results: dict[str, Any], out: Path) -> list[Path]:
    """Write latest.json and latest.md under `out`, plus a copy named by the run's start time; returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = results["started_at"].replace(":", "").replace("-", "")[:15]
    text_json = json.dumps(results, indent=2) + "\n"
    text_md = markdown(results)
    paths = []
    for stem in ("latest", f"{stamp}-{results['mode']}"):
        for suffix, text in ((".json", text_json), (".md", text_md)):
            path = out / f"{stem}{suffix}"
            _write(path, text)
            paths.append(path)
    return paths
