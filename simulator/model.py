"""The simulated cluster: an event kernel, brokers, consumer processes, and the classic group coordinator's protocol.

The coordinator follows the Scala GroupCoordinator (2.4-3.x; 4.x's new coordinator runs the same classic state machine
and only words it differently): a join, leave or session expiry opens a rebalance only
from Empty, Stable or CompletingRebalance; while PreparingRebalance further joins and removals fold into it; the join
phase completes when every member has rejoined and no KIP-394 pending member is left (or, for an Empty group, after
group.initial.rebalance.delay.ms, extended by 3 s while generation-0 members keep arriving).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.frameworks import echoes, sent_reason, stream_thread_prefix, writes_java_lines
from simulator.javautil import OFFSETS_TOPIC, seeded_uuid
from simulator.render import GROUP_COORDINATOR, GROUP_METADATA_MANAGER, NEW_GROUP_METADATA_MANAGER, Wording

HEARTBEAT_MS = 3000
REBALANCE_TIMEOUT_MS = 300_000
INITIAL_DELAY_MS = 3000


class SimulationError(RuntimeError):
    """The simulator reached a protocol state its scenarios should never produce (a bug, not bad input)."""


@dataclass(frozen=True)
class Tag:
    """Why a rebalance would start: the truth's cause, cause_detail and scenario name."""

    cause: str
    detail: str
    scenario: str


@dataclass
class GroupSpec:
    """One consumer group and the service that owns it."""

    group_id: str
    service: str
    topic: str
    partitions: int
    session_ms: int
    layout: str
    app_logger: str
    offsets_partition: int
    heap_mb: int
    noise_every_ms: int
    protocol: str = "classic"
    kind: str = "java"  # the framework its consumers run in: simulator/frameworks.py
    instances: list[Instance] = field(default_factory=list)
    coord: Any = None
    busy: bool = False
    hold: bool = False
    queue: list[str] = field(default_factory=list)


@dataclass
class Instance:
    """A landing folder: one pod/host that runs one consumer JVM at a time."""

    name: str
    group: GroupSpec
    ordinal: int
    client_id: str
    thread: str = "main"  # the thread its consumer polls on
    procs: list[Proc] = field(default_factory=list)
    records: list[tuple[int, int, str, str, str, str]] = field(default_factory=list)
    active: bool = True


@dataclass
class Proc:
    """One JVM run of a consumer in an instance folder."""

    inst: Instance
    run: int
    start: int
    ip: str
    state: str = "booting"
    member_id: str = ""
    generation: int = -1
    assigned: list[int] = field(default_factory=list)
    hb_anchor: int = 0
    silent: str | None = None
    silent_tag: Tag | None = None
    join_tag: Tag | None = None
    client_reason: str = ""
    blocked: bool = False
    end: int | None = None
    app_from: int = 0
    quiet: list[tuple[int, int]] = field(default_factory=list)
    gc_planted: list[tuple[int, float, str]] = field(default_factory=list)
    snapshot_version: int = 0
    unassigned_since: int | None = None
    on_stable: list[Callable[[int], None]] = field(default_factory=list)
    # KIP-848 members: the membership manager's state and its local assignment counter
    kstate: str = "UNSUBSCRIBED"
    local_epoch: int = 0
    busy_until: int = 0
    assigned_once: bool = False  # a Streams thread's first assignment follows STARTING, later ones RUNNING

    @property
    def group(self) -> GroupSpec:
        return self.inst.group

    def last_heartbeat(self, t: int) -> int:
        """The last heartbeat sent at or before t (the heartbeat timer runs from hb_anchor)."""
        return self.hb_anchor + HEARTBEAT_MS * ((t - self.hb_anchor) // HEARTBEAT_MS)

    def next_heartbeat(self, t: int) -> int:
        """The first heartbeat sent after t."""
        return self.last_heartbeat(t) + HEARTBEAT_MS

    def metadata_version(self, t: int) -> int:
        return 2 + (t - self.start) // 300_000


@dataclass
class Member:
    """The coordinator's view of one member."""

    member_id: str
    proc: Proc
    joined: bool = False
    last_seen: int = 0
    token: int = 0


@dataclass
class Rebalance:
    """An open rebalance (PreparingRebalance) and what opened it."""

    started: int
    tag: Tag
    trigger: str | None
    initial: bool
    remaining_ms: int = 0
    new_member_added: bool = False


class World:
    """Event kernel plus cluster state and the line sinks every other part writes to."""

    def __init__(self, *, rng: random.Random, wording: Wording, start: int, end: int, brokers: int) -> None:
        self.rng = rng
        self.w = wording
        self.start = start
        self.end = end
        self.brokers = brokers
        self.now = start
        self._queue: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0
        self.leader = {p: p % brokers + 1 for p in range(50)}
        self.epoch = {p: rng.randrange(3, 40) for p in range(50)}
        self.broker_records: dict[int, list[tuple[int, int, str, str]]] = {b: [] for b in range(1, brokers + 1)}
        self.groups: list[GroupSpec] = []
        self.truth: list[dict[str, Any]] = []
        self.consumers: Any = None

    # ---- kernel ---------------------------------------------------------------------------------------------

    def at(self, t: int, fn: Callable[..., None], *args: Any) -> None:
        heapq.heappush(self._queue, (int(t), self._seq, fn, args))
        self._seq += 1

    def run(self, until: int) -> None:
        while self._queue and self._queue[0][0] <= until:
            t, _, fn, args = heapq.heappop(self._queue)
            self.now = t
            fn(t, *args)

    def seq(self) -> int:
        self._seq += 1
        return self._seq

    # ---- sinks ----------------------------------------------------------------------------------------------

    def broker_line(self, broker: int, t: int, message: str, logger: str = GROUP_COORDINATOR,
                    level: str = "INFO", partition: int | None = None) -> None:
        if logger == NEW_GROUP_METADATA_MANAGER:
            message = f"[GroupCoordinator id={broker} topic={OFFSETS_TOPIC} partition={partition}] {message}"
        elif logger == GROUP_COORDINATOR:
            message = f"[GroupCoordinator {broker}]: {message}"
        elif logger == GROUP_METADATA_MANAGER:
            message = f"[GroupMetadataManager brokerId={broker}] {message}"
        self.broker_records[broker].append((t, self.seq(), level, f"{message} ({logger})"))

    def client_lines(self, proc: Proc, t: int, lines: list[tuple[str, str, str, str]]) -> None:
        kind = proc.group.kind
        java = writes_java_lines(kind)
        for level, logger, thread, message in lines:
            if not java and not level.isdigit() and logger != proc.group.app_logger:
                continue  # the Java client's line, which a librdkafka consumer does not print
            proc.inst.records.append((t, self.seq(), level, logger, thread, message))
            if kind == "java":
                continue
            for after, e_level, e_logger, e_message in echoes(kind, message, self.rng,
                                                              first_assignment=not proc.assigned_once):
                prefixed = stream_thread_prefix(proc.inst.thread) + e_message
                proc.inst.records.append((t + after, self.seq(), e_level, e_logger, thread, prefixed))
            if message.startswith("Adding newly assigned partitions"):
                proc.assigned_once = True

    def new_member_id(self, client_id: str) -> str:
        return f"{client_id}-{seeded_uuid(self.rng)}"


class CoordinatorBase:
    """What the coordinators of both protocols share: the broker hosting the group (the leader of its offsets
    partition), how it logs, and a session timer per member. `members` maps member ids to objects with `last_seen`
    and `token`; `expire(t, member_id, token)` runs when a session lapses with its token unchanged."""

    world: World
    spec: GroupSpec
    members: dict
    expire: Callable[[int, str, int], None]  # defined by each protocol's coordinator

    @property
    def broker(self) -> int:
        return self.world.leader[self.spec.offsets_partition]

    def log(self, t: int, message: str) -> None:
        """A broker line of this group's coordinator, in the wording of its generation (Scala or new coordinator)."""
        if self.world.w.new_coordinator:
            self.world.broker_line(self.broker, t, message, NEW_GROUP_METADATA_MANAGER,
                                   partition=self.spec.offsets_partition)
        else:
            self.world.broker_line(self.broker, t, message)

    def schedule_expiry(self, proc: Proc, t: int) -> None:
        """The process stopped heartbeating at t: arm the session timer from its last heartbeat."""
        member = self.members.get(proc.member_id)
        if member is None:
            return
        member.last_seen = max(member.last_seen, proc.last_heartbeat(t) + 1)
        member.token += 1
        self.world.at(member.last_seen + self.spec.session_ms, self.expire, proc.member_id, member.token)

    def heartbeat_resumed(self, proc: Proc, t: int) -> bool:
        """The process heartbeats again at t; False when the coordinator already removed (or fenced) it."""
        member = self.members.get(proc.member_id)
        if member is None:
            return False
        member.token += 1
        member.last_seen = t
        return True


class GroupCoord(CoordinatorBase):
    """The classic group coordinator's state for one group, hosted by the leader of its offsets partition."""

    def __init__(self, world: World, spec: GroupSpec) -> None:
        self.world = world
        self.spec = spec
        self.state = "Empty"
        self.generation = 0
        self.members: dict[str, Member] = {}
        self.pending: dict[str, Proc] = {}
        self.leader: str | None = None
        self.reb: Rebalance | None = None
        self.sync_due = 0
        self.token = 0
        self.assignment: dict[str, list[int]] = {}

    def metadata(self, proc: Proc) -> str:
        return self.world.w.member_metadata(proc.member_id, proc.inst.client_id, proc.ip, self.spec.session_ms,
                                            REBALANCE_TIMEOUT_MS)

    # ---- requests ---------------------------------------------------------------------------------------------

    def join(self, t: int, proc: Proc) -> None:
        """A JoinGroup request from the process (member id '' on its first attempt)."""
        if self.state == "CompletingRebalance":
            self.world.at(self.sync_due + 1, self.join, proc)
            return
        w, mid = self.world.w, proc.member_id
        if not mid:
            new_id = self.world.new_member_id(proc.inst.client_id)
            line = w.unknown_member_joins(self.spec.group_id, self.state, new_id)
            if line:
                self.log(t, line)
            self.pending[new_id] = proc
            self.world.at(t + 1, self.world.consumers.on_member_id_required, proc, new_id)
            return
        if mid in self.pending:
            del self.pending[mid]
            line = w.pending_member_joins(self.spec.group_id, self.state, mid)
            if line:
                self.log(t, line)
            self.members[mid] = Member(mid, proc, joined=True, last_seen=t)
            if self.leader is None:
                self.leader = mid
            if self.state == "PreparingRebalance":
                assert self.reb is not None
                if self.reb.initial and self.generation == 0:
                    self.reb.new_member_added = True
                self.try_complete(t)
            else:
                tag = proc.join_tag or Tag("membership_change", "member_join", "unplanned")
                self.prepare(t, w.reason_add(mid, sent_reason(proc.group.kind, w.new_member_client_reason(mid))),
                             tag, mid)
            return
        member = self.members.get(mid)
        if member is None:
            raise SimulationError(f"JoinGroup from unknown member {mid} of {self.spec.group_id}")
        member.joined, member.last_seen = True, t
        if self.state == "PreparingRebalance":
            self.try_complete(t)
        elif self.state == "Stable" and mid == self.leader:
            tag = proc.join_tag or Tag("metadata_change", "partition_count_change", "unplanned")
            self.prepare(t, w.reason_leader_rejoin(mid, sent_reason(proc.group.kind, proc.client_reason)), tag, mid)
        else:
            raise SimulationError(f"follower {mid} rejoined {self.spec.group_id} in state {self.state}")

    def leave(self, t: int, proc: Proc, leave_reason: str, tag: Tag) -> None:
        """An explicit LeaveGroup."""
        if self.state == "CompletingRebalance":
            self.world.at(self.sync_due + 1, self.leave, proc, leave_reason, tag)
            return
        mid = proc.member_id
        member = self.remove(mid)
        if member is None:
            raise SimulationError(f"LeaveGroup from unknown member {mid}")
        before, reason, after = self.world.w.left_group(self.metadata(proc), mid, self.spec.group_id,
                                                         sent_reason(proc.group.kind, leave_reason))
        if before:
            self.log(t, before)
        self.after_removal(t, reason, tag, mid)
        if after:
            self.log(t, after)

    def expire(self, t: int, member_id: str, token: int) -> None:
        """The session timer of a member fired (no heartbeat within session.timeout.ms)."""
        member = self.members.get(member_id)
        if member is None or member.token != token or member.joined:
            return
        if self.state == "CompletingRebalance":
            self.world.at(self.sync_due + 1, self.expire, member_id, token)
            return
        self.remove(member_id)
        self.log(t, self.world.w.member_failed(member_id, self.spec.group_id))
        tag = member.proc.silent_tag or Tag("session_timeout", "heartbeat_expiration", "unplanned")
        self.after_removal(t, self.world.w.reason_expired(member_id), tag, member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def after_removal(self, t: int, reason: str, tag: Tag, trigger: str) -> None:
        if self.state == "Stable":
            self.prepare(t, reason, tag, trigger)
        elif self.state == "PreparingRebalance":
            self.try_complete(t)

    # ---- rebalance state machine ------------------------------------------------------------------------------

    def prepare(self, t: int, reason: str, tag: Tag, trigger: str | None) -> None:
        initial = self.state == "Empty"
        self.state = "PreparingRebalance"
        self.log(t, self.world.w.preparing(self.spec.group_id, self.generation, self.spec.offsets_partition, reason))
        self.token += 1
        self.reb = Rebalance(started=t, tag=tag, trigger=trigger, initial=initial)
        if initial:
            self.reb.remaining_ms = max(REBALANCE_TIMEOUT_MS - INITIAL_DELAY_MS, 0)
            self.world.at(t + INITIAL_DELAY_MS, self.initial_delay_expired, self.token)
        else:
            self.world.at(t + REBALANCE_TIMEOUT_MS, self.rebalance_timeout, self.token)
        for member in list(self.members.values()):
            if not member.joined:
                self.world.consumers.notice_rebalance(t, member.proc)

    def try_complete(self, t: int) -> None:
        if self.state != "PreparingRebalance" or self.reb is None or self.reb.initial or self.pending:
            return
        if all(m.joined for m in self.members.values()):
            self.complete(t)

    def initial_delay_expired(self, t: int, token: int) -> None:
        if token != self.token or self.reb is None:
            return
        if self.reb.new_member_added and self.reb.remaining_ms > 0:
            self.reb.new_member_added = False
            delay = min(INITIAL_DELAY_MS, self.reb.remaining_ms)
            self.reb.remaining_ms = max(self.reb.remaining_ms - delay, 0)
            self.world.at(t + delay, self.initial_delay_expired, token)
        else:
            self.complete(t)

    def rebalance_timeout(self, t: int, token: int) -> None:
        if token != self.token or self.state != "PreparingRebalance":
            return
        missing = [m for m in self.members.values() if not m.joined]
        if missing and self.world.w.v >= (2, 7):
            verb = "removed" if self.world.w.v >= (2, 8) else "remove"
            shown = ", ".join(m.member_id for m in missing)
            # the Scala coordinator prints a Scala Set, the new (Java) coordinator a java.util.Set
            shown = f"[{shown}]" if self.world.w.new_coordinator else f"Set({shown})"
            self.log(t, f"Group {self.spec.group_id} {verb} dynamic members who haven't joined: {shown}")
        for member in missing:
            self.remove(member.member_id)
        self.complete(t)

    def complete(self, t: int) -> None:
        """onCompleteJoin: a new generation, then either Empty or CompletingRebalance with join responses."""
        assert self.reb is not None
        self.generation += 1
        self.token += 1
        spec, w, rng = self.spec, self.world.w, self.world.rng
        row = {
            "group_id": spec.group_id, "generation_after": self.generation, "cause": self.reb.tag.cause,
            "cause_detail": self.reb.tag.detail, "started_at": self.reb.started, "trigger_member_id": self.reb.trigger,
            "scenario": self.reb.tag.scenario, "outcome": "stabilized" if self.members else "emptied",
        }
        self.world.truth.append(row)
        self.reb = None
        if not self.members:
            self.state, self.leader = "Empty", None
            self.log(t, w.now_empty(spec.group_id, self.generation, spec.offsets_partition))
            return
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        self.state = "CompletingRebalance"
        self.log(t, w.stabilized(spec.group_id, self.generation, spec.offsets_partition, len(self.members)))
        ordered = sorted(self.members)
        per, extra = divmod(spec.partitions, len(ordered))
        self.assignment, first = {}, 0
        for i, mid in enumerate(ordered):
            count = per + (1 if i < extra else 0)
            self.assignment[mid] = list(range(first, first + count))
            first += count
        leader_at = t
        for member in self.members.values():
            member.joined, member.last_seen = False, t
            member.token += 1
            if member.proc.silent:
                self.world.at(t + spec.session_ms, self.expire, member.member_id, member.token)
            delay = rng.randint(1, 4)
            if member.member_id == self.leader:
                leader_at = t + delay
            self.world.at(t + delay, self.world.consumers.on_join_response, member.proc, self.generation,
                          member.member_id == self.leader, dict(self.assignment))
        self.sync_due = leader_at + rng.randint(4, 30)
        self.world.at(self.sync_due, self.leader_synced, self.generation)

    def leader_synced(self, t: int, generation: int) -> None:
        if generation != self.generation or self.state != "CompletingRebalance" or self.leader is None:
            return
        spec = self.spec
        self.log(t, self.world.w.assignment_received(self.leader, spec.group_id, generation, len(self.members)))
        self.state = "Stable"
        for member in self.members.values():
            self.world.at(t + self.world.rng.randint(1, 3), self.world.consumers.on_sync_response, member.proc,
                          generation, list(self.assignment.get(member.member_id, [])))
