"""Causes refined with the group's context: a session expiry explained by a GC pause or a coordinator move, a leave
by the client's poll timeout, a join traced back to the removal it returns from, a leader's metadata rejoin traced to
a member's leave."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from pipelines.gold.causes import Verdict
from pipelines.gold.replay_state import Removal, ReplayState, secs

# A leader's "cached metadata has changed" rejoin this soon after a member left is the leave's consequence when the
# leaver alone subscribed to some topic: the group's subscription shrank, so the leader's metadata snapshot changed.
_CASCADE_S = 30.0
# Causes that remove a member against its will; its return from the same process is a `rejoin` of that cause.
REMOVAL_CAUSES = ("session_timeout", "gc_pause", "poll_timeout", "coordinator_change")
# The cooperative protocol's second round: a member whose new assignment took partitions (or Streams tasks) away
# from it revokes them and rejoins at once, with this client reason (ConsumerCoordinator, 2.4+). That rebalance
# finishes the one before it, so it carries that one's cause.
_COOPERATIVE_FOLLOWUP = re.compile(r"need to revoke partitions and re-join", re.I)
_FOLLOWUP_WINDOW_S = 30.0
# A Connect worker writes or removes a connector's (or its tasks') config, and the leader rejoins within moments to
# hand the change out: the config line this long before a rejoin names what changed.
_CONNECTOR_CHANGE_S = 5.0
# A new member this soon after its group was loaded again, following a stretch with no coordinator at all (unloaded,
# then loaded), is a member whose session ran out during that stretch: it rejoins as soon as it finds the coordinator.
_AFTER_OUTAGE_S = 30.0


class CauseRefinement(ReplayState):
    """The refinement rules over the replay's state (its members, departures, removals and coordinator moves)."""

    def _expiry_verdict(self, member: str, at: pd.Timestamp) -> tuple[Verdict, list[dict[str, Any]]]:
        """Why a member's session expired: its own GC pause, a coordinator move, or plain session timeout."""
        rules = self.rules
        instance = self.ctx.instance_of(member)
        tolerance, basis = self.ctx.heartbeat_tolerance(instance, rules.heartbeat_tolerance_s)
        pause = self.ctx.pause_covering(instance, at, tolerance_s=tolerance, min_ms=rules.gc_pause_min_ms)
        if pause is not None:
            text = (f"the JVM of {member} ({instance}) was stopped {pause['pause_ms'] / 1000:.1f} s by a GC pause "
                    f"from {pause['event_ts']:%H:%M:%S} to {pause['pause_end_ts']:%H:%M:%S}, through the session "
                    f"expiry at {at:%H:%M:%S} (within {basis})")
            return (Verdict("gc_pause", "heartbeat_expiration", 0.9, member, text),
                    [{"event_id": pause["event_id"], "explanation": text}])
        # A member that stopped heartbeating after its poll timeout (librdkafka under KIP-848 does not leave, it
        # stops its heartbeats and is fenced; a leave that never reached the coordinator) expired because of it.
        session = self.sessions.get(member)
        line = self.ctx.poll_timeout_near(instance, at, window_s=rules.poll_timeout_window_s,
                                          not_before=session["joined_at"] if session else None, member=member)
        if line is not None:
            text = (f"the client of {member} ({instance}) logged a poll timeout at {line['event_ts']:%H:%M:%S} and "
                    f"its session expired at {at:%H:%M:%S}")
            return (Verdict("poll_timeout", "heartbeat_expiration", 0.85, member, text),
                    [{"event_id": line["event_id"], "explanation": "client poll timeout"}])
        for moved_at, old, new in reversed(self._moves):
            if 0 <= secs(at - moved_at) <= rules.coordinator_move_window_s:
                origin = f"from coordinator {old}" if old is not None else "from another broker"
                text = (f"the group moved {origin} to {new} at {moved_at:%H:%M:%S}; {member} expired "
                        f"{secs(at - moved_at):.0f} s later without reaching the new coordinator")
                return Verdict("coordinator_change", "coordinator_failover", 0.75, member, text), []
        return Verdict("session_timeout", "heartbeat_expiration", 0.9, member,
                       f"{member} sent no heartbeat within its session timeout"), []

    def _refine(self, verdict: Verdict, ts: pd.Timestamp, *, client_reason: str | None = None,
                protocol: str = "classic") -> tuple[Verdict, list[dict[str, Any]], str | None]:
        if verdict.cause in ("metadata_change", "unknown") and verdict.detail in (
                None, "leader_rejoin", "subscription_change"):
            change = self.ctx.connector_change_before(ts, window_s=_CONNECTOR_CHANGE_S)
            if change is not None:
                text = (f"{verdict.explanation}; a Connect worker logged '{(change.get('message') or '').strip()}' "
                        f"{secs(ts - change['event_ts']):.1f} s before: the leader rejoins to assign the changed "
                        "connectors and tasks")
                return (Verdict("metadata_change", "connector_change", 0.85, verdict.trigger_member_id, text),
                        [{"event_id": change["event_id"], "explanation": "connector or task config changed"}], None)
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
        # A client reason the leaver sent itself ("the consumer is being closed") outranks a poll-timeout line in
        # its log.
        if verdict.detail == "member_leave" and not client_reason:
            instance = self.ctx.instance_of(trigger)
            line = self.ctx.poll_timeout_near(instance, ts, window_s=rules.poll_timeout_window_s, member=trigger)
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
                and 0 <= secs(ts - removal.at) <= rules.rejoin_window_s
                and not self.ctx.started_between(instance, removal.at, ts)
            ):
                text = (f"{verdict.explanation}; {trigger} is the same process ({instance}) as {removal.member}, "
                        f"removed at {removal.at:%H:%M:%S} by {removal.cause}, joining again")
                self._removals.pop(instance or "", None)
                return Verdict(removal.cause, "rejoin", 0.85, trigger, text), [], removal.rebalance_id
            outage = self._outage_before(ts)
            if outage is not None and verdict.detail == "member_join":
                unloaded, loaded, broker = outage
                text = (f"{verdict.explanation}; the group had no coordinator from its unload at {unloaded:%H:%M:%S} "
                        f"until coordinator {broker} loaded it at {loaded:%H:%M:%S} ({secs(loaded - unloaded):.0f} s), "
                        f"and {trigger} joined as a new member {secs(ts - loaded):.1f} s later: a member whose "
                        "session ran out while it could reach no coordinator comes back with a new member id (its own "
                        "log would show it)")
                return Verdict("coordinator_change", "coordinator_failover", 0.6, trigger, text), [], None
        return verdict, [], None

    def _outage_before(self, ts: pd.Timestamp) -> tuple[pd.Timestamp, pd.Timestamp, int] | None:
        """The stretch without a coordinator (an unload, then a load) that ended at most _AFTER_OUTAGE_S before
        `ts`."""
        for unloaded, loaded, broker in reversed(self._outages):
            if 0 <= secs(ts - loaded) <= _AFTER_OUTAGE_S:
                return unloaded, loaded, broker
        return None

    def _cooperative_followup(self, verdict: Verdict, ts: pd.Timestamp, client_reason: str | None
                              ) -> tuple[Verdict, list[dict[str, Any]], str | None] | None:
        """A rejoin to revoke what the previous rebalance moved: that rebalance's cause, linked to it (no member
        joins or leaves for it). None when `client_reason` does not say so or no rebalance ended just before."""
        if not client_reason or not _COOPERATIVE_FOLLOWUP.search(client_reason) or not self.rebalances:
            return None
        previous = self.rebalances[-1]
        ended = previous["completed_at"]
        if (ended is None or previous["outcome"] == "superseded" or previous["cause"] == "unknown"
                or not 0 <= secs(ts - ended) <= _FOLLOWUP_WINDOW_S):
            return None
        text = (f"{verdict.explanation}; the cooperative follow-up of generation {previous['generation_after']} "
                f"({previous['cause']}{'/' + previous['cause_detail'] if previous['cause_detail'] else ''}), which "
                f"ended {secs(ts - ended):.1f} s before: a member revokes what that assignment moved and rejoins")
        confidence = round(min(previous["cause_confidence"] or 0.5, 0.85), 2)
        return (Verdict(previous["cause"], previous["cause_detail"], confidence, verdict.trigger_member_id, text),
                [], previous["rebalance_id"])

    def _record_removal(self, member: str, at: pd.Timestamp, cause: str, rebalance: str | None = None) -> None:
        instance = self.ctx.instance_of(member)
        if not instance or cause not in REMOVAL_CAUSES:
            return
        if rebalance is None and self._current is not None:
            rebalance = self._current.rebalance_id
        existing = self._removals.get(instance)
        if existing is not None and existing.member == member:
            existing.rebalance_id = existing.rebalance_id or rebalance
            return
        self._removals[instance] = Removal(member, at, cause, rebalance)

    def _leave_cascade(self, verdict: Verdict, ts: pd.Timestamp) -> Verdict | None:
        """A leader's metadata rejoin caused by a member's leave: the leaver alone subscribed to some topic."""
        remaining: set[str] = set()
        for member in self._members:
            topics = self.ctx.subscription_at(self.ctx.instance_of(member), ts)
            if topics is None:
                return None
            remaining |= topics
        for left_at, gone in reversed(self._departures):
            if secs(ts - left_at) > _CASCADE_S:
                break
            topics = self.ctx.subscription_at(self.ctx.instance_of(gone), left_at)
            only_theirs = sorted((topics or frozenset()) - remaining)
            if only_theirs:
                return Verdict("membership_change", "member_leave", 0.75, verdict.trigger_member_id,
                               f"{verdict.explanation}; {gone} left {secs(ts - left_at):.0f} s before and was the "
                               f"only member subscribed to {', '.join(only_theirs)}, so the group's subscription "
                               f"shrank and the leader's metadata changed with it")
        return None
