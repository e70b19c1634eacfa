"""What-if: a group's observed rebalances weighed again under changed client settings.

The replay knows, for each rebalance, what the members did: how long a GC pause stopped a JVM, how long a consumer
went without polling, when a restarted process came back, which partitions moved. The protocol's rules then say
what a setting would have changed:

- `session.timeout.ms=S`: the coordinator removes a member whose heartbeats stop for S. A removal whose member was
  silent for less (its pause plus one heartbeat interval; or until its process spoke again) would not have happened,
  nor its rejoin; a member that never came back (a crash) is removed S minus the old timeout later: the new risk.
- `max.poll.interval.ms=M`: a member leaves when it does not poll for M. A poll-timeout leave whose member polled
  again within M would not have happened, nor its rejoin; one that never polled again leaves later.
- `group.instance.id=static`: a static member sends no LeaveGroup and gets its assignment back when it returns within
  its session timeout: a leave followed by its process's rejoin within the timeout makes no rebalance at all; a
  leave with no return becomes an expiry one session timeout later.
- `partition.assignment.strategy=cooperative-sticky`: as many rebalances, but a member stops only the partitions
  that move away (what it owned less what it kept), and a second rebalance hands those over.

Rows are per change and rebalance, with the verdict (`avoided`, `later`, `fewer_partitions`, `unchanged`), the time
saved or the delay, the observed figure the verdict rests on, and a sentence saying why.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipelines.gold.churn import Starts
from pipelines.gold.context import GroupContext
from pipelines.gold.records import RebalanceRow, TimelineEvent
from pipelines.gold.replay_state import Rules, secs, stable_id
from pipelines.gold.rulebook import window
from pipelines.gold.whatif_changes import (
    COOPERATIVE,
    SESSION_BOUNDS_MS,
    STATIC,
    Change,
    advised_poll_interval_ms,
    advised_session_ms,
    parse_change,
)

# Client defaults (Java 3.0+ and librdkafka): used when a member's ConsumerConfig was not logged. The session
# timeout's comes from the configuration (thresholds.default_session_timeout_ms), its default the client's.
__all__ = ["Change", "WhatIf", "advised_poll_interval_ms", "advised_session_ms", "parse_change", "standard_changes",
           "whatif_rows"]

DEFAULTS = {"heartbeat.interval.ms": 3000, "max.poll.interval.ms": 300000}
# A process that joins again later than this is a new start, not the return of the member that left.
RETURN_S = window("whatif_return_s")
# A client line that shows a member's application calling poll() again (it rejoins, or asks to).
_BACK = frozenset({"client_joining", "client_rejoin_requested", "client_joined", "client_synced",
                   "client_partitions_assigned", "client_generation_reset"})


@dataclass
class _Verdict:
    verdict: str
    detail: str
    observed_ms: float | None = None
    delay_ms: float | None = None


class WhatIf:
    """The what-if of one group: its rebalances (gold_rebalances rows, time order), churn rows, events and context."""

    def __init__(self, group_id: str, rebalances: list[RebalanceRow], churn: list[dict[str, Any]],
                 events: list[TimelineEvent], ctx: GroupContext, *, rules: Rules) -> None:
        self.group_id = group_id
        self._starts = Starts.of(rebalances)
        self.rebalances = self._starts.rows
        self.churn = churn
        self.ctx = ctx
        self.rules = rules
        self.gc_pause_min_ms = rules.gc_pause_min_ms
        self.defaults = {**DEFAULTS, "session.timeout.ms": rules.default_session_timeout_ms}
        self.client_lines: dict[str, list[TimelineEvent]] = {}
        for event in events:
            instance = event.get("instance")
            if event.get("source_kind") == "client" and instance:
                self.client_lines.setdefault(instance, []).append(event)
        # The events come in time order, so each process's lines are searched by bisection.
        self._line_ts = {instance: [e["event_ts"] for e in lines] for instance, lines in self.client_lines.items()}

    # ---- what the members did ----

    def _instance(self, rebalance: RebalanceRow) -> str | None:
        return self.ctx.instance_of(rebalance.get("trigger_member_id"))

    def _setting(self, instance: str | None, name: str) -> tuple[int, bool]:
        """A member's setting and whether its process logged it (else the client default)."""
        value = self.ctx.settings.get(instance or "", {}).get(name)
        return (int(value), True) if value and value.isdigit() else (self.defaults[name], False)

    def _next_line(self, instance: str | None, after: pd.Timestamp, types: Iterable[str] | None = None
                   ) -> TimelineEvent | None:
        wanted = None if types is None else set(types)
        lines = self.client_lines.get(instance or "", [])
        for index in range(bisect.bisect_right(self._line_ts.get(instance or "", []), after), len(lines)):
            if wanted is None or lines[index]["event_type"] in wanted:
                return lines[index]
        return None

    def _rejoin_of(self, removal: RebalanceRow) -> RebalanceRow | None:
        """The rebalance in which a removed member's process joined again (detail `rejoin`, or the next join from
        its process), within RETURN_S."""
        instance = self._instance(removal)
        for r in self._starts.starting_after(removal["started_at"], RETURN_S):
            if r.get("cause_detail") in ("rejoin", "member_join", "member_rejoin") and self._instance(r) == instance:
                return r
        return None

    # ---- the rules ----

    def weigh(self, change: Change) -> list[dict[str, Any]]:
        """Rows of one change: a verdict for every rebalance of the group."""
        verdicts: dict[str, _Verdict] = {}
        rule = {
            "session.timeout.ms": self._session, "max.poll.interval.ms": self._poll,
            "group.instance.id": self._static, "partition.assignment.strategy": self._cooperative,
        }[change.setting]
        rule(change, verdicts)
        rows = []
        for r in self.rebalances:
            v = verdicts.get(r["rebalance_id"]) or _Verdict("unchanged", (
                "the member's return after its removal: it stays as long as the removal does"
                if r.get("cause_detail") == "rejoin" else f"{change.label} does not bear on a {r['cause']} rebalance"))
            saved = r.get("duration_ms") if v.verdict == "avoided" else None
            rows.append({
                "whatif_id": stable_id(self.group_id, change.label, r["rebalance_id"]), "group_id": self.group_id,
                "change": change.label, "rebalance_id": r["rebalance_id"], "started_at": r["started_at"],
                "cause": r["cause"], "verdict": v.verdict, "saved_ms": saved,
                "delay_ms": None if v.delay_ms is None else int(v.delay_ms),
                "observed_ms": None if v.observed_ms is None else int(v.observed_ms), "detail": v.detail,
            })
        return rows

    def _avoid_with_rejoin(self, removal: RebalanceRow, verdict: _Verdict, verdicts: dict[str, _Verdict]) -> None:
        verdicts[removal["rebalance_id"]] = verdict
        rejoin = self._rejoin_of(removal)
        if rejoin is not None and rejoin.get("cause_detail") == "rejoin":
            verdicts[rejoin["rebalance_id"]] = _Verdict(
                "avoided", f"the member was never removed (rebalance {removal['rebalance_id']}), so it did not "
                           "rejoin", verdict.observed_ms)

    def _session(self, change: Change, verdicts: dict[str, _Verdict]) -> None:
        for r in self.rebalances:
            if r["cause"] not in ("gc_pause", "session_timeout") or r.get("cause_detail") == "rejoin":
                continue
            instance = self._instance(r)
            old, logged = self._setting(instance, "session.timeout.ms")
            heartbeat, _ = self._setting(instance, "heartbeat.interval.ms")
            basis = "its logged ConsumerConfig" if logged else "the client default"
            new = change.ms
            if r["cause"] == "gc_pause":
                pause = self.ctx.pause_covering(instance, r["started_at"], tolerance_s=heartbeat / 1000,
                                                min_ms=self.gc_pause_min_ms)
                if pause is None:
                    continue
                silent = pause["pause_ms"] + heartbeat
                what = f"its JVM stopped {pause['pause_ms'] / 1000:.1f} s in a GC pause"
            else:
                # Silent from its last heartbeat (a session timeout before the expiry) until its process spoke again.
                last_heartbeat = r["started_at"] - pd.Timedelta(milliseconds=old)
                back = self._next_line(instance, r["started_at"])
                if back is None or self.ctx.started_between(instance, last_heartbeat, back["event_ts"]):
                    verdicts[r["rebalance_id"]] = self._later(new, old, basis, "the member never came back (its "
                                                                               "process died or was restarted)")
                    continue
                silent = secs(back["event_ts"] - last_heartbeat) * 1000
                what = f"the member was silent about {silent / 1000:.1f} s (from its last heartbeat to its next line)"
            if silent < new:
                self._avoid_with_rejoin(r, _Verdict(
                    "avoided", f"{what}, plus up to one heartbeat interval ({heartbeat} ms): under the new "
                               f"{new} ms, where {old} ms ({basis}) expired it", silent), verdicts)
            else:
                verdicts[r["rebalance_id"]] = _Verdict(
                    "unchanged", f"{what}: still beyond {new} ms", silent)

    def _later(self, new: int, old: int, basis: str, why: str) -> _Verdict:
        if new <= old:
            return _Verdict("unchanged", f"{why}; a session timeout of {new} ms removes it no later than {old} ms "
                                         f"({basis})")
        return _Verdict("later", f"{why}: the coordinator would remove it {(new - old) / 1000:.1f} s later "
                                 f"({new} ms instead of {old} ms, {basis}), and its partitions wait that long",
                        delay_ms=new - old)

    def _poll(self, change: Change, verdicts: dict[str, _Verdict]) -> None:
        for r in self.rebalances:
            if r["cause"] != "poll_timeout" or r.get("cause_detail") == "rejoin":
                continue
            instance = self._instance(r)
            old, logged = self._setting(instance, "max.poll.interval.ms")
            basis = "its logged ConsumerConfig" if logged else "the client default"
            fired = self._poll_timeout_line(instance, r["started_at"])
            if fired is None:
                continue
            after = fired["event_ts"] + pd.Timedelta(seconds=window("whatif_back_after_s"))
            back = self._next_line(instance, after, _BACK)
            if back is None:
                longer = max(change.ms - old, 0)
                verdicts[r["rebalance_id"]] = _Verdict(
                    "later" if longer else "unchanged",
                    f"the member never polled again: {change.label} only keeps its partitions "
                    f"{longer / 1000:.1f} s longer before it leaves", delay_ms=longer or None)
                continue
            gap = old + secs(back["event_ts"] - fired["event_ts"]) * 1000
            what = (f"the member went {gap / 1000:.1f} s without polling (its poll timeout of {old} ms, {basis}, "
                    f"fired at {fired['event_ts']:%H:%M:%S}; it polled again at {back['event_ts']:%H:%M:%S})")
            if gap < change.ms:
                self._avoid_with_rejoin(r, _Verdict("avoided", f"{what}: within the new {change.ms} ms", gap),
                                        verdicts)
            else:
                verdicts[r["rebalance_id"]] = _Verdict("unchanged", f"{what}: still beyond {change.ms} ms", gap)

    def _poll_timeout_line(self, instance: str | None, at: pd.Timestamp) -> TimelineEvent | None:
        lines = [e for e in self.ctx.poll_timeouts.get(instance or "", ())
                 if at - pd.Timedelta(seconds=self.rules.poll_timeout_window_s) <= e["event_ts"]
                 <= at + pd.Timedelta(seconds=window("poll_line_after_s"))]
        return lines[-1] if lines else None

    def _static(self, change: Change, verdicts: dict[str, _Verdict]) -> None:
        for r in self.rebalances:
            if r.get("cause_detail") != "member_leave":
                continue
            instance = self._instance(r)
            session, logged = self._setting(instance, "session.timeout.ms")
            basis = "its logged ConsumerConfig" if logged else "the client default"
            back = self._rejoin_of(r)
            if back is not None and back.get("cause_detail") in ("member_join", "member_rejoin"):
                away = secs(back["started_at"] - r["started_at"]) * 1000
                if away < session:
                    text = (f"its process left and joined again {away / 1000:.1f} s later, within its session "
                            f"timeout ({session} ms, {basis}): a static member sends no LeaveGroup and gets its "
                            "assignment back")
                    verdicts[r["rebalance_id"]] = _Verdict("avoided", text, away)
                    verdicts[back["rebalance_id"]] = _Verdict("avoided", text, away)
                    continue
                verdicts[r["rebalance_id"]] = _Verdict(
                    "later", f"its process was away {away / 1000:.1f} s, beyond its session timeout ({session} ms, "
                             f"{basis}): a static member is removed by expiry instead, that much later",
                    away, delay_ms=session)
                continue
            verdicts[r["rebalance_id"]] = _Verdict(
                "later", f"the member left for good: as a static member it would be removed only when its session "
                         f"expired, {session / 1000:.1f} s later ({basis}), its partitions idle until then",
                delay_ms=session)

    def _cooperative(self, change: Change, verdicts: dict[str, _Verdict]) -> None:
        by_rebalance: dict[str, list[dict[str, Any]]] = {}
        for row in self.churn:
            if row.get("rebalance_id"):
                by_rebalance.setdefault(row["rebalance_id"], []).append(row)
        for rebalance_id, rows in by_rebalance.items():
            stopped = sum(row["revoked"] for row in rows)
            if not stopped or any(row["owned_before"] is None or row["kept"] is None for row in rows):
                continue
            moved = sum(max(row["owned_before"] - row["kept"], 0) for row in rows if row["revoked"])
            if moved < stopped:
                verdicts[rebalance_id] = _Verdict(
                    "fewer_partitions", f"the members stopped {stopped} partitions; cooperatively they would stop "
                                        f"only the {moved} that moved to another member"
                                        + (" (handed over in a second rebalance)" if moved else ""), stopped)


def standard_changes(whatif: WhatIf) -> list[Change]:
    """The changes worth weighing for a group, from its own history: a session timeout above its removals' silences,
    a poll interval above its longest gap without polling, static membership when members left and came back,
    cooperative assignment when eager members revoked partitions they got back."""
    changes = []
    probe = {r["rebalance_id"]: r for r in whatif.weigh(Change("session.timeout.ms", str(SESSION_BOUNDS_MS[1])))}
    silences = [r["observed_ms"] for r in probe.values() if r["verdict"] == "avoided" and r["observed_ms"]]
    if silences:
        changes.append(Change("session.timeout.ms", str(advised_session_ms(max(silences)))))
    gaps = [r["observed_ms"] for r in whatif.weigh(Change("max.poll.interval.ms", str(2**31 - 1)))
            if r["verdict"] == "avoided" and r["observed_ms"]]
    if gaps:
        changes.append(Change("max.poll.interval.ms", str(advised_poll_interval_ms(max(gaps)))))
    if any(r.get("cause_detail") == "member_leave" for r in whatif.rebalances):
        changes.append(Change("group.instance.id", STATIC))
    if any(row["revoked"] and row.get("kept") for row in whatif.churn):
        changes.append(Change("partition.assignment.strategy", COOPERATIVE))
    return changes


def whatif_rows(whatif: WhatIf, changes: Sequence[Change] | None = None) -> list[dict[str, Any]]:
    """gold_whatif rows: every rebalance of the group weighed under each change (the standard ones by default)."""
    rows: list[dict[str, Any]] = []
    for change in standard_changes(whatif) if changes is None else changes:
        rows += whatif.weigh(change)
    return rows
