"""Estate scenarios: one event that rebalances several groups at once (truth/estate_incidents.jsonl), with real
brokers and consumers."""

from __future__ import annotations

import functools
import signal
import time

from lab.cluster import COMMON
from lab.engine import FROM_BROKER, Expect, Lab
from lab.members import Member
from lab.procs import LabError
from lab.scenarios import EXPIRY, JOIN, LEAVE, _close_all, _id_of, _join, _spec, _teardown, _topic
from simulator.javautil import kafka_abs, string_hash

# SIGSTOP of a broker: twice its members' session timeout (6 s), well short of the controller fencing the broker
# (broker.session.timeout.ms, 30 s in the lab), so the broker keeps its partitions and wakes up as coordinator.
STALL_S = 12.0


def groups_on_one_broker(lab: Lab, prefix: str, count: int) -> list[str]:
    """`count` group ids `<prefix>-<k>` that hash to one __consumer_offsets partition, so one broker coordinates them
    all (the lab's brokers answer FindCoordinator only for groups that exist on 4.x, so the hash decides here)."""
    by_partition: dict[int, list[str]] = {}
    partitions = int(COMMON["offsets.topic.num.partitions"])
    for k in range(100 * count):
        group = f"{prefix}-{k}"
        same = by_partition.setdefault(kafka_abs(string_hash(group)) % partitions, [])
        same.append(group)
        if len(same) == count:
            return same
    raise LabError(f"no {count} of the groups {prefix}-0..{100 * count - 1} share a partition")


def _iso(ts: object) -> str:
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")  # type: ignore[attr-defined]


def _estate_row(lab: Lab, kind: str, root: str | None, groups: list[str], unaffected: list[str],
                started: object) -> None:
    lab.estate_truth.append({"root_kind": kind, "root_instance": root, "groups": sorted(groups),
                             "groups_unaffected": sorted(unaffected), "started_at": _iso(started),
                             "scenario": lab.scenario, "kafka_version": lab.kit.version})


def _coordinator_event(lab: Lab, broker: int, found: dict[str, list], members: dict[str, Member], said: str) -> None:
    """The truth of what one broker did to the groups it coordinated: an estate incident (`coordinator_event`, the
    others unaffected) when two or more rebalanced; then each group's member leaves."""
    hit = [g for g in members if found[g]]
    lab.progress(f"  {said} {hit or 'no group'}")
    if len(hit) >= 2:
        _estate_row(lab, "coordinator_event", lab.cluster.instance(broker), hit,
                    [g for g in members if g not in hit], min(found[g][0].started_at for g in hit))
    for m in members.values():
        _teardown(lab, [m])


def estate_stall(lab: Lab) -> None:
    """A broker coordinating four groups stalls (SIGSTOP past its members' session timeout, short of the controller
    fencing it). The truth is what the broker logged on waking: the groups whose members it expired (an estate
    incident when two or more did) and those that stayed, whose members' heartbeats queued during the stall counted
    in time (3.9.2: none of four in one run, one in another)."""
    groups = groups_on_one_broker(lab, "lab-estate", 4)
    members: dict[str, Member] = {g: _join(lab, _spec(g, 1, [_topic(lab, g)])) for g in groups}
    broker = lab.cluster.coordinator_of(groups[0])
    lab.progress(f"  broker {broker} coordinates {', '.join(groups)}")
    proc = lab.cluster.procs[broker]

    def stall() -> None:
        proc.signal(signal.SIGSTOP)
        try:
            time.sleep(STALL_S)
        finally:
            proc.signal(signal.SIGCONT)

    found = lab.step_groups(
        {g: [Expect("session_timeout", "heartbeat_expiration", EXPIRY, trigger=members[g].member_id, count=(0, 1)),
             Expect("session_timeout", "rejoin", JOIN, trigger=_id_of(members[g]), count=(0, 1))] for g in groups},
        stall, timeout=150, settle=15.0, title=f"broker {broker} SIGSTOP {STALL_S:.0f} s")
    _coordinator_event(lab, broker, found, members, f"on waking, broker {broker} rebalanced")


def estate_host_freeze(lab: Lab) -> None:
    """One host runs consumers of three groups (three JVMs logging into its folder); the host freezes (every process
    SIGSTOPped) past their session timeout: each group's coordinator expires the host's member, and the members
    rejoin on thaw. Each group's other member runs elsewhere and keeps it alive."""
    host, groups = "lab-host-a", [f"lab-estate-h{k}" for k in range(3)]
    hosted: dict[str, Member] = {}
    for g in groups:
        t = _topic(lab, g)
        _join(lab, _spec(g, 1, [t]))
        hosted[g] = _join(lab, _spec(g, 2, [t], layout="kafka", host=host))

    def freeze() -> None:
        for m in hosted.values():
            m.freeze()
        time.sleep(10.0)  # past the 6 s session timeout of every hosted member
        for m in hosted.values():
            m.thaw()

    found = lab.step_groups(
        {g: [Expect("session_timeout", "heartbeat_expiration", EXPIRY, trigger=hosted[g].member_id),
             Expect("session_timeout", "rejoin", JOIN, trigger=_id_of(hosted[g]))] for g in groups},
        freeze, timeout=120, settle=5.0, title=f"{host} frozen 10 s")
    _estate_row(lab, "shared_process", host, groups, [], min(found[g][0].started_at for g in groups))
    for g in groups:
        _teardown(lab, [m for m in lab.members if m.spec.group == g and m.alive()])


# A clean broker stop: the coordinator's partitions move to the other broker, whose group coordinator loads the groups
# with their members; each member finds it and heartbeats on. Twice the members' session timeout, so a member that
# did not find the new coordinator in time is expired and shows.
RESTART_DOWN_S = 12.0


def estate_restart(lab: Lab) -> None:
    """The broker coordinating three groups stops cleanly (controlled shutdown) and comes back: its
    __consumer_offsets partitions move, and a group whose members reach the new coordinator within their session
    timeout does not rebalance. The truth is what the brokers logged: the groups that rebalanced after the move (an
    estate incident when two or more did) and those that stayed stable (none rebalanced in the runs recorded)."""
    groups = groups_on_one_broker(lab, "lab-estate-r", 3)
    members = {g: _join(lab, _spec(g, 1, [_topic(lab, g)])) for g in groups}
    broker = lab.cluster.coordinator_of(groups[0])
    lab.progress(f"  broker {broker} coordinates {', '.join(groups)}")
    started = time.time()

    def restart() -> None:
        lab.cluster.stop_node(broker)
        time.sleep(RESTART_DOWN_S)
        lab.cluster.restart_node(broker)

    found = lab.step_groups(
        {g: [Expect("coordinator_change", "coordinator_failover", None, trigger=FROM_BROKER, count=(0, 2))]
         for g in groups}, restart, timeout=180, settle=10.0, title=f"broker {broker} restarted")
    _coordinator_event(lab, broker, found, members,
                       f"broker {broker} restarted after {time.time() - started:.0f} s; rebalanced:")


def estate_rolling(lab: Lab) -> None:
    """A rolling restart across two services: service a runs consumers of two groups, service b of two more, each
    service on two replicas (a host folder each). Each replica in turn stops (its consumers leave their groups) and
    starts again (they join): a deploy wave across four groups, with no evidence shared but its timing."""
    groups = [f"lab-estate-w{k}" for k in range(4)]
    replicas: dict[str, list[Member]] = {f"lab-svc-{svc}-{n}": [] for svc in "ab" for n in (1, 2)}
    for k, g in enumerate(groups):
        t = _topic(lab, g)
        for n in (1, 2):
            host = f"lab-svc-{'ab'[k // 2]}-{n}"
            replicas[host].append(_join(lab, _spec(g, n, [t], layout="kafka", host=host)))
    first = None
    for host, hosted in replicas.items():
        ids = {m.spec.group: m.member_id for m in hosted}
        left = lab.step_groups(
            {m.spec.group: [Expect("membership_change", "member_leave", LEAVE, trigger=ids[m.spec.group])]
             for m in hosted}, functools.partial(_close_all, hosted), title=f"{host} stops")
        first = first or min(r[0].started_at for r in left.values())
        since = time.time()

        def start(hosted: list[Member] = hosted, since: float = since) -> None:
            for m in hosted:
                m.start()
            for m in hosted:
                m.wait_assigned(since=since)

        lab.step_groups({m.spec.group: [Expect("membership_change", "member_join", JOIN, trigger=_id_of(m))]
                         for m in hosted}, start, title=f"{host} starts again")
    _estate_row(lab, "deploy_wave", None, groups, [], first)
    for g in groups:
        _teardown(lab, [m for m in lab.members if m.spec.group == g and m.alive()])
