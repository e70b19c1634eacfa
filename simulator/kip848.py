"""KIP-848 consumer groups on a 4.x broker: the new coordinator's group epochs and the AsyncKafkaConsumer's
reconciliation, worded as the real 4.1.2 broker and clients log them (tests/data/kafka-lab/4.1.2, group lab-kip848).

Each group epoch bump is one rebalance of the truth (generation_after = group epoch, protocol "consumer"): a member's
first heartbeat (join), its leave, its fence once the session expired, or a change of the subscribed topic's metadata.
The broker holds a consumer group's session (spec.session_ms, the group config consumer.session.timeout.ms) and
heartbeat interval (HEARTBEAT_MS); the clients leave session.timeout.ms and heartbeat.interval.ms unset (the consumer
protocol does not use them), so their ConsumerConfig record prints the defaults. The target assignment is the uniform
assignor's: balanced and sticky. A member gives partitions up first, at its old member epoch; members that gain them
reconcile once they are free.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from simulator.javautil import base64_id
from simulator.model import (
    HEARTBEAT_MS,
    REBALANCE_TIMEOUT_MS,
    CoordinatorBase,
    GroupSpec,
    Instance,
    Proc,
    SimulationError,
    Tag,
    World,
)
from simulator.render import HB, ClientLine


class ClassicSide(Protocol):
    """What the consumer-protocol side needs of the classic consumers: the cluster id and the application log."""

    cluster_id: str

    def app(self, proc: Proc, t: int, message: str, level: str = "INFO") -> None: ...

CLIENT_SESSION_DEFAULT_MS = 45_000


def metadata_hash(topic: str, partitions: int) -> int:
    """A stable signed 64-bit stand-in for the coordinator's hash of the subscribed topics' metadata."""
    digest = hashlib.blake2b(f"{topic}:{partitions}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@dataclass
class CgMember:
    """The new coordinator's view of one consumer-protocol member."""

    member_id: str
    proc: Proc
    epoch: int = 0
    owned: list[int] = field(default_factory=list)
    target: list[int] = field(default_factory=list)
    token: int = 0
    last_seen: int = 0


class ConsumerGroupCoord(CoordinatorBase):
    """A consumer group (group.protocol=consumer) on the new group coordinator of the leader of its offsets
    partition. `state` is Empty, Reconciling or Stable; `pending` and `leader` exist for the incident planner."""

    def __init__(self, world: World, spec: GroupSpec) -> None:
        self.world = world
        self.spec = spec
        self.state = "Empty"
        self.epoch = 0
        self.members: dict[str, CgMember] = {}
        self.pending: dict[str, Proc] = {}
        self.leader: str | None = None
        self.partitions = spec.partitions

    # ---- membership -------------------------------------------------------------------------------------------

    def join(self, t: int, proc: Proc) -> None:
        """A heartbeat with member epoch 0: the member (re)joins with its client-generated id."""
        mid = proc.member_id
        if mid in self.members:
            raise SimulationError(f"member {mid} joined {self.spec.group_id} twice")
        self.log(t, self.world.w.cg_member_joins(self.spec.group_id, mid))
        self.members[mid] = CgMember(mid, proc, last_seen=t)
        self.bump(t, proc.join_tag or Tag("membership_change", "member_join", "unplanned"), mid, joined=proc)

    def leave(self, t: int, proc: Proc, tag: Tag) -> None:
        """A heartbeat with member epoch -1."""
        if self.members.pop(proc.member_id, None) is None:
            raise SimulationError(f"leave from unknown member {proc.member_id}")
        self.log(t, self.world.w.cg_member_left(self.spec.group_id, proc.member_id))
        self.bump(t, tag, proc.member_id)

    def expire(self, t: int, member_id: str, token: int) -> None:
        """The session timer of a member fired: it is fenced."""
        member = self.members.get(member_id)
        if member is None or member.token != token:
            return
        del self.members[member_id]
        self.log(t, self.world.w.cg_member_fenced(self.spec.group_id, member_id))
        tag = member.proc.silent_tag or Tag("session_timeout", "heartbeat_expiration", "unplanned")
        self.bump(t, tag, member_id)

    def metadata_changed(self, t: int, tag: Tag) -> None:
        """The coordinator saw the subscribed topic's partition count change."""
        self.partitions = self.spec.partitions
        self.bump(t, tag, None)

    def heartbeat_resumed(self, proc: Proc, t: int) -> bool:
        """As for classic groups, and the member's heartbeats to this coordinator start again."""
        if not super().heartbeat_resumed(proc, t):
            return False
        self.world.at(t + 1, self.heartbeat, proc.member_id)
        return True

    # ---- epochs and assignment --------------------------------------------------------------------------------

    def bump(self, t: int, tag: Tag, trigger: str | None, joined: Proc | None = None) -> None:
        """A new group epoch (one rebalance); then a new target assignment and the members' reconciliation."""
        spec, w, rng = self.spec, self.world.w, self.world.rng
        self.epoch += 1
        digest = metadata_hash(spec.topic, self.partitions) if self.members else 0
        self.log(t, w.cg_epoch_bumped(spec.group_id, self.epoch, digest))
        self.world.truth.append({
            "group_id": spec.group_id, "generation_after": self.epoch, "cause": tag.cause, "cause_detail": tag.detail,
            "started_at": t, "trigger_member_id": trigger, "scenario": tag.scenario, "outcome": "epoch",
            "protocol": "consumer", "group_epoch": self.epoch,
        })
        if not self.members:
            self.state = "Empty"
            return
        self.state = "Reconciling"
        self._assign()
        # computed at once, or on the next heartbeat when the bump came from a timer
        t_target = t + (rng.randint(0, 2) if rng.random() < 0.7 else rng.randint(100, HEARTBEAT_MS - 100))
        self.log(t_target, w.cg_target_computed(spec.group_id, self.epoch, rng.choice((0, 0, 0, 1, 2))))
        for member in sorted(self.members.values(), key=lambda m: m.member_id):
            at = t_target + rng.randint(5, 60) if member.proc is joined else member.proc.next_heartbeat(t_target)
            self.world.at(at + rng.randint(1, 3), self.heartbeat, member.member_id)

    def _assign(self) -> None:
        """Uniform assignor: every member gets n // m or one more partitions and keeps what it owns up to that."""
        ids = sorted(self.members)
        count = self.partitions
        base, extra = divmod(count, len(ids))
        kept = {mid: [p for p in sorted(self.members[mid].owned) if p < count] for mid in ids}
        # members that already own more keep the extra partitions
        ranked = sorted(ids, key=lambda mid: (-len(kept[mid]), mid))
        quota = {mid: base + (1 if i < extra else 0) for i, mid in enumerate(ranked)}
        taken: set[int] = set()
        for mid in ids:
            kept[mid] = kept[mid][:quota[mid]]
            taken.update(kept[mid])
        free = [p for p in range(count) if p not in taken]
        for mid in ids:
            need = quota[mid] - len(kept[mid])
            kept[mid], free = sorted(kept[mid] + free[:need]), free[need:]
            self.members[mid].target = kept[mid]

    def heartbeat(self, t: int, member_id: str) -> None:
        """A member's heartbeat after a bump: the response carries its assignment, which it reconciles."""
        member = self.members.get(member_id)
        if member is None:
            return
        proc = member.proc
        if proc.state == "dead" or proc.silent or proc.blocked:
            return
        if proc.kstate not in ("JOINING", "STABLE") or t <= proc.busy_until:
            # still logging its previous reconciliation
            self.world.at(max(t, proc.busy_until) + self.world.rng.randint(1, 5), self.heartbeat, member_id)
            return
        owned, target = set(member.owned), set(member.target)
        others = {p for m in self.members.values() if m is not member for p in m.owned}
        revoke = sorted(owned - target)
        adds = sorted(target - owned - others)
        if revoke:
            # the member keeps its old epoch until it has acknowledged the revocation
            done = self.world.consumers.kip848.reconcile(t, proc, member.epoch, (owned & target) | set(adds),
                                                         sorted(owned), revoke, adds)
            member.owned = sorted((owned - set(revoke)) | set(adds))
            for other in self.members.values():
                if other is not member and set(other.target) - set(other.owned):
                    self.world.at(other.proc.next_heartbeat(done) + 1, self.heartbeat, other.member_id)
            self.world.at(proc.next_heartbeat(done) + 1, self.heartbeat, member_id)
        elif adds or proc.kstate == "JOINING":
            member.epoch = self.epoch
            done = self.world.consumers.kip848.reconcile(t, proc, member.epoch, owned | set(adds), sorted(owned), [],
                                                         adds)
            member.owned = sorted(owned | set(adds))
        else:
            member.epoch = proc.generation = self.epoch
            done = t
        if set(member.owned) == target and member.epoch == self.epoch:
            callbacks, proc.on_stable = proc.on_stable, []
            for callback in callbacks:
                callback(done)
        if all(set(m.owned) == set(m.target) and m.epoch == self.epoch for m in self.members.values()):
            self.state = "Stable"


class Kip848Consumers:
    """What an AsyncKafkaConsumer (group.protocol=consumer) does and logs; Consumers delegates consumer groups here."""

    def __init__(self, world: World, classic: ClassicSide) -> None:
        self.c = classic
        self.world = world
        self.w = self.world.w

    def coord(self, proc: Proc) -> ConsumerGroupCoord:
        coord = proc.group.coord
        assert isinstance(coord, ConsumerGroupCoord)
        return coord

    def log(self, proc: Proc, t: int, lines: list[ClientLine]) -> None:
        self.world.client_lines(proc, t, lines)

    def latency(self) -> int:
        return self.world.rng.randint(1, 3)

    def start(self, inst: Instance, t: int, tag: Tag, proc: Proc) -> None:
        """After the application's start line: config record, subscribe, join."""
        rng, spec = self.world.rng, inst.group
        proc.member_id = base64_id(rng)
        t_kafka = proc.app_from + rng.randint(300, 1500)
        config = self.w.consumer_config(
            group_id=spec.group_id, client_id=inst.client_id, instance_id=None, session_ms=CLIENT_SESSION_DEFAULT_MS,
            heartbeat_ms=HEARTBEAT_MS, max_poll_ms=REBALANCE_TIMEOUT_MS, brokers=self.world.brokers,
            group_protocol="consumer")
        self.log(proc, t_kafka - rng.randint(5, 60), [config])
        self.log(proc, t_kafka, [self.w.async_subscribed(spec.topic)])
        t_join = t_kafka + rng.randint(300, 1000)
        self.transition(proc, t_join, 0, "JOINING")
        t_cluster = t_join + rng.randint(20, 400)
        self.log(proc, t_cluster, [self.w.cluster_id(self.c.cluster_id, HB)])
        t_found = t_cluster + rng.randint(5, 90)
        self.log(proc, t_found, [self.w.cg_discovered(spec.group_id, self.coord(proc).broker)])
        self.send_join(t_found + rng.randint(1, 60), proc)

    def send_join(self, t: int, proc: Proc) -> None:
        proc.state, proc.generation, proc.local_epoch = "joining", 0, 0
        proc.hb_anchor = t
        if proc.unassigned_since is None:
            proc.unassigned_since = t
        self.world.at(t + self.latency(), self.coord(proc).join, proc)

    def transition(self, proc: Proc, t: int, epoch: int, new: str) -> None:
        self.log(proc, t, [self.w.cg_transition(proc.member_id, epoch, proc.kstate, new)])
        proc.kstate = new

    def reconcile(self, t: int, proc: Proc, epoch: int, assigned: set[int], owned: list[int], revoke: list[int],
                  adds: list[int]) -> int:
        """One reconciliation of the membership manager; returns when the member is STABLE again."""
        rng, topic = self.world.rng, proc.group.topic
        self.transition(proc, t, epoch, "RECONCILING")
        t_rec = t + rng.randint(0, 200)
        self.log(proc, t_rec, [self.w.cg_reconciling(proc.local_epoch, proc.member_id, topic, sorted(assigned),
                                                     owned)])
        proc.local_epoch += 1
        t_cb = t_rec + rng.randint(1, 20)
        if revoke:
            self.log(proc, t_cb, [self.w.cg_revoking(topic, revoke)])
            t_cb += rng.randint(5, 200)
            self.log(proc, t_cb, [self.w.revoke(topic, revoke)])
        t_cb += rng.randint(2, 200)
        self.log(proc, t_cb, [self.w.cg_assigned(topic, adds)])
        t_ack = t_cb + rng.randint(0, 3)
        self.transition(proc, t_ack, epoch, "ACKNOWLEDGING")
        t_stable = t_ack + rng.randint(0, 20)
        self.transition(proc, t_stable, epoch, "STABLE")
        proc.busy_until = t_stable + 45
        proc.state, proc.generation, proc.join_tag = "stable", epoch, None
        if proc.unassigned_since is not None:
            proc.quiet.append((proc.unassigned_since, t_stable))
            proc.unassigned_since = None
        t_offsets = t_stable + rng.randint(3, 40)
        base = (t - self.world.start) // 40
        for p in adds:
            leader = (p + len(topic)) % self.world.brokers + 1
            offset = base * (p + 3) + 1000 * p + rng.randint(0, 999)
            self.log(proc, t_offsets, [self.w.setting_offset(topic, p, offset, 5 + p % 4, leader)])
        proc.assigned = sorted((set(proc.assigned) - set(revoke)) | set(adds))
        return t_stable

    # ---- incidents ---------------------------------------------------------------------------------------------

    def stop(self, t: int, proc: Proc, tag: Tag) -> None:
        """close(): revoke, leave with epoch -1, wait for the response, close the metrics."""
        rng, coord = self.world.rng, self.coord(proc)
        self.c.app(proc, t, "Received SIGTERM, closing consumer")
        # close() waits for a reconciliation in progress to be logged to its end
        t_leave = max(t, proc.busy_until) + rng.randint(2, 40)
        if proc.assigned:
            self.log(proc, t_leave, [self.w.revoke(proc.group.topic, proc.assigned)])
        self.leaving(proc, t_leave + rng.randint(0, 2), "UNSUBSCRIBED")
        self.world.at(t_leave + 2 + self.latency(), coord.leave, proc, tag)
        t_done = t_leave + rng.randint(8, 30)
        self.log(proc, t_done, [self.w.cg_completed_leaving()])
        t_closed = t_done + rng.randint(10, 500)
        self.log(proc, t_closed, self.w.closed(proc.inst.client_id))
        self.c.app(proc, t_closed + rng.randint(1, 30), f"{proc.group.service} stopped")
        proc.state, proc.assigned, proc.end = "dead", [], t_closed + rng.randint(40, 400)

    def leaving(self, proc: Proc, t: int, final_state: str) -> None:
        lines = self.w.cg_leaving(proc.member_id, proc.generation, proc.kstate, final_state)
        self.log(proc, t, lines)
        proc.kstate = final_state

    def fenced_during_pause(self, t: int, proc: Proc, tag: Tag) -> None:
        """After a pause during which the member was fenced, the heartbeat response says so (FENCED_MEMBER_EPOCH):
        it gives its partitions up as lost and joins again with the same member id."""
        rng = self.world.rng
        t_fenced = t + rng.randint(1, 30)
        self.transition(proc, t_fenced, proc.generation, "FENCED")
        self.rejoin(t_fenced + rng.randint(1, 20), proc, "JOINING", Tag(tag.cause, "rejoin", tag.scenario))

    def rejoin(self, t: int, proc: Proc, new: str, tag: Tag) -> None:
        if proc.assigned:
            self.log(proc, t, [self.w.cg_lost(proc.group.topic, proc.assigned)])
        proc.assigned = []
        self.transition(proc, t + self.world.rng.randint(0, 2), 0, new)
        proc.join_tag = tag
        self.send_join(t + self.world.rng.randint(3, 40), proc)

    def block_poll(self, t: int, proc: Proc, resume_after_leave_ms: int, tag: Tag) -> None:
        """The application thread is stuck longer than max.poll.interval.ms; the background thread leaves."""
        rng, spec = self.world.rng, proc.group
        proc.blocked = True
        p = proc.assigned[0] if proc.assigned else 0
        self.c.app(proc, t, f"Processing batch of 500 records from {spec.topic}-{p}")
        t_leave = t + REBALANCE_TIMEOUT_MS + rng.randint(0, 999)
        proc.quiet.append((t + 1, t_leave + resume_after_leave_ms))
        self.world.at(t_leave, self._poll_timeout, proc, resume_after_leave_ms, tag, t)

    def _poll_timeout(self, t: int, proc: Proc, resume_after_ms: int, tag: Tag, blocked_at: int) -> None:
        self.log(proc, t, [self.w.cg_poll_timeout()])
        self.leaving(proc, t, "STALE")
        self.world.at(t + 1 + self.latency(), self.coord(proc).leave, proc, tag)
        self.world.at(t + resume_after_ms, self._poll_returns, proc, Tag(tag.cause, "rejoin", tag.scenario),
                      blocked_at)

    def _poll_returns(self, t: int, proc: Proc, tag: Tag, blocked_at: int) -> None:
        proc.blocked = False
        p = proc.assigned[0] if proc.assigned else 0
        took = t - blocked_at
        self.c.app(proc, t, f"Batch of 500 records from {proc.group.topic}-{p} took {took} ms", "WARN")
        t_poll = t + self.world.rng.randint(1, 5)
        self.log(proc, t_poll, [self.w.cg_poll_resumed(took - REBALANCE_TIMEOUT_MS, proc.member_id)])
        self.rejoin(t_poll + self.world.rng.randint(1, 3), proc, "JOINING", tag)
