"""What the replay of one group's events keeps: the rules, the rebalance in progress, the members and their
sessions, the removals a rejoin may be traced to, and the state transitions seen so far.

This is one value per group. The parts of the replay (broker.py, epochs.py, client_only.py, refine.py) are objects
that are each handed it and change it through the bookkeeping below; timeline.Timeline creates it and them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pipelines.gold.context import GroupContext
from pipelines.gold.machines import MOVES, Move
from pipelines.gold.records import Evidence, RebalanceRow, Step, TimelineEvent
from pipelines.gold.rulebook import Verdict, window
from pipelines.settings.config import Thresholds

NEIGHBOUR_S = window("neighbour_s")  # member events this close to a start (or an epoch bump) belong to it
# KIP-848 consumer groups and KIP-1071 streams groups: broker events that bump a group's epoch, most decisive first
# (a fence or leave explains the bump better than a join logged in the same instant).
EPOCH_CAUSES = ("member_fenced", "member_left", "static_member_replaced", "member_joining",
                "group_protocol_converted", "member_subscription_changed", "subscription_metadata_changed",
                "group_config_changed", "streams_topology_changed")
# A state transition: when, which state, generation, rebalance id (None between rebalances), id of the event.
Transition = tuple[pd.Timestamp, str, int | None, str | None, str]


# The reason of a rebalance a join opens, with the member id (rule `reason_new_member` reads it too).
NEW_MEMBER_REASON = re.compile(r"Adding new member ([^\s,;)]+)", re.I)


def _arriving(event: TimelineEvent) -> str | None:
    """The member a broker line shows arriving at its coordinator (a join, a static member's return, the `Adding
    new member` reason of the rebalance a join opens), or None."""
    if event["event_type"] in ("member_joining", "static_member_rejoined"):
        return event.get("member_id") or None
    if event["event_type"] == "rebalance_started":
        found = NEW_MEMBER_REASON.search(event.get("reason") or "")
        return found.group(1) if found else None
    return None


# The configured thresholds are the replay's rules' settings: declared once, in pipelines.settings.config.Thresholds.
Rules = Thresholds


@dataclass
class Removal:
    """A member removed against its will (expiry, GC pause, poll timeout, coordinator move), kept per process so
    that its return can be told apart from a fresh start."""

    member: str
    at: pd.Timestamp
    cause: str
    rebalance_id: str | None


@dataclass
class OpenRebalance:
    """A rebalance being replayed: its first event, its verdict and what is known so far of its outcome."""

    rebalance_id: str
    start: TimelineEvent
    verdict: Verdict
    members_before: int | None
    evidence: list[Evidence] = field(default_factory=list)
    generation_after: int | None = None
    stabilized_at: pd.Timestamp | None = None
    members_after: int | None = None
    joined: set[str] = field(default_factory=set)
    left: set[str] = field(default_factory=set)
    linked_to: str | None = None
    protocol: str = "classic"
    generation_before: int | None = None
    trace: list[Step] = field(default_factory=list)


def stable_id(*parts: object) -> str:
    """A deterministic id from the parts (24 hex characters)."""
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:24]


def to_int(value: Any) -> int | None:
    """`value` as an int, None for a missing value (None or a pandas NA)."""
    return None if value is None or pd.isna(value) else int(value)


def secs(delta: pd.Timedelta) -> float:
    """A time difference in seconds."""
    return delta.total_seconds()


class ReplayState:
    """The state of one group's replay (see the module docstring), and the bookkeeping every part shares."""

    def __init__(self, group_id: str, events: list[TimelineEvent], rules: Rules | None = None, *,
                 trace: bool = False) -> None:
        self.group_id = group_id
        self.rules = rules or Rules()
        # Whether to keep, per rebalance, the rules consulted and why each applied or not (`rebalance explain`).
        self.tracing = trace
        self.steps: list[Step] = []
        self.ctx = GroupContext.build(events)
        self.rebalances: list[RebalanceRow] = []
        self.states: list[dict[str, Any]] = []
        self.sessions: dict[str, dict[str, Any]] = {}
        self.members: set[str] = set()
        self.size: int | None = None
        self.current: OpenRebalance | None = None
        self.recent: list[TimelineEvent] = []
        self.removals: dict[str, Removal] = {}
        self.coordinator: int | None = None
        # Coordinator moves: when, from which broker (None: unknown), to which, the id of the load event.
        self.moves: list[tuple[pd.Timestamp, int | None, int, str]] = []
        self.transitions: list[Transition] = []
        self.departures: list[tuple[pd.Timestamp, str]] = []
        self.pending: list[TimelineEvent] = []
        self.implied: list[TimelineEvent] = []
        self.unloaded_from: int | None = None
        # When each broker last unloaded the group, and the stretches until the same broker loaded it again:
        # unloaded at, loaded again at, by which broker.
        self.unloads: dict[int, pd.Timestamp] = {}
        self.outages: list[tuple[pd.Timestamp, pd.Timestamp, int]] = []
        self.last_activity: pd.Timestamp | None = None
        self.epoch_size: int | None = None
        self._index(events)

    def _index(self, events: list[TimelineEvent]) -> None:
        """What the rules look up across the whole timeline: epoch bumps, target assignments, the last line, the
        group's empty moments and the members arriving at its coordinator."""
        bumps = [e for e in events if e.get("source_kind") == "broker" and e["event_type"] == "group_epoch_bumped"]
        self.bumps = [e["event_ts"] for e in bumps]
        # A streams group (4.2) logs no bump when it fences a member: the first target assignment of an epoch later
        # than the first bump and with no bump line of its own is that bump (the replay treats it as one).
        self.target_bumps: set[str] = set()
        bumped = {b for b in (to_int(e.get("group_epoch")) for e in bumps) if b is not None}
        first = min(bumped, default=0)
        for e in events if bumped else ():
            target = to_int(e.get("target_epoch")) if e["event_type"] == "target_assignment_computed" else None
            if e.get("source_kind") == "broker" and target is not None and target not in bumped and target > first:
                bumped.add(target)
                self.target_bumps.add(e["event_id"])
                self.bumps.append(e["event_ts"])
        self.bumps.sort()
        # The group's last line (its logs may end before a member had time to come back).
        self.horizon: pd.Timestamp | None = max((e["event_ts"] for e in events), default=None)
        # When the group became empty (the coordinator's `is now empty` lines), in time order.
        self.empties: list[pd.Timestamp] = []
        # Members arriving at the coordinator (joining, rejoining), in time order: when, which member id.
        self.arrivals: list[tuple[pd.Timestamp, str]] = []
        # When each target assignment epoch was first computed.
        self.targets: dict[int, pd.Timestamp] = {}
        for e in events:
            if e["event_type"] == "target_assignment_computed":
                epoch = to_int(e.get("target_epoch"))
                if epoch is not None:
                    self.targets.setdefault(epoch, e["event_ts"])
            if e.get("source_kind") != "broker":
                continue
            if e["event_type"] == "group_emptied":
                self.empties.append(e["event_ts"])
            elif who := _arriving(e):
                self.arrivals.append((e["event_ts"], who))

    def consider(self, rule_id: str, applied: bool, note: str | Callable[[], str]) -> None:
        """Record that rule `rule_id` was consulted for the rebalance being decided (kept only when tracing)."""
        if self.tracing:
            self.steps.append((rule_id, applied, note() if callable(note) else note))

    def take_steps(self, verdict: Verdict) -> list[Step]:
        """The steps recorded since the last call, for the rebalance `verdict` decides: the deciding rule is among
        them (recorded here when no step named it)."""
        steps, self.steps = self.steps, []
        if self.tracing and not any(rule_id == verdict.rule and applied for rule_id, applied, _ in steps):
            steps.append((verdict.rule, True, verdict.explanation))
        return steps

    def join(self, member: str, event: TimelineEvent) -> None:
        self.members.add(member)
        if member not in self.sessions:
            self.sessions[member] = {
                "session_id": stable_id(self.group_id, member), "group_id": self.group_id, "member_id": member,
                "client_id": event.get("client_id"), "group_instance_id": event.get("group_instance_id"),
                "instance": self.ctx.instance_of(member), "client_host": event.get("client_host"),
                "joined_at": event["event_ts"], "left_at": None, "end_reason": "active",
                "first_generation": None, "last_generation": None, "rebalances": 0,
            }

    def leave(self, member: str, at: pd.Timestamp, reason: str) -> None:
        if reason == "left":
            # A process that leaves of its own accord after a member of its folder was removed had come back
            # already: that removal explains no later join (its next member is a fresh start or a new episode).
            instance = self.ctx.instance_of(member)
            removal = self.removals.get(instance or "")
            if removal is not None and removal.member != member and removal.at <= at:
                del self.removals[instance or ""]
        if member in self.members:
            self.departures.append((at, member))
            if len(self.departures) > 64:
                del self.departures[:32]
        self.members.discard(member)
        session = self.sessions.get(member)
        if session is not None and session["left_at"] is None:
            session["left_at"], session["end_reason"] = at, reason

    def mark_generation(self, generation: int | None) -> None:
        for member in self.members:
            session = self.sessions.get(member)
            if session is None:
                continue
            if session["first_generation"] is None:
                session["first_generation"] = generation
            session["last_generation"] = generation
            session["rebalances"] += 1

    def transition(self, ts: pd.Timestamp, move: Move, generation: int | None, rebalance_id: str | None,
                   event: TimelineEvent) -> None:
        """The group enters the state `move` leads to (machines.MOVES) at `ts`, shown by `event`."""
        self.transitions.append((ts, MOVES[move], generation, rebalance_id, event["event_id"]))
