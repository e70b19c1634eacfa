"""A deterministic Kafka cluster simulator: broker, client and GC logs with the ground truth of every rebalance.

Kafka versions (`kafka_version`): 2.4, 2.8 and 3.6 (the Scala group coordinator) and 4.1 (the new group coordinator
and the 4.x clients, worded as the real 4.1.2 lab run logged them). Group protocols (`group_protocol`): "classic"
(JoinGroup/SyncGroup generations, every version), "consumer" (KIP-848 consumer groups, 4.1 only: one rebalance per
group epoch bump, generation_after = group epoch, protocol "consumer") or "mixed" (both, alternating groups).

Truth causes and details written by the scenarios (classic groups; consumer groups below):
- membership_change / member_join: a freshly started process joins (initial start, scale-up, rolling deploy,
  restart after a crash, crash loop, service restart); member_leave: a clean close (scale-down, rolling deploy,
  service restart).
- session_timeout / heartbeat_expiration: a process killed without a word (crash, crash loop) is expired.
- gc_pause / heartbeat_expiration: a stop-the-world pause longer than session.timeout.ms; rejoin: the same process
  joins again after the pause.
- poll_timeout / leave_on_poll_timeout: the heartbeat thread leaves after max.poll.interval.ms; rejoin: the process
  comes back once its slow batch ends.
- metadata_change / partition_count_change: partitions were added, the leader rejoins.
- coordinator_change / coordinator_failover: the group's __consumer_offsets partition moved and one member could not
  reach the new coordinator within its session; rejoin: that member joins again. Not simulated on 4.1 (the new
  coordinator's partition loading is not modelled).

KIP-848 consumer groups (simulator/kip848.py), each epoch bump after the broker line that caused it:
- membership_change / member_join (`Member X joins the consumer group`): initial start, scale-up, rolling deploy,
  restart after a crash, crash loop, service restart; member_leave (`Member X left the consumer group`): a close.
- session_timeout / heartbeat_expiration (`Member X fenced from the group because the member session expired`): a
  crashed process.
- gc_pause / heartbeat_expiration: the member is fenced during a stop-the-world pause longer than the group's session
  (its GC log shows the pause); rejoin: it joins again with the same member id after the pause. Shorter pauses fence
  nothing and rebalance nothing.
- poll_timeout / leave_on_poll_timeout: the background thread leaves after max.poll.interval.ms; rejoin: the same
  member id joins again when poll() is called.
- metadata_change / partition_count_change: partitions were added; no member line, a new metadata hash.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from simulator import frameworks
from simulator.consumer import Consumers
from simulator.estate import BrokerStalls, DeployWaves
from simulator.frameworks import kinds_for
from simulator.javautil import offsets_partition
from simulator.kip848 import ConsumerGroupCoord
from simulator.model import GroupCoord, GroupSpec, Instance, World
from simulator.noise import EXTRA_TOPICS, BrokerNoise, app_noise, gc_events
from simulator.render import GROUP_METADATA_MANAGER, GROUP_PROTOCOLS, Wording
from simulator.scenarios import MINUTE, Incidents
from simulator.writer import (
    HOUR,
    Clock,
    Output,
    write_brokers,
    write_clients,
    write_estate_truth,
    write_gc,
    write_truth,
)

__all__ = ["SimulationSummary", "check_group_protocol", "simulate"]

DEFAULT_START = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
SERVICES = (
    ("orders-processor", "orders-svc", "orders", "com.acme.orders.OrderEventsConsumer"),
    ("payments-ledger", "payments-svc", "payments", "com.acme.payments.LedgerWriter"),
    ("shipping-events", "shipping-svc", "shipments", "com.acme.shipping.ShipmentListener"),
    ("fraud-scoring", "fraud-svc", "transactions", "com.acme.fraud.ScoringWorker"),
    ("inventory-sync", "inventory-svc", "inventory-updates", "com.acme.inventory.SyncConsumer"),
    ("notification-dispatch", "notify-svc", "notifications", "com.acme.notify.Dispatcher"),
    ("search-indexer", "search-svc", "catalog-changes", "com.acme.search.IndexUpdater"),
    ("billing-invoicer", "billing-svc", "invoices", "com.acme.billing.InvoiceConsumer"),
)
BROKER_NOISE_PER_HOUR = (900, 1600)


@dataclass(frozen=True)
class SimulationSummary:
    """What a simulation wrote."""

    landing_dir: Path
    truth_file: Path
    files: int
    lines: int
    rebalances: int
    by_cause: dict[str, int]
    groups: list[str]


def _protocol(group_protocol: str, index: int) -> str:
    """The protocol of the index-th group; "mixed" alternates in pairs (classic, consumer, consumer, classic, ...), so
    each protocol gets both session timeouts and both client layouts."""
    if group_protocol == "mixed":
        return "consumer" if index % 4 in (1, 2) else "classic"
    return group_protocol


def _groups(world: World, rng: random.Random, count: int, group_protocol: str = "classic",
            client_kinds: Mapping[str, float] | None = None) -> list[GroupSpec]:
    specs = []
    for i, wanted in enumerate(kinds_for(count, client_kinds)):
        base, service, topic, app_logger = SERVICES[i % len(SERVICES)]
        if i >= len(SERVICES):
            suffix = f"-{i // len(SERVICES) + 1}"
            base, service, topic = base + suffix, service + suffix, topic + suffix
        protocol = _protocol(group_protocol, i)
        # Streams and Connect run classic groups here (a 4.x Streams application's own protocol is not simulated).
        kind = wanted if protocol == "classic" else "java"
        group_id = frameworks.group_id(kind, base)
        session = 10_000 if i % 2 == 0 else 45_000
        # Connect's log4j layout and librdkafka's stderr lines are their own; no logback variant of either.
        layout = kind if kind in ("connect", "librdkafka") else "logback" if i % 4 == 1 else "log4j"
        spec = GroupSpec(group_id=group_id, service=service, topic=topic, partitions=rng.choice((6, 8, 12, 12, 16)),
                         session_ms=session, layout=layout, app_logger=app_logger,
                         offsets_partition=offsets_partition(group_id), heap_mb=rng.choice((1024, 2048, 4096)),
                         noise_every_ms=rng.randint(1_500, 6_000), protocol=protocol, kind=kind)
        for ordinal in range(rng.randint(2, 6)):
            client, thread = frameworks.client_id(kind, group_id, base, ordinal, rng)
            spec.instances.append(Instance(name=f"{service}-{ordinal}", group=spec, ordinal=ordinal,
                                           client_id=client, thread=thread))
        spec.coord = ConsumerGroupCoord(world, spec) if spec.protocol == "consumer" else GroupCoord(world, spec)
        specs.append(spec)
    return specs


def check_group_protocol(group_protocol: str, kafka_version: str) -> None:
    """Refuse an unknown Kafka version or group protocol, and the consumer protocol before Kafka 4.0 (where it is not
    generally available)."""
    version = Wording(kafka_version).v
    if group_protocol not in GROUP_PROTOCOLS:
        raise ValueError(f"group_protocol {group_protocol!r} is not simulated; choose one of {list(GROUP_PROTOCOLS)}")
    if group_protocol != "classic" and version < (4, 0):
        raise ValueError(f"group_protocol {group_protocol!r} needs Kafka 4.x (KIP-848 consumer groups); "
                         f"kafka_version {kafka_version!r} has only the classic protocol")


def _structured_per_hour(specs: list[GroupSpec]) -> float:
    # application lines, GC lines and group activity of one simulated hour, before any broker noise
    return sum(len(s.instances) * (HOUR / s.noise_every_ms + 300) + 400 for s in specs)


def simulate(out_dir: Path, *, seed: int = 7, groups: int = 4, hours: float = 2.0, lines: int | None = None,
             kafka_version: str = "3.6", brokers: int = 3, start: datetime | None = None, gzip_files: bool = False,
             progress: Callable[[str], None] | None = None, group_protocol: str = "classic",
             noise_density: float | None = None, cycle_every_hours: float = 2.0,
             broker_stalls: int = 0, deploy_waves: int = 0,
             client_kinds: Mapping[str, float] | None = None) -> SimulationSummary:
    """Simulate `groups` consumer groups on `brokers` brokers; write landing/ logs and truth/rebalances.jsonl.

    With `lines`, the span grows and broker noise fills up to that many lines (±10%); otherwise `hours` is the span.
    `group_protocol` is "classic", "consumer" (KIP-848, Kafka 4.x only) or "mixed" (both, alternating groups).
    `noise_density` (0 < d <= 1, with `hours`) thins the application, GC and broker housekeeping lines to that share
    of a busy estate's, leaving the group activity whole: a long span (weeks of history) at a size one machine can
    process in minutes. One cycle of incidents (every kind once, spread over the groups) is planned per
    `cycle_every_hours` of span; above the default 2 h, each group's incidents are spread evenly over the span
    instead of at most 30 minutes apart, so that a long quiet history has activity to its end. `broker_stalls`
    estate events (simulator/estate.py) are spread over the span; those that expired members of two or more groups
    are written to truth/estate_incidents.jsonl, with the `deploy_waves` (each restarts one process of four to six
    idle classic groups in turn) between them. `client_kinds` (kind -> share, kinds of simulator/frameworks.py;
    default all plain Java consumers) spreads Kafka Streams applications and Connect sink connectors over the
    classic groups.
    """
    if groups < 1 or brokers < 1 or hours <= 0 or (lines is not None and lines < 1):
        raise ValueError("groups and brokers must be >= 1, hours > 0 and lines (when given) >= 1")
    if cycle_every_hours <= 0:
        raise ValueError("cycle_every_hours must be above 0")
    if noise_density is not None and (lines is not None or not 0 < noise_density <= 1):
        raise ValueError("noise_density must be in (0, 1] and cannot be combined with lines (which sets it)")
    wording = Wording(kafka_version)
    check_group_protocol(group_protocol, kafka_version)
    out_dir = Path(out_dir)
    landing = out_dir / "landing"
    if landing.is_dir() and any(landing.iterdir()):
        # two simulations mixed in one landing directory would be ingested as one cluster
        raise FileExistsError(f"{landing} already holds files; simulate into an empty directory or delete it first")
    begin = start or DEFAULT_START
    if begin.tzinfo is None:
        begin = begin.replace(tzinfo=timezone.utc)
    start_ms = int(begin.timestamp() * 1000)
    rng = random.Random(seed)
    world = World(rng=rng, wording=wording, start=start_ms, end=start_ms, brokers=brokers)
    specs = _groups(world, rng, groups, group_protocol, client_kinds)
    world.groups = specs
    density = 1.0 if noise_density is None else noise_density
    if lines is not None:
        per_hour = _structured_per_hour(specs)
        hours = max(2.0, 0.1 * lines / per_hour)
        density = min(1.0, 0.5 * lines / (per_hour * hours))
    world.end = start_ms + int(hours * HOUR)
    until = math.ceil(world.end / HOUR) * HOUR
    say = progress or (lambda _msg: None)
    say(f"simulating {hours:g} h: {groups} consumer groups on {brokers} brokers (Kafka {kafka_version}, "
        f"{group_protocol} protocol, seed {seed})")

    consumers = Consumers(world)
    incidents = Incidents(world, consumers, cycles=max(1, round(hours / cycle_every_hours)),
                          max_gap_ms=30 * MINUTE if cycle_every_hours <= 2 else None)
    incidents.plan()
    stalls = BrokerStalls(world, consumers, incidents, seed=seed, count=broker_stalls)
    stalls.plan()
    waves = DeployWaves(world, consumers, incidents, seed=seed, count=deploy_waves)
    waves.plan()
    world.run(until)
    # the Scala coordinator's offset expiration pass; the new coordinator (4.x) logs its cleanup only at DEBUG
    for broker in range(1, brokers + 1 if not wording.new_coordinator else 1):
        for t in range(start_ms + rng.randint(0, 599_999), until, 600_000):
            world.broker_line(broker, t, f"Removed 0 expired offsets in {rng.randint(0, 2)} milliseconds.",
                              GROUP_METADATA_MANAGER)
    say(f"simulated {len(world.truth)} rebalances; rendering application and GC lines")

    app = {}
    gc = {}
    for spec in specs:
        for inst in spec.instances:
            app[inst.name] = [rec for proc in inst.procs
                              for rec in app_noise(proc, rng, until, spec.noise_every_ms / density)]
            for proc in inst.procs if spec.kind != "librdkafka" else ():  # no JVM, no GC log
                gc[(inst.name, proc.run)] = gc_events(proc, rng, until, spec.heap_mb, density)
    structured = (sum(len(v) for v in app.values()) + sum(len(v) for v in gc.values())
                  + sum(1 + r[5].count("\n") for s in specs for i in s.instances for r in i.records if r[0] < until)
                  + sum(1 for recs in world.broker_records.values() for r in recs if r[0] < until))
    first_hour, last_hour = start_ms // HOUR, until // HOUR
    slots = [(b, h) for b in range(1, brokers + 1) for h in range(first_hour, last_hour)]
    if lines is not None:
        total_noise = max(0, lines - structured)
        share, extra = divmod(total_noise, len(slots))
        noise_per_hour = {slot: share + (1 if i < extra else 0) for i, slot in enumerate(slots)}
    else:
        noise_per_hour = {slot: round(rng.randint(*BROKER_NOISE_PER_HOUR) * density) for slot in slots}
    topics = [(s.topic, s.partitions) for s in specs] + [(t, 12) for t in EXTRA_TOPICS]
    noise = {b: BrokerNoise(wording.v, brokers, b, topics) for b in range(1, brokers + 1)}

    out = Output(landing, gzip_files, progress, structured + sum(noise_per_hour.values()))
    clock = Clock()
    write_brokers(out, world, clock, noise_per_hour, noise, seed, until)
    write_clients(out, world, clock, app, until)
    write_gc(out, world, clock, gc)
    truth_file = out_dir / "truth" / "rebalances.jsonl"
    write_truth(truth_file, world.truth)
    estate_truth = sorted(stalls.truth + waves.truth, key=lambda row: row["started_at"])
    if estate_truth:
        write_estate_truth(out_dir / "truth" / "estate_incidents.jsonl", estate_truth)
    by_cause = dict(sorted(Counter(row["cause"] for row in world.truth).items()))
    say(f"done: {out.lines:,} lines in {out.files} files, {len(world.truth)} rebalances")
    return SimulationSummary(landing_dir=landing, truth_file=truth_file, files=out.files, lines=out.lines,
                             rebalances=len(world.truth), by_cause=by_cause, groups=[s.group_id for s in specs])
