"""Latency with a processing-time trigger: land small broker files, each holding one long rebalance of a fresh group,
at a steady rate, and time each until its row is in gold_rebalances and until its alert is in the JSON-lines feed (the
alerts step evaluated beside the streams, as `rebalance run --trigger continuous` does)."""

from __future__ import annotations

import json
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from pipelines.alerts.loop import AlertLoop, Loops, alert_loop, batch_alerts
from pipelines.flow.derived import derived_loop
from pipelines.flow.ingest import make_ingest_batch
from pipelines.flow.one_stream import OneStream, continuous_queries, skip_rebuilt
from pipelines.flow.reconstruct import make_reconstruct_batch
from pipelines.settings.config import Config
from pipelines.storage import lake

COORDINATOR = "(kafka.coordinator.group.GroupCoordinator)"


class LatencyError(RuntimeError):
    """A streaming query died while the probes ran."""


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (1..100) of `values` (at least one), by inclusive linear interpolation."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


class FeedWatcher:
    """Group ids of the alerts appended to the JSON-lines feed since the last call (a line still being written is
    read at the next)."""

    def __init__(self, feed: Path) -> None:
        self.feed = feed
        self.read = feed.stat().st_size if feed.exists() else 0

    def new_groups(self) -> set[str]:
        """Groups of the whole lines appended since the last call."""
        size = self.feed.stat().st_size if self.feed.exists() else 0
        if size <= self.read:
            return set()
        with self.feed.open("rb") as feed:
            feed.seek(self.read)
            chunk = feed.read(size - self.read)
        whole = chunk[:chunk.rfind(b"\n") + 1]
        self.read += len(whole)
        return {json.loads(line).get("group_id") for line in whole.decode("utf-8").splitlines() if line}


@dataclass
class LatencyResult:
    """Seconds from landing each probe file to its row in gold_rebalances, and to its alert in the feed (a probe
    that timed out counts as the time it waited, so the percentiles never flatter a run that lost probes)."""

    seconds: list[float]
    trigger: str
    timeouts: int = 0
    every_s: float = 0.0
    alert_seconds: list[float] | None = None
    alert_timeouts: int = 0

    def percentile(self, q: float) -> float:
        """The q-th percentile (0..100) of the rebalance-row latencies, by linear interpolation."""
        return percentile(self.seconds, q)

    def as_dict(self) -> dict[str, object]:
        """p50, p95, max and every probe, in seconds; the same for the alerts when they were measured."""
        out: dict[str, object] = {
            "trigger": self.trigger, "probes": len(self.seconds), "every_s": self.every_s,
            "timeouts": self.timeouts,
            "p50_s": round(self.percentile(50), 3),
            "p95_s": round(self.percentile(95), 3), "max_s": round(max(self.seconds), 3),
            "probes_s": [round(s, 3) for s in self.seconds]}
        if self.alert_seconds:
            out.update({"alert_timeouts": self.alert_timeouts,
                        "alert_p50_s": round(percentile(self.alert_seconds, 50), 3),
                        "alert_p95_s": round(percentile(self.alert_seconds, 95), 3),
                        "alert_probes_s": [round(s, 3) for s in self.alert_seconds]})
        return out


def probe_text(group: str, at: datetime, rng: random.Random) -> str:
    """A broker log (log4j layout) holding one rebalance of a new group: join, Preparing, Stabilized, Assignment.
    It lasts 61 s by its lines' times, so it raises a long_rebalance alert (default threshold 60 s)."""
    member = f"consumer-{group}-1-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
    partition = rng.randrange(50)
    joined = (f"Dynamic member with unknown member id joins group {group} in Empty state. Created a new member id "
              f"{member} and request the member to rejoin with this id.")
    preparing = (f"Preparing to rebalance group {group} in state PreparingRebalance with old generation 0 "
                 f"(__consumer_offsets-{partition}) (reason: Adding new member {member} with group instance id None; "
                 f"client reason: need to re-join with the given member-id: {member})")
    stabilized = f"Stabilized group {group} generation 1 (__consumer_offsets-{partition}) with 1 members"
    assigned = (f"Assignment received from leader {member} for group {group} for generation 1. The group has 1 "
                "members, 0 of which are static.")
    messages = [(0, joined), (12, preparing), (61020, stabilized), (61051, assigned)]
    lines = []
    for offset_ms, message in messages:
        ts = at + timedelta(milliseconds=offset_ms)
        stamp = f"{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d}"
        lines.append(f"[{stamp}] INFO [GroupCoordinator 1]: {message} {COORDINATOR}")
    return "\n".join(lines) + "\n"


def start_queries(spark: SparkSession, cfg: Config, *, trigger: str, loop: AlertLoop | None = None,
                  one_stream: bool = True) -> tuple[list[StreamingQuery], OneStream | None]:
    """The queries of `rebalance run --trigger continuous` (same functions, same checkpoints, `continuous_queries`)
    with a `processingTime` trigger, and the one stream's batch and checkpoint move (for the derived loop): one
    stream that ingests and rebuilds, or (`one_stream` False, the layout a Databricks job's separate tasks keep) the
    ingest and reconstruct streams. Each batch's rebuild evaluates its groups' alerts under `loop`'s lock, as in a
    continuous run."""
    lake.ensure_tables(spark, cfg)
    on_hot = batch_alerts(spark, cfg, loop) if loop is not None else None
    ingest, reconstruct = make_ingest_batch(cfg), skip_rebuilt(cfg, make_reconstruct_batch(cfg, on_hot=on_hot))
    one = OneStream(spark, cfg, ingest, reconstruct) if one_stream else None
    queries = continuous_queries(spark, cfg, ["ingest", "reconstruct"], ingest, reconstruct, lambda fn: fn, None,
                                 one_stream=one, trigger=trigger)
    return queries, one


def _check(queries: list[StreamingQuery]) -> None:
    for query in queries:
        error = query.exception()
        if error is not None or not query.isActive:
            raise LatencyError(f"streaming query {query.name} stopped during the latency probes: {error}")


def stop_when_idle(queries: list[StreamingQuery], *, wait_s: float = 300.0) -> None:
    """Stop the queries between two micro-batches where possible: Spark 4.0 interrupting a Python foreachBatch
    mid-batch can die in its own interruption check (a StackOverflowError in StreamExecution.isInterruptionException
    on the long Python traceback). Harmless for the data (the batch had not committed and is replayed), but noisy."""
    deadline = time.monotonic() + wait_s
    for query in queries:
        while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
            time.sleep(0.2)
        query.stop()


def _commits(log_dir: Path) -> int:
    return sum(1 for name in os.listdir(log_dir) if name.endswith(".json"))


def _seen_groups(spark: SparkSession, cfg: Config, groups: list[str]) -> set[str]:
    rows = (lake.read_table(spark, cfg, "gold_rebalances").filter(F.col("group_id").isin(groups))
            .select("group_id").distinct().collect())
    return {r.group_id for r in rows}


class _Watcher:
    """Notes when each probe group's first gold_rebalances row appears, and its alert in the JSON-lines feed. The
    Delta log and the feed's size are watched (cheap); the table is queried only after a new commit and the feed read
    only where it grew, so polling does not compete with the streams for the two cores."""

    def __init__(self, spark: SparkSession, cfg: Config, queries: list[StreamingQuery],
                 loop: AlertLoop | None = None, derived: AlertLoop | None = None) -> None:
        self.spark, self.cfg, self.queries, self.loop = spark, cfg, queries, loop
        self.loops = Loops(loop, derived)  # checked while polling: a loop that failed ends the measurement
        self.log_dir = Path(lake.table(cfg, "gold_rebalances").path or "") / "_delta_log"
        self.commits = _commits(self.log_dir)
        self.feed = FeedWatcher(cfg.alerts_jsonl)
        self.pending: dict[str, float] = {}  # group -> monotonic time its file landed
        self.seen: dict[str, float] = {}  # group -> seconds from landing to its row
        self.alert_pending: dict[str, float] = {}  # the same for the alerts, when a loop evaluates them
        self.alert_seen: dict[str, float] = {}

    def landed(self, group: str, at: float) -> None:
        """Start timing `group`'s row (and its alert, when alerts are evaluated) from the monotonic time `at`."""
        self.pending[group] = at
        if self.loop is not None:
            self.alert_pending[group] = at

    def _new_alerts(self) -> None:
        now = time.monotonic()
        for group in self.feed.new_groups() & set(self.alert_pending):
            self.alert_seen[group] = now - self.alert_pending.pop(group)

    def poll(self, until: float, *, stop_when_all_seen: bool = False) -> None:
        """Watch until the monotonic time `until` (or, with `stop_when_all_seen`, until no probe is pending)."""
        while time.monotonic() < until:
            if stop_when_all_seen and not self.pending and not self.alert_pending:
                return
            self._new_alerts()
            commits = _commits(self.log_dir)
            if commits > self.commits and self.pending:
                self.commits = commits
                now = time.monotonic()
                for group in _seen_groups(self.spark, self.cfg, list(self.pending)):
                    self.seen[group] = now - self.pending.pop(group)
                continue
            self.commits = max(self.commits, commits)
            _check(self.queries)
            self.loops.check()
            time.sleep(0.05)


def measure_latency(spark: SparkSession, cfg: Config, *, staging: Path, probes: int, trigger: str = "1 second",
                    every_s: float = 10.0, timeout_s: float = 180.0, seed: int = 7, alerts: bool = True,
                    one_stream: bool = True, say: Callable[[str], None] | None = None) -> LatencyResult:
    """Run the continuous run's queries (`start_queries`: one stream, or two with `one_stream` False) with
    `processingTime=trigger` over `cfg` (tables and checkpoints may already hold data),
    land one probe file every `every_s` seconds (a steady trickle, as log shipping delivers them) into a new
    instance folder, and time each from its landing to its group's first gold_rebalances row.

    A probe whose row has not appeared `timeout_s` after the last landing counts as the time it waited (a lower
    bound, flagged in `timeouts`), so the percentiles never flatter a pipeline that falls behind. The queries are
    stopped before returning.

    With `alerts`, the alerts step runs beside the queries as in `rebalance run --trigger continuous` (after each
    reconstruct batch, and on the clock) and each probe is also timed to its long_rebalance alert in the feed."""
    rng = random.Random(seed)
    staging.mkdir(parents=True, exist_ok=True)
    loop = alert_loop(spark, cfg) if alerts else None
    queries, one = start_queries(spark, cfg, trigger=trigger, loop=loop, one_stream=one_stream)
    if loop is not None:
        loop.start()
    # The derived tables refresh on their own clock beside the streams, as in a continuous run.
    derived = derived_loop(spark, cfg, on_rows=lambda counts: None, poke=loop, one_stream=one).start()
    watcher = _Watcher(spark, cfg, queries, loop, derived)
    landed_at: dict[str, float] = {}
    try:
        for query in queries:
            # Start probing once each query has run a trigger over what was already there.
            while query.lastProgress is None:
                _check(queries)
                time.sleep(0.1)
        run_tag = f"{int(time.time())}"
        next_at = time.monotonic()
        for n in range(probes):
            # A random offset puts the probes at different phases of the trigger interval.
            watcher.poll(next_at + rng.uniform(0.0, 1.0))
            group = f"bench-probe-{run_tag}-{n}"
            partial = staging / f"server.log.probe-{n}"
            partial.write_text(probe_text(group, datetime.now(timezone.utc), rng), encoding="utf-8")
            instance = cfg.landing / group
            instance.mkdir()
            landed_at[group] = time.monotonic()
            os.replace(partial, instance / partial.name)
            watcher.landed(group, landed_at[group])
            next_at = landed_at[group] + every_s
            if say is not None:
                say(f"probe {n + 1}/{probes} landed; {len(watcher.seen)} seen so far")
        watcher.poll(time.monotonic() + timeout_s, stop_when_all_seen=True)
    finally:
        stop_when_idle(queries)
        Loops(derived, loop).stop()  # both stopped, then the first error raised
    now = time.monotonic()
    seconds = [watcher.seen.get(group, now - landed) for group, landed in landed_at.items()]
    alert_seconds = [watcher.alert_seen.get(group, now - landed) for group, landed in landed_at.items()] \
        if loop is not None else None
    if say is not None:
        say("latency probes (s): " + ", ".join(f"{s:.1f}" for s in seconds))
        if alert_seconds is not None:
            say("alert latency (s): " + ", ".join(f"{s:.1f}" for s in alert_seconds))
    return LatencyResult(seconds=seconds, trigger=trigger, timeouts=len(watcher.pending), every_s=every_s,
                         alert_seconds=alert_seconds, alert_timeouts=len(watcher.alert_pending))
