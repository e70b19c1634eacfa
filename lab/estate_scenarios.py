"""Estate scenarios: one event that rebalances several groups at once (truth/estate_incidents.jsonl), with real
brokers and consumers."""

from __future__ import annotations

import signal
import time

from lab.cluster import COMMON
from lab.engine import Expect, Lab
from lab.members import Member
from lab.procs import LabError
from lab.scenarios import EXPIRY, JOIN, _id_of, _join, _spec, _teardown, _topic
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


def _estate_row(lab: Lab, kind: str, root: str, groups: list[str], unaffected: list[str], started: object) -> None:
    lab.estate_truth.append({"root_kind": kind, "root_instance": root, "groups": sorted(groups),
                             "groups_unaffected": sorted(unaffected), "started_at": _iso(started),
                             "scenario": lab.scenario, "kafka_version": lab.kit.version})


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
    hit = [g for g in groups if found[g]]
    lab.progress(f"  on waking, broker {broker} rebalanced {hit or 'no group'}")
    if len(hit) >= 2:
        _estate_row(lab, "coordinator_event", lab.cluster.instance(broker), hit,
                    [g for g in groups if g not in hit], min(found[g][0].started_at for g in hit))
    for m in members.values():
        _teardown(lab, [m])


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
