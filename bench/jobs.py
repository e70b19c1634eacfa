"""`python -m bench.jobs EVENT_LOG`: what a run's micro-batches spend their Spark jobs on, from Spark's event log.

On small batches a run's cost is its number of Spark jobs, not its rows (issue #52): each job costs tens of
milliseconds whatever it reads. This reads the event log of a run (`spark.eventLog.enabled`) and gives, per stream
(ingest, reconstruct), the micro-batches it ran, their mean wall time from first job to last, and their jobs by kind:
Delta's own work (the file listing of each table scan, snapshot computations, the phases of each MERGE) apart from
the pipeline's queries, pins and writes; and by the pipeline's step that started them (`ingest: parse`,
`reconstruct: placement`, `reconstruct: merge gold_rebalances`, ...: the local property `pipelines.session.steps`
sets), with each step's span from its first job to its last. Jobs outside any micro-batch (the derived tables' turn,
the alerts loop, a compaction) are counted apart, by step too.

Turn the log on with a configuration file whose `spark.conf` holds, for instance:

    spark.eventLog.enabled: true
    spark.eventLog.dir: file:///tmp/rebalance-events
    spark.eventLog.compress: false

then `python -m bench.jobs /tmp/rebalance-events` reads the newest application's log there; `--batch N` lists one
micro-batch's jobs in order, with the waits between them. A compressed log
(`.zstd`, `.zst`) is read through the `zstd` command when it is installed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BATCH_LINE = re.compile(r"^batch = (\d+)(.*)$", re.MULTILINE)
# Delta names its own jobs after what they do, appended to the stream's description; the first match wins.
DELTA_KINDS = (
    ("Compute snapshot for version", "delta snapshot"),
    ("MERGE operation - materialize source", "merge: materialize source"),
    ("MERGE operation - scanning files for matches", "merge: find touched files"),
    ("Writing modified data", "merge: rewrite files"),
    ("MERGE operation - writing new files", "merge: write inserts"),
    ("Filtering files for query", "delta file listing"),
)
# The pipeline's own jobs, by the name of their first stage.
STAGE_KINDS = (
    ("localCheckpoint", "pin"),
    ("save", "append"),
    ("withThreadLocalCaptured", "broadcast or query stage"),
)
COMPRESSED = (".zstd", ".zst")
# The local property the pipeline names its steps with (pipelines.session.steps.STEP_PROPERTY), and what a job that
# none named counts as: a log of a run before the steps were named, or a job outside every step (the setup's table
# checks, a stream's own start and listing of new files).
STEP_PROPERTY = "rebalance.step"
UNNAMED = "(no step named)"


@dataclass
class Batch:
    """The jobs of one micro-batch: how many of each kind, their seconds, and its span."""

    jobs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    first_ms: int | None = None
    last_ms: int | None = None
    # Every job as (start ms, end ms, kind, what it did: Delta's own words, or its first stage's name).
    each: list[tuple[int, int, str, str]] = field(default_factory=list)
    # The pipeline's step of each job (`pipelines.session.steps`), in the order of `each`.
    steps: list[str] = field(default_factory=list)

    def add(self, kind: str, start_ms: int, end_ms: int, label: str = "", step: str = UNNAMED) -> None:
        """Count one job of `kind` that ran from `start_ms` to `end_ms` (`label`: what it did; `step`: the
        pipeline's step that started it)."""
        self.each.append((start_ms, end_ms, kind, label))
        self.steps.append(step)
        self.jobs[kind] += 1
        self.seconds[kind] += (end_ms - start_ms) / 1000
        self.first_ms = start_ms if self.first_ms is None else min(self.first_ms, start_ms)
        self.last_ms = end_ms if self.last_ms is None else max(self.last_ms, end_ms)

    def waits(self) -> list[tuple[tuple[int, int, str, str], int]]:
        """Each job in the order it started, with the milliseconds before it in which none of the batch's jobs ran."""
        out, frontier = [], None
        for job in sorted(self.each):
            start, end = job[0], job[1]
            out.append((job, 0 if frontier is None else max(0, start - frontier)))
            frontier = end if frontier is None else max(frontier, end)
        return out

    def busy_s(self) -> float:
        """Seconds in which at least one of the batch's jobs ran (jobs side by side count once)."""
        return round(self.wall_s - sum(wait for _, wait in self.waits()) / 1000, 3)

    def by_step(self) -> dict[str, dict[str, float]]:
        """Per step, in the order the steps began: its jobs, their seconds, and its span (from its first job's
        submission to its last job's end: the waits between its jobs included, so spans of steps that ran side by
        side overlap)."""
        out: dict[str, dict[str, float]] = {}
        spans: dict[str, tuple[int, int]] = {}
        for (start, end, _, _), name in sorted(zip(self.each, self.steps, strict=True)):
            row = out.setdefault(name, {"jobs": 0, "job_seconds": 0.0})
            row["jobs"] += 1
            row["job_seconds"] += (end - start) / 1000
            first, last = spans.get(name, (start, end))
            spans[name] = (min(first, start), max(last, end))
        for name, (first, last) in spans.items():
            out[name]["job_seconds"] = round(out[name]["job_seconds"], 3)
            out[name]["span_s"] = (last - first) / 1000
        return out

    @property
    def wall_s(self) -> float:
        """Seconds from the batch's first job's submission to its last job's end."""
        return 0.0 if self.first_ms is None or self.last_ms is None else (self.last_ms - self.first_ms) / 1000


def job_kind(description: str, stage_name: str) -> str:
    """The kind of a job, from the text after its `batch = N` line (Delta's own jobs) or its first stage's name."""
    for needle, kind in DELTA_KINDS:
        if needle in description:
            return kind
    for needle, kind in STAGE_KINDS:
        if needle in stage_name:
            return kind
    return "query"


def job_label(delta_words: str, start_event: dict[str, Any], first_stage: str) -> str:
    """What a job did, for a batch's listing: Delta's own words, else the pipeline's line that started it (a
    PySpark action's call site), else its first stage's name."""
    own = " ".join(delta_words.strip(" :-\n").split())
    if own:
        return own
    call_site = str((start_event.get("Properties") or {}).get("callSite.short") or "")
    if call_site and "py4j" not in call_site:
        return re.sub(r"/\S*?/(pipelines|bench|jobs)/", r"\1/", call_site)
    return first_stage


def log_files(path: Path) -> list[Path]:
    """The event log files of `path`: itself if a file; the newest application's log in a directory (a rolling
    log's `eventlog_v2_*` folder counts as one application, its parts in order)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if any(p.name.startswith("events_") for p in path.iterdir()):
        parts = [p for p in path.iterdir() if p.name.startswith("events_")]
        return sorted(parts, key=lambda p: int(p.name.split("_")[1]))
    apps = [p for p in path.iterdir() if not p.name.startswith(".")]
    if not apps:
        raise FileNotFoundError(f"{path}: no event log in this directory")
    return log_files(max(apps, key=lambda p: p.stat().st_mtime))


def read_lines(files: Iterable[Path]) -> Iterator[str]:
    """The text lines of the event log `files`, decompressing zstd parts with the `zstd` command."""
    for f in files:
        if f.suffix in COMPRESSED:
            zstd = shutil.which("zstd")
            if zstd is None:
                raise RuntimeError(f"{f}: a zstd-compressed event log and no zstd command here; set "
                                   "spark.eventLog.compress: false, or install zstd")
            text = subprocess.run([zstd, "-dc", str(f)], capture_output=True, check=True).stdout.decode()
            yield from text.splitlines()
        else:
            with f.open(encoding="utf-8", errors="replace") as handle:
                yield from handle


def batches_of(lines: Iterable[str]) -> tuple[dict[tuple[str, int], Batch], Batch]:
    """The jobs of each (stream, batch id), and those outside any micro-batch."""
    started: dict[int, tuple[int, str, int | None, str, str, str]] = {}
    batches: dict[tuple[str, int], Batch] = defaultdict(Batch)
    outside = Batch()
    for line in lines:
        if '"SparkListenerJob' not in line:
            continue
        event: dict[str, Any] = json.loads(line)
        if event["Event"] == "SparkListenerJobStart":
            description = (event.get("Properties") or {}).get("spark.job.description") or ""
            stages = event.get("Stage Infos") or []
            match = BATCH_LINE.search(description)
            stream = description.split("\n")[0].removeprefix("Delta: ").removeprefix("Delta: ").strip()
            first_stage = stages[0]["Stage Name"] if stages else ""
            kind = job_kind(match.group(2) if match else description, first_stage)
            step = (event.get("Properties") or {}).get(STEP_PROPERTY) or UNNAMED
            started[event["Job ID"]] = (event["Submission Time"], stream, int(match.group(1)) if match else None,
                                        kind, job_label(match.group(2) if match else "", event, first_stage), step)
        elif event["Event"] == "SparkListenerJobEnd" and event["Job ID"] in started:
            start_ms, stream, batch_id, kind, label, step = started.pop(event["Job ID"])
            target = outside if batch_id is None else batches[(stream, batch_id)]
            target.add(kind, start_ms, event["Completion Time"], label, step)
    return dict(batches), outside


def summary(batches: dict[tuple[str, int], Batch], outside: Batch) -> dict[str, Any]:
    """Per stream: batches, mean wall seconds, mean jobs and mean job-seconds per batch by kind; jobs outside."""
    out: dict[str, Any] = {"streams": {}, "outside_batches": {
        "jobs": dict(outside.jobs), "seconds": dict(outside.seconds),
        "steps": {name: {k: round(v, 3) for k, v in row.items() if k != "span_s"}
                  for name, row in outside.by_step().items()}}}
    by_stream: dict[str, list[Batch]] = defaultdict(list)
    for (stream, _), batch in sorted(batches.items()):
        by_stream[stream].append(batch)
    for stream, these in by_stream.items():
        n = len(these)
        kinds = sorted({k for b in these for k in b.jobs})
        out["streams"][stream] = {
            "batches": n,
            "wall_s_mean": round(sum(b.wall_s for b in these) / n, 3),
            "jobs_mean": round(sum(sum(b.jobs.values()) for b in these) / n, 1),
            "kinds": {k: {"jobs_mean": round(sum(b.jobs.get(k, 0) for b in these) / n, 1),
                          "job_seconds_mean": round(sum(b.seconds.get(k, 0.0) for b in these) / n, 3)}
                      for k in kinds},
            "steps": _steps_mean(these),
        }
    return out


def _steps_mean(batches: list[Batch]) -> dict[str, dict[str, float]]:
    """Per step, over `batches` (each counts, also one in which the step started no job): mean jobs, job seconds
    and span, in the order the steps first began."""
    totals: dict[str, dict[str, float]] = {}
    for b in batches:
        for name, row in b.by_step().items():
            into = totals.setdefault(name, {"jobs": 0.0, "job_seconds": 0.0, "span_s": 0.0})
            for k, v in row.items():
                into[k] += v
    n = len(batches)
    return {name: {"jobs_mean": round(t["jobs"] / n, 1), "job_seconds_mean": round(t["job_seconds"] / n, 3),
                   "span_s_mean": round(t["span_s"] / n, 3)} for name, t in totals.items()}


def render(result: dict[str, Any]) -> str:
    """The summary as Markdown tables, one per stream, the costliest kinds first."""
    lines = []
    for stream, s in result["streams"].items():
        lines += [f"## {stream}: {s['batches']} micro-batches, {s['wall_s_mean']} s from first job to last, "
                  f"{s['jobs_mean']} jobs each (means)", "",
                  "| kind | jobs per batch | job seconds per batch |", "|---|---:|---:|"]
        for kind, k in sorted(s["kinds"].items(), key=lambda kv: -kv[1]["job_seconds_mean"]):
            lines.append(f"| {kind} | {k['jobs_mean']} | {k['job_seconds_mean']} |")
        lines.append("")
        if set(s["steps"]) - {UNNAMED}:
            lines += ["By the pipeline's step, in the order the steps began (span: from a step's first job to its "
                      "last, the waits between included; steps side by side overlap):", "",
                      "| step | jobs per batch | job seconds per batch | span s per batch |", "|---|---:|---:|---:|"]
            lines += [f"| {name} | {t['jobs_mean']} | {t['job_seconds_mean']} | {t['span_s_mean']} |"
                      for name, t in s["steps"].items()]
            lines.append("")
    outside = result["outside_batches"]["jobs"]
    lines.append(f"Outside any micro-batch: {sum(outside.values())} jobs "
                 f"({', '.join(f'{k} {v}' for k, v in sorted(outside.items())) or 'none'}).")
    steps = result["outside_batches"].get("steps") or {}
    if set(steps) - {UNNAMED}:
        lines.append("By step: " + ", ".join(f"{name} {int(t['jobs'])} jobs ({t['job_seconds']} s)"
                                              for name, t in steps.items()) + ".")
    return "\n".join(lines)


def render_batch(stream: str, batch_id: int, batch: Batch) -> str:
    """One micro-batch's jobs in the order they started: when (seconds after the batch's first job), how long, the
    wait since the jobs before it had all ended (the driver planning, committing, or in Python), kind and what each
    did; then the batch's span, the time some job ran and the time none did."""
    lines = [f"## {stream} batch {batch_id}: {len(batch.each)} jobs, {batch.wall_s:.2f} s from first job to last, "
             f"jobs running {batch.busy_s():.2f} s, none running {batch.wall_s - batch.busy_s():.2f} s", "",
             "| start s | job s | wait s | step | kind | what |", "|---:|---:|---:|---|---|---|"]
    first = min(start for start, _, _, _ in batch.each)
    step_of = {id(job): name for job, name in zip(batch.each, batch.steps, strict=True)}
    for job, wait in batch.waits():
        start, end, kind, label = job
        lines.append(f"| {(start - first) / 1000:.2f} | {(end - start) / 1000:.3f} | {wait / 1000:.3f} | "
                     f"{step_of.get(id(job), UNNAMED)} | {kind} | {label.replace('|', '/')[:100]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the summary of an event log (Markdown, or JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.jobs", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("log", type=Path, help="an event log file, a rolling log's folder, or spark.eventLog.dir")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--batch", type=int, metavar="N",
                        help="instead of the summary, list micro-batch N's jobs one by one, with the waits between "
                             "them (of every stream that ran a batch N, or of --stream)")
    parser.add_argument("--stream", help="with --batch: the stream (ingest, reconstruct, or a query's name)")
    args = parser.parse_args(argv)
    try:
        batches, outside = batches_of(read_lines(log_files(args.log)))
    except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"python -m bench.jobs: {exc}", file=sys.stderr)
        return 2
    if not batches:
        print(f"python -m bench.jobs: {args.log}: no micro-batch jobs in this log", file=sys.stderr)
        return 1
    if args.batch is not None:
        chosen = {key: b for key, b in sorted(batches.items())
                  if key[1] == args.batch and (args.stream is None or key[0] == args.stream)}
        if not chosen:
            known = sorted({f"{stream} {bid}" for stream, bid in batches})
            print(f"python -m bench.jobs: no batch {args.batch}{' of ' + args.stream if args.stream else ''} in "
                  f"this log (it has {known[0]} to {known[-1]})", file=sys.stderr)
            return 1
        print("\n\n".join(render_batch(stream, bid, b) for (stream, bid), b in chosen.items()))
        return 0
    result = summary(batches, outside)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
