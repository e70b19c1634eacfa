"""Lines that are not about consumer groups: broker housekeeping, application chatter, and routine GC pauses.

Broker noise uses the version's real wording for segment rolls, producer snapshots, log-start-offset moves and ISR
changes (kafka.log.LogCleaner and the controller log to their own files by Kafka's default log4j config, so they are
not in server.log). 4.x writes only segment rolls (LocalLog moved to the storage module in 4.0, KAFKA-14483) and
producer snapshots: the other lines were rewritten in Java in 4.x and their 4.1 wording is not verified. Bodies are
pre-rendered into a pool per file and drawn at random, which keeps ten million lines cheap.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from simulator.model import GroupSpec, Proc

DATA_DIR = "/var/lib/kafka/data"
EXTRA_TOPICS = ("clickstream", "audit-events", "metrics-raw", "search-index-updates", "__consumer_offsets")

Template = Callable[[random.Random, str, int], str]


def _isr(rng: random.Random, broker: int, brokers: int) -> tuple[list[int], int]:
    replicas = [broker, *[b for b in range(1, brokers + 1) if b != broker][:2]]
    return replicas, rng.choice(replicas[1:]) if len(replicas) > 1 else broker


def broker_templates(version: tuple[int, ...], brokers: int) -> list[tuple[float, Template]]:
    """(weight, render) pairs; render(rng, topic_partition, broker) -> ' INFO <message> (<logger>)'."""
    def offset(rng: random.Random) -> int:
        return rng.randrange(10_000, 900_000_000)

    if version >= (4, 0):
        log_prefix, log_logger = "LocalLog", "org.apache.kafka.storage.internals.log.LocalLog"
        unified_prefix, unified_logger = "UnifiedLog", "org.apache.kafka.storage.internals.log.UnifiedLog"
    elif version >= (3, 0):
        log_prefix, log_logger = "LocalLog", "kafka.log.LocalLog"
        unified_prefix, unified_logger = "UnifiedLog", "kafka.log.UnifiedLog"
    else:
        log_prefix, log_logger = "Log", "kafka.log.Log"
        unified_prefix, unified_logger = "Log", "kafka.log.Log"

    def roll(rng: random.Random, tp: str, broker: int) -> str:
        return (f" INFO [{log_prefix} partition={tp}, dir={DATA_DIR}] Rolled new log segment at offset {offset(rng)} "
                f"in {rng.randint(0, 9)} ms. ({log_logger})")

    def snapshot(rng: random.Random, tp: str, broker: int) -> str:
        if version >= (3, 5):
            return (f" INFO [ProducerStateManager partition={tp}]Wrote producer snapshot at offset {offset(rng)} with "
                    f"{rng.randint(0, 12)} producer ids in {rng.randint(0, 6)} ms. "
                    "(org.apache.kafka.storage.internals.log.ProducerStateManager)")
        return (f" INFO [ProducerStateManager partition={tp}] Writing producer snapshot at offset {offset(rng)} "
                "(kafka.log.ProducerStateManager)")

    def start_offset(rng: random.Random, tp: str, broker: int) -> str:
        if version >= (2, 8):
            return (f" INFO [{unified_prefix} partition={tp}, dir={DATA_DIR}] Incremented log start offset to "
                    f"{offset(rng)} due to segment deletion ({unified_logger})")
        return (f" INFO [Log partition={tp}, dir={DATA_DIR}] Incrementing log start offset to {offset(rng)} "
                "(kafka.log.Log)")

    def shrink(rng: random.Random, tp: str, broker: int) -> str:
        replicas, lagging = _isr(rng, broker, brokers)
        remaining = ",".join(str(r) for r in replicas if r != lagging)
        hw = offset(rng)
        lag = f"(brokerId: {lagging}, endOffset: {hw - rng.randint(0, 5000)}"
        if version >= (3, 0):
            lag += f", lastCaughtUpTimeMs: {1_795_000_000_000 + rng.randrange(10**9)}"
        return (f" INFO [Partition {tp} broker={broker}] Shrinking ISR from {','.join(map(str, replicas))} to "
                f"{remaining}. Leader: (highWatermark: {hw}, endOffset: {hw + rng.randint(0, 900)}). "
                f"Out of sync replicas: {lag}). (kafka.cluster.Partition)")

    def isr_updated(rng: random.Random, tp: str, broker: int) -> str:
        replicas, _ = _isr(rng, broker, brokers)
        isr = ",".join(str(r) for r in replicas)
        version_no = rng.randint(3, 400)
        if version >= (3, 0):
            body = f"ISR updated to {isr}  and version updated to {version_no}"
        elif version >= (2, 7):
            body = f"ISR updated to {isr} and version updated to [{version_no}]"
        else:
            body = f"ISR updated to [{isr}] and zkVersion updated to [{version_no}]"
        return f" INFO [Partition {tp} broker={broker}] {body} (kafka.cluster.Partition)"

    def deletable(rng: random.Random, tp: str, broker: int) -> str:
        return (f" INFO [Log partition={tp}, dir={DATA_DIR}] Found deletable segments with base offsets "
                f"[{offset(rng)}] due to retention time 604800000ms breach (kafka.log.Log)")

    if version >= (4, 0):
        return [(40, roll), (30, snapshot)]
    templates: list[tuple[float, Template]] = [(40, roll), (30, snapshot), (12, start_offset), (4, shrink),
                                              (8, isr_updated)]
    if version < (2, 8):
        templates.append((6, deletable))
    return templates


class BrokerNoise:
    """Pre-rendered housekeeping lines of one broker."""

    def __init__(self, version: tuple[int, ...], brokers: int, broker: int, topics: list[tuple[str, int]]) -> None:
        self.templates = broker_templates(version, brokers)
        self.weights = [w for w, _ in self.templates]
        self.broker = broker
        self.partitions = [f"{topic}-{p}" for topic, count in topics for p in range(count)
                           if (p + len(topic)) % brokers + 1 == broker] or [f"{topics[0][0]}-0"]

    def pool(self, rng: random.Random, size: int) -> list[str]:
        picks = rng.choices(self.templates, weights=self.weights, k=size)
        return [render(rng, self.partitions[rng.randrange(len(self.partitions))], self.broker) for _, render in picks]


APP_TEMPLATES = (
    "Processed {n} records from {topic} in {ms} ms",
    "Processed {n} records from {topic} in {ms} ms",
    "Processed {n} records from {topic} in {ms} ms",
    "Committed offsets for {k} partitions of {topic}",
    "Downstream call to {service}-api took {ms} ms",
    "Cache refresh done: {n} entries in {ms} ms",
)


def app_noise(proc: Proc, rng: random.Random, until: int, every_ms: float) -> list[tuple[int, str, str]]:
    """(time, level, message) of the application's own lines while the process runs and is not stalled."""
    spec: GroupSpec = proc.group
    begin, end = proc.app_from + 2_000, min(proc.end or until, until)
    if end <= begin or every_ms <= 0:
        return []
    pool = []
    for _ in range(256):
        template = APP_TEMPLATES[rng.randrange(len(APP_TEMPLATES))]
        level = "WARN" if template.startswith("Downstream") and rng.random() < 0.2 else "INFO"
        pool.append((level, template.format(n=rng.randint(1, 500), topic=spec.topic, ms=rng.randint(2, 1800),
                                            k=rng.randint(1, 12), service=spec.service.split("-")[0])))
    count = int((end - begin) / every_ms)
    times = sorted(rng.choices(range(begin, end), k=count))
    picks = rng.choices(pool, k=count)
    quiet = sorted(proc.quiet)
    out = []
    q = 0
    for t, (level, message) in zip(times, picks, strict=True):
        while q < len(quiet) and quiet[q][1] < t:
            q += 1
        if q < len(quiet) and any(a <= t <= b for a, b in quiet[q:q + 4]):
            continue
        out.append((t, level, message))
    return out


def gc_events(proc: Proc, rng: random.Random, until: int, heap_mb: int, density: float = 1.0) -> list[tuple[int, str]]:
    """(time, message) of one JVM's unified GC log (-Xlog:gc): routine G1 pauses plus the planted long ones."""
    end = min(proc.end or until, until)
    events: list[tuple[int, str, float]] = []
    for t_end, duration, _ in proc.gc_planted:
        if t_end <= end:
            events.append((t_end - int(duration) - 1, "evac_failure", rng.uniform(15, 90)))
            events.append((t_end, "full", float(duration)))
    blocked = [(t - int(d) - 3_000, t + 2_000) for t, d, _ in proc.gc_planted]

    def free(a: int, b: int) -> bool:
        return all(b < lo or a > hi for lo, hi in blocked)

    mean = rng.uniform(6_000, 25_000) / max(density, 0.05)
    t = proc.start + rng.randint(900, 5_000)
    young = 0
    while t < end:
        if free(t - 1_000, t + 1_000):
            young += 1
            kind = "concurrent" if young % 14 == 0 and free(t, t + 5_000) else "young"
            # a few young pauses are slow (a burst of survivors, a busy host), most take milliseconds
            events.append((t, kind, rng.uniform(80.0, 650.0) if rng.random() < 0.03 else rng.uniform(2.5, 45.0)))
        t += int(rng.expovariate(1.0 / mean)) + 200
    events.sort(key=lambda e: e[0])
    out: list[tuple[int, str]] = [(proc.start + rng.randint(4, 9), "Using G1")]

    def heap(before: int, after: int) -> str:
        return f"{before}M->{after}M({heap_mb}M)"

    gc_id, mixed = 0, 0
    for t_event, kind, ms in events:
        live = int(heap_mb * rng.uniform(0.22, 0.40))
        if kind == "full":
            full = heap(int(heap_mb * rng.uniform(0.97, 0.995)), live)
            out.append((t_event, f"GC({gc_id}) Pause Full (G1 Compaction Pause) {full} {ms:.3f}ms"))
        elif kind == "evac_failure":
            used = int(heap_mb * rng.uniform(0.96, 0.99))
            failed = f"GC({gc_id}) Pause Young (Normal) (G1 Evacuation Pause) (Evacuation Failure)"
            out.append((t_event, f"{failed} {heap(used, used + 8)} {ms:.3f}ms"))
        else:
            before = live + int(heap_mb * rng.uniform(0.15, 0.35))
            phase = "Normal"
            if kind == "concurrent":
                phase = "Concurrent Start"
            elif mixed > 0:
                phase, mixed = ("Prepare Mixed" if mixed == 3 else "Mixed"), mixed - 1
            cause = "G1 Humongous Allocation" if kind == "concurrent" else "G1 Evacuation Pause"
            out.append((t_event, f"GC({gc_id}) Pause Young ({phase}) ({cause}) {heap(before, live)} {ms:.3f}ms"))
            if kind == "concurrent":
                gc_id += 1
                mark = t_event + rng.randint(1, 3)
                remark = mark + rng.randint(120, 900)
                cleanup = remark + rng.randint(4, 60)
                done = cleanup + rng.randint(1, 9)
                out.append((mark, f"GC({gc_id}) Concurrent Mark Cycle"))
                remark_ms, cleanup_ms = rng.uniform(1.5, 14), rng.uniform(0.05, 0.9)
                out.append((remark, f"GC({gc_id}) Pause Remark {heap(live + 40, live + 12)} {remark_ms:.3f}ms"))
                out.append((cleanup, f"GC({gc_id}) Pause Cleanup {heap(live + 12, live + 12)} {cleanup_ms:.3f}ms"))
                out.append((done, f"GC({gc_id}) Concurrent Mark Cycle {done - mark - rng.random():.3f}ms"))
                mixed = 3
        gc_id += 1
    out.sort(key=lambda e: e[0])
    return out
