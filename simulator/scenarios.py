"""Incidents: what happens to which group and when; each one runs while its group is otherwise quiet."""

from __future__ import annotations

from collections.abc import Callable

from simulator import frameworks
from simulator.consumer import Consumers
from simulator.model import GroupSpec, Instance, Proc, Tag, World
from simulator.render import GROUP_METADATA, GROUP_METADATA_MANAGER

MINUTE = 60_000
# rough duration of each incident (ms), used to spread them over the simulated span
DURATION = {
    "scale_up": 1 * MINUTE, "scale_down": 1 * MINUTE, "rolling_deploy": 5 * MINUTE, "crash": 2 * MINUTE,
    "gc_pause": 2 * MINUTE, "gc_short": 1 * MINUTE, "poll_timeout": 8 * MINUTE, "metadata_change": 5 * MINUTE,
    "coordinator_change": 2 * MINUTE, "crash_loop": 8 * MINUTE, "service_restart": 3 * MINUTE,
}
CYCLE = ["scale_up", "scale_down", "rolling_deploy", "crash", "gc_pause", "gc_short", "gc_short", "poll_timeout",
         "metadata_change", "coordinator_change", "crash_loop", "service_restart"]
# incidents that need a short session timeout to play out in minutes
PREFER_SHORT_SESSION = ("gc_pause", "coordinator_change", "crash_loop")
# incidents a librdkafka consumer cannot have: its process is no JVM, and its heartbeats run on their own thread
NEEDS_JVM = ("gc_pause", "gc_short")

Done = Callable[[int], None]


class Incidents:
    """Plans incidents per group and runs them one after another."""

    def __init__(self, world: World, consumers: Consumers, cycles: int, max_gap_ms: int | None = 30 * MINUTE) -> None:
        self.world = world
        self.c = consumers
        self.rng = world.rng
        self.cycles = cycles
        # None spreads a group's incidents evenly over the whole span (a quiet estate with weeks of history).
        self.max_gap_ms = max_gap_ms
        self.kinds: dict[str, Callable[[int, GroupSpec, Done], None]] = {
            "scale_up": self.scale_up, "scale_down": self.scale_down, "rolling_deploy": self.rolling_deploy,
            "crash": self.crash, "gc_pause": self.gc_pause, "gc_short": self.gc_short,
            "poll_timeout": self.poll_timeout, "metadata_change": self.metadata_change,
            "coordinator_change": self.coordinator_change, "crash_loop": self.crash_loop,
            "service_restart": self.service_restart,
        }

    # ---- planning and running ------------------------------------------------------------------------------

    def plan(self) -> None:
        groups = self.world.groups
        short = [g for g in groups if g.session_ms <= 10_000] or groups
        load = {g.group_id: 0 for g in groups}
        for cycle in range(self.cycles):
            kinds = list(CYCLE)
            if self.world.brokers < 2 or self.world.w.new_coordinator:
                # 4.x: the new coordinator's partition load and unload (CoordinatorRuntime) is not simulated
                kinds.remove("coordinator_change")
            self.rng.shuffle(kinds)
            for i, kind in enumerate(kinds):
                pool = short if kind in PREFER_SHORT_SESSION else groups
                if kind in NEEDS_JVM:
                    pool = [g for g in pool if g.kind != "librdkafka"] or [g for g in groups if g.kind != "librdkafka"]
                    if not pool:
                        continue
                if kind == "scale_up":
                    pool = [g for g in pool if len(g.instances) < 6] or pool
                elif kind == "scale_down":
                    pool = [g for g in pool if len(g.instances) >= 3] or pool
                least = min(load[g.group_id] for g in pool)
                choices = [g for g in pool if load[g.group_id] == least]
                group = choices[(i + cycle) % len(choices)]
                group.queue.append(kind)
                load[group.group_id] += DURATION[kind]
        for group in groups:
            self.world.at(self.world.start + self.rng.randint(2_000, 40_000), self.initial_start, group)

    def initial_start(self, t: int, group: GroupSpec) -> None:
        tag = Tag("membership_change", "member_join", "initial_start")
        offset = 0
        for inst in group.instances:
            self.c.start(inst, t + offset, tag)
            offset += self.rng.randint(0, 2_500)
        self.wait_idle(t + 5_000, group, self.next_incident)

    def next_incident(self, t: int, group: GroupSpec) -> None:
        group.busy = False
        if not group.queue:
            return
        budget = self.world.end - 10 * MINUTE - t
        left = sum(DURATION[k] for k in group.queue)
        even = (budget - left) // (len(group.queue) + 1)
        gap = max(30_000, even if self.max_gap_ms is None else min(self.max_gap_ms, even))
        start = t + int(gap * self.rng.uniform(0.6, 1.2))
        if start + DURATION[group.queue[0]] > self.world.end - 5 * MINUTE:
            group.queue.clear()
            return
        self.world.at(start, self.try_start, group)

    def try_start(self, t: int, group: GroupSpec) -> None:
        if group.hold or not self.idle(group):
            self.world.at(t + 10_000, self.try_start, group)
            return
        if t + DURATION[group.queue[0]] > self.world.end - 5 * MINUTE:
            group.queue.clear()
            return
        group.busy = True
        kind = group.queue.pop(0)
        self.kinds[kind](t, group, lambda t2: self.wait_idle(t2, group, self.next_incident))

    def idle(self, group: GroupSpec) -> bool:
        coord = group.coord
        if coord is None or coord.state != "Stable" or coord.pending:
            return False
        procs = self.running(group)
        return all(p.state == "stable" and not p.silent and not p.blocked for p in procs) and len(procs) == len(
            coord.members)

    def wait_idle(self, t: int, group: GroupSpec, then: Callable[[int, GroupSpec], None]) -> None:
        if self.idle(group):
            self.world.at(t + self.rng.randint(1_000, 5_000), then, group)
        else:
            self.world.at(t + 2_000, self.wait_idle, group, then)

    def running(self, group: GroupSpec) -> list[Proc]:
        return [i.procs[-1] for i in group.instances if i.procs and i.procs[-1].state != "dead"]

    def pick(self, group: GroupSpec) -> Proc:
        procs = self.running(group)
        return procs[self.rng.randrange(len(procs))]

    def add_instance(self, group: GroupSpec) -> Instance:
        taken = {i.ordinal for i in group.instances if i.active}
        for inst in group.instances:
            if not inst.active and inst.ordinal not in taken:
                inst.active = True
                return inst
        ordinal = len(group.instances)
        # named as its framework names it (a plain consumer draws nothing from the random stream here)
        client, thread = frameworks.client_id(group.kind, group.group_id, group.group_id.removeprefix("connect-"),
                                              ordinal, self.rng)
        inst = Instance(name=f"{group.service}-{ordinal}", group=group, ordinal=ordinal, client_id=client,
                        thread=thread)
        group.instances.append(inst)
        return inst

    # ---- membership changes --------------------------------------------------------------------------------

    def scale_up(self, t: int, group: GroupSpec, done: Done) -> None:
        active = [i for i in group.instances if i.active]
        if len(active) >= 6:
            self.scale_down(t, group, done)
            return
        tag = Tag("membership_change", "member_join", "scale_up")
        for k in range(1 if len(active) >= 5 else self.rng.choice((1, 1, 2))):
            self.c.start(self.add_instance(group), t + k * self.rng.randint(100, 1_500), tag)
        done(t + 5_000)

    def scale_down(self, t: int, group: GroupSpec, done: Done) -> None:
        active = [i for i in group.instances if i.active]
        if len(active) < 3:
            self.scale_up(t, group, done)
            return
        inst = max(active, key=lambda i: i.ordinal)
        inst.active = False
        self.c.stop(t, inst.procs[-1], Tag("membership_change", "member_leave", "scale_down"))
        done(t + 2_000)

    def rolling_deploy(self, t: int, group: GroupSpec, done: Done) -> None:
        leave = Tag("membership_change", "member_leave", "rolling_deploy")
        join = Tag("membership_change", "member_join", "rolling_deploy")
        order = [i for i in group.instances if i.active]

        def restart(t0: int, k: int) -> None:
            if k == len(order):
                done(t0)
                return
            inst = order[k]
            self.c.stop(t0, inst.procs[-1], leave)
            proc = self.c.start(inst, t0 + self.rng.randint(2_500, 7_000), join)
            proc.on_stable.append(lambda t1: self.world.at(t1 + self.rng.randint(8_000, 20_000), restart, k + 1))

        restart(t, 0)

    def service_restart(self, t: int, group: GroupSpec, done: Done) -> None:
        leave = Tag("membership_change", "member_leave", "service_restart")
        join = Tag("membership_change", "member_join", "service_restart")
        active = [i for i in group.instances if i.active]
        for inst in active:
            self.c.stop(t + self.rng.randint(0, 800), inst.procs[-1], leave)
        back = t + self.rng.randint(30_000, 90_000)
        for inst in active:
            self.c.start(inst, back + self.rng.randint(0, 2_000), join)
        done(back + 10_000)

    # ---- failures --------------------------------------------------------------------------------------------

    def crash(self, t: int, group: GroupSpec, done: Done) -> None:
        proc = self.pick(group)
        self.c.crash(t, proc, Tag("session_timeout", "heartbeat_expiration", "crash"))
        # restarted after the session expired (for example on another node), so the expiry opens its own rebalance
        back = t + group.session_ms + self.rng.randint(15_000, 60_000)
        self.c.start(proc.inst, back, Tag("membership_change", "member_join", "crash_restart"))
        done(back + 5_000)

    def crash_loop(self, t: int, group: GroupSpec, done: Done) -> None:
        inst = self.pick(group).inst
        crash_tag = Tag("session_timeout", "heartbeat_expiration", "crash_loop")
        join_tag = Tag("membership_change", "member_join", "crash_loop")
        crashes = self.rng.randint(4, 6)

        def crash_later(t0: int, k: int) -> None:
            self.world.at(t0 + self.rng.randint(12_000, 35_000), crash_now, k)

        def crash_now(t0: int, k: int) -> None:
            proc = inst.procs[-1]
            if proc.state != "stable":
                self.world.at(t0 + 1_000, crash_now, k)
                return
            self.c.crash(t0, proc, crash_tag)
            backoff = min(10_000 * 2 ** k, 160_000) + self.rng.randint(0, 3_000)
            new = self.c.start(inst, t0 + backoff, join_tag)
            if k + 1 < crashes:
                new.on_stable.append(lambda t1: crash_later(t1, k + 1))
            else:
                new.on_stable.append(done)

        crash_now(t, 0)

    def gc_pause(self, t: int, group: GroupSpec, done: Done) -> None:
        proc = self.pick(group)
        t0 = self.mid_interval(t, proc)
        pause = group.session_ms + self.rng.randint(1_500, 10_000)
        self.c.gc_pause(t0, proc, pause, Tag("gc_pause", "heartbeat_expiration", "gc_pause"))
        done(t0 + pause + 5_000)

    def gc_short(self, t: int, group: GroupSpec, done: Done) -> None:
        proc = self.pick(group)
        longest = min(group.session_ms - 3_500, 15_000)
        pause = self.rng.randint(2_000, max(2_500, longest))
        self.c.gc_pause(self.mid_interval(t, proc), proc, pause, Tag("gc_pause", "heartbeat_expiration", "gc_short"))
        done(t + pause + 5_000)

    def mid_interval(self, t: int, proc: Proc) -> int:
        """A moment between two heartbeats, so the pause starts after the heartbeat the broker saw last."""
        return proc.next_heartbeat(t) + self.rng.randint(200, 2_700)

    def poll_timeout(self, t: int, group: GroupSpec, done: Done) -> None:
        proc = self.pick(group)
        self.c.block_poll(t, proc, self.rng.randint(15_000, 120_000), Tag("poll_timeout", "leave_on_poll_timeout",
                                                                          "poll_timeout"))
        done(t + 305_000)

    def metadata_change(self, t: int, group: GroupSpec, done: Done) -> None:
        coord = group.coord
        old = group.partitions
        group.partitions = old + self.rng.choice((2, 4, old) if old < 24 else (2, 4))
        tag = Tag("metadata_change", "partition_count_change", "partitions_added")
        if group.protocol == "consumer":
            # the coordinator notices the new partition count in its metadata image; no member says anything
            noticed = t + self.rng.randint(200, 5_000)
            self.world.at(noticed, coord.metadata_changed, tag)
            done(noticed + 5_000)
            return
        assert coord is not None and coord.leader is not None
        leader = coord.members[coord.leader].proc
        refresh = t + self.rng.randint(20_000, 200_000)
        self.world.at(refresh, self._metadata_refresh, leader, old, group.partitions, tag, done)

    def _metadata_refresh(self, t: int, proc: Proc, old: int, new: int, tag: Tag, done: Done) -> None:
        # the group is reserved for this incident, so the leader is still the healthy leader here
        self.c.leader_metadata_change(t, proc, old, new, tag)
        done(t + 5_000)

    # ---- the coordinator moves -------------------------------------------------------------------------------

    def coordinator_change(self, t: int, group: GroupSpec, done: Done) -> None:
        """Leadership of the group's __consumer_offsets partition moves (reassignment); one member cannot reach
        the new coordinator for longer than its session timeout and is expired there."""
        partition = group.offsets_partition
        sharing = [g for g in self.world.groups if g.offsets_partition == partition and g is not group]
        if any(not self.idle(g) or g.busy for g in sharing):
            for g in sharing:
                g.hold = True
            self.world.at(t + 10_000, self.coordinator_change, group, done)
            return
        for g in sharing:
            g.hold = False
        world, w, rng = self.world, self.world.w, self.rng
        old, epoch = world.leader[partition], world.epoch[partition] + 1
        new = old % world.brokers + 1
        moved = [group, *sharing]
        line = w.resigned(partition, epoch)
        if line:
            world.broker_line(old, t, line)
        world.broker_line(old, t, w.scheduling_unload(partition), GROUP_METADATA_MANAGER)
        t_unload = t + rng.randint(1, 12)
        for g in moved:
            assert g.coord is not None
            world.broker_line(old, t_unload, w.unloading_group(g.group_id, g.coord.generation))
        offsets = sum(g.partitions for g in moved)
        world.broker_line(old, t_unload + 1, w.finished_unload(partition, epoch, offsets, len(moved)),
                          GROUP_METADATA_MANAGER)
        world.leader[partition], world.epoch[partition] = new, epoch
        t_elect = t + rng.randint(5, 60)
        line = w.elected(partition, epoch)
        if line:
            world.broker_line(new, t_elect, line)
        world.broker_line(new, t_elect, w.scheduling_load(partition, epoch), GROUP_METADATA_MANAGER)
        t_load = t_elect + rng.randint(20, 400)
        for g in moved:
            coord = g.coord
            assert coord is not None
            for member in coord.members.values():
                loaded = w.loaded_member(coord.metadata(member.proc), g.group_id, coord.generation)
                if loaded:
                    world.broker_line(new, t_load, loaded, GROUP_METADATA)
                member.last_seen = t_load
                member.token += 1
            world.broker_line(new, t_load, w.loading_group(g.group_id, coord.generation))
        world.broker_line(new, t_load + 1, w.finished_load(partition, epoch, t_load - t_elect + 1, rng.randint(0, 3)),
                          GROUP_METADATA_MANAGER)
        slow = self.pick(group)
        tag = Tag("coordinator_change", "coordinator_failover", "coordinator_moved")
        for g in moved:
            for proc in self.running(g):
                t_hb = proc.next_heartbeat(t) + rng.randint(1, 3)
                self.c.log(proc, t_hb, w.hb_not_coordinator(old))
                t_found = max(t_hb + rng.randint(8, 60), t_load + 1)
                self.c.log(proc, t_found, [w.discovered(new, "hb")])
                if proc is slow:
                    until = t_load + g.session_ms + rng.randint(1_500, 6_000)
                    self.c.unreachable_coordinator(t_found, proc, until, tag)
                    assert g.coord is not None
                    g.coord.schedule_expiry(proc, t_load)
                else:
                    proc.hb_anchor = t_found
        done(t_load + group.session_ms + 10_000)
