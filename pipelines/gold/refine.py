"""Causes refined with the group's context: a session expiry explained by a GC pause or a coordinator move, a leave
by the client's poll timeout, a join traced back to the removal it returns from, a leader's metadata rejoin traced to
a member's leave."""

from __future__ import annotations

import re
from dataclasses import replace

import pandas as pd

from pipelines.gold.moves import came_back, rejoin_after_move
from pipelines.gold.records import Evidence
from pipelines.gold.replay_state import Removal, ReplayState, secs
from pipelines.gold.rulebook import Verdict, confidence, decide, window

# Causes that remove a member against its will; its return from the same process is a `rejoin` of that cause.
REMOVAL_CAUSES = ("session_timeout", "gc_pause", "poll_timeout", "coordinator_change")
# The cooperative protocol's second round: a member whose new assignment took partitions (or Streams tasks) away
# from it revokes them and rejoins at once, with this client reason (ConsumerCoordinator, 2.4+). That rebalance
# finishes the one before it, so it carries that one's cause.
_COOPERATIVE_FOLLOWUP = re.compile(r"need to revoke partitions and re-join", re.I)


class CauseRefinement:
    """The refinement rules over the replay's state (its members, departures, removals and coordinator moves). Each
    rule consulted leaves a step in the replay's trace (`ReplayState.consider`), applied or not and why."""

    def __init__(self, state: ReplayState) -> None:
        self.state = state
        self.ctx, self.rules = state.ctx, state.rules

    def expiry_verdict(self, member: str, at: pd.Timestamp) -> tuple[Verdict, list[Evidence]]:
        """Why a member's session expired: its own GC pause, a poll timeout, a coordinator move, its coordinator out
        of its reach, or plain session timeout (rules expiry_during_gc_pause .. plain_session_expiry)."""
        rules = self.rules
        instance = self.ctx.instance_of(member)
        tolerance, basis = self.ctx.heartbeat_tolerance(instance, rules.heartbeat_tolerance_s)
        pause = self.ctx.pause_covering(instance, at, tolerance_s=tolerance, min_ms=rules.gc_pause_min_ms)
        if pause is not None:
            text = (f"the JVM of {member} ({instance}) was stopped {pause['pause_ms'] / 1000:.1f} s by a GC pause "
                    f"from {pause['event_ts']:%H:%M:%S} to {pause['pause_end_ts']:%H:%M:%S}, through the session "
                    f"expiry at {at:%H:%M:%S} (within {basis})")
            return self._applied("expiry_during_gc_pause", member, text, pause["event_id"], text)
        self.state.consider("expiry_during_gc_pause", False,
                            lambda: self.ctx.why_no_pause(instance, at, tolerance_s=tolerance,
                                                          min_ms=rules.gc_pause_min_ms, basis=basis))
        # A member that stopped heartbeating after its poll timeout (librdkafka under KIP-848 does not leave, it
        # stops its heartbeats and is fenced; a leave that never reached the coordinator) expired because of it.
        session = self.state.sessions.get(member)
        line = self.ctx.poll_timeout_near(instance, at, window_s=rules.poll_timeout_window_s,
                                          not_before=session["joined_at"] if session else None, member=member)
        if line is not None:
            text = (f"the client of {member} ({instance}) logged a poll timeout at {line['event_ts']:%H:%M:%S} and "
                    f"its session expired at {at:%H:%M:%S}")
            return self._applied("expiry_after_poll_timeout", member, text, line["event_id"], "client poll timeout")
        self.state.consider("expiry_after_poll_timeout", False,
                            lambda: self.ctx.why_no_poll_timeout(instance, at, window_s=rules.poll_timeout_window_s))
        for moved_at, old, new, loaded in reversed(self.state.moves):
            if 0 <= secs(at - moved_at) <= rules.coordinator_move_window_s:
                alive, how = came_back(self.state, member, at)
                if not alive:
                    self.state.consider("expiry_after_coordinator_move", False,
                                        f"the group moved to coordinator {new} at {moved_at:%H:%M:%S}, {how}")
                    break
                origin = f"from coordinator {old}" if old is not None else "from another broker"
                text = (f"the group moved {origin} to {new} at {moved_at:%H:%M:%S}; {member} expired "
                        f"{secs(at - moved_at):.0f} s later without reaching the new coordinator {how}")
                return self._applied("expiry_after_coordinator_move", member, text, loaded,
                                     f"coordinator {new} loaded the group")
        else:
            self.state.consider("expiry_after_coordinator_move", False, lambda: self._why_no_move(at))
        cut_off = self.ctx.unreachable_before(instance, at, self.ctx.client_of(member))
        if cut_off is not None:
            text = (f"the client of {member} ({instance}) could not reach its coordinator at "
                    f"{cut_off['event_ts']:%H:%M:%S} ({cut_off['event_type']}) and its session expired at "
                    f"{at:%H:%M:%S}: its heartbeats could not get through")
            return self._applied("expiry_while_coordinator_unreachable", member, text, cut_off["event_id"],
                                 "coordinator out of reach")
        self.state.consider("expiry_while_coordinator_unreachable", False,
                            f"the client of {member} ({instance}) logged no lost connection to its coordinator before "
                            "the expiry" if instance else f"no client log is tied to {member}")
        text = f"{member} sent no heartbeat within its session timeout"
        self.state.consider("plain_session_expiry", True, text)
        return decide("plain_session_expiry", member, text), []

    def _applied(self, rule: str, member: str, text: str, event_id: str, explanation: str
                 ) -> tuple[Verdict, list[Evidence]]:
        """An expiry rule that applied: its step in the trace, its verdict on `member` and the line that decided."""
        self.state.consider(rule, True, text)
        return decide(rule, member, text), [{"event_id": event_id, "explanation": explanation}]

    def _why_no_move(self, at: pd.Timestamp) -> str:
        limit = self.rules.coordinator_move_window_s
        before = [m for m, _, _, _ in self.state.moves if m <= at]
        if not before:
            return f"no coordinator move of the group before {at:%H:%M:%S} in these logs"
        return (f"the group's last coordinator move before it was at {before[-1]:%H:%M:%S}, "
                f"{secs(at - before[-1]):.0f} s before (the window is {limit:g} s)")

    def refine(self, verdict: Verdict, ts: pd.Timestamp, *, client_reason: str | None = None,
               protocol: str = "classic") -> tuple[Verdict, list[Evidence], str | None]:
        """`verdict` refined by the group's context, in the rule book's order: connector_change, leave_cascade,
        rejoin_after_coordinator_move, the expiry rules, leave_after_poll_timeout, rejoin_after_removal,
        join_after_coordinator_outage."""
        found = self._connector_rule(verdict, ts)
        if found is not None:
            return found
        if verdict.cause == "metadata_change" and verdict.detail in ("partition_count_change", "leader_rejoin"):
            cascade = self._leave_cascade(verdict, ts)
            if cascade is not None:
                return cascade, [], None
        if verdict.rule in ("reason_leader_rejoin", "reason_member_metadata_update"):
            found = rejoin_after_move(self.state, verdict, ts)
            if found is not None:
                return found
        trigger = verdict.trigger_member_id
        if not trigger:
            return verdict, [], None
        if verdict.cause == "session_timeout":
            refined, evidence = self.expiry_verdict(trigger, ts)
            explanation = verdict.explanation + "; " + refined.explanation
            return replace(refined, trigger_member_id=trigger, explanation=explanation), evidence, None
        # A client reason the leaver sent itself ("the consumer is being closed") outranks a poll-timeout line in
        # its log.
        if verdict.detail == "member_leave" and not client_reason:
            found = self._leave_poll_rule(verdict, trigger, ts)
            if found is not None:
                return found
        if verdict.detail in ("member_join", "member_rejoin"):
            return self._join_rules(verdict, trigger, ts, protocol)
        return verdict, [], None

    def _connector_rule(self, verdict: Verdict, ts: pd.Timestamp
                        ) -> tuple[Verdict, list[Evidence], str | None] | None:
        """Rule connector_change: a Connect config write just before a leader's metadata rejoin (or an unexplained
        start) is what the rejoin hands out."""
        if verdict.cause not in ("metadata_change", "unknown", "membership_change") or verdict.detail not in (
                None, "leader_rejoin", "subscription_change"):
            return None
        # Members' lines alone: the members saw a rebalance nobody named; a config write names it.
        if verdict.cause == "membership_change" and verdict.rule != "client_seen_rebalancing":
            return None
        change = self.ctx.connector_change_before(ts, window_s=window("connector_change_s"))
        if change is None:
            if self.ctx.connector_changes:
                self.state.consider("connector_change", False, f"no connector or task config written in the "
                                    f"{window('connector_change_s'):g} s before {ts:%H:%M:%S}")
            return None
        text = (f"{verdict.explanation}; a Connect worker logged '{(change.get('message') or '').strip()}' "
                f"{secs(ts - change['event_ts']):.1f} s before: the leader rejoins to assign the changed "
                "connectors and tasks")
        self.state.consider("connector_change", True, text)
        return (decide("connector_change", verdict.trigger_member_id, text),
                [{"event_id": change["event_id"], "explanation": "connector or task config changed"}], None)

    def _leave_poll_rule(self, verdict: Verdict, trigger: str, ts: pd.Timestamp
                         ) -> tuple[Verdict, list[Evidence], str | None] | None:
        """Rule leave_after_poll_timeout: the leaver's client logged a poll timeout first."""
        instance = self.ctx.instance_of(trigger)
        window_s = self.rules.poll_timeout_window_s
        line = self.ctx.poll_timeout_near(instance, ts, window_s=window_s, member=trigger)
        if line is None:
            self.state.consider("leave_after_poll_timeout", False,
                                lambda: self.ctx.why_no_poll_timeout(instance, ts, window_s=window_s))
            return None
        text = f"{verdict.explanation}; the client of {trigger} ({instance}) logged a poll timeout first"
        self.state.consider("leave_after_poll_timeout", True, text)
        return (decide("leave_after_poll_timeout", trigger, text),
                [{"event_id": line["event_id"], "explanation": "client poll timeout"}], None)

    def _join_rules(self, verdict: Verdict, trigger: str, ts: pd.Timestamp, protocol: str
                    ) -> tuple[Verdict, list[Evidence], str | None]:
        """Rules rejoin_after_removal and join_after_coordinator_outage over a member's join."""
        instance = self.ctx.instance_of(trigger)
        removal = self.state.removals.get(instance or "")
        why_not = self._why_not_rejoin(removal, trigger, ts, protocol, instance)
        if removal is not None and why_not is None:
            text = (f"{verdict.explanation}; {trigger} is the same process ({instance}) as {removal.member}, "
                    f"removed at {removal.at:%H:%M:%S} by {removal.cause}, joining again")
            self.state.removals.pop(instance or "", None)
            self.state.consider("rejoin_after_removal", True, text)
            return decide("rejoin_after_removal", trigger, text, cause=removal.cause), [], removal.rebalance_id
        self.state.consider("rejoin_after_removal", False, why_not or "")
        outage = self._outage_before(ts)
        if outage is not None and verdict.detail == "member_join":
            unloaded, loaded, broker = outage
            text = (f"{verdict.explanation}; the group had no coordinator from its unload at {unloaded:%H:%M:%S} "
                    f"until coordinator {broker} loaded it at {loaded:%H:%M:%S} ({secs(loaded - unloaded):.0f} s), "
                    f"and {trigger} joined as a new member {secs(ts - loaded):.1f} s later: a member whose "
                    "session ran out while it could reach no coordinator comes back with a new member id (its own "
                    "log would show it)")
            self.state.consider("join_after_coordinator_outage", True, text)
            return decide("join_after_coordinator_outage", trigger, text), [], None
        if verdict.detail == "member_join":
            self.state.consider("join_after_coordinator_outage", False,
                                f"no stretch without a coordinator ended in the {window('after_outage_s'):g} s before")
        return verdict, [], None

    def _why_not_rejoin(self, removal: Removal | None, trigger: str, ts: pd.Timestamp, protocol: str,
                        instance: str | None) -> str | None:
        """None when rule rejoin_after_removal applies to `trigger`'s join at `ts`, else why not."""
        if instance is None:
            return f"{trigger} is tied to no process folder (no client log names it), so no earlier removal can be"
        if removal is None:
            return f"no member of {instance} was removed against its will before"
        # A KIP-848 member keeps its id across a leave and rejoin; a classic one gets a new id.
        if removal.member == trigger and protocol != "consumer":
            return f"{trigger} is the member removed at {removal.at:%H:%M:%S} itself, not a new id of its process"
        gap = secs(ts - removal.at)
        if not 0 <= gap <= self.rules.rejoin_window_s:
            return (f"the removal of {removal.member} ({removal.cause}) was {gap:.0f} s before, outside the "
                    f"{self.rules.rejoin_window_s:g} s rejoin window")
        if self.ctx.started_between(instance, removal.at, ts):
            return f"the process in {instance} started again after {removal.member} was removed: a fresh start"
        if not self.ctx.logs_starts(instance) and not self.ctx.active_between(
                instance, removal.at - pd.Timedelta(seconds=self.rules.rejoin_window_s), ts):
            return (f"the client in {instance} never logs its process starting and logged nothing from "
                    f"{self.rules.rejoin_window_s:g} s before {removal.member} was removed until this join: a fresh "
                    "process cannot be told from the same one coming back")
        return None

    def _outage_before(self, ts: pd.Timestamp) -> tuple[pd.Timestamp, pd.Timestamp, int] | None:
        """The stretch without a coordinator (an unload, then a load) that ended at most `after_outage_s` before
        `ts`."""
        for unloaded, loaded, broker in reversed(self.state.outages):
            if 0 <= secs(ts - loaded) <= window("after_outage_s"):
                return unloaded, loaded, broker
        return None

    def cooperative_followup(self, verdict: Verdict, ts: pd.Timestamp, client_reason: str | None
                             ) -> tuple[Verdict, list[Evidence], str | None] | None:
        """A rejoin to revoke what the previous rebalance moved: that rebalance's cause, linked to it (no member
        joins or leaves for it). None when `client_reason` does not say so or no rebalance ended just before."""
        if not client_reason or not _COOPERATIVE_FOLLOWUP.search(client_reason) or not self.state.rebalances:
            return None
        previous = self.state.rebalances[-1]
        ended = previous["completed_at"]
        if (ended is None or previous["outcome"] == "superseded" or previous["cause"] == "unknown"
                or not 0 <= secs(ts - ended) <= window("cooperative_followup_s")):
            self.state.consider("cooperative_followup", False, "the member asked to revoke and rejoin, but no "
                                f"rebalance with a known cause ended in the {window('cooperative_followup_s'):g} s "
                                "before")
            return None
        text = (f"{verdict.explanation}; the cooperative follow-up of generation {previous['generation_after']} "
                f"({previous['cause']}{'/' + previous['cause_detail'] if previous['cause_detail'] else ''}), which "
                f"ended {secs(ts - ended):.1f} s before: a member revokes what that assignment moved and rejoins")
        carried = round(min(previous["cause_confidence"] or 0.5, confidence("cooperative_followup")), 2)
        self.state.consider("cooperative_followup", True, text)
        return (decide("cooperative_followup", verdict.trigger_member_id, text, cause=previous["cause"],
                       detail=previous["cause_detail"], confidence=carried), [], previous["rebalance_id"])

    def record_removal(self, member: str, at: pd.Timestamp, cause: str, rebalance: str | None = None) -> None:
        instance = self.ctx.instance_of(member)
        if not instance or cause not in REMOVAL_CAUSES:
            return
        if rebalance is None and self.state.current is not None:
            rebalance = self.state.current.rebalance_id
        existing = self.state.removals.get(instance)
        if existing is not None and existing.member == member:
            existing.rebalance_id = existing.rebalance_id or rebalance
            return
        self.state.removals[instance] = Removal(member, at, cause, rebalance)

    def _leave_cascade(self, verdict: Verdict, ts: pd.Timestamp) -> Verdict | None:
        """Rule leave_cascade: a leader's metadata rejoin caused by a member's leave (the leaver alone subscribed to
        some topic)."""
        remaining: set[str] = set()
        for member in self.state.members:
            topics = self.ctx.subscription_at(self.ctx.instance_of(member), ts)
            if topics is None:
                self.state.consider("leave_cascade", False, f"the subscription of {member} is not in its log")
                return None
            remaining |= topics
        for left_at, gone in reversed(self.state.departures):
            if secs(ts - left_at) > window("leave_cascade_s"):
                break
            topics = self.ctx.subscription_at(self.ctx.instance_of(gone), left_at)
            only_theirs = sorted((topics or frozenset()) - remaining)
            if only_theirs:
                text = (f"{verdict.explanation}; {gone} left {secs(ts - left_at):.0f} s before and was the only "
                        f"member subscribed to {', '.join(only_theirs)}, so the group's subscription shrank and the "
                        "leader's metadata changed with it")
                self.state.consider("leave_cascade", True, text)
                return decide("leave_cascade", verdict.trigger_member_id, text)
        self.state.consider("leave_cascade", False, f"no member that left in the {window('leave_cascade_s'):g} s "
                            "before was the only one subscribed to a topic")
        return None
