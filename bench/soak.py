"""`python -m bench.soak`: a continuous `rebalance run` process kept running for --minutes (default 60) while files
land every --every seconds (default 5). Says whether memory, latency, checkpoints and table state stay flat as the
run goes on (issue #52): peak memory of the last window against minutes 5-15, latency p95 of the last window against
the first, and the sizes of the checkpoints and tables minute by minute.

Each landing is two files: a probe (one 61-second rebalance of a new group, in a new instance folder, timed to its
gold_rebalances row and to its long_rebalance alert) and the next rotated file of one resident broker, holding one
rebalance of one of four resident groups, so those groups' histories grow all run long as a real estate's do."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import yaml
from pyarrow.lib import ArrowException

from bench.facts import OtherWork, machine_facts
from bench.jobs import batches_of, log_files, read_lines, render, summary
from bench.latency import COORDINATOR, FeedWatcher, LatencyResult, probe_text
from bench.memory import MB, process_parents, tree_bytes
from bench.soak_report import soak_figures, soak_markdown
from pipelines.settings.config import DEFAULT_CONF

RESIDENT_GROUPS = 4
STOP_WAIT_S = 90.0
GROUP_EXIT_S = 30.0  # after the run's Python process ends, how long its JVM is given to end before SIGKILL
FIRST_ROW_S = 600.0  # how long the first file may take to reach gold (JVM start and table creation)
DRAIN_S = 180.0  # after the last landing, how long the probes still missing a row or an alert are waited for


@dataclass
class Soak:
    """What one soak run observed: per probe its landing second and latencies, memory and sizes over time."""

    minutes: float
    every_s: float
    probes: list[dict[str, Any]] = field(default_factory=list)  # landed_s, group, row_s, alert_s
    memory: list[tuple[float, float]] = field(default_factory=list)  # (second of the run, MB of the process tree)
    sizes: list[dict[str, Any]] = field(default_factory=list)  # one sample per size interval
    stop: dict[str, Any] = field(default_factory=dict)
    other_cpu_share: float = 0.0
    watched_s: float = 0.0  # until when the probes were watched (a probe never seen waited this long)
    # Per step: (time, batch, rows, seconds the batch took or None).
    batches: dict[str, list[tuple[str, int, int, float | None]]] = field(default_factory=dict)
    clock_started: str | None = None  # local time of day the soak's clock started (the run's lines use it)


def resident_text(group: str, generation: int, at: datetime, rng: random.Random) -> str:
    """One rebalance of a resident group, a member joining, logged by the resident broker within 3 s before `at`."""
    member = f"consumer-{group}-{generation}-{rng.getrandbits(64):016x}"
    partition = sum(map(ord, group)) % 50
    messages = [
        (-3000, f"Preparing to rebalance group {group} in state PreparingRebalance with old generation {generation} "
                f"(__consumer_offsets-{partition}) (reason: Adding new member {member} with group instance id None; "
                f"client reason: need to re-join with the given member-id: {member})"),
        (-2000, f"Stabilized group {group} generation {generation + 1} (__consumer_offsets-{partition}) with 2 "
                "members"),
        (-1990, f"Assignment received from leader {member} for group {group} for generation {generation + 1}. The "
                "group has 2 members, 0 of which are static.")]
    lines = []
    for offset_ms, message in messages:
        ts = at + timedelta(milliseconds=offset_ms)
        lines.append(f"[{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d}] INFO [GroupCoordinator 1]: {message} "
                     f"{COORDINATOR}")
    return "\n".join(lines) + "\n"


def _land(text: str, staging: Path, target: Path) -> None:
    staging.mkdir(parents=True, exist_ok=True)
    partial = staging / target.name
    partial.write_text(text, encoding="utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(partial, target)  # a closed file appears whole, as a log shipper's rename does


def _dir_bytes(path: Path) -> tuple[int, int]:
    total = files = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.stat(os.path.join(root, name)).st_size
                files += 1
            except OSError:
                continue  # removed while walking (a log cleanup, a compaction)
    return total, files


def state_sizes(lakehouse: Path, checkpoints: Path) -> dict[str, Any]:
    """Bytes and files of each checkpoint folder, of each table and of its Delta log, and the alert feed."""
    out: dict[str, Any] = {"checkpoints": {}, "tables": {}, "delta_logs": {}}
    for child in sorted(checkpoints.iterdir()) if checkpoints.exists() else []:
        out["checkpoints"][child.name] = _dir_bytes(child)
    for child in sorted(lakehouse.iterdir()) if lakehouse.exists() else []:
        if child.is_dir() and (child / "_delta_log").exists():
            out["tables"][child.name] = _dir_bytes(child)
            out["delta_logs"][child.name] = _dir_bytes(child / "_delta_log")
    feed = lakehouse / "_alerts" / "alerts.jsonl"
    out["alert_feed_bytes"] = feed.stat().st_size if feed.exists() else 0
    return out


class RowWatcher:
    """The groups of each new gold_rebalances commit, from the Delta log's added files (read with pyarrow: no
    second Spark session beside the run being measured)."""

    def __init__(self, table: Path) -> None:
        self.log = table / "_delta_log"
        self.next_version = 0

    def new_groups(self) -> set[str]:
        """Group ids in the files the commits since the last call added."""
        groups: set[str] = set()
        while (commit := self.log / f"{self.next_version:020d}.json").exists():
            try:
                actions = [json.loads(line) for line in commit.read_text(encoding="utf-8").splitlines() if line]
            except (OSError, json.JSONDecodeError):
                break  # not fully visible yet: read it on the next call
            for action in actions:
                # A compaction's files (dataChange false) hold rows already there: they are not new rows.
                if "add" in action and action["add"].get("dataChange", True):
                    path = self.log.parent / unquote(action["add"]["path"])
                    try:
                        groups.update(pq.read_table(path, columns=["group_id"]).column("group_id").to_pylist())
                    except (OSError, ArrowException):
                        continue  # gone or unreadable: its rows are found in a later commit or counted lost
            self.next_version += 1
        return groups


def _sample_memory(pid: int, soak: Soak, t0: float, done: threading.Event) -> None:
    while not done.wait(1.0):
        soak.memory.append((round(time.monotonic() - t0, 1), round(tree_bytes(pid, process_parents()) / MB, 1)))


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(proc: subprocess.Popen[bytes], soak: Soak, log: Path) -> None:
    """SIGTERM, as a scheduler stops a run; record how long the stop took until the run's whole process group (its
    JVM included) was gone, its exit code and the line it ended with."""
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
    deadline = time.monotonic() + GROUP_EXIT_S
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    lingered = _group_alive(proc.pid)
    if lingered:
        os.killpg(proc.pid, signal.SIGKILL)
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    soak.stop = {"signal": "SIGTERM", "seconds": round(time.monotonic() - started, 1), "exit_code": code,
                 "jvm_killed": lingered, "stopped_line": next((x for x in reversed(lines) if "run stopped" in x), None),
                 "last_lines": lines[-5:]}
    soak.batches = batch_times(lines)


# The seconds a batch took close its line (runs from 2026-12-05 on; older logs' lines have none).
_BATCH = re.compile(r"^\[(\d\d:\d\d:\d\d)\] (ingest|reconstruct) batch (\d+): (\d+) (?:files|rebalances)"
                    r"(?:.* in (\d+(?:\.\d+)?) s$)?")


def batch_times(lines: list[str]) -> dict[str, list[tuple[str, int, int, float | None]]]:
    """Each micro-batch the run reported: its step, the time of day it ended, its number, its files (ingest) or
    rebalances rebuilt (reconstruct), and the seconds it took (None when its line does not say)."""
    out: dict[str, list[tuple[str, int, int, float | None]]] = {"ingest": [], "reconstruct": []}
    for line in lines:
        if (m := _BATCH.match(line.rstrip())) is not None:
            out[m[2]].append((m[1], int(m[3]), int(m[4]), float(m[5]) if m[5] else None))
    return out


def run_soak(work: Path, *, minutes: float, every_s: float, conf: Path | None, seed: int = 7,
             say: Any = print) -> Soak:
    """Run `rebalance run --trigger continuous` under `work` for `minutes` while files land every `every_s` s,
    then wait up to DRAIN_S for the probes still missing a row or an alert, and stop the run with SIGTERM."""
    rng = random.Random(seed)
    landing, lakehouse, staging = work / "landing", work / "lakehouse", work / "staging"
    landing.mkdir(parents=True)
    cmd = [str(Path(sys.executable).with_name("rebalance")), "run", "--trigger", "continuous",
           "--landing", str(landing), "--lakehouse", str(lakehouse)] + (["--conf", str(conf)] if conf else [])
    log = work / "run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    soak = Soak(minutes=minutes, every_s=every_s)
    rows = RowWatcher(lakehouse / "gold_rebalances")
    alerts = FeedWatcher(lakehouse / "_alerts" / "alerts.jsonl")
    done = threading.Event()
    try:
        # The clock starts once a first file is through to gold: JVM start and table creation are not the soak.
        _land(probe_text("soak-warmup", datetime.now(timezone.utc) - timedelta(seconds=62), rng), staging,
              landing / "soak-warmup" / "server.log")
        first_by = time.monotonic() + FIRST_ROW_S
        while "soak-warmup" not in rows.new_groups():
            if proc.poll() is not None:
                raise RuntimeError(f"the run ended before its first row (exit {proc.returncode}); see {log}")
            if time.monotonic() > first_by:
                raise RuntimeError(f"no row in gold_rebalances {FIRST_ROW_S:g} s after the first file; see {log}")
            time.sleep(0.5)
        say("first row in gold_rebalances: the soak starts")
        t0 = time.monotonic()
        # The run stamps its lines with the local time of day: the soak's clock in the same terms places its batches.
        soak.clock_started = datetime.now().isoformat(timespec="seconds")
        sampler = threading.Thread(target=_sample_memory, args=(proc.pid, soak, t0, done), daemon=True)
        sampler.start()
        pending: dict[str, dict[str, Any]] = {}
        generations = [0] * RESIDENT_GROUPS
        end, n, next_size = t0 + minutes * 60, 0, t0
        other = OtherWork()
        while time.monotonic() < end or (pending and time.monotonic() < end + DRAIN_S):
            now = time.monotonic()
            if now >= next_size:
                soak.sizes.append({"at_s": round(now - t0, 1),
                                   **state_sizes(lakehouse, lakehouse / "_checkpoints")})
                next_size = now + 30.0
            if now < end and now >= t0 + n * every_s:
                group, at = f"soak-probe-{n}", datetime.now(timezone.utc)
                _land(probe_text(group, at - timedelta(seconds=62), rng), staging, landing / group / "server.log")
                probe = {"group": group, "landed_s": round(now - t0, 2), "landed": now, "row_s": None,
                         "alert_s": None}
                soak.probes.append(probe)
                pending[group] = probe
                k = n % RESIDENT_GROUPS
                _land(resident_text(f"soak-resident-{k}", generations[k], at, rng), staging,
                      landing / "soak-resident-broker" / f"server.log.{n:06d}")
                generations[k] += 1
                n += 1
                if n % max(1, round(60 / every_s)) == 0:
                    say(f"minute {(now - t0) / 60:.0f}: {n} probes landed, {len(pending)} awaiting a row or alert")
            for key, watcher in (("row_s", rows), ("alert_s", alerts)):
                for group in watcher.new_groups() & set(pending):
                    if pending[group][key] is None:  # the first time only: a later MERGE may rewrite its file
                        pending[group][key] = round(time.monotonic() - pending[group]["landed"], 2)
            for group in [g for g, p in pending.items() if p["row_s"] is not None and p["alert_s"] is not None]:
                del pending[group]
            if proc.poll() is not None:
                raise RuntimeError(f"the continuous run ended during the soak (exit {proc.returncode}); see {log}")
            time.sleep(0.2)
        soak.watched_s = round(time.monotonic() - t0, 1)
        # Before the stop: the run's JVM outlives its Python process, and its CPU would then count as another's.
        soak.other_cpu_share = other.share()
    finally:
        done.set()
        if proc.poll() is None:
            _stop(proc, soak, log)
    for probe in soak.probes:
        probe.pop("landed")
    return soak


def summarise(soak: Soak) -> dict[str, Any]:
    """The soak's figures (latency and memory drift, sizes) and every sample, as the results file stores them."""
    # A probe never seen counts as the time it was watched for (the percentiles never flatter a run that lost one).
    waited = [p["row_s"] if p["row_s"] is not None else soak.watched_s - p["landed_s"] for p in soak.probes]
    latency = LatencyResult(seconds=waited or [0.0], trigger="5 seconds", every_s=soak.every_s,
                            timeouts=sum(1 for p in soak.probes if p["row_s"] is None))
    return {"minutes": soak.minutes, "every_s": soak.every_s, "watched_s": soak.watched_s, "probes": soak.probes,
            "memory_mb": soak.memory, "sizes": soak.sizes, "stop": soak.stop, "batches": soak.batches,
            "clock_started": soak.clock_started,
            "latency": {k: v for k, v in latency.as_dict().items() if k != "probes_s"},
            "figures": soak_figures(soak.minutes, soak.probes, soak.memory, soak.sizes, watched_s=soak.watched_s)}


def with_event_log(conf: Path | None, folder: Path) -> Path:
    """A copy of the configuration `conf` (default conf/local.yml) beside `folder` whose Spark writes its event log,
    uncompressed, to `folder` (created here), for `bench.jobs`."""
    data = yaml.safe_load((conf or DEFAULT_CONF).read_text(encoding="utf-8")) or {}
    spark = data.setdefault("spark", {})
    spark["conf"] = {**(spark.get("conf") or {}), "spark.eventLog.enabled": True,
                     "spark.eventLog.dir": folder.resolve().as_uri(), "spark.eventLog.compress": False}
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder.parent / "soak-conf.yml"
    copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return copy


def main(argv: list[str] | None = None) -> int:
    """Run the soak, write `<time>-soak.json` and `.md` under --out, print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long the run is kept busy (default 60)")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between two landings (default 5)")
    parser.add_argument("--conf", type=Path, help="pipeline configuration file (default conf/local.yml)")
    parser.add_argument("--out", type=Path, default=Path("bench/results"), help="results directory")
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temp dir, removed at the end)")
    parser.add_argument("--jobs", action="store_true",
                        help="turn on Spark's event log and report the run's Spark jobs per micro-batch and kind "
                             "(python -m bench.jobs)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.every <= 0:
        parser.error("--minutes and --every must be above 0")
    started_at = datetime.now(timezone.utc)
    work = args.work or Path(tempfile.mkdtemp(prefix="rebalance-soak-"))

    def say(message: str) -> None:
        print(f"[soak {datetime.now(timezone.utc):%H:%M:%S}] {message}", file=sys.stderr, flush=True)

    say(f"a continuous run for {args.minutes:g} minutes, a landing every {args.every:g} s, under {work}")
    conf = with_event_log(args.conf, work / "events") if args.jobs else args.conf
    try:
        soak = run_soak(work, minutes=args.minutes, every_s=args.every, conf=conf, say=say)
    except BaseException:
        say(f"the soak failed; its run's log and tables are kept under {work}")
        raise
    jobs = summary(*batches_of(read_lines(log_files(work / "events")))) if args.jobs else None
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    results = {"mode": "soak", "started_at": started_at.isoformat(timespec="seconds"), "machine": machine_facts(),
               "other_cpu_share": soak.other_cpu_share, **summarise(soak), **({"jobs": jobs} if jobs else {})}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{started_at:%Y%m%dT%H%M%S}-soak"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    text = soak_markdown(results) + (f"\nSpark jobs per micro-batch (event log, `python -m bench.jobs`):\n\n"
                                     f"{render(jobs)}\n" if jobs else "")
    stem.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    print(f"results: {stem}.json, {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
