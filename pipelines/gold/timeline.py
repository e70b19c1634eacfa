"""One group's timeline from its events: rebalances with causes, state intervals and member sessions.

Pure Python over plain dicts (one per event, in time order) so it runs the same inside applyInPandas and in tests.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

import pandas as pd

from pipelines.gold.causes import Verdict, classify_client_signs, classify_reason, is_newcomer_sign
from pipelines.gold.context import GroupContext

_NEIGHBOUR_S = 5.0  # member events this close before a reason-less start (brokers before 2.1) explain it
# A leader's "cached metadata has changed" rejoin this soon after a member left is the leave's consequence when the
# leaver alone subscribed to some topic: the group's subscription shrank, so the leader's metadata snapshot changed.
_CASCADE_S = 30.0
# KIP-848: broker events that bump a consumer group's epoch, most decisive first (a fence or leave explains the bump
# better than a join logged in the same instant).
_EPOCH_CAUSES = ("member_fenced", "member_left", "static_member_replaced", "member_joining",
                 "member_subscription_changed", "subscription_metadata_changed")
# Causes that remove a member against its will; its return from the same process is a `rejoin` of that cause.
_REMOVAL_CAUSES = ("session_timeout", "gc_pause", "poll_timeout", "coordinator_change")
_SET_ITEMS = re.compile(r"[\w.\-]+(?:-[0-9a-f-]{36})?")
# Client-only reconstruction (no broker line of the group): the lines a member logs on its way into a rebalance, the
# lines that only explain one, and the lines that say its part of the rebalance is over.
_CLIENT_SIGNS = frozenset({
    "client_joining", "client_rejoin_requested", "client_partitions_revoked", "client_partitions_lost",
    "client_heartbeat_failed", "client_poll_timeout", "client_leaving", "client_generation_reset",
    "client_join_failed", "client_sync_failed", "client_rebalance_failed", "client_fenced", "client_coordinator_lost",
})
_CLIENT_CONTEXT = frozenset({"client_subscribed", "client_coordinator_discovered", "client_unsubscribed"})
_CLIENT_DONE = frozenset({"client_synced", "client_partitions_assigned"})
# A member's lines more than this apart before its join belong to different episodes (a coordinator hiccup an hour
# before is not this rebalance's start); a poll timeout or a leave always opens the rebalance its rejoin closes.
_CLIENT_CHAIN_S = 60.0
_ASSIGNED_MEMBER = re.compile(r"([^\s{},=]+)=Assignment\(")


@dataclass(frozen=True)
class Rules:
    """Thresholds of the refinement rules (from the configuration's `thresholds`)."""

    coordinator_move_window_s: float = 120
    heartbeat_tolerance_s: float = 3
    gc_pause_min_ms: float = 1000
    poll_timeout_window_s: float = 30
    rejoin_window_s: float = 900
    incident_gap_s: float = 300


@dataclass
class _Removal:
    member: str
    at: pd.Timestamp
    cause: str
    rebalance_id: str | None


@dataclass
class _Open:
    rebalance_id: str
    start: dict
    verdict: Verdict
    members_before: int | None
    evidence: list[dict] = field(default_factory=list)
    generation_after: int | None = None
    stabilized_at: pd.Timestamp | None = None
    members_after: int | None = None
    joined: set[str] = field(default_factory=set)
    left: set[str] = field(default_factory=set)
    linked_to: str | None = None
    protocol: str = "classic"
    generation_before: int | None = None


def stable_id(*parts: object) -> str:
    """A deterministic id from the parts (24 hex characters)."""
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:24]


def _int(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _secs(delta: pd.Timedelta) -> float:
    return delta.total_seconds()


class Timeline:
    """Replays one group's events; `rebalances`, `states` and `sessions` hold the resulting rows."""

    def __init__(self, group_id: str, events: list[dict], rules: Rules | None = None) -> None:
        self.group_id = group_id
        self.rules = rules or Rules()
        self.ctx = GroupContext.build(events)
        self.rebalances: list[dict] = []
        self.states: list[dict] = []
        self.sessions: dict[str, dict] = {}
        self._members: set[str] = set()
        self._size: int | None = None
        self._current: _Open | None = None
        self._recent: list[dict] = []
        self._removals: dict[str, _Removal] = {}
        self._coordinator: int | None = None
        self._moves: list[tuple[pd.Timestamp, int | None, int]] = []
        self._transitions: list[tuple[pd.Timestamp, str, int | None, str | None, str]] = []
        self._departures: list[tuple[pd.Timestamp, str]] = []
        self._pending: list[dict] = []
        self._epoch_size: int | None = None
        self._bumps = [e["event_ts"] for e in events
                       if e.get("source_kind") == "broker" and e["event_type"] == "group_epoch_bumped"]
        self._targets: dict[int, pd.Timestamp] = {}
        for e in events:
            if e["event_type"] == "target_assignment_computed" and _int(e.get("target_epoch")) is not None:
                self._targets.setdefault(_int(e["target_epoch"]), e["event_ts"])
        has_broker = False
        for event in events:
            if event.get("source_kind") == "broker":
                has_broker = True
                self._on_broker(event)
        if has_broker and self._targets and not self._bumps:
            self._target_only_epochs(events)
        if not has_broker:
            # Only the members' logs were landed: rebuild the rebalances from their joins (never mixed with broker
            # evidence, so results with broker logs stay as they are).
            self._client_only([e for e in events if e.get("source_kind") == "client"])
        self._finish()

    # ---- event handlers ----------------------------------------------------------------------------------------

    def _on_broker(self, event: dict) -> None:
        kind, member, ts = event["event_type"], event.get("member_id"), event["event_ts"]
        broker = _int(event.get("broker_id"))
        if kind == "group_loaded":
            if broker is not None and self._coordinator is not None and broker != self._coordinator:
                self._moves.append((ts, self._coordinator, broker))
            self._coordinator = broker
        elif broker is not None and kind != "group_unloaded":
            self._coordinator = broker
        if kind in ("member_joining", "member_loaded") and member:
            self._join(member, event)
        elif kind == "static_member_replaced":
            if event.get("old_member_id"):
                self._leave(event["old_member_id"], ts, "replaced")
            if member:
                self._join(member, event)
        elif kind in ("member_failed", "member_left") and member:
            if kind == "member_failed":
                self._record_removal(member, ts, self._expiry_verdict(member, ts)[0].cause)
            self._leave(member, ts, "expired" if kind == "member_failed" else "left")
            if self._current is not None:
                self._current.left.add(member)
                self._current.evidence.append({"event_id": event["event_id"], "explanation": f"{kind}: {member}"})
        elif kind == "member_fenced" and member:
            self._leave(member, ts, "expired")
        elif kind == "members_removed":
            for gone in _SET_ITEMS.findall(event.get("members") or ""):
                if gone in self._members:
                    self._leave(gone, ts, "rebalance_timeout")
        elif kind == "rebalance_started":
            self._pending.clear()
            self._start(event)
        elif kind == "group_epoch_bumped" and _int(event.get("group_epoch")) is not None:
            self._bump(event)
        elif kind == "group_stabilized" and self._current is not None:
            current = self._current
            current.generation_after = _int(event.get("generation"))
            current.stabilized_at = ts
            count = _int(event.get("member_count"))
            current.members_after = count if count is not None else len(self._members)
            self._mark_generation(current.generation_after)
            self._transition(ts, "CompletingRebalance", current.generation_after, current.rebalance_id, event)
        elif kind == "assignment_received" and self._current is not None:
            if _int(event.get("generation")) == self._current.generation_after:
                self._transition(ts, "Stable", self._current.generation_after, self._current.rebalance_id, event)
                self._close(ts, "stabilized")
        elif kind == "group_emptied":
            generation = _int(event.get("generation"))
            if self._current is not None:
                self._current.generation_after = generation
                self._current.members_after = 0
                self._close(ts, "emptied", transition=False)
            for gone in list(self._members):
                self._leave(gone, ts, "left")
            self._size = 0
            self._transition(ts, "Empty", generation, None, event)
        elif kind == "group_dead":
            self._transition(ts, "Dead", _int(event.get("generation")), None, event)
        if kind in _EPOCH_CAUSES:
            self._pending.append(event)
            if len(self._pending) > 64:
                del self._pending[:32]
        self._recent.append(event)
        if len(self._recent) > 64:
            del self._recent[:32]

    def _start(self, event: dict) -> None:
        ts = event["event_ts"]
        interrupted = self._interrupted_by_move(event)
        if self._current is not None:
            self._close(ts, "superseded", transition=False)
        client_reason, leave_evidence = event.get("client_reason"), []
        verdict = classify_reason(event.get("reason"), client_reason)
        if verdict is not None and verdict.detail == "member_leave" and not client_reason:
            left = self._left_line(verdict.trigger_member_id, ts)
            if left is not None:
                client_reason = left["client_reason"]
                verdict = classify_reason(event.get("reason"), client_reason)
                leave_evidence = [{"event_id": left["event_id"],
                                   "explanation": f"{left['member_id']} left; client reason: {client_reason}"}]
        verdict = verdict or self._neighbour_verdict(ts, _int(event.get("generation")))
        joining = verdict.detail in ("member_join", "rejoin")
        if interrupted is not None and verdict.cause in ("membership_change", "unknown") and verdict.detail != (
                "member_leave"):
            old, new, moved_at = interrupted
            verdict = Verdict("coordinator_change", "coordinator_failover", 0.8, verdict.trigger_member_id,
                              f"{verdict.explanation}; the rebalance in progress on coordinator {old} was cut off when "
                              f"the group moved to coordinator {new} at {moved_at:%H:%M:%S}, and its members joined "
                              f"again there")
        verdict, evidence, link = self._refine(verdict, ts, client_reason=client_reason)
        evidence = leave_evidence + evidence
        before = self._size if self._size is not None else (0 if _int(event.get("generation")) == 0 else None)
        current = _Open(stable_id(self.group_id, event["event_id"]), event, verdict, before, evidence, linked_to=link)
        self._current = current
        trigger = verdict.trigger_member_id
        if trigger and (joining or verdict.detail in ("member_join", "rejoin")):
            if trigger not in self._members:
                self._join(trigger, event)
            current.joined.add(trigger)
        elif trigger and verdict.cause in _REMOVAL_CAUSES:
            self._record_removal(trigger, ts, verdict.cause)
            self._leave(trigger, ts, "poll_timeout" if verdict.cause == "poll_timeout" else "expired")
            current.left.add(trigger)
        elif trigger and verdict.detail == "member_leave":
            self._leave(trigger, ts, "left")
            current.left.add(trigger)
        self._transition(ts, "PreparingRebalance", _int(event.get("generation")), current.rebalance_id, event)

    def _bump(self, event: dict) -> None:
        """KIP-848: a consumer group's epoch bump is one rebalance; its cause is the member event just before it."""
        ts, epoch = event["event_ts"], _int(event["group_epoch"])
        pending = [e for e in self._pending if _secs(ts - e["event_ts"]) <= _NEIGHBOUR_S]
        self._pending.clear()
        decisive = min(pending, key=lambda e: _EPOCH_CAUSES.index(e["event_type"]), default=None)
        verdict = self._epoch_verdict(decisive)
        verdict, evidence, link = self._refine(verdict, ts, protocol="consumer")
        if decisive is not None:
            line = f"{decisive['event_type']}: {decisive.get('member_id')}"
            if decisive.get("reason"):
                line += f" ({decisive['reason']})"
            evidence = [{"event_id": decisive["event_id"], "explanation": line}] + evidence
        before = self._epoch_size if self._epoch_size is not None else (0 if epoch == 1 else None)
        current = _Open(stable_id(self.group_id, event["event_id"]), event, verdict, before, evidence,
                        generation_after=epoch, linked_to=link, protocol="consumer", generation_before=epoch - 1)
        for e in pending:
            if e["event_type"] in ("member_joining", "static_member_replaced") and e.get("member_id"):
                current.joined.add(e["member_id"])
            elif e["event_type"] in ("member_left", "member_fenced") and e.get("member_id"):
                current.left.add(e["member_id"])
        trigger = verdict.trigger_member_id
        if trigger and verdict.cause in _REMOVAL_CAUSES and verdict.detail != "rejoin":
            self._record_removal(trigger, ts, verdict.cause, current.rebalance_id)
        current.members_after = len(self._members)
        self._epoch_size = current.members_after
        self._mark_generation(epoch)
        completed_at, outcome = self._epoch_completion(current, ts)
        self.rebalances.append(self._row(current, completed_at=completed_at, outcome=outcome))
        self._epoch_states(current, event, ts, completed_at, outcome)

    def _epoch_states(self, current: _Open, event: dict, ts: pd.Timestamp, completed_at, outcome: str) -> None:
        """A consumer group's states around one epoch bump, as the new coordinator derives them: Assigning until
        the target assignment of the epoch is computed, Reconciling until every member has reached it, then Stable;
        Empty when the bump left no member."""
        epoch, rebalance_id = current.generation_after, current.rebalance_id
        if outcome == "emptied":
            self._transition(ts, "Empty", epoch, rebalance_id, event)
            return
        self._transition(ts, "Assigning", epoch, rebalance_id, event)
        targeted = self._targets.get(epoch)
        later = [b for b in self._bumps if b > ts]
        settled_from = ts
        if targeted is not None and targeted >= ts and (not later or targeted < later[0]):
            self._transition(targeted, "Reconciling", epoch, rebalance_id, event)
            settled_from = targeted
        if outcome == "stabilized" and completed_at is not None:
            self._transition(max(completed_at, settled_from), "Stable", epoch, rebalance_id, event)

    def _epoch_completion(self, current: _Open, ts: pd.Timestamp) -> tuple[pd.Timestamp | None, str]:
        """When the members reached the epoch's target assignment: their clients' STABLE transitions, else the
        broker's target-assignment line; `superseded` when the next bump came first, `open` when nothing says."""
        later = [b for b in self._bumps if b > ts]
        end = later[0] if later else None
        if not current.members_after:
            return ts, "emptied"
        done = [t for t in (self._targets.get(current.generation_after),) if t is not None and (end is None or t < end)]
        for member in self._members:
            seen, stable_at = self.ctx.reached_stable(member, ts, end)
            if not seen:
                continue
            if stable_at is None:
                return (end, "superseded") if end is not None else (None, "open")
            done.append(stable_at)
        if done:
            return max(done), "stabilized"
        return (end, "superseded") if end is not None else (None, "open")

    def _epoch_verdict(self, event: dict | None) -> Verdict:
        """The cause the broker's member event before a KIP-848 epoch bump gives (before client-log refinement)."""
        if event is None:
            return Verdict("metadata_change", "partition_count_change", 0.5, None,
                           "no member joined, left or was fenced just before the epoch bump: the metadata of the "
                           "subscribed topics changed")
        kind, member, line = event["event_type"], event.get("member_id"), f"broker: {event['event_type']}"
        if kind == "member_fenced":
            reason = event.get("reason") or ""
            if re.search(r"session (?:expired|timeout)", reason, re.I):
                return Verdict("session_timeout", "heartbeat_expiration", 0.9, member,
                               f"{member} fenced because {reason}")
            if re.search(r"revoke|transition from epoch|rebalance timeout", reason, re.I):
                return Verdict("poll_timeout", "rebalance_timeout", 0.6, member,
                               f"{member} fenced because {reason} (its rebalance timeout is max.poll.interval.ms)")
            return Verdict("unknown", "fenced", 0.3, member, f"{member} fenced because {reason}")
        if kind == "member_left":
            return Verdict("membership_change", "member_leave", 0.85, member, f"{member} left the consumer group")
        if kind == "static_member_replaced":
            return Verdict("membership_change", "static_member_replaced", 0.8, member,
                           f"static member {member} replaced {event.get('old_member_id')}")
        if kind == "member_joining":
            return Verdict("membership_change", "member_join", 0.85, member, f"{member} joined the consumer group")
        return Verdict("metadata_change", "subscription_change", 0.8, member, f"{line}: {member or 'the group'} "
                       "changed its subscription")

    def _left_line(self, member: str | None, ts: pd.Timestamp) -> dict | None:
        """Kafka 4.x: the separate `has left group ...; client reason: ...` line of `member` just before `ts`."""
        for event in reversed(self._recent):
            if _secs(ts - event["event_ts"]) > _NEIGHBOUR_S:
                break
            if event["event_type"] == "member_left" and event.get("member_id") == member and event.get("client_reason"):
                return event
        return None

    def _interrupted_by_move(self, event: dict) -> tuple[int | None, int, pd.Timestamp] | None:
        """The coordinator move that cut off the open rebalance, when `event` restarts it on the new coordinator."""
        current, broker = self._current, _int(event.get("broker_id"))
        if current is None or broker is None:
            return None
        for moved_at, old, new in reversed(self._moves):
            if (new == broker and current.start["event_ts"] <= moved_at <= event["event_ts"]
                    and _secs(event["event_ts"] - moved_at) <= self.rules.coordinator_move_window_s):
                return old, new, moved_at
        return None

    def _target_only_epochs(self, events: list[dict]) -> None:
        """KIP-848 broker logs with `Computed a new target assignment for epoch N` but no `Bumped group epoch` line at
        all (an excerpt, or a log level that hides it): epoch N was bumped, for a reason the missing lines would have
        named, so the cause is unknown. Done when the members' assignment states last turned STABLE before the next
        target."""
        targets = sorted((e for e in events if e.get("source_kind") == "broker"
                          and e["event_type"] == "target_assignment_computed" and _int(e.get("target_epoch"))),
                         key=lambda e: e["event_ts"])
        seen: set[int] = set()
        for index, event in enumerate(targets):
            epoch = _int(event["target_epoch"])
            if epoch in seen:
                continue
            seen.add(epoch)
            ts, end = event["event_ts"], targets[index + 1]["event_ts"] if index + 1 < len(targets) else None
            stable = [e["event_ts"] for e in events if e.get("source_kind") == "broker"
                      and e["event_type"] == "member_epoch_updated" and (e.get("state") or "").upper() == "STABLE"
                      and e["event_ts"] >= ts and (end is None or e["event_ts"] < end)]
            verdict = Verdict("unknown", None, 0.2, None,
                              f"the coordinator computed the target assignment of group epoch {epoch}, but its log "
                              "holds neither the `Bumped group epoch` line nor the member event that caused it")
            current = _Open(stable_id(self.group_id, event["event_id"]), event, verdict, None, [],
                            generation_after=epoch, protocol="consumer", generation_before=epoch - 1)
            completed = max(stable) if stable else None
            self.rebalances.append(self._row(current, completed_at=completed,
                                             outcome="stabilized" if completed is not None else "open"))
            self._transition(ts, "Reconciling", epoch, current.rebalance_id, event)
            if completed is not None:
                self._transition(completed, "Stable", epoch, current.rebalance_id, event)

    # ---- client-only groups --------------------------------------------------------------------------------------

    def _client_only(self, events: list[dict]) -> None:
        """Rebalances of a group whose coordinator's log is absent, from its members' own lines.

        Each `Successfully joined group with generation N` is the member's side of the rebalance that made
        generation N; members of one generation make one rebalance. Its start is the earliest line of the chain that
        led each member into it (revoke, `(Re-)joining group`, a heartbeat answered `group is rebalancing`, a poll
        timeout, ...), its end the last member's sync or assignment, its cause `causes.classify_client_signs` over
        those lines. Lines after a member's last join that lead to no join make one `open` rebalance.
        """
        streams: dict[tuple, list[dict]] = {}
        assignments: dict[int, tuple[dict, list[str]]] = {}
        for event in events:
            streams.setdefault((event.get("instance"), event.get("client_id")), []).append(event)
            generation = _int(event.get("generation"))
            if event["event_type"] == "client_assignment_computed" and generation is not None:
                assignments[generation] = (event, _ASSIGNED_MEMBER.findall(event.get("members") or ""))
        joins: list[dict] = []
        trailing: list[dict] = []
        for key, stream in streams.items():
            signs: list[dict] = []
            member, last, first = None, None, True
            for event in stream:
                kind = event["event_type"]
                if event.get("member_id"):
                    member = event["member_id"]
                if kind == "client_joined" and _int(event.get("generation")) is not None:
                    chain = self._named(self._chain(signs), member)
                    news = [e for e in chain
                            if is_newcomer_sign(e) and (first or e["event_type"] == "client_subscribed")]
                    last = {"generation": _int(event["generation"]), "event": event, "member": member,
                            "signs": [e for e in chain if e["event_type"] in _CLIENT_SIGNS],
                            "newcomers": [dict(e, _member=member) for e in news], "completed": event["event_ts"]}
                    joins.append(last)
                    signs, first = [], False
                elif kind in _CLIENT_DONE and last is not None and not signs:
                    if kind == "client_partitions_assigned" or _int(event.get("generation")) == last["generation"]:
                        last["completed"] = max(last["completed"], event["event_ts"])
                elif kind in _CLIENT_SIGNS or kind in _CLIENT_CONTEXT:
                    signs.append(dict(event, _member=event.get("member_id") or member))
            if any(e["event_type"] in _CLIENT_SIGNS for e in signs):
                trailing += self._named(self._chain(signs), member)
        by_generation: dict[int, list[dict]] = {}
        for join in joins:
            by_generation.setdefault(join["generation"], []).append(join)
        # A member's lines that lead to no join of its own belong to the next generation another member joined.
        order = sorted(by_generation, key=lambda g: min(j["event"]["event_ts"] for j in by_generation[g]))
        rest = []
        for event in trailing:
            later = [g for g in order if max(j["event"]["event_ts"] for j in by_generation[g]) >= event["event_ts"]]
            if later and event["event_type"] in _CLIENT_SIGNS:
                by_generation[later[0]][0]["signs"].append(event)
            else:
                rest.append(event)
        previous = None
        for generation in order:
            self._client_rebalance(generation, by_generation[generation], assignments, previous)
            previous = generation
        if any(e["event_type"] in _CLIENT_SIGNS for e in rest):
            self._client_rebalance(None, [{"generation": None, "event": None, "member": None,
                                           "signs": [e for e in rest if e["event_type"] in _CLIENT_SIGNS],
                                           "newcomers": [], "completed": None}], assignments, previous)

    @staticmethod
    def _named(chain: list[dict], member: str | None) -> list[dict]:
        """Each line of a member's chain named by the member id it was logged under: a line that prints none (the
        poll-timeout warning) takes the id of the next line that does (its LeaveGroup), else of the join."""
        named, carry = [], member
        for event in reversed(chain):
            if event.get("member_id"):
                carry = event["member_id"]
            named.append(event if event.get("_member") else dict(event, _member=carry))
        return named[::-1]

    @staticmethod
    def _chain(signs: list[dict]) -> list[dict]:
        """The member's lines that led into its join: the last run with no gap over _CLIENT_CHAIN_S, and any poll
        timeout or leave before it (its rejoin may come minutes later, when the slow batch ends)."""
        start = 0
        for i in range(1, len(signs)):
            if _secs(signs[i]["event_ts"] - signs[i - 1]["event_ts"]) > _CLIENT_CHAIN_S:
                start = i
        early = [e for e in signs[:start] if e["event_type"] in ("client_poll_timeout", "client_leaving")]
        return early + signs[start:]

    def _client_rebalance(self, generation: int | None, joins: list[dict], assignments: dict, previous) -> None:
        signs = sorted((e for j in joins for e in j["signs"]), key=lambda e: e["event_ts"])
        newcomers = [e for j in joins for e in j["newcomers"]]
        verdict, decisive = classify_client_signs(signs, newcomers)
        joined_lines = [j["event"] for j in joins if j["event"] is not None]
        evidence = []
        if decisive is not None:
            evidence.append({"event_id": decisive["event_id"], "explanation": f"{decisive['event_type']} "
                             f"({decisive.get('client_id') or decisive.get('instance')})"})
        left: set[str] = set()
        joined: set[str] = set()
        if generation is not None and generation in assignments and generation - 1 in assignments:
            line, now = assignments[generation]
            before = set(assignments[generation - 1][1])
            left, joined = before - set(now), set(now) - before
            if verdict.confidence <= 0.3 and (left or joined):
                gone, new = sorted(left), sorted(joined)
                detail, trigger = ("member_leave", gone[0]) if gone else ("member_join", new[0])
                verdict = Verdict("membership_change", detail, 0.5, trigger if len(gone or new) == 1 else None,
                                  f"{verdict.explanation}; the leader's assignment of generation {generation} "
                                  f"{'drops ' + ', '.join(gone) if gone else 'adds ' + ', '.join(new)} against "
                                  f"generation {generation - 1}")
                evidence.append({"event_id": line["event_id"], "explanation": f"assignment of generation {generation}"})
        for line in joined_lines:
            who = line.get("client_id") or line.get("instance")
            evidence.append({"event_id": line["event_id"], "explanation": f"{who} joined generation {generation}"})
        first = min(signs + joined_lines, key=lambda e: e["event_ts"])
        start = dict(first, generation=previous if generation is not None and previous == generation - 1 else None,
                     broker_id=None)
        key = f"client-generation-{generation}" if generation is not None else first["event_id"]
        current = _Open(stable_id(self.group_id, key), start, verdict, None, evidence, generation_after=generation)
        members = {j["member"] for j in joins if j["member"]}
        if generation is not None and generation in assignments:
            current.members_after = len(assignments[generation][1])
        elif members:
            current.members_after = len(members)
        current.joined, current.left = joined, left
        for join in joins:
            if join["member"] and join["event"] is not None:
                self._join(join["member"], join["event"])
        if generation is not None:
            self._mark_generation(generation)
        completed = [j["completed"] for j in joins if j["completed"] is not None]
        if generation is None or not completed:
            self.rebalances.append(self._row(current, completed_at=None, outcome="open"))
        else:
            self.rebalances.append(self._row(current, completed_at=max(completed), outcome="stabilized"))
        self._client_states(current, first, joined_lines, max(completed) if generation is not None and completed
                            else None)

    def _client_states(self, current: _Open, first: dict, joined_lines: list[dict], completed_at) -> None:
        """The classic states the members' lines imply: PreparingRebalance from the first line of the rebalance,
        CompletingRebalance from the last member's join (the join response closes the join phase), Stable from the
        last sync. The coordinator's own times are unknown, so a rebalance whose lines begin before the previous one
        ended starts its states at that end (the members' clocks and logging order blur the boundary)."""
        floor = self._transitions[-1][0] if self._transitions else None

        def at(ts: pd.Timestamp) -> pd.Timestamp:
            return ts if floor is None else max(ts, floor)

        generation, rebalance_id = current.generation_after, current.rebalance_id
        self._transition(at(first["event_ts"]), "PreparingRebalance", current.start.get("generation"), rebalance_id,
                         first)
        if joined_lines and generation is not None:
            last_join = max(joined_lines, key=lambda e: e["event_ts"])
            self._transition(at(last_join["event_ts"]), "CompletingRebalance", generation, rebalance_id, last_join)
            if completed_at is not None:
                self._transition(at(max(completed_at, last_join["event_ts"])), "Stable", generation, rebalance_id,
                                 last_join)

    # ---- causes ------------------------------------------------------------------------------------------------

    def _neighbour_verdict(self, ts: pd.Timestamp, generation: int | None) -> Verdict:
        for event in reversed(self._recent):
            if _secs(ts - event["event_ts"]) > _NEIGHBOUR_S:
                break
            if event["event_type"] == "member_failed":
                return Verdict("session_timeout", "heartbeat_expiration", 0.7, event["member_id"],
                               "no reason printed; member expired just before the start")
            if event["event_type"] == "member_left":
                return Verdict("membership_change", "member_leave", 0.6, event["member_id"],
                               "no reason printed; member left just before the start")
        if generation == 0:
            return Verdict("membership_change", "member_join", 0.6, None,
                           "no reason printed; the group's first generation forms as its members join")
        return Verdict("unknown", None, 0.1, None, "no reason printed and no member event just before the start")

    def _expiry_verdict(self, member: str, at: pd.Timestamp) -> tuple[Verdict, list[dict]]:
        """Why a member's session expired: its own GC pause, a coordinator move, or plain session timeout."""
        rules = self.rules
        instance = self.ctx.instance_of(member)
        pause = self.ctx.pause_covering(instance, at, tolerance_s=rules.heartbeat_tolerance_s,
                                        min_ms=rules.gc_pause_min_ms)
        if pause is not None:
            text = (f"the JVM of {member} ({instance}) was stopped {pause['pause_ms'] / 1000:.1f} s by a GC pause "
                    f"from {pause['event_ts']:%H:%M:%S} to {pause['pause_end_ts']:%H:%M:%S}, through the session "
                    f"expiry at {at:%H:%M:%S}")
            return (Verdict("gc_pause", "heartbeat_expiration", 0.9, member, text),
                    [{"event_id": pause["event_id"], "explanation": text}])
        for moved_at, old, new in reversed(self._moves):
            if 0 <= _secs(at - moved_at) <= rules.coordinator_move_window_s:
                text = (f"the group moved from coordinator {old} to {new} at {moved_at:%H:%M:%S}; {member} expired "
                        f"{_secs(at - moved_at):.0f} s later without reaching the new coordinator")
                return Verdict("coordinator_change", "coordinator_failover", 0.75, member, text), []
        return Verdict("session_timeout", "heartbeat_expiration", 0.9, member,
                       f"{member} sent no heartbeat within its session timeout"), []

    def _refine(self, verdict: Verdict, ts: pd.Timestamp, *, client_reason: str | None = None,
                protocol: str = "classic") -> tuple[Verdict, list[dict], str | None]:
        if verdict.cause == "metadata_change" and verdict.detail in ("partition_count_change", "leader_rejoin"):
            cascade = self._leave_cascade(verdict, ts)
            if cascade is not None:
                return cascade, [], None
        trigger = verdict.trigger_member_id
        if not trigger:
            return verdict, [], None
        rules = self.rules
        if verdict.cause == "session_timeout":
            refined, evidence = self._expiry_verdict(trigger, ts)
            explanation = verdict.explanation + "; " + refined.explanation
            return Verdict(refined.cause, refined.detail, refined.confidence, trigger, explanation), evidence, None
        # A client reason the leaver sent itself ("the consumer is being closed") outranks a poll-timeout line in its log.
        if verdict.detail == "member_leave" and not client_reason:
            instance = self.ctx.instance_of(trigger)
            line = self.ctx.poll_timeout_near(instance, ts, window_s=rules.poll_timeout_window_s)
            if line is not None:
                text = f"{verdict.explanation}; the client of {trigger} ({instance}) logged a poll timeout first"
                return (Verdict("poll_timeout", "leave_on_poll_timeout", 0.9, trigger, text),
                        [{"event_id": line["event_id"], "explanation": "client poll timeout"}], None)
        if verdict.detail in ("member_join", "member_rejoin"):
            instance = self.ctx.instance_of(trigger)
            removal = self._removals.get(instance or "")
            if (
                removal is not None
                # A KIP-848 member keeps its id across a leave and rejoin; a classic one gets a new id.
                and (removal.member != trigger or protocol == "consumer")
                and 0 <= _secs(ts - removal.at) <= rules.rejoin_window_s
                and not self.ctx.started_between(instance, removal.at, ts)
            ):
                text = (f"{verdict.explanation}; {trigger} is the same process ({instance}) as {removal.member}, "
                        f"removed at {removal.at:%H:%M:%S} by {removal.cause}, joining again")
                self._removals.pop(instance, None)
                return Verdict(removal.cause, "rejoin", 0.85, trigger, text), [], removal.rebalance_id
        return verdict, [], None

    def _record_removal(self, member: str, at: pd.Timestamp, cause: str, rebalance: str | None = None) -> None:
        instance = self.ctx.instance_of(member)
        if not instance or cause not in _REMOVAL_CAUSES:
            return
        if rebalance is None and self._current is not None:
            rebalance = self._current.rebalance_id
        existing = self._removals.get(instance)
        if existing is not None and existing.member == member:
            existing.rebalance_id = existing.rebalance_id or rebalance
            return
        self._removals[instance] = _Removal(member, at, cause, rebalance)

    def _leave_cascade(self, verdict: Verdict, ts: pd.Timestamp) -> Verdict | None:
        """A leader's metadata rejoin caused by a member's leave: the leaver alone subscribed to some topic."""
        remaining = set()
        for member in self._members:
            topics = self.ctx.subscription_at(self.ctx.instance_of(member), ts)
            if topics is None:
                return None
            remaining |= topics
        for left_at, gone in reversed(self._departures):
            if _secs(ts - left_at) > _CASCADE_S:
                break
            topics = self.ctx.subscription_at(self.ctx.instance_of(gone), left_at)
            only_theirs = sorted((topics or frozenset()) - remaining)
            if only_theirs:
                return Verdict("membership_change", "member_leave", 0.75, verdict.trigger_member_id,
                               f"{verdict.explanation}; {gone} left {_secs(ts - left_at):.0f} s before and was the "
                               f"only member subscribed to {', '.join(only_theirs)}, so the group's subscription "
                               f"shrank and the leader's metadata changed with it")
        return None

    # ---- members and states ------------------------------------------------------------------------------------

    def _join(self, member: str, event: dict) -> None:
        self._members.add(member)
        if member not in self.sessions:
            self.sessions[member] = {
                "session_id": stable_id(self.group_id, member), "group_id": self.group_id, "member_id": member,
                "client_id": event.get("client_id"), "group_instance_id": event.get("group_instance_id"),
                "instance": self.ctx.instance_of(member), "client_host": event.get("client_host"),
                "joined_at": event["event_ts"], "left_at": None, "end_reason": "active",
                "first_generation": None, "last_generation": None, "rebalances": 0,
            }

    def _leave(self, member: str, at: pd.Timestamp, reason: str) -> None:
        if member in self._members:
            self._departures.append((at, member))
            if len(self._departures) > 64:
                del self._departures[:32]
        self._members.discard(member)
        session = self.sessions.get(member)
        if session is not None and session["left_at"] is None:
            session["left_at"], session["end_reason"] = at, reason

    def _mark_generation(self, generation: int | None) -> None:
        for member in self._members:
            session = self.sessions.get(member)
            if session is None:
                continue
            if session["first_generation"] is None:
                session["first_generation"] = generation
            session["last_generation"] = generation
            session["rebalances"] += 1

    def _transition(self, ts, state: str, generation, rebalance_id, event: dict) -> None:
        self._transitions.append((ts, state, generation, rebalance_id, event["event_id"]))

    def _close(self, ts: pd.Timestamp, outcome: str, *, transition: bool = True) -> None:
        current = self._current
        assert current is not None
        if outcome in ("stabilized", "superseded") and current.members_after is not None:
            self._size = current.members_after
        self.rebalances.append(self._row(current, completed_at=ts, outcome=outcome))
        self._current = None

    def _finish(self) -> None:
        current = self._current
        if current is not None:
            if current.stabilized_at is not None:
                self.rebalances.append(self._row(current, completed_at=current.stabilized_at, outcome="stabilized"))
            else:
                self.rebalances.append(self._row(current, completed_at=None, outcome="open"))
        self._assign_incidents()
        self._build_states()

    def _row(self, current: _Open, *, completed_at, outcome: str) -> dict:
        start, verdict = current.start, current.verdict
        started = start["event_ts"]
        evidence = [{"event_id": start["event_id"], "explanation": verdict.explanation}] + current.evidence
        broker = _int(start.get("broker_id"))
        return {
            "rebalance_id": current.rebalance_id, "group_id": self.group_id, "protocol": current.protocol,
            "coordinator": None if broker is None else str(broker),
            "generation_before": (current.generation_before if current.protocol == "consumer"
                                  else _int(start.get("generation"))),
            "generation_after": current.generation_after,
            "started_at": started, "completed_at": completed_at,
            "duration_ms": None if completed_at is None else int(_secs(completed_at - started) * 1000),
            "outcome": outcome, "members_before": current.members_before, "members_after": current.members_after,
            "members_joined": len(current.joined), "members_left": len(current.left),
            "trigger_member_id": verdict.trigger_member_id, "cause": verdict.cause, "cause_detail": verdict.detail,
            "cause_confidence": verdict.confidence, "evidence_json": json.dumps(evidence), "incident_id": None,
            "_linked_to": current.linked_to,
        }

    def _assign_incidents(self) -> None:
        by_id: dict[str, dict] = {}
        previous = None
        for row in sorted(self.rebalances, key=lambda r: r["started_at"]):
            linked = by_id.get(row.pop("_linked_to") or "")
            if linked is not None:
                row["incident_id"] = linked["incident_id"]
            elif previous is not None and _secs(
                row["started_at"] - (previous["completed_at"] or previous["started_at"])
            ) <= self.rules.incident_gap_s:
                row["incident_id"] = previous["incident_id"]
            else:
                row["incident_id"] = row["rebalance_id"]
            by_id[row["rebalance_id"]] = row
            previous = row

    def _build_states(self) -> None:
        transitions = sorted(self._transitions, key=lambda t: t[0])
        # A state belongs to the coordinator of its rebalance; states between rebalances to the last one known.
        coordinators = {r["rebalance_id"]: r.get("coordinator") for r in self.rebalances}
        coordinator = None
        for index, (ts, state, generation, rebalance_id, event_id) in enumerate(transitions):
            ended = transitions[index + 1][0] if index + 1 < len(transitions) else None
            coordinator = coordinators.get(rebalance_id) or coordinator
            self.states.append({
                "state_id": stable_id(self.group_id, event_id, state), "group_id": self.group_id, "state": state,
                "generation": generation, "coordinator": coordinator, "started_at": ts, "ended_at": ended,
                "duration_ms": None if ended is None else int(_secs(ended - ts) * 1000),
                "rebalance_id": rebalance_id,
            })


def reconstruct_group(group_id: str, events: list[dict], rules: Rules | None = None) -> list[dict]:
    """The rebalances of one group (rows shaped like gold_rebalances, evidence as `evidence_json`)."""
    return Timeline(group_id, events, rules).rebalances
