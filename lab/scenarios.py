"""The lab's scenarios: each provokes one rebalance cause on its own group and topic, with real consumers."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

from lab.apps import ConnectWorker
from lab.engine import FROM_BROKER, Expect, Lab
from lab.members import Member, MemberSpec
from lab.procs import LabError, ScenarioSkipError

PARTITIONS = 6
JOIN = r"Adding new member|joins the consumer group|joins group|joins the streams group"
LEAVE = r"LeaveGroup|left group|left the consumer group"
EXPIRY = r"heartbeat expiration|session expired|session timeout"
# A cooperative assignor's second round: the member whose partitions (or Streams tasks) moved revokes them and
# rejoins at once; it finishes the rebalance before it and carries its cause.
COOPERATIVE_FOLLOWUP = r"need to revoke partitions"
GC_MB = 1400
GC_MB_SHORT = 500
GC_HEAP = "2400m"


@dataclass(frozen=True)
class Scenario:
    """A named scenario, the Kafka majors it runs on, and whether the short (test) set includes it."""

    name: str
    run: Callable[[Lab], None]
    majors: tuple[int, ...] = (3, 4)
    short: bool = False
    client: str = "java"  # the client its members run: java (LabConsumer) or librdkafka (confluent-kafka)


def _topic(lab: Lab, name: str, partitions: int = PARTITIONS) -> str:
    lab.cluster.admin("create-topic", name, str(partitions), "2")
    return name


def _join(lab: Lab, spec: MemberSpec, detail: str = "member_join", cause: str = "membership_change") -> Member:
    """Start a member and record the rebalance its join causes."""
    box: list[Member] = []
    lab.step(spec.group, [Expect(cause, detail, JOIN, trigger=lambda: box[0].member_id)],
             lambda: box.append(lab.member(spec, wait=True)), title=f"{spec.instance} joins")
    return box[0]


def _joins(lab: Lab, specs: list[MemberSpec]) -> list[Member]:
    """Start several members of one group at once (a service's replicas): one rebalance or more."""
    members: list[Member] = []

    def start() -> None:
        members.extend(lab.member(spec) for spec in specs)
        for m in members:
            m.wait_assigned()

    lab.step(specs[0].group, [Expect("membership_change", "member_join", JOIN, trigger=FROM_BROKER,
                                     count=(1, len(specs)))], start, title=f"{len(specs)} members join")
    return members


def _leave(lab: Lab, member: Member) -> None:
    """Close a member cleanly and record the rebalance its leave causes (the last one empties the group)."""
    before = member.member_id
    lab.step(member.spec.group, [Expect("membership_change", "member_leave", LEAVE, trigger=before)], member.close,
             title=f"{member.spec.instance} leaves")


def _close_all(members: list[Member]) -> None:
    for m in members:
        m.send("close")
    for m in members:
        assert m.proc is not None
        m.proc.wait_exit(60)


def _teardown(lab: Lab, members: list[Member]) -> None:
    """Close the group's running members at once (a service shut down): one rebalance or more, the last empties it."""
    live = [m for m in members if m.alive()]
    if live:
        lab.step(live[0].spec.group, [Expect("membership_change", "member_leave", LEAVE, trigger=FROM_BROKER,
                                             count=(1, len(live)))], lambda: _close_all(live), title="shutdown")


def _spec(group: str, n: int, topics: list[str], **kw) -> MemberSpec:
    layouts = ("kafka", "spring", "ttll")
    kw.setdefault("layout", layouts[(n - 1) % 3])
    return MemberSpec(instance=f"{group}-c{n}", group=group, topics=topics, **kw)


def _kill_step(lab: Lab, g: str, victim: Member) -> None:
    """SIGKILL `victim`: no leave, the coordinator expires (or fences) its session."""
    lab.step(g, [Expect("session_timeout", "heartbeat_expiration", EXPIRY, trigger=victim.member_id)], victim.kill9,
             title="kill -9", timeout=60)


def _freeze_steps(lab: Lab, g: str, victim: Member, *, followups: int = 0) -> None:
    """SIGSTOP `victim` past its session timeout (the coordinator expires it), then SIGCONT: it rejoins (and, with
    a cooperative assignor, up to `followups` follow-ups move work back to it: part of the same rejoin)."""
    lab.step(g, [Expect("session_timeout", "heartbeat_expiration", EXPIRY, trigger=victim.member_id)], victim.freeze,
             title="SIGSTOP", timeout=60)
    thawed = time.time()

    def thaw() -> None:
        victim.thaw()
        victim.wait_assigned(since=thawed)

    lab.step(g, [Expect("session_timeout", "rejoin", JOIN, trigger=lambda: victim.member_id),
                 Expect("session_timeout", "rejoin", COOPERATIVE_FOLLOWUP, trigger=FROM_BROKER, count=(0, followups))],
             thaw, title="SIGCONT")


def _slow_poll_step(lab: Lab, g: str, slow: Member, stall_ms: int, removal: Expect) -> None:
    """`slow` stalls `stall_ms` between polls, past its max.poll.interval.ms: `removal` (its leave, or its fence),
    then its rejoin when it polls again."""
    since = time.time()

    def stall() -> None:
        assert slow.proc is not None
        slow.send(f"sleep {stall_ms}")
        slow.proc.wait_line(r"LAB processed", 60, since=since)
        slow.wait_assigned(since=since)

    lab.step(g, [removal, Expect("poll_timeout", "rejoin", JOIN, trigger=lambda: slow.member_id)], stall,
             title="slow poll")


def scale(lab: Lab) -> None:
    """A group starts, scales up to three members, then scales down to none with clean leaves."""
    g = "lab-scale"
    t = _topic(lab, g)
    members = [_join(lab, _spec(g, n, [t])) for n in (1, 2, 3)]
    for m in reversed(members):  # scale down one replica at a time; the last leave empties the group
        _leave(lab, m)


def crash(lab: Lab) -> None:
    """A member is killed with SIGKILL: no leave, the coordinator expires its session."""
    g = "lab-crash"
    t = _topic(lab, g)
    c1, c2 = _joins(lab, [_spec(g, 1, [t]), _spec(g, 2, [t])])
    _kill_step(lab, g, c2)
    _teardown(lab, [c1])


def freeze(lab: Lab) -> None:
    """A member is frozen with SIGSTOP past its session timeout (no GC evidence), then thawed: it rejoins."""
    g = "lab-freeze"
    t = _topic(lab, g)
    c1, c2 = _joins(lab, [_spec(g, 1, [t]), _spec(g, 2, [t])])
    _freeze_steps(lab, g, c2)
    _teardown(lab, [c1, c2])


def poll_timeout(lab: Lab) -> None:
    """A member processes one batch longer than max.poll.interval.ms: it leaves, then rejoins when it polls again."""
    g = "lab-poll"
    t = _topic(lab, g)
    c1, c2 = _joins(lab, [_spec(g, 1, [t]), _spec(g, 2, [t], max_poll_ms=6000)])
    _slow_poll_step(lab, g, c2, 12000, Expect("poll_timeout", "leave_on_poll_timeout", LEAVE, trigger=c2.member_id))
    _teardown(lab, [c1, c2])


def _gc_member(g: str, n: int, topics: list[str], factor: float) -> MemberSpec:
    # A pre-sized heap and a small young generation: only the explicit full GC is long, the young ones stay short.
    # max.poll.interval.ms far above any pause: a loaded machine stretches the pause, and the poll loop stalls with
    # it, which must not turn the scenario into a poll timeout.
    return _spec(g, n, topics, heap=f"-Xmx{GC_HEAP}", gc="-XX:+UseSerialGC", jvm_extra=[f"-Xms{GC_HEAP}", "-Xmn32m"],
                 calibrate_gc_mb=GC_MB, session_from_gc=factor, max_poll_ms=300000)


def gc_pause(lab: Lab) -> None:
    """A member's JVM stops in a full GC longer than its session timeout: expired (gc_pause), then it rejoins."""
    g = "lab-gc"
    t = _topic(lab, g)
    c1 = _join(lab, _spec(g, 1, [t]))
    c2 = _join(lab, _gc_member(g, 2, [t], factor=0.5))
    lab.notes["gc_calibrated_ms"] = c2.gc_pauses_ms[0]
    _long_gc_step(lab, g, c2)
    _teardown(lab, [c1, c2])


def _long_gc_step(lab: Lab, g: str, victim: Member) -> int:
    """A full GC of `victim` past its session timeout: expired (gc_pause), then it rejoins. The pause in ms."""
    expired, since, seen = victim.member_id, time.time(), [0]

    def pause() -> None:
        seen[0] = victim.gc(GC_MB)
        lab.progress(f"  full GC of {seen[0]} ms against a session timeout of {victim.session_ms} ms")
        victim.wait_assigned(since=since)

    lab.step(g, [Expect("gc_pause", "heartbeat_expiration", EXPIRY, trigger=expired),
                 Expect("gc_pause", "rejoin", JOIN, trigger=_id_of(victim))], pause, title="long GC",
             timeout=240)
    return seen[0]


def gc_short(lab: Lab) -> None:
    """A member's full GC stays well under its session timeout: no rebalance."""
    g = "lab-gcshort"
    t = _topic(lab, g)
    c1 = _join(lab, _spec(g, 1, [t]))
    # A third of the long scenario's live heap and the broker's longest session timeout: a margin of about ten
    # times, because a loaded machine can stretch one pause threefold against any calibration.
    spec = _gc_member(g, 2, [t], factor=0.0)
    spec.calibrate_gc_mb, spec.session_ms, spec.heartbeat_ms = 0, 60000, 3000
    c2 = _join(lab, spec)
    ms = c2.gc(GC_MB_SHORT)
    lab.progress(f"  full GC of {ms} ms against a session timeout of {c2.session_ms} ms")
    if ms >= c2.session_ms:
        raise LabError(f"the short GC ({ms} ms) was not shorter than the session timeout ({c2.session_ms} ms)")
    lab.quiet(g, 4.0, title="short GC")
    _teardown(lab, [c1, c2])


def whatif_gc(lab: Lab) -> None:
    """The what-if's GC advice, tried: a full GC longer than the session timeout (expiry, rejoin), then the same GC
    in a second group whose member uses the session timeout the what-if advises for the pause just observed: no
    rebalance."""
    from pipelines.gold.whatif import advised_session_ms

    g = "lab-wi-gc"
    t = _topic(lab, g)
    c1 = _join(lab, _spec(g, 1, [t]))
    c2 = _join(lab, _gc_member(g, 2, [t], factor=0.5))
    paused_ms = _long_gc_step(lab, g, c2)
    _teardown(lab, [c1, c2])

    advised_g = "lab-wi-gc-advised"
    t2 = _topic(lab, advised_g)
    a1 = _join(lab, _spec(advised_g, 1, [t2]))
    spec = _gc_member(advised_g, 2, [t2], factor=0.0)
    heartbeat = 1000
    spec.calibrate_gc_mb, spec.heartbeat_ms = 0, heartbeat
    spec.session_ms = advised_session_ms(paused_ms + heartbeat)
    lab.notes["whatif_gc"] = {"pause_ms": paused_ms, "advised_session_ms": spec.session_ms}
    a2 = _join(lab, spec)
    ms = a2.gc(GC_MB)
    lab.progress(f"  the same GC, {ms} ms, against the advised session timeout of {a2.session_ms} ms")
    lab.quiet(advised_g, 4.0, title="the same GC under the advised session timeout")
    _teardown(lab, [a1, a2])


def _id_of(member: Member) -> Callable[[], str | None]:
    """The member's id when asked (after a restart it has a new one)."""
    return lambda: member.member_id


def whatif_restart(lab: Lab) -> None:
    """The what-if's static-membership advice, tried: a rolling restart of dynamic members (each restart a leave
    and a join), then the same rolling restart of static members within their session timeout (no rebalance until
    they stop for good and their sessions expire)."""
    g = "lab-wi-restart"
    t = _topic(lab, g)
    session = 10000
    members = _joins(lab, [_spec(g, n, [t], session_ms=session) for n in (1, 2)])
    for m in members:
        _leave(lab, m)
        since = time.time()

        def back(m: Member = m, since: float = since) -> None:
            m.start()
            m.wait_assigned(since=since)

        lab.step(g, [Expect("membership_change", "member_join", JOIN, trigger=_id_of(m))], back,
                 title=f"{m.spec.instance} back")
    _teardown(lab, members)

    static_g = "lab-wi-restart-static"
    t2 = _topic(lab, static_g)
    statics = _joins(lab, [_spec(static_g, n, [t2], instance_id=f"{static_g}-{n}", session_ms=session)
                           for n in (1, 2)])
    for m in statics:
        since = time.time()
        m.close()  # a static member's close sends no LeaveGroup
        m.start()
        m.wait_assigned(since=since)
        lab.quiet(static_g, 3.0, title=f"{m.spec.instance} restarted within its session timeout")
    last = [m.member_id for m in statics]
    lab.step(static_g, [Expect("session_timeout", "heartbeat_expiration", EXPIRY, trigger=lambda: last[-1],
                               count=(1, 2))], lambda: _close_all(statics), title="static members stopped",
             timeout=60)


def partitions(lab: Lab) -> None:
    """The topic gains partitions: the leader sees the metadata change and rejoins."""
    g = "lab-meta"
    t = _topic(lab, g, 2)
    c1, c2 = _join(lab, _spec(g, 1, [t])), _join(lab, _spec(g, 2, [t]))
    leader = c1.member_id  # the first member is the leader, and only the leader watches partition counts
    lab.step(g, [Expect("metadata_change", "partition_count_change", r"re-joining|metadata", trigger=leader)],
             lambda: lab.cluster.admin("add-partitions", t, "4"), title="partitions added", timeout=60)
    _teardown(lab, [c1, c2])


def subscription(lab: Lab) -> None:
    """A member changes its subscription (adds a topic)."""
    g = "lab-sub"
    t1, t2 = _topic(lab, g + "-a"), _topic(lab, g + "-b")
    # One after the other, so c1 is the leader and c2's new subscription reads as a follower's metadata update.
    c1, c2 = _join(lab, _spec(g, 1, [t1])), _join(lab, _spec(g, 2, [t1]))
    since = time.time()

    def resubscribe() -> None:
        c2.send(f"subscribe {t1},{t2}")
        c2.wait_assigned(since=since)

    # The leader may then see metadata of a topic it did not track and rejoin too: a second rebalance, same cause.
    leader = c1.member_id
    lab.step(g, [Expect("metadata_change", "subscription_change", r"Updating metadata|subscri",
                        trigger=lambda: c2.member_id),
                 Expect("metadata_change", "subscription_change", r"re-joining|metadata has changed", trigger=leader,
                        count=(0, 1))], resubscribe, title="subscription change")
    # When c2 leaves, the group no longer subscribes to t2: the leader's cached metadata changes and it rejoins,
    # a second rebalance that the leave caused.
    gone = c2.member_id
    lab.step(g, [Expect("membership_change", "member_leave", LEAVE, trigger=gone),
                 Expect("membership_change", "member_leave", r"re-joining|metadata has changed", trigger=leader,
                        count=(0, 1))], c2.close, title="c2 leaves", settle=8.0)
    _teardown(lab, [c1])


def static(lab: Lab) -> None:
    """Static members: a restart within the session timeout rebalances nothing; one beyond it does (expiry, join)."""
    g = "lab-static"
    t = _topic(lab, g)
    session = 10000
    s1, s2 = _joins(lab, [_spec(g, n, [t], instance_id=f"{g}-{n}", session_ms=session) for n in (1, 2)])
    since = time.time()
    s2.close()  # a static member's close sends no LeaveGroup
    s2.start()
    s2.wait_assigned(since=since)
    lab.quiet(g, 3.0, title="static restart within the session timeout")
    gone = s2.member_id
    lab.step(g, [Expect("session_timeout", "heartbeat_expiration", EXPIRY, trigger=gone)], s2.close,
             title="static member gone past its session timeout", timeout=60)
    since = time.time()

    def restart() -> None:
        s2.start()
        s2.wait_assigned(since=since)

    lab.step(g, [Expect("membership_change", "member_join", JOIN + r"|static member",
                        trigger=lambda: s2.member_id)], restart, title="static member back")
    # Static members do not leave on close: remove them by session expiry, the way a scale-down of pods does.
    last = [s2.member_id, s1.member_id]

    def stop_both() -> None:
        s2.close()
        s1.close()

    lab.step(g, [Expect("session_timeout", "heartbeat_expiration", EXPIRY, trigger=lambda: last[0], count=(1, 2))],
             stop_both, title="static members stopped", timeout=60)


def coordinator(lab: Lab) -> None:
    """The coordinator broker stops while the group rebalances; the rebalance completes on the new coordinator."""
    g = "lab-coord"
    t = _topic(lab, g)
    c1, c2 = _joins(lab, [_spec(g, 1, [t], max_poll_ms=60000), _spec(g, 2, [t], max_poll_ms=60000)])
    old = lab.cluster.coordinator_of(g)
    lab.progress(f"  coordinator of {g} is broker {old}")
    since = time.time()
    assert c1.proc is not None
    c1.send("slow 20000")  # the leader's poll loop is busy: the coming rebalance waits for it
    c1.proc.wait_line(r"LAB processing", 30, since=since)
    box: list[Member] = []

    def failover() -> None:
        box.append(lab.member(_spec(g, 3, [t], max_poll_ms=60000)))
        deadline = time.time() + 30
        while not lab.logs.has_open_rebalance(g):
            if time.time() > deadline:
                raise LabError("the join of the third member did not open a rebalance")
            time.sleep(0.2)
            lab.logs.refresh()
        lab.cluster.stop_node(old)
        c1.send("slow 0")
        box[0].wait_assigned(timeout=90)

    lab.step(g, [Expect("coordinator_change", "coordinator_failover", None)], failover, timeout=150,
             title="coordinator stopped mid-rebalance")
    new = lab.cluster.coordinator_of(g)
    lab.progress(f"  coordinator of {g} is now broker {new}")
    _teardown(lab, [c1, c2, box[0]])
    lab.cluster.restart_node(old)


def consumer_protocol(lab: Lab) -> None:
    """KIP-848 (group.protocol=consumer): members join, one leaves, one is fenced after SIGKILL, one overruns
    max.poll.interval.ms (leaves, then joins again with the same member id)."""
    g = "lab-kip848"
    t = _topic(lab, g)
    _kip848_steps(lab, g, lambda n, **kw: _spec(g, n, [t], protocol="consumer", **kw), stall_ms=12000,
                  removal=("leave_on_poll_timeout", LEAVE))


def _kip848_steps(lab: Lab, g: str, spec: Callable[..., MemberSpec], *, stall_ms: int,
                  removal: tuple[str, str]) -> None:
    """Three consumer-protocol members join; the third leaves, the second is fenced after SIGKILL, the first stalls
    past max.poll.interval.ms (`removal`: the detail and broker line pattern of its removal), then rejoins."""
    k1 = _join(lab, spec(1, max_poll_ms=6000))
    k2, k3 = _join(lab, spec(2)), _join(lab, spec(3))
    _leave(lab, k3)
    _kill_step(lab, g, k2)
    detail, pattern = removal
    _slow_poll_step(lab, g, k1, stall_ms, Expect("poll_timeout", detail, pattern, trigger=k1.member_id))
    _teardown(lab, [k1])


# librdkafka (confluent-kafka's Consumer, lab/rdkafka_member.py). Its member ids and log lines differ from the Java
# client's; the broker's lines, and so the truth, are made the same way.
KIP848_LIBRDKAFKA = 0x020C0000  # librdkafka 2.12.0: the consumer group protocol (KIP-848) is generally available


def _rd_spec(group: str, n: int, topics: list[str], *, debug: bool, **kw) -> MemberSpec:
    """A librdkafka member. With `debug`, `debug=cgrp` and client.id set to the instance name (the broker's member
    ids start with it); without, librdkafka's default log level and client.id (member ids `rdkafka-<uuid>`)."""
    extra = dict(kw.pop("extra", {}))
    if debug:
        extra.setdefault("client.id", f"{group}-c{n}")
    return MemberSpec(instance=f"{group}-c{n}", group=group, topics=topics, client="librdkafka",
                      debug="cgrp" if debug else None, extra=extra, **kw)


def rd_scale(lab: Lab) -> None:
    """librdkafka: three members join one by one, then leave one by one with clean closes."""
    g = "lab-rd-scale"
    t = _topic(lab, g)
    members = [_join(lab, _rd_spec(g, n, [t], debug=n % 2 == 1)) for n in (1, 2, 3)]
    for m in reversed(members):
        _leave(lab, m)


def rd_crash(lab: Lab) -> None:
    """librdkafka: a member is killed with SIGKILL; the coordinator expires its session."""
    g = "lab-rd-crash"
    t = _topic(lab, g)
    c1, c2 = _joins(lab, [_rd_spec(g, 1, [t], debug=True), _rd_spec(g, 2, [t], debug=False)])
    _kill_step(lab, g, c2)
    _teardown(lab, [c1])


def rd_freeze(lab: Lab) -> None:
    """librdkafka: a member is frozen with SIGSTOP past its session timeout, then thawed: it rejoins. The frozen
    member logs at debug level on 3.x and at the default level on 4.x (both shapes in the corpus)."""
    g = "lab-rd-freeze"
    t = _topic(lab, g)
    loud = lab.kit.major < 4
    c1, c2 = _joins(lab, [_rd_spec(g, 1, [t], debug=not loud), _rd_spec(g, 2, [t], debug=loud)])
    _freeze_steps(lab, g, c2)
    _teardown(lab, [c1, c2])


def rd_poll_timeout(lab: Lab) -> None:
    """librdkafka: a member stalls 12 s between polls with max.poll.interval.ms=6000: it leaves, then rejoins when
    it polls again. The stalled member logs at the default level on 3.x and at debug level on 4.x."""
    g = "lab-rd-poll"
    t = _topic(lab, g)
    loud = lab.kit.major >= 4
    c1, c2 = _joins(lab, [_rd_spec(g, 1, [t], debug=not loud), _rd_spec(g, 2, [t], debug=loud, max_poll_ms=6000)])
    _slow_poll_step(lab, g, c2, 12000, Expect("poll_timeout", "leave_on_poll_timeout", LEAVE, trigger=c2.member_id))
    _teardown(lab, [c1, c2])


def rd_consumer_protocol(lab: Lab) -> None:
    """librdkafka with group.protocol=consumer (KIP-848): members join, one leaves, one is fenced after SIGKILL, one
    overruns max.poll.interval.ms (stops heartbeating and is fenced, then joins again)."""
    from confluent_kafka import libversion

    text, number = libversion()
    if number < KIP848_LIBRDKAFKA:
        raise ScenarioSkipError(f"librdkafka {text} predates 2.12.0, where group.protocol=consumer became available")
    g = "lab-rd-kip848"
    t = _topic(lab, g)
    # librdkafka (2.16) does not leave when max.poll.interval.ms passes under this protocol: it marks its assignment
    # lost and stops heartbeating until the application polls again, so the coordinator fences it by session expiry
    # (the broker's 6 s) well before a 20 s stall ends; the poll loop's return then joins it again.
    _kip848_steps(lab, g, lambda n, **kw: _rd_spec(g, n, [t], debug=n % 2 == 1, protocol="consumer", **kw),
                  stall_ms=20000, removal=("heartbeat_expiration", EXPIRY))


# Kafka Streams (lab/java/LabStreams.java): an application whose instances count their input topic into a state
# store. Its group is the application.id; every instance runs one stream thread, a member of its own.
STREAMS_RECORDS = "3000"  # counted before the second instance starts: it lags behind and warms up first (KIP-441)
# The probing rebalance's client reason, and the cooperative follow-up in which the old owner gives up the tasks
# that moved (`need to revoke partitions and re-join`).
FOLLOWUP = r"followup rebalance|need to revoke partitions"


def _st_spec(group: str, n: int, topics: list[str], **kw) -> MemberSpec:
    extra = {"lab.produce": STREAMS_RECORDS, "lab.rate": "5"} if n == 1 else {"lab.rate": "5"}
    extra.update(kw.pop("extra", {}))
    return MemberSpec(instance=f"{group}-c{n}", group=group, topics=topics, client="streams", heap="-Xmx160m",
                      extra=extra, **kw)


def _st_join_with_probing(lab: Lab, spec: MemberSpec) -> Member:
    """A second instance joins a running application: its join, then (KIP-441) the warm-up of its tasks and the
    probing rebalance the assignor scheduled for a minute later, after which the caught-up tasks move to it (a
    follow-up rebalance to revoke them from their old owner, asked for the same way)."""
    member = _join(lab, spec)
    lab.step(spec.group, [Expect("membership_change", "probing_rebalance", FOLLOWUP, trigger=FROM_BROKER,
                                 count=(1, 4))], lambda: None, title="probing rebalance", timeout=150, settle=10.0)
    return member


def _st_shutdown(lab: Lab, members: list[Member]) -> None:
    """Shut the running instances down at once. A Kafka Streams consumer sends no LeaveGroup on close (Streams sets
    `internal.leave.group.on.close=false`), so the coordinator removes each by session expiry."""
    live = [m for m in members if m.alive()]
    lab.step(live[0].spec.group, [Expect("session_timeout", "heartbeat_expiration", EXPIRY, trigger=FROM_BROKER,
                                         count=(1, len(live)))], lambda: _close_all(live), title="shutdown",
             timeout=60)


def st_scale(lab: Lab) -> None:
    """Kafka Streams: an instance starts, a second one joins (warm-up, then the probing rebalance), the second is
    killed with SIGKILL (session expiry), then the first is shut down (Streams does not leave on close)."""
    g = "lab-st-scale"
    t = _topic(lab, g + "-in")
    c1 = _join(lab, _st_spec(g, 1, [t]))
    c2 = _st_join_with_probing(lab, _st_spec(g, 2, [t]))
    _kill_step(lab, g, c2)
    _st_shutdown(lab, [c1])


def st_freeze(lab: Lab) -> None:
    """Kafka Streams: an instance is frozen with SIGSTOP past its session timeout, then thawed: it rejoins."""
    g = "lab-st-freeze"
    t = _topic(lab, g + "-in")
    c1 = _join(lab, _st_spec(g, 1, [t]))
    c2 = _st_join_with_probing(lab, _st_spec(g, 2, [t]))
    _freeze_steps(lab, g, c2, followups=2)
    _st_shutdown(lab, [c1, c2])


def st_poll_timeout(lab: Lab) -> None:
    """Kafka Streams: one record takes 12 s to process with max.poll.interval.ms=6000: the stream thread's consumer
    gives up its membership, then joins again when the record is done. 3.9 and 4.2 send a LeaveGroup; 4.0-4.1 send
    none (as for a Streams close), so the coordinator expires the member (measured on 3.9.2, 4.1.2 and 4.2.2)."""
    g = "lab-st-poll"
    t = _topic(lab, g + "-in")
    c1 = _join(lab, _st_spec(g, 1, [t], max_poll_ms=6000))
    removal = (Expect("poll_timeout", "heartbeat_expiration", EXPIRY, trigger=c1.member_id)
               if (4, 0) <= lab.kit.release < (4, 2)
               else Expect("poll_timeout", "leave_on_poll_timeout", LEAVE, trigger=c1.member_id))
    _slow_poll_step(lab, g, c1, 12000, removal)
    _st_shutdown(lab, [c1])


STREAMS_JOIN = r"joins the streams group"
# The first member's topology names internal topics that do not exist yet; once they do, the group's metadata hash
# changes and the epoch is bumped again with no member line: the topics' metadata changed.
TOPICS_READY = r"now initialized|metadata hash"


def st_streams_protocol(lab: Lab) -> None:
    """Kafka Streams with the streams rebalance protocol (KIP-1071, `group.protocol=streams`, GA in 4.2): the broker
    assigns the tasks of a streams group. An instance joins (and its internal topics come into being), a second
    joins, the second is killed with SIGKILL (fenced when its session expires: the broker logs no epoch bump then,
    only the new target assignment's epoch), the first shuts down (no rebalance: it was the last member)."""
    g = "lab-st-kip1071"
    t = _topic(lab, g + "-in")

    def spec(n: int) -> MemberSpec:
        return _st_spec(g, n, [t], protocol="streams")

    box: list[Member] = []
    lab.step(g, [Expect("membership_change", "member_join", STREAMS_JOIN, trigger=lambda: box[0].member_id),
                 Expect("metadata_change", "internal_topics_created", TOPICS_READY, trigger=FROM_BROKER,
                        count=(0, 2))],
             lambda: box.append(lab.member(spec(1), wait=True)), title="c1 joins", settle=5.0)
    c1 = box[0]
    c2 = _join(lab, spec(2), detail="member_join")
    _kill_step(lab, g, c2)
    # The last member leaves (`Member m left the streams group.`): nobody is left to rebalance and the broker bumps
    # no epoch.
    c1.close()
    lab.quiet(g, 5.0, title="the last member left")


# Kafka Connect (ConnectDistributed workers with the file connectors): the workers' group, rebalancing on every
# worker and every connector change.
CONFIG_REJOIN = r"re-joining|rejoin|Updating metadata"


def _ct_spec(group: str, n: int) -> MemberSpec:
    return MemberSpec(instance=f"{group}-w{n}", group=group, topics=[], client="connect", heap="-Xmx256m",
                      session_ms=6000, heartbeat_ms=1000)


def ct_cluster(lab: Lab) -> None:
    """Kafka Connect: a worker starts, a second joins, a connector is created and deleted (each a rebalance the
    leader asks for), the second worker is killed with SIGKILL (session expiry), the first is stopped (leaves)."""
    if not lab.kit.connect_cp:
        raise ScenarioSkipError(f"Kafka {lab.kit.version}: Connect's runtime or file connectors not on Maven Central")
    g = "lab-ct"
    t = _topic(lab, g + "-out")
    w1 = _join(lab, _ct_spec(g, 1))
    w2 = _join(lab, _ct_spec(g, 2))
    source = lab.cluster.work / "aux" / "connect" / "lines.txt"
    source.write_text("".join(f"line {i}\n" for i in range(100)))
    assert isinstance(w1, ConnectWorker)
    config = {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
              "file": str(source), "topic": t}
    # The leader rejoins when the config topic changes; the others follow with their new config offset in their
    # metadata (`Updating metadata for member`); the connector's task configs are a second change.
    lab.step(g, [Expect("metadata_change", "connector_change", CONFIG_REJOIN, trigger=FROM_BROKER, count=(1, 6))],
             lambda: w1.rest("PUT", "/connectors/lab-file-source/config", config), title="connector created",
             settle=6.0)
    lab.step(g, [Expect("metadata_change", "connector_change", CONFIG_REJOIN, trigger=FROM_BROKER, count=(1, 6))],
             lambda: w1.rest("DELETE", "/connectors/lab-file-source"), title="connector deleted", settle=6.0)
    _kill_step(lab, g, w2)
    _leave(lab, w1)


# Share groups (KIP-932, lab/java/LabShareConsumer.java): records are handed out one by one, no member owns a
# partition, so members come and go without stopping the others: churn, never a rebalance.
SHARE_JOIN = r"joins the share group"
SHARE_LEAVE = r"left the share group"
SHARE_FENCED = r"fenced from the group because its session expired|session expired"


def _sh_spec(group: str, n: int, topics: list[str]) -> MemberSpec:
    return MemberSpec(instance=f"{group}-c{n}", group=group, topics=topics, client="share")


def sh_churn(lab: Lab) -> None:
    """Share consumers (production-ready in 4.2): three join one by one, one restarts three times in a row (as
    fast as a crash loop would), one is killed with SIGKILL (fenced when its session expires), the rest leave. A
    dozen membership changes in two minutes: a storm for a consumer group, nothing at all for a share group."""
    if lab.kit.release < (4, 2):
        raise ScenarioSkipError(f"Kafka {lab.kit.version}: share groups are on by default from 4.2")
    g = "lab-share"
    t = _topic(lab, g)
    members: list[Member] = []

    def join(n: int) -> None:
        members.append(lab.member(_sh_spec(g, n, [t]), wait=True))

    def restart(member: Member) -> None:
        member.start()
        member.wait_assigned()

    for n in (1, 2, 3):
        lab.membership(g, SHARE_JOIN, functools.partial(join, n), title=f"{g}-c{n} joins")
    c3 = members[2]
    for _ in range(3):
        lab.membership(g, SHARE_LEAVE, c3.close, title="c3 leaves")
        lab.membership(g, SHARE_JOIN, lambda: restart(c3), title="c3 joins again")
    lab.membership(g, SHARE_FENCED, members[1].kill9, title="kill -9 c2", timeout=90)
    lab.membership(g, SHARE_LEAVE, lambda: _close_all([members[0], c3]), count=2, title="shutdown")


# A classic group whose members move to the consumer protocol one by one (a rolling client upgrade) and back: the
# 4.x coordinator converts the group live (`group.consumer.migration.policy`, bidirectional by default) and keeps its
# generation counting as the group epoch.
# The last consumer-protocol member's leave downgrades the group, in a classic rebalance of its own.
DOWNGRADE = r"Downgrade group \S+ from consumer to classic for member leaving"


def conversion(lab: Lab) -> None:
    """Two classic members; the first restarts with group.protocol=consumer (the group becomes a consumer group with
    a classic member), then leaves (the group is a classic group again), the second shuts down."""
    g = "lab-convert"
    t = _topic(lab, g)
    c1 = _join(lab, _spec(g, 1, [t], layout="kafka"))
    c2 = _join(lab, _spec(g, 2, [t], layout="kafka"))
    _leave(lab, c1)
    box: list[Member] = []
    upgraded = _spec(g, 1, [t], layout="kafka", protocol="consumer")
    lab.step(g, [Expect("membership_change", "member_join", JOIN, trigger=lambda: box[0].member_id)],
             lambda: box.append(lab.member(upgraded, wait=True)), title="c1 joins with the consumer protocol",
             settle=5.0)
    upgraded_id = box[0].member_id
    lab.step(g, [Expect("membership_change", "member_leave", DOWNGRADE, trigger=upgraded_id)], box[0].close,
             title="c1 leaves: back to classic", settle=5.0)
    _teardown(lab, [c2])


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("scale", scale, short=True),
    Scenario("crash", crash, short=True),
    Scenario("freeze", freeze),
    Scenario("poll_timeout", poll_timeout),
    Scenario("gc_pause", gc_pause),
    Scenario("gc_short", gc_short),
    Scenario("whatif_gc", whatif_gc),
    Scenario("whatif_restart", whatif_restart),
    Scenario("partitions", partitions),
    Scenario("subscription", subscription),
    Scenario("static", static),
    Scenario("consumer_protocol", consumer_protocol, majors=(4,), short=True),
    Scenario("rd_scale", rd_scale, client="librdkafka"),
    Scenario("rd_crash", rd_crash, client="librdkafka"),
    Scenario("rd_freeze", rd_freeze, client="librdkafka"),
    Scenario("rd_poll_timeout", rd_poll_timeout, client="librdkafka"),
    Scenario("rd_consumer_protocol", rd_consumer_protocol, majors=(4,), client="librdkafka"),
    Scenario("st_scale", st_scale, client="streams"),
    Scenario("st_freeze", st_freeze, client="streams"),
    Scenario("st_poll_timeout", st_poll_timeout, client="streams"),
    Scenario("ct_cluster", ct_cluster, client="connect"),
    Scenario("st_streams_protocol", st_streams_protocol, majors=(4,), client="streams"),
    Scenario("sh_churn", sh_churn, majors=(4,), client="share"),
    Scenario("conversion", conversion, majors=(4,)),
    # Last: it stops a broker (and starts it again).
    Scenario("coordinator", coordinator),
)
