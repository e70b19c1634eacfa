"""Partition churn: what each rebalance moved, per member, from the members' own lines.

A member's partition lines come in cycles: the revocations and losses of a rebalance, closed by the assignment it
received (`Revoke previously assigned partitions [...]` then `Adding newly assigned partitions: [...]`, librdkafka's
`delegating revoke of 6 partition(s)` then `delegating assign of 3 partition(s)`). A cooperative member revokes and
receives only what moves; an eager one revokes everything and receives its whole assignment again. Following each
member's owned partitions across its cycles tells what it kept. Each cycle goes to the rebalance of its group it
belongs to in time (`attribute`); a cycle no rebalance accounts for keeps a null `rebalance_id` rather than vanishing.

Java and Streams print the partitions themselves; librdkafka prints counts only, so its rows have counts and null
lists (and a null `kept`).
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import pandas as pd

from pipelines.gold.rebalance_index import TAIL_S, Starts, attribute
from pipelines.gold.records import RebalanceRow, TimelineEvent
from pipelines.gold.replay_state import stable_id
from pipelines.gold.rulebook import window

__all__ = ["Starts", "attribute", "churn_rows", "cycles", "logged_count", "partition_list"]

# The event types that move partitions, by what they do. Streams' own lines stand in for a member only when its
# embedded consumer's lines (the client_partitions_* ones) are absent from its process: both describe the same move.
_MOVES = {"client_partitions_revoked": "revoked", "client_partitions_assigned": "assigned",
          "client_partitions_lost": "lost"}
_STREAMS_MOVES = {"streams_partitions_revoked": "revoked", "streams_partitions_assigned": "assigned",
                  "streams_partitions_lost": "lost"}
# A Streams-protocol member (KIP-1071, 4.2+) prints tasks, and its whole target assignment rather than what moved:
# not partitions, so not counted here yet.
_TASK_WORDINGS = "s_kip1071_"
# A consumer starting (its `ConsumerConfig values:`, its `Subscribed to topic(s)`) owns nothing yet; one leaving
# (LeaveGroup, or a static member's `Resetting generation and member id due to: consumer pro-actively leaving the
# group`, which sends none) owns nothing after. Either ends the member's open cycle.
_STARTED = frozenset({"client_config", "client_subscribed"})
_LEFT = frozenset({"client_leaving", "client_left"})
_LEAVING_RESET = re.compile(r"leaving the group", re.IGNORECASE)

# librdkafka's counts: `delegating assign of 6 partition(s)`, `revoking all 6 partition(s)`, `revoking 2 of 6
# partition(s)`, `current assignment of 6 partition(s) lost`.
_COUNT = re.compile(r"(?:of|all|revoking) (\d+)(?: of \d+)? partition\(s\)")
# A failed commit belongs to a member's cycle from this long before its first line (the commit a member attempts as
# the rebalance begins fails as or just before it logs the loss) to TAIL_S after its last.
RISK_S = window("churn_risk_s")
_BEFORE, _AFTER, _AT = pd.Timedelta(seconds=RISK_S), pd.Timedelta(seconds=TAIL_S), itemgetter("event_ts")
_COMMIT_FAILED = "client_commit_failed"


def partition_list(text: str | None) -> list[str] | None:
    """The partitions of a logged list (`[t-0, t-1]`, `t-0, t-1`, `[]`), in logged order; None when `text` is no
    list (absent, or a count)."""
    if text is None:
        return None
    inner = text.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    items = [item.strip() for item in inner.split(",")]
    items = [item for item in items if item]
    if not items:
        return []
    if any(" " in item for item in items):
        return None
    return items


def logged_count(message: str | None) -> int | None:
    """The partition count a count-only line prints (librdkafka), None when it prints none."""
    match = _COUNT.search(message or "")
    return int(match.group(1)) if match else None


@dataclass
class _Cycle:
    member: str
    instance: str | None
    client_id: str | None
    member_id: str | None
    first_at: pd.Timestamp
    last_at: pd.Timestamp
    owned_before: set[str] | None
    owned_count_before: int | None
    moved: dict[str, set[str] | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    event_ids: list[str] = field(default_factory=list)
    assigned_at: pd.Timestamp | None = None

    def add(self, kind: str, partitions: list[str] | None, count: int | None) -> None:
        if partitions is not None:
            known = self.moved.get(kind, set())
            self.moved[kind] = None if known is None else known | set(partitions)
            self.counts[kind] = len(self.moved[kind] or ())
        elif kind == "revoked" and "lost" in self.counts and self.moved.get("lost") is None:
            # librdkafka hands a lost assignment to the application as a revocation (`current assignment of 3
            # partition(s) lost: ... revoking assignment`, then `delegating revoke of 3`): one move, the loss.
            return
        else:
            self.moved[kind] = None
            # A repeated count-only line of one move (librdkafka's `revoking all` and `delegating revoke`) counts once.
            self.counts[kind] = max(self.counts.get(kind, 0), count or 0)


def _member_key(event: TimelineEvent) -> tuple[str, str | None, str | None]:
    """(member label, client id, member id) of a partition line: its process and client."""
    client, member = event.get("client_id"), event.get("member_id")
    instance = event.get("instance") or ""
    return f"{instance}/{client or member or ''}", client, member


def _is_leaving(event: TimelineEvent) -> bool:
    kind = event.get("event_type")
    reason = event.get("reason") or ""
    return kind in _LEFT or (kind == "client_generation_reset" and bool(_LEAVING_RESET.search(reason)))


def _members_of(event: TimelineEvent, members: set[str]) -> set[str]:
    """The members a start or leave line is about: its own client in its process when the line names it (by client
    or member id), else every member of that process."""
    prefix = f"{event.get('instance') or ''}/"
    named = {prefix + name for name in (event.get("client_id"), event.get("member_id")) if name}
    return named & members if named else {m for m in members if m.startswith(prefix)}


def _members_with_consumer_lines(events: Iterable[TimelineEvent]) -> set[str | None]:
    return {e.get("instance") for e in events if e.get("event_type") in _MOVES}


def cycles(events: list[TimelineEvent]) -> list[_Cycle]:
    """Every member's partition cycles in `events` (one group's, in time order)."""
    consumer_instances = _members_with_consumer_lines(events)
    owned: dict[str, set[str] | None] = {}
    owned_count: dict[str, int | None] = {}
    open_cycles: dict[str, _Cycle] = {}
    done: list[_Cycle] = []
    for event in events:
        kind_name = str(event.get("event_type"))
        if kind_name in _STARTED or _is_leaving(event):
            ended = _members_of(event, set(owned) | set(open_cycles))
            for name in ended & set(open_cycles):
                done.append(open_cycles.pop(name))
                _close(done[-1], owned, owned_count)
            for name in ended:
                owned[name], owned_count[name] = set(), 0
            continue
        if kind_name in _STREAMS_MOVES and (event.get("instance") in consumer_instances
                                            or str(event.get("template_id") or "").startswith(_TASK_WORDINGS)):
            continue
        kind = _MOVES.get(kind_name) or _STREAMS_MOVES.get(kind_name)
        if kind is None:
            continue
        member, client, member_id = _member_key(event)
        ts = event["event_ts"]
        cycle = open_cycles.get(member)
        if cycle is None:
            before = owned.get(member, set())
            cycle = _Cycle(member, event.get("instance"), client, member_id, ts, ts,
                           None if before is None else set(before), owned_count.get(member, 0))
            open_cycles[member] = cycle
        cycle.last_at = ts
        cycle.member_id = cycle.member_id or member_id
        cycle.event_ids.append(event["event_id"])
        partitions, count = partition_list(event.get("partitions")), logged_count(event.get("message"))
        if kind == "lost" and partitions is None and count is None:
            # `Giving away all assigned partitions as lost`: everything the member owned.
            known = owned.get(member, set())
            partitions = None if known is None else sorted(known)
            count = owned_count.get(member, 0)
        cycle.add(kind, partitions, count)
        if kind == "assigned":
            cycle.assigned_at = ts
            _close(cycle, owned, owned_count)
            done.append(open_cycles.pop(member))
    for cycle in open_cycles.values():
        _close(cycle, owned, owned_count)
        done.append(cycle)
    return done


def _after(cycle: _Cycle) -> tuple[set[str] | None, int | None]:
    """What the member owns after the cycle: its partitions when every list is known, else only their number when
    the number before is known (librdkafka's counts), else nothing."""
    moved, counts = cycle.moved, cycle.counts
    if cycle.owned_before is not None and all(v is not None for v in moved.values()):
        after = (cycle.owned_before - (moved.get("revoked") or set()) - (moved.get("lost") or set())) | (
            moved.get("assigned") or set())
        return after, len(after)
    if cycle.owned_count_before is None:
        return None, None
    left = max(cycle.owned_count_before - counts.get("revoked", 0) - counts.get("lost", 0), 0)
    return None, left + counts.get("assigned", 0)


def _close(cycle: _Cycle, owned: dict[str, set[str] | None], owned_count: dict[str, int | None]) -> None:
    """Apply the cycle's moves to what its member owns."""
    owned[cycle.member], owned_count[cycle.member] = _after(cycle)


def _commit_failures(events: Iterable[TimelineEvent]) -> dict[str, list[TimelineEvent]]:
    """Each member's failed offset commits (CommitFailedException, `Offset commit failed on partition ...`), in
    time order."""
    failures: dict[str, list[TimelineEvent]] = {}
    for event in events:
        if event.get("event_type") == _COMMIT_FAILED:
            failures.setdefault(_member_key(event)[0], []).append(event)
    for found in failures.values():
        found.sort(key=_AT)  # stable: events of one instant keep their order
    return failures


def _risk(cycle: _Cycle, failures: list[TimelineEvent], since: pd.Timestamp | None,
          until: pd.Timestamp | None) -> dict[str, Any]:
    """The reprocessing risk of a cycle: the member's failed commits from RISK_S before its first line to TAIL_S
    after its last (within its neighbour cycles), and the partitions whose records the next owner may process again:
    those lost (never committed after their last poll), and those given away after a failed commit (the ones a
    failure names, else all it revoked)."""
    # In time order: only the window's failures are read (a long history's thousands of cycles each read them all).
    first = bisect_left(failures, cycle.first_at - _BEFORE, key=_AT)
    last = bisect_right(failures, cycle.last_at + _AFTER, key=_AT)
    near = [f for f in failures[first:last] if (since is None or f["event_ts"] > since)
            and (until is None or f["event_ts"] < until)]
    lost, revoked = cycle.moved.get("lost", set()), cycle.moved.get("revoked", set())
    named = {p for f in near for p in partition_list(f.get("partitions")) or ()}
    exposed_count: int | None
    if lost is None or (near and revoked is None and not named):
        exposed, exposed_count = None, cycle.counts.get("lost", 0) + (cycle.counts.get("revoked", 0) if near else 0)
    else:
        given_away = (named & (revoked or set()) or named) if named else (revoked or set())
        exposed = sorted(lost | (given_away if near else set()), key=_partition_order)
        exposed_count = len(exposed)
    verdict = "commit_failed" if near else "partitions_lost" if cycle.counts.get("lost") else "none"
    return {"commit_failures": len(near), "exposed": exposed_count, "exposed_partitions": exposed,
            "reprocessing_risk": verdict, "_risk_ids": [f["event_id"] for f in near]}


def churn_rows(group_id: str, events: list[TimelineEvent], rebalances: list[RebalanceRow],
               sessions: Iterable[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """gold_partition_churn rows of one group: per rebalance and member, the partitions revoked, assigned and lost,
    what the member owned before and after, how many of its partitions it kept, and its reprocessing risk.
    `sessions` (the group's gold_member_sessions rows) tie a rebalance's trigger member id to its process."""
    instance_of = {s["member_id"]: s["instance"] for s in sessions if s.get("instance")}
    failures = _commit_failures(events)
    rows = []
    found = sorted(cycles(events), key=lambda c: c.first_at)
    # Each cycle's neighbours of the same member: when its previous cycle ended and its next one began.
    following: dict[int, pd.Timestamp | None] = {id(c): None for c in found}
    preceding: dict[int, pd.Timestamp | None] = {}
    latest: dict[str, _Cycle] = {}
    for cycle in found:
        before = latest.get(cycle.member)
        preceding[id(cycle)] = None if before is None else before.last_at
        if before is not None:
            following[id(before)] = cycle.first_at
        latest[cycle.member] = cycle
    starts = Starts.of(rebalances)
    for cycle in found:
        anchor = cycle.assigned_at if cycle.assigned_at is not None else cycle.first_at
        rebalance_id = attribute(anchor, cycle.assigned_at is not None, starts, instance=cycle.instance,
                                 instance_of=instance_of, until=following[id(cycle)])
        after, after_count = _after(cycle)
        risk = _risk(cycle, failures.get(cycle.member, []), preceding[id(cycle)], following[id(cycle)])
        rows.append({
            "churn_id": stable_id(group_id, cycle.member, cycle.event_ids[0]),
            "rebalance_id": rebalance_id, "group_id": group_id, "member": cycle.member, "instance": cycle.instance,
            "client_id": cycle.client_id, "member_id": cycle.member_id,
            "revoked": cycle.counts.get("revoked", 0), "assigned": cycle.counts.get("assigned", 0),
            "lost": cycle.counts.get("lost", 0),
            "owned_before": cycle.owned_count_before, "owned_after": after_count,
            "kept": None if after is None or cycle.owned_before is None else len(cycle.owned_before & after),
            "revoked_partitions": _listed(cycle, "revoked"), "assigned_partitions": _listed(cycle, "assigned"),
            "lost_partitions": _listed(cycle, "lost"),
            "commit_failures": risk["commit_failures"], "exposed": risk["exposed"],
            "exposed_partitions": risk["exposed_partitions"], "reprocessing_risk": risk["reprocessing_risk"],
            "first_event_at": cycle.first_at, "last_event_at": cycle.last_at,
            "event_ids": list(cycle.event_ids) + risk["_risk_ids"],
        })
    return rows


def _listed(cycle: _Cycle, kind: str) -> list[str] | None:
    if kind not in cycle.moved:
        return []
    moved = cycle.moved[kind]
    return None if moved is None else sorted(moved, key=_partition_order)


@functools.lru_cache(maxsize=4096)  # a group's partitions are few and named in every cycle's lists
def _partition_order(name: str) -> tuple[str, int, str]:
    """Topic, then partition number (`t-10` after `t-9`)."""
    topic, _, number = name.rpartition("-")
    return (topic, int(number), "") if number.isdigit() else (name, -1, name)
