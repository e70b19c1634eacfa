"""What the client and GC logs say about a group's members: which process each member ran in, when processes
started and what they subscribed to, their long GC pauses, their poll timeouts and (KIP-848) their member state
transitions. Built once per group from all its events."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd

from pipelines.gold.client_signs import (
    RDKAFKA_HANDLE,
    coordinator_unreachable,
    frozen_with,
    same_client,
    says_own_expiry,
)
from pipelines.gold.records import GcPause, TimelineEvent, gc_pause
from pipelines.gold.rulebook import window

# A classic member id is `<client.id>-<UUID>`.
_MEMBER_ID = re.compile(r"^(?P<client>.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_NEW_MEMBER = re.compile(r"need to re-join with the given member-id: (\S+)")
_SAME_REMOVAL = pd.Timedelta(seconds=window("same_removal_s"))
# A subscribe this soon after the same process unsubscribed from everything is a resubscription.
_RESUBSCRIBE = pd.Timedelta(seconds=window("resubscribe_s"))
# A client's poll-timeout line may be logged just after the coordinator acted on it (the rule book's window).
_POLL_LINE_AFTER = pd.Timedelta(seconds=window("poll_line_after_s"))
# A client's lines that show it reached its coordinator: after one, an earlier lost connection is over.
_REACHED = ("client_coordinator_discovered", "client_joined", "client_synced", "connect_joined")


def _drop_stalled(poll_timeouts: dict[str, list[TimelineEvent]], events: list[TimelineEvent]) -> None:
    """Drop from each process's poll-timeout lines those in one stall with its own session expiry (`frozen_with`):
    they are the expiry's, on the coordinator's path as on the members' alone."""
    expiries: dict[str, list[TimelineEvent]] = defaultdict(list)
    for event in events:
        instance = event.get("instance")
        if instance in poll_timeouts and event.get("source_kind") == "client" and says_own_expiry(event):
            expiries[str(instance)].append(event)
    for instance, lines in poll_timeouts.items():
        lines[:] = [e for e in lines if frozen_with(e, expiries.get(instance, [])) is None]


@dataclass
class GroupContext:
    """Lookups over one group's client events and its members' GC pauses."""

    member_instance: dict[str, str] = field(default_factory=dict)
    client_instances: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    process_starts: dict[str, list[pd.Timestamp]] = field(default_factory=lambda: defaultdict(list))
    pauses: dict[str, list[GcPause]] = field(default_factory=lambda: defaultdict(list))
    poll_timeouts: dict[str, list[TimelineEvent]] = field(default_factory=lambda: defaultdict(list))
    # Per instance, the lines where a client could not reach its coordinator (client_signs.coordinator_unreachable),
    # and those where one reached it (found it, joined, synced).
    unreachable: dict[str, list[TimelineEvent]] = field(default_factory=lambda: defaultdict(list))
    reached: dict[str, list[TimelineEvent]] = field(default_factory=lambda: defaultdict(list))
    subscriptions: dict[str, list[tuple[pd.Timestamp, frozenset[str]]]] = field(
        default_factory=lambda: defaultdict(list))
    member_states: dict[str, list[tuple[pd.Timestamp, str]]] = field(default_factory=lambda: defaultdict(list))
    settings: dict[str, dict[str, str]] = field(default_factory=dict)
    connector_changes: list[TimelineEvent] = field(default_factory=list)
    # Per generation, the members whose own log says they joined it (member id, else the instance folder).
    joined: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    # When each instance's client logged anything about the group (sorted: events come in time order).
    activity: dict[str, list[pd.Timestamp]] = field(default_factory=lambda: defaultdict(list))
    _used_poll_timeouts: dict[str, tuple[str | None, pd.Timestamp]] = field(default_factory=dict)

    @classmethod
    def build(cls, events: list[TimelineEvent]) -> GroupContext:
        """Index the client events (`source_kind` client) and GC pauses (`source_kind` gc) of one group."""
        ctx = cls()
        unsubscribed: dict[str, pd.Timestamp] = {}
        for event in events:
            kind, instance = event.get("source_kind"), event.get("instance")
            if not instance:
                continue
            if kind == "gc":
                pause = gc_pause(event)
                if pause is not None:
                    ctx.pauses[instance].append(pause)
                continue
            if kind != "client":
                continue
            ctx.activity[instance].append(event["event_ts"])
            if coordinator_unreachable(event):
                ctx.unreachable[instance].append(event)
            elif event.get("event_type") in _REACHED:
                ctx.reached[instance].append(event)
            member = event.get("member_id")
            if member:
                ctx.member_instance.setdefault(member, instance)
            reason = event.get("reason") or ""
            joined = _NEW_MEMBER.search(reason)
            if joined:
                ctx.member_instance.setdefault(joined.group(1), instance)
            client_id = event.get("client_id")
            if client_id:
                ctx.client_instances[client_id].add(instance)
                if handle := RDKAFKA_HANDLE.match(client_id):
                    ctx.client_instances[handle.group("client")].add(instance)
            event_type, generation = event["event_type"], event.get("generation")
            settings = event.get("settings_json")
            if event_type == "client_config" and settings:
                ctx.settings[instance] = json.loads(settings)
            if event_type == "client_unsubscribed":
                unsubscribed[instance] = event["event_ts"]
            if event_type == "client_subscribed":
                # Kafka Streams answers a lost membership by unsubscribing and subscribing again at once: the
                # same process, not a new one.
                dropped = unsubscribed.get(instance)
                if dropped is None or event["event_ts"] - dropped > _RESUBSCRIBE:
                    ctx.process_starts[instance].append(event["event_ts"])
                topics = frozenset(t.strip() for t in (event.get("topics") or "").split(",") if t.strip())
                ctx.subscriptions[instance].append((event["event_ts"], topics))
            elif (event_type in ("client_joined", "connect_joined") and generation is not None
                  and not pd.isna(generation)):
                ctx.joined[int(generation)].add(member or instance)
            elif event_type == "connect_connector_changed":
                ctx.connector_changes.append(event)
            elif event_type == "client_member_state_changed" and member and (state := event.get("state")):
                ctx.member_states[member].append((event["event_ts"], state))
            elif event_type == "client_poll_timeout" or (
                event_type == "client_leaving" and "poll timeout" in reason
            ):
                ctx.poll_timeouts[instance].append(event)
        _drop_stalled(ctx.poll_timeouts, events)
        return ctx

    @staticmethod
    def client_of(member_id: str | None) -> str | None:
        """The client.id a classic member id starts with (`<client.id>-<UUID>`), or None."""
        found = _MEMBER_ID.match(member_id or "")
        return found.group("client") if found else None

    def instance_of(self, member_id: str | None) -> str | None:
        """The instance folder (process) a member id ran in: seen in its client log, else by its unique client id."""
        if not member_id:
            return None
        if member_id in self.member_instance:
            return self.member_instance[member_id]
        match = _MEMBER_ID.match(member_id)
        if match:
            instances = self.client_instances.get(match.group("client"), set())
            if len(instances) == 1:
                return next(iter(instances))
        return None

    def logged_heartbeat_ms(self, instance: str | None) -> int | None:
        """The `heartbeat.interval.ms` the ConsumerConfig of `instance` logged, None when it logged none."""
        value = self.settings.get(instance or "", {}).get("heartbeat.interval.ms")
        return int(value) if value and value.isdigit() else None

    def heartbeat_tolerance(self, instance: str | None, default_s: float) -> tuple[float, str]:
        """How late a heartbeat may come for `instance`: its own `heartbeat.interval.ms` when its ConsumerConfig
        was logged, else `default_s`; with the words that say which."""
        logged = self.logged_heartbeat_ms(instance)
        if logged is not None:
            return logged / 1000, f"heartbeat.interval.ms={logged} from its logged ConsumerConfig"
        return default_s, f"the default {default_s:g} s heartbeat tolerance (no ConsumerConfig of its own logged)"

    def pause_covering(self, instance: str | None, expiry: pd.Timestamp, *, tolerance_s: float,
                       min_ms: float) -> GcPause | None:
        """The longest pause of `instance` that started before `expiry` and lasted until (nearly) the expiry.

        The coordinator expires a member a session timeout after its last heartbeat; a stop-the-world pause that
        began after that heartbeat and was still running within one heartbeat interval of the expiry explains it.
        """
        best = None
        for pause in self.pauses.get(instance or "", ()):
            if pause["pause_ms"] < min_ms or pause["event_ts"] > expiry:
                continue
            if pause["pause_end_ts"] < expiry - pd.Timedelta(seconds=tolerance_s):
                continue
            if best is None or pause["pause_ms"] > best["pause_ms"]:
                best = pause
        return best

    def why_no_pause(self, instance: str | None, expiry: pd.Timestamp, *, tolerance_s: float, min_ms: float,
                     basis: str) -> str:
        """Why `pause_covering` found no pause: no process, no GC log, or the nearest pause and how it missed."""
        if instance is None:
            return "the member is tied to no process folder (no client log names it), so its GC log cannot be found"
        pauses = self.pauses.get(instance, [])
        if not pauses:
            return f"no GC pause of at least {min_ms:g} ms in a GC log of {instance} (none landed, or none that long)"
        nearest = min(pauses, key=lambda p: abs((p["pause_end_ts"] - expiry).total_seconds()))
        gap = (expiry - nearest["pause_end_ts"]).total_seconds()
        return (f"the pause of {instance} nearest the expiry at {expiry:%H:%M:%S} lasted {nearest['pause_ms']:.0f} ms "
                f"and ended {abs(gap):.1f} s {'before' if gap >= 0 else 'after'} it; it must end within "
                f"{tolerance_s:g} s before ({basis}), start before it and last at least {min_ms:g} ms")

    def why_no_poll_timeout(self, instance: str | None, at: pd.Timestamp, *, window_s: float) -> str:
        """Why `poll_timeout_near` found no line (without marking any line used)."""
        if instance is None:
            return "the member is tied to no process folder, so its client log cannot be read for a poll timeout"
        lines = self.poll_timeouts.get(instance, [])
        if not lines:
            return f"the client log of {instance} holds no poll-timeout line"
        nearest = min(lines, key=lambda e: abs((e["event_ts"] - at).total_seconds()))
        gap = (at - nearest["event_ts"]).total_seconds()
        if nearest["event_id"] in self._used_poll_timeouts and -_POLL_LINE_AFTER.total_seconds() <= gap <= window_s:
            return (f"the poll-timeout line of {instance} at {nearest['event_ts']:%H:%M:%S} already explains an "
                    "earlier removal (one poll timeout makes one leave)")
        return (f"the poll-timeout line of {instance} nearest it is at {nearest['event_ts']:%H:%M:%S}, "
                f"{abs(gap):.0f} s "
                f"{'before' if gap >= 0 else 'after'}; the window is {window_s:g} s before")

    def started_between(self, instance: str | None, start: pd.Timestamp, end: pd.Timestamp) -> bool:
        """True when the process in `instance` was (re)started between the two times."""
        return any(start < t <= end for t in self.process_starts.get(instance or "", ()))

    def logs_starts(self, instance: str | None) -> bool:
        """Whether the client in `instance` is seen logging its process starts at all (a Java consumer logs its
        config and subscription; librdkafka at its default level logs nothing when it starts)."""
        return bool(self.process_starts.get(instance or ""))

    def active_between(self, instance: str | None, start: pd.Timestamp, end: pd.Timestamp) -> bool:
        """True when the client in `instance` logged a line about the group between the two times."""
        return any(start <= t < end for t in self.activity.get(instance or "", ()))

    def poll_timeout_near(self, instance: str | None, at: pd.Timestamp, *, window_s: float,
                          not_before: pd.Timestamp | None = None, member: str | None = None) -> TimelineEvent | None:
        """A client poll-timeout line of `instance` within `window_s` before (or just after) `at`, not yet used,
        and not before `not_before` (the member's own join: an older line was about the member it replaced).

        The line is marked used: one poll timeout makes one leave, so a clean close a few seconds after the member
        rejoined is not blamed on the same line. The same removal asked about again (the coordinator's `has failed`
        line, then the rebalance it opens: the same `member` within a second) gets the same line.
        """
        window = pd.Timedelta(seconds=window_s)
        for event in self.poll_timeouts.get(instance or "", ()):
            used = self._used_poll_timeouts.get(event["event_id"])
            if used is not None and (member is None or used[0] != member or abs(at - used[1]) > _SAME_REMOVAL):
                continue
            if not_before is not None and event["event_ts"] < not_before:
                continue
            if at - window <= event["event_ts"] <= at + _POLL_LINE_AFTER:
                self._used_poll_timeouts[event["event_id"]] = (member, at)
                return event
        return None

    def unreachable_before(self, instance: str | None, at: pd.Timestamp, client: str | None = None
                           ) -> TimelineEvent | None:
        """The last line of `instance`'s client (of `client` where both name one) saying it could not reach its
        coordinator, from `unreachable_before_s` to `unreachable_lead_s` before `at`, and not followed by a line of
        the same client that reached it (found it, joined, synced) before that lead; or None. A coordinator found
        within the lead is the reconnection that learned of the expiry (the Java client finds it again, and its first
        heartbeat is refused with UNKNOWN_MEMBER_ID), not a session restored."""
        since = at - pd.Timedelta(seconds=window("unreachable_before_s"))
        until = at - pd.Timedelta(seconds=window("unreachable_lead_s"))
        for event in reversed(self.unreachable.get(instance or "", ())):
            if not since <= event["event_ts"] <= until or not same_client(event.get("client_id"), client):
                continue
            back = any(event["event_ts"] < e["event_ts"] <= until and same_client(e.get("client_id"), client)
                       and same_client(e.get("client_id"), event.get("client_id"))
                       for e in self.reached.get(instance or "", ()))
            return None if back else event
        return None

    def connector_change_before(self, at: pd.Timestamp, *, window_s: float) -> TimelineEvent | None:
        """The latest Connect worker line of a connector or task config written or removed within `window_s` before
        `at` (what makes the Connect leader rejoin), or None."""
        found = None
        for event in self.connector_changes:
            if at - pd.Timedelta(seconds=window_s) <= event["event_ts"] <= at:
                found = event
        return found

    def subscription_at(self, instance: str | None, at: pd.Timestamp) -> frozenset[str] | None:
        """The topics the process in `instance` had last subscribed to at `at` (None when its log does not say)."""
        latest = None
        for ts, topics in self.subscriptions.get(instance or "", ()):
            if ts <= at:
                latest = topics
        return latest

    def reached_stable(self, member: str, start: pd.Timestamp,
                       end: pd.Timestamp | None) -> tuple[bool, pd.Timestamp | None]:
        """KIP-848: whether `member` logged any state transition in [start, end), and when it became STABLE.

        Returns (seen, stable_at); stable_at is None when the member was still joining or reconciling at the end of
        the window. The client logs some transitions of one millisecond out of order, so a STABLE at the same
        millisecond as the last JOINING/RECONCILING/ACKNOWLEDGING counts as reached.
        """
        seen, busy_at, stable_at = False, None, None
        for ts, state in self.member_states.get(member, ()):
            if ts < start or (end is not None and ts >= end):
                continue
            seen = True
            if state == "STABLE":
                stable_at = ts
            elif state in ("JOINING", "RECONCILING", "ACKNOWLEDGING"):
                busy_at = ts
        if stable_at is not None and busy_at is not None and stable_at < busy_at:
            stable_at = None
        return seen, stable_at
