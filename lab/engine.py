"""The scenario engine: a step acts on the cluster, then waits (bounded) until the brokers logged the rebalances the
step should cause, and turns each into a truth row; a step whose rebalances differ from what it expected fails."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.apps import ConnectWorker, ShareMember, StreamsMember
from lab.brokerlog import BrokerLogs, Rebalance
from lab.cluster import BROKER_IDS, Cluster
from lab.members import Member, MemberSpec, RdMember
from lab.procs import LabError

Trigger = str | Callable[[], str | None] | None
# The process each client kind runs, and the type of group its members form.
MEMBER_KINDS: dict[str, type[Member]] = {"librdkafka": RdMember, "streams": StreamsMember, "connect": ConnectWorker,
                                         "share": ShareMember}
GROUP_TYPES = {"streams": "streams", "connect": "connect", "share": "share"}
# `Expect(trigger=FROM_BROKER)`: the member the broker's own line names (several members joined or left at once).
FROM_BROKER = "from-broker"
MEMBER_IN_REASON = re.compile(
    r"(?:[Aa]dding new member|[Rr]emoving member|Leader|[Mm]ember) (\S+?)(?: |$|;|\)|\.$)|request for \((\S+?)[,)]"
    r"|\[MemberId (\S+?)\]"
)


def named_members(reb: Rebalance) -> list[str]:
    """Member ids the broker's reasons (or, for KIP-848, the lines before the epoch bump) name, in order."""
    out = []
    for m in MEMBER_IN_REASON.finditer(" | ".join(reb.reasons)):
        name = m.group(1) or m.group(2) or m.group(3)
        if name and name not in out and name not in ("with", "to", "is", "joins", "left", "fenced", "leaving"):
            out.append(name)
    return out


@dataclass
class Expect:
    """Rebalances a step should cause: their cause, detail, a pattern the broker's reason must match, the member
    that triggered them, and how many (a clean close of several members at once may take one or more)."""

    cause: str
    detail: str
    reason: str | None = None
    trigger: Trigger = None
    count: tuple[int, int] = (1, 1)


class Lab:
    """One lab run on one cluster: members, steps, and the truth rows confirmed so far."""

    def __init__(self, cluster: Cluster, *, progress=print) -> None:
        self.cluster = cluster
        self.logs = BrokerLogs({b: cluster.server_log(b) for b in BROKER_IDS})
        self.progress = progress
        self.truth: list[dict[str, Any]] = []
        self.estate_truth: list[dict[str, Any]] = []  # truth/estate_incidents.jsonl rows
        self.members: list[Member] = []
        self.scenario = ""
        self.groups: dict[str, str] = {}  # group -> protocol
        self.clients: dict[str, str] = {}  # group -> the client its members run (java | librdkafka | streams | connect)
        self.notes: dict[str, Any] = {}  # what one scenario measured and a later one reuses

    @property
    def kit(self):
        return self.cluster.kit

    def member(self, spec: MemberSpec, *, wait: bool = False) -> Member:
        """Start a consumer (a JVM, or a librdkafka process) and, with `wait`, wait until it has its assignment."""
        self.groups.setdefault(spec.group, spec.protocol)
        self.clients.setdefault(spec.group, spec.client)
        m = MEMBER_KINDS.get(spec.client, Member)(self.cluster, spec)
        self.members.append(m)
        if wait:
            m.wait_assigned()
        return m

    def step(self, group: str, expects: list[Expect], action: Callable[[], object], *, timeout: float = 90.0,
             settle: float = 3.0, title: str = "") -> list[Rebalance]:
        """Run `action`, wait for the rebalances `expects` describes, confirm them and record their truth rows."""
        return self.step_groups({group: expects}, action, timeout=timeout, settle=settle, title=title)[group]

    def step_groups(self, expects: dict[str, list[Expect]], action: Callable[[], object], *, timeout: float = 90.0,
                    settle: float = 3.0, title: str = "") -> dict[str, list[Rebalance]]:
        """`step` for one action that rebalances several groups (a broker stall, one process hosting members of
        several groups): each group's rebalances are waited for, confirmed and recorded as `expects` says."""
        self.logs.refresh()
        before = {g: len(self.logs.rebalances(g)) for g in expects}
        t0 = time.time()
        action()
        deadline = t0 + timeout
        quiet_since = time.time()
        seen = -1
        while True:
            self.logs.refresh()
            new = {g: self.logs.rebalances(g)[before[g]:] for g in expects}
            count = sum(len(v) for v in new.values())
            if count != seen:
                seen, quiet_since = count, time.time()
            settled = (not any(self.logs.has_open_rebalance(g) for g in expects)
                       and time.time() - quiet_since >= settle)
            short = {g: len(new[g]) for g, exp in expects.items() if len(new[g]) < sum(e.count[0] for e in exp)}
            if not short and settled:
                break
            if time.time() > deadline:
                raise LabError(f"{title or ', '.join(expects)}: after {timeout:.0f} s too few rebalances in "
                               f"{short or 'none'} (or still open); broker reasons: "
                               f"{ {g: [r.reasons for r in v] for g, v in new.items()} }")
            time.sleep(0.25)
        for group, group_expects in expects.items():
            rows = self._confirm(group, group_expects, new[group], title)
            self.truth.extend(rows)
            for row in rows:
                self.progress(f"  {group} {'epoch' if row.get('group_epoch') else 'generation'} "
                              f"{row['generation_after']}: {row['cause']}/{row['cause_detail']}")
        return new

    def _confirm(self, group: str, expects: list[Expect], new: list[Rebalance], title: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        i = 0
        for exp in expects:
            taken = 0
            while i < len(new) and taken < exp.count[1]:
                reasons = " | ".join(new[i].reasons)
                if exp.reason and not re.search(exp.reason, reasons, re.IGNORECASE):
                    break
                rows.append(self._row(new[i], exp))
                i += 1
                taken += 1
            if taken < exp.count[0]:
                got = [r.reasons for r in new[i:]]
                raise LabError(f"{title or group}: expected {exp.cause}/{exp.detail} (reason ~ {exp.reason!r}), "
                               f"the broker logged {got}")
        if i < len(new):
            raise LabError(f"{title or group}: {len(new) - i} unexpected rebalance(s): {[r.reasons for r in new[i:]]}")
        return rows

    def _row(self, reb: Rebalance, exp: Expect) -> dict[str, Any]:
        named = named_members(reb)
        if exp.trigger == FROM_BROKER:
            trigger = named[0] if named else None
        else:
            trigger = exp.trigger() if callable(exp.trigger) else exp.trigger
        if trigger and named and trigger not in named:
            self.progress(f"  note: {reb.group} generation {reb.generation_after}: trigger {trigger} is not the "
                          f"member the broker named ({named})")
        protocol = self.groups.get(reb.group, "classic")
        if protocol in ("classic", "consumer"):  # a group converted live: each rebalance in its own protocol
            protocol = "consumer" if reb.outcome == "epoch" else "classic"
        row: dict[str, Any] = {
            "group_id": reb.group,
            "generation_after": reb.generation_after,
            "cause": exp.cause,
            "cause_detail": exp.detail,
            "started_at": reb.started_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "completed_at": reb.completed_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "trigger_member_id": trigger,
            "scenario": self.scenario,
            "protocol": protocol,
            "outcome": reb.outcome,
            "coordinator": reb.brokers[-1] if reb.brokers else None,
            "broker_reason": " | ".join(reb.reasons) if reb.reasons else None,
            "kafka_version": self.kit.version,
            "client_kind": self.clients.get(reb.group, "java"),
            "group_type": GROUP_TYPES.get(self.clients.get(reb.group, "java"), "consumer"),
        }
        if protocol in ("consumer", "streams"):
            row["group_epoch"] = reb.generation_after
        return row

    def quiet(self, group: str, seconds: float, title: str = "") -> None:
        """Wait `seconds` and fail if the group rebalanced meanwhile (a step that must not rebalance)."""
        self.logs.refresh()
        before = len(self.logs.rebalances(group))
        time.sleep(seconds)
        self.logs.refresh()
        after = self.logs.rebalances(group)[before:]
        if after:
            raise LabError(f"{title or group}: expected no rebalance, the broker logged {[r.reasons for r in after]}")

    def membership(self, group: str, pattern: str, action: Callable[[], object], *, count: int = 1,
                   timeout: float = 60.0, title: str = "") -> list[str]:
        """Run `action` and wait until the brokers logged `count` new lines of `group` matching `pattern`: a
        membership change that is no rebalance (a share group's), confirmed by the broker rather than assumed."""
        self.logs.refresh()
        before = len(self.logs.group_lines(group))
        action()
        deadline = time.time() + timeout
        while True:
            self.logs.refresh()
            hits = [g.message for g in self.logs.group_lines(group)[before:] if re.search(pattern, g.message)]
            if len(hits) >= count:
                self.progress(f"  {group}: {title or pattern} ({len(hits)} broker line(s), no rebalance)")
                return hits
            if time.time() > deadline:
                raise LabError(f"{title or group}: {len(hits)} broker line(s) matching {pattern!r} after "
                               f"{timeout:.0f} s, expected {count}")
            time.sleep(0.25)

    def unlabelled(self) -> list[tuple[str, int]]:
        """Broker rebalances of the lab's groups that have no truth row (should be none after a clean run). A share
        group's epochs are not rebalances: its members never stop for each other."""
        self.logs.refresh()
        known = {(r["group_id"], r["generation_after"]) for r in self.truth}
        return [(g, r.generation_after) for g in self.groups if self.clients.get(g) != "share"
                for r in self.logs.rebalances(g) if (g, r.generation_after) not in known]

    def stop_members(self) -> None:
        """Kill whatever members are still running (after a failure)."""
        for m in self.members:
            if m.alive():
                m.kill9()


def write_truth(rows: list[dict[str, Any]], path: Path) -> None:
    """truth/rebalances.jsonl (one JSON object per rebalance) or truth/estate_incidents.jsonl (per estate incident),
    in time order."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: (r["started_at"], r.get("group_id") or "", r.get("generation_after") or 0))
    path.write_text("".join(json.dumps(r, sort_keys=False) + "\n" for r in rows))
