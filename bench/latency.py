"""Latency with a processing-time trigger: land a small broker file holding one rebalance of a fresh group and time
until its row is in gold_rebalances."""

from __future__ import annotations

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

from pipelines import io
from pipelines.config import Config
from pipelines.ingest import make_ingest_batch
from pipelines.reconstruct import make_reconstruct_batch
from pipelines.run import INGEST_QUERY, RECONSTRUCT_QUERY

COORDINATOR = "(kafka.coordinator.group.GroupCoordinator)"


class LatencyError(RuntimeError):
    """A streaming query died while the probes ran."""


@dataclass
class LatencyResult:
    """Seconds from landing each probe file to its row in gold_rebalances (a probe that timed out counts as the
    timeout, so the percentiles never flatter a run that lost probes)."""

    seconds: list[float]
    trigger: str
    timeouts: int = 0

    def percentile(self, q: float) -> float:
        """The q-th percentile (0..100) by linear interpolation between the closest ranks."""
        if len(self.seconds) == 1:
            return self.seconds[0]
        return statistics.quantiles(self.seconds, n=100, method="inclusive")[round(q) - 1]

    def as_dict(self) -> dict[str, object]:
        """p50, p95, max and every probe, in seconds."""
        return {"trigger": self.trigger, "probes": len(self.seconds), "timeouts": self.timeouts,
                "p50_s": round(self.percentile(50), 3),
                "p95_s": round(self.percentile(95), 3), "max_s": round(max(self.seconds), 3),
                "probes_s": [round(s, 3) for s in self.seconds]}


def probe_text(group: str, at: datetime, rng: random.Random) -> str:
    """A broker log (log4j layout) holding one rebalance of a new group: join, Preparing, Stabilized, Assignment."""
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
    messages = [(0, joined), (12, preparing), (3020, stabilized), (3051, assigned)]
    lines = []
    for offset_ms, message in messages:
        ts = at + timedelta(milliseconds=offset_ms)
        stamp = f"{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d}"
        lines.append(f"[{stamp}] INFO [GroupCoordinator 1]: {message} {COORDINATOR}")
    return "\n".join(lines) + "\n"


def start_queries(spark: SparkSession, cfg: Config, *, trigger: str) -> list[StreamingQuery]:
    """The two queries of `pipelines.run.run` (same functions, same checkpoints) with a `processingTime` trigger."""
    io.ensure_tables(spark, cfg)
    ingest = (
        io.read_landing(spark, cfg)
        .writeStream.queryName(f"bench-{INGEST_QUERY}")
        .foreachBatch(make_ingest_batch(cfg))
        .option("checkpointLocation", str(io.checkpoint_dir(cfg, INGEST_QUERY)))
        .trigger(processingTime=trigger)
        .start()
    )
    reconstruct = (
        io.read_table_stream(spark, cfg, "silver_accounting")
        .writeStream.queryName(f"bench-{RECONSTRUCT_QUERY}")
        .foreachBatch(make_reconstruct_batch(cfg))
        .option("checkpointLocation", str(io.checkpoint_dir(cfg, RECONSTRUCT_QUERY)))
        .trigger(processingTime=trigger)
        .start()
    )
    return [ingest, reconstruct]


def _check(queries: list[StreamingQuery]) -> None:
    for query in queries:
        error = query.exception()
        if error is not None or not query.isActive:
            raise LatencyError(f"streaming query {query.name} stopped during the latency probes: {error}")


def _commits(log_dir: Path) -> int:
    return sum(1 for name in os.listdir(log_dir) if name.endswith(".json"))


def wait_for_row(spark: SparkSession, cfg: Config, group: str, *, queries: list[StreamingQuery], since: int,
                 timeout_s: float) -> float | None:
    """Block until gold_rebalances has a row of `group`; the monotonic time it was seen, or None after `timeout_s`.

    The Delta log is watched (cheap) and the table is queried only after a new commit, so polling does not compete
    with the streams for the two cores.
    """
    log_dir = Path(io.table(cfg, "gold_rebalances").path or "") / "_delta_log"
    deadline = time.monotonic() + timeout_s
    seen = since
    while time.monotonic() < deadline:
        commits = _commits(log_dir)
        if commits > seen:
            seen = commits
            if io.read_table(spark, cfg, "gold_rebalances").filter(F.col("group_id") == group).limit(1).count():
                return time.monotonic()
        else:
            _check(queries)
            time.sleep(0.05)
    return None


def measure_latency(spark: SparkSession, cfg: Config, *, staging: Path, probes: int, trigger: str = "1 second",
                    timeout_s: float = 60.0, seed: int = 7, say: Callable[[str], None] | None = None) -> LatencyResult:
    """Run both queries with `processingTime=trigger` over `cfg` (tables and checkpoints may already hold data),
    land `probes` files one after another into new instance folders, and time each until its gold row; the queries
    are stopped before returning. After two timed-out probes the rest are skipped: the pipeline is not keeping up."""
    rng = random.Random(seed)
    staging.mkdir(parents=True, exist_ok=True)
    log_dir = Path(io.table(cfg, "gold_rebalances").path or "") / "_delta_log"
    queries = start_queries(spark, cfg, trigger=trigger)
    seconds: list[float] = []
    timeouts = 0
    try:
        for query in queries:
            # Start probing once each query has run a trigger over what was already there.
            while query.lastProgress is None:
                _check(queries)
                time.sleep(0.1)
        run_tag = f"{int(time.time())}"
        for n in range(probes):
            # A random pause puts the probes at different phases of the trigger interval.
            time.sleep(rng.uniform(0.2, 1.2))
            group = f"bench-probe-{run_tag}-{n}"
            partial = staging / f"server.log.probe-{n}"
            partial.write_text(probe_text(group, datetime.now(timezone.utc), rng), encoding="utf-8")
            instance = cfg.landing / f"bench-probe-{run_tag}-{n}"
            instance.mkdir()
            since = _commits(log_dir)
            landed = time.monotonic()
            os.replace(partial, instance / partial.name)
            seen = wait_for_row(spark, cfg, group, queries=queries, since=since, timeout_s=timeout_s)
            timeouts += seen is None
            seconds.append(timeout_s if seen is None else seen - landed)
            if say is not None:
                say(f"probe {n + 1}/{probes}: " + ("timed out" if seen is None else f"{seconds[-1]:.2f} s"))
            if timeouts >= 2:
                break
    finally:
        for query in queries:
            query.stop()
    return LatencyResult(seconds=seconds, trigger=trigger, timeouts=timeouts)
