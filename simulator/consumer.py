"""Consumer processes: what a Java consumer (classic protocol, eager range assignor) does and logs; KIP-848 consumers
(group.protocol=consumer) are delegated to simulator/kip848.py.

Client and broker share one clock; requests reach the coordinator 1-3 ms after the client logs them.
"""

from __future__ import annotations

from simulator.frameworks import (
    rdkafka_connect_failed,
    rdkafka_coordinator_connect_failed,
    rdkafka_max_poll,
    rdkafka_session_timeout,
    writes_java_lines,
)
from simulator.javautil import base64_id
from simulator.kip848 import Kip848Consumers
from simulator.model import HEARTBEAT_MS, REBALANCE_TIMEOUT_MS, GroupCoord, Instance, Proc, Tag, World
from simulator.render import CLOSING, COMMIT_FAILED_TEXT, HB, POLL, ClientLine

SESSION_EXPIRED_CAUSE = "session timed out without receiving a heartbeat response"


class Consumers:
    """Client behaviour; the World calls back into it for rebalance notices, join and sync responses."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.w = world.w
        self.cluster_id = base64_id(world.rng)
        world.consumers = self
        self.kip848 = Kip848Consumers(world, self)

    def coord(self, proc: Proc) -> GroupCoord:
        assert proc.group.coord is not None
        return proc.group.coord

    def log(self, proc: Proc, t: int, lines: list[ClientLine]) -> None:
        self.world.client_lines(proc, t, lines)

    def app(self, proc: Proc, t: int, message: str, level: str = "INFO") -> None:
        self.world.client_lines(proc, t, [(level, proc.group.app_logger, POLL, message)])

    def latency(self) -> int:
        return self.world.rng.randint(1, 3)

    def healthy(self, proc: Proc) -> bool:
        return proc.state != "dead" and not proc.silent and not proc.blocked

    # ---- life cycle ----------------------------------------------------------------------------------------

    def start(self, inst: Instance, t: int, tag: Tag) -> Proc:
        """A fresh JVM in the instance folder; it joins as a new member."""
        rng, spec = self.world.rng, inst.group
        ip = f"10.{(20 + self.world.groups.index(spec)) % 250}.{inst.ordinal % 250}.{(10 + len(inst.procs)) % 250}"
        proc = Proc(inst=inst, run=len(inst.procs), start=t, ip=ip, join_tag=tag)
        inst.procs.append(proc)
        t_app = t + rng.randint(700, 1800)
        proc.app_from = t_app
        self.app(proc, t_app, f"Starting {spec.service} 1.{rng.randint(8, 30)}.{rng.randint(0, 9)} on {inst.name} "
                              f"with PID 1")
        if spec.protocol == "consumer":
            self.kip848.start(inst, t, tag, proc)
            return proc
        before_kafka = rng.randint(5, 60)
        t_kafka = t_app + rng.randint(300, 1500)
        # new KafkaConsumer(props): ConsumerConfig logs every setting, then AppInfoParser the version
        config = self.w.consumer_config(
            group_id=spec.group_id, client_id=inst.client_id, instance_id=None, session_ms=spec.session_ms,
            heartbeat_ms=HEARTBEAT_MS, max_poll_ms=REBALANCE_TIMEOUT_MS, brokers=self.world.brokers)
        self.log(proc, t_kafka - before_kafka, [config])
        self.log(proc, t_kafka, self.w.startup(spec.topic, self.cluster_id, t_kafka))
        t_found = t_kafka + rng.randint(40, 250)
        self.log(proc, t_found, [self.w.discovered(self.coord(proc).broker)])
        self.send_join(t_found + rng.randint(1, 5), proc)
        return proc

    def send_join(self, t: int, proc: Proc) -> None:
        proc.state = "joining"
        if proc.unassigned_since is None:
            proc.unassigned_since = t
        self.log(proc, t, [self.w.rejoining()])
        self.world.at(t + self.latency(), self.coord(proc).join, proc)

    def on_member_id_required(self, t: int, proc: Proc, member_id: str) -> None:
        proc.member_id = member_id
        proc.client_reason = self.w.new_member_client_reason(member_id)
        self.log(proc, t, self.w.member_id_required(member_id))
        self.world.at(t + self.latency(), self.coord(proc).join, proc)

    def on_join_response(self, t: int, proc: Proc, generation: int, leader: bool,
                         assignment: dict[str, list[int]]) -> None:
        if proc.state == "dead":
            return
        # heartbeat threads of one generation start together; network jitter spreads their phase
        proc.generation, proc.state, proc.hb_anchor = generation, "syncing", t + self.world.rng.randint(0, 400)
        lines = self.w.joined(generation, proc.member_id)
        if leader:
            hashes = [self.world.rng.randrange(0x10000000, 0x7FFFFFFF) for _ in assignment]
            lines.append(self.w.finished_assignment(generation, proc.group.topic, assignment, hashes))
            proc.snapshot_version = proc.metadata_version(t)
        self.log(proc, t, lines)

    def on_sync_response(self, t: int, proc: Proc, generation: int, partitions: list[int]) -> None:
        if proc.state == "dead" or proc.generation != generation:
            return
        spec, rng = proc.group, self.world.rng
        proc.assigned, proc.state, proc.join_tag, proc.client_reason = partitions, "stable", None, ""
        if proc.unassigned_since is not None:
            proc.quiet.append((proc.unassigned_since, t))
            proc.unassigned_since = None
        self.log(proc, t, self.w.synced(generation, proc.member_id, spec.topic, partitions))
        t_offsets = t + rng.randint(3, 40)
        base = (t - self.world.start) // 40
        for p in sorted(partitions):
            leader = (p + len(spec.topic)) % self.world.brokers + 1
            offset = base * (p + 3) + 1000 * p + rng.randint(0, 999)
            self.log(proc, t_offsets, [self.w.setting_offset(spec.topic, p, offset, 5 + p % 4, leader)])
        callbacks, proc.on_stable = proc.on_stable, []
        for callback in callbacks:
            callback(t)

    # ---- rebalances started elsewhere ----------------------------------------------------------------------

    def notice_rebalance(self, t: int, proc: Proc) -> None:
        """The coordinator entered PreparingRebalance; the member learns it from its next heartbeat."""
        if proc.state in ("stable", "syncing") and self.healthy(proc):
            self.world.at(proc.next_heartbeat(t) + self.latency(), self._heartbeat_rebalancing, proc)

    def _heartbeat_rebalancing(self, t: int, proc: Proc) -> None:
        coord = self.coord(proc)
        member = coord.members.get(proc.member_id)
        if coord.state != "PreparingRebalance" or member is None or member.joined or not self.healthy(proc):
            return
        if proc.state == "syncing":
            # still waiting for its SyncGroup response of the previous generation
            self.world.at(proc.next_heartbeat(t) + self.latency(), self._heartbeat_rebalancing, proc)
            return
        self.log(proc, t, self.w.hb_rebalancing())
        self.world.at(t + self.world.rng.randint(15, 900), self._rejoin_prepare, proc)

    def _rejoin_prepare(self, t: int, proc: Proc) -> None:
        """onJoinPrepare of an eager member: revoke everything, then JoinGroup."""
        if not self.healthy(proc) or proc.state != "stable":
            return
        self.log(proc, t, [self.w.revoke(proc.group.topic, proc.assigned)])
        proc.assigned = []
        self.send_join(t + self.world.rng.randint(0, 2), proc)

    # ---- a member removed by the coordinator comes back ----------------------------------------------------

    def rejoin_as_new(self, t: int, proc: Proc, tag: Tag) -> None:
        """After its generation and member id were reset: give up partitions as lost and join again."""
        proc.member_id, proc.generation, proc.join_tag = "", -1, tag
        self.log(proc, t, self.w.lost(proc.group.topic, proc.assigned))
        proc.assigned = []
        self.send_join(t + self.world.rng.randint(0, 2), proc)

    def evicted_on_heartbeat(self, t: int, proc: Proc, tag: Tag) -> None:
        """The heartbeat thread learns (UNKNOWN_MEMBER_ID) that the coordinator removed this member."""
        self.log(proc, t, self.w.hb_unknown_member(proc.generation, proc.member_id))
        proc.state = "unjoined"
        self.world.at(t + self.world.rng.randint(5, 120), self.rejoin_as_new, proc, tag)

    # ---- incidents -----------------------------------------------------------------------------------------

    def stop(self, t: int, proc: Proc, tag: Tag) -> None:
        """A graceful shutdown: onLeavePrepare, LeaveGroup 'the consumer is being closed', metrics closed."""
        if proc.group.protocol == "consumer":
            self.kip848.stop(t, proc, tag)
            return
        rng, coord = self.world.rng, self.coord(proc)
        self.app(proc, t, "Received SIGTERM, closing consumer")
        t_leave = t + rng.randint(2, 40)
        lines: list[ClientLine] = []
        if proc.assigned:
            lines.append(self.w.revoke(proc.group.topic, proc.assigned))
        lines += self.w.leave(proc.member_id, coord.broker, CLOSING, POLL)
        self.log(proc, t_leave, lines)
        self.world.at(t_leave + self.latency(), coord.leave, proc, CLOSING, tag)
        t_closed = t_leave + rng.randint(10, 80)
        self.log(proc, t_closed, self.w.closed(proc.inst.client_id))
        self.app(proc, t_closed + rng.randint(1, 30), f"{proc.group.service} stopped")
        proc.state, proc.assigned, proc.end = "dead", [], t_closed + rng.randint(40, 400)

    def crash(self, t: int, proc: Proc, tag: Tag) -> None:
        """SIGKILL (OOM killer, node loss): no last words; the coordinator expires the member after the session."""
        proc.state, proc.end = "dead", t
        proc.silent, proc.silent_tag = "crash", tag
        self.coord(proc).schedule_expiry(proc, t)

    def gc_pause(self, t: int, proc: Proc, duration_ms: int, tag: Tag) -> None:
        """A stop-the-world pause from t; the GC log prints it when it ends."""
        end = t + duration_ms
        proc.quiet.append((t - 1, end + 1))
        proc.gc_planted.append((end, duration_ms - self.world.rng.random(), "full"))
        proc.silent, proc.silent_tag = "gc", tag
        self.coord(proc).schedule_expiry(proc, t)
        self.world.at(end, self._gc_resumed, proc, tag)

    def _gc_resumed(self, t: int, proc: Proc, tag: Tag) -> None:
        proc.silent = None
        coord = self.coord(proc)
        if coord.heartbeat_resumed(proc, t):
            proc.hb_anchor = t
            return
        if proc.group.protocol == "consumer":
            self.kip848.fenced_during_pause(t, proc, tag)
            return
        rng = self.world.rng
        t1 = t + rng.randint(0, 3)
        self.log(proc, t1, self.w.coordinator_unavailable(coord.broker, SESSION_EXPIRED_CAUSE, False))
        t2 = t1 + rng.randint(6, 40)
        self.log(proc, t2, [self.w.discovered(coord.broker, HB)])
        self.evicted_on_heartbeat(t2 + rng.randint(3, 30), proc, Tag(tag.cause, "rejoin", tag.scenario))

    def block_poll(self, t: int, proc: Proc, resume_after_leave_ms: int, tag: Tag) -> None:
        """The poll thread is stuck in record processing longer than max.poll.interval.ms."""
        if proc.group.protocol == "consumer":
            self.kip848.block_poll(t, proc, resume_after_leave_ms, tag)
            return
        rng, spec = self.world.rng, proc.group
        proc.blocked = True
        p = proc.assigned[0] if proc.assigned else 0
        self.app(proc, t, f"Processing batch of 500 records from {spec.topic}-{p}")
        t_leave = t + REBALANCE_TIMEOUT_MS + rng.randint(0, 2999)
        proc.quiet.append((t + 1, t_leave + resume_after_leave_ms))
        self.world.at(t_leave, self._poll_timeout, proc, resume_after_leave_ms, tag, t)

    def _poll_timeout(self, t: int, proc: Proc, resume_after_ms: int, tag: Tag, blocked_at: int) -> None:
        coord = self.coord(proc)
        self.log(proc, t, self.w.poll_timeout(proc.member_id, coord.broker))
        if not writes_java_lines(proc.group.kind):
            self.log(proc, t, [rdkafka_max_poll(t - blocked_at - REBALANCE_TIMEOUT_MS, REBALANCE_TIMEOUT_MS)])
        self.world.at(t + self.latency(), coord.leave, proc, self.w.poll_timeout_leave_reason(), tag)
        self.world.at(t + resume_after_ms, self._poll_returns, proc, Tag(tag.cause, "rejoin", tag.scenario), blocked_at)

    def _poll_returns(self, t: int, proc: Proc, tag: Tag, blocked_at: int) -> None:
        # the leave already reset generation and member id; the manual commit of the slow batch fails first
        proc.blocked = False
        p = proc.assigned[0] if proc.assigned else 0
        self.app(proc, t, f"Batch of 500 records from {proc.group.topic}-{p} took {t - blocked_at} ms", "WARN")
        if writes_java_lines(proc.group.kind):
            self.log(proc, t + 1, [self.w.failing_commit()])
            self.app(proc, t + 2, "Offset commit failed, the batch will be redelivered: "
                                  f"org.apache.kafka.clients.consumer.CommitFailedException: {COMMIT_FAILED_TEXT}",
                     "WARN")
        proc.member_id = ""
        self.rejoin_as_new(t + self.world.rng.randint(3, 20), proc, tag)

    def leader_metadata_change(self, t: int, proc: Proc, old_count: int, new_count: int, tag: Tag) -> None:
        """The leader's metadata refresh shows more partitions than its last assignment used: it rejoins."""
        spec = proc.group
        lines = self.w.metadata_changed(spec.topic, proc.snapshot_version, old_count,
                                        max(proc.metadata_version(t), proc.snapshot_version + 1), new_count)
        self.log(proc, t, lines)
        proc.join_tag, proc.client_reason = tag, "cached metadata has changed"
        self._rejoin_prepare(t + self.world.rng.randint(1, 20), proc)

    def unreachable_coordinator(self, t: int, proc: Proc, until: int, tag: Tag) -> None:
        """Connections to the (new) coordinator fail until `until`; the heartbeat thread keeps rediscovering it."""
        rng, broker = self.world.rng, self.coord(proc).broker
        proc.silent, proc.silent_tag = "unreachable", tag
        ip = f"10.30.0.{broker}"
        java = writes_java_lines(proc.group.kind)
        if not java and until - t > proc.group.session_ms:
            after = proc.group.session_ms + rng.randint(0, 999)
            # librdkafka's own session timer fires only while the member waits in its steady join state: one that
            # reaches the coordinator first hears UNKNOWN_MEMBER_ID and rejoins (debug only), printing no SESSTMOUT
            if t + after < until:
                self.log(proc, t + after, [rdkafka_session_timeout(after, broker, "Local: Broker transport failure")])
        step = t
        while step < until:
            step += rng.randint(900, 1100)
            if step >= until:
                break
            if not java and step - t < 1_200:  # librdkafka says it once; the same error again is suppressed
                self.log(proc, step, [rdkafka_connect_failed(broker, ip),
                                      rdkafka_coordinator_connect_failed(broker, ip)])
            self.log(proc, step, [self.w.connection_failed(broker, ip)])
            self.log(proc, step + 1, self.w.coordinator_unavailable(broker, "coordinator unavailable", True))
            self.log(proc, step + rng.randint(50, 110), [self.w.discovered(broker, HB)])
        self.world.at(until, self._coordinator_reached, proc, Tag(tag.cause, "rejoin", tag.scenario))

    def _coordinator_reached(self, t: int, proc: Proc, tag: Tag) -> None:
        proc.silent = None
        if self.coord(proc).heartbeat_resumed(proc, t):
            proc.hb_anchor = t
            return
        self.evicted_on_heartbeat(t + self.world.rng.randint(1, 5), proc, tag)
