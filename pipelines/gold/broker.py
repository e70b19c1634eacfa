"""The coordinator's log replayed: coordinator moves, members joining and leaving, and the classic protocol's
rebalances (started, stabilized, assignment received, emptied) with the cause the broker's reason gives, refined with
the group's context; KIP-848 epoch bumps go to epochs.EpochReplay."""

from __future__ import annotations

import re
from dataclasses import replace

import pandas as pd

from pipelines.gold.causes import classify_reason, given_reason, left_line, neighbour_verdict, rejoins_under_way
from pipelines.gold.epochs import EpochReplay, is_upgrade
from pipelines.gold.records import Evidence, TimelineEvent
from pipelines.gold.refine import REMOVAL_CAUSES, CauseRefinement
from pipelines.gold.replay_state import (
    EPOCH_CAUSES,
    NEIGHBOUR_S,
    OpenRebalance,
    ReplayState,
    secs,
    stable_id,
    to_int,
)
from pipelines.gold.rows import rebalance_row
from pipelines.gold.rulebook import confidence, decide

# Member events that make a coordinator start a rebalance, and events that show it did (or had no need to).
_IMPLY_REBALANCE = ("member_failed", "member_left", "member_fenced", "member_joining")
_SHOW_REBALANCE_OR_NONE = ("rebalance_started", "group_epoch_bumped", "group_emptied", "group_stabilized",
                           "static_member_rejoined", "group_dead", "group_unloaded")
_SET_ITEMS = re.compile(r"[\w.\-]+(?:-[0-9a-f-]{36})?")
# Broker wordings about a member that never completed its join (pending, or told to rejoin with its new id): the
# coordinator adds or drops it without rebalancing the group.
_PENDING_ROWS = ("b_pending_", "b_join_pending", "b_join_dynamic_required", "n_pending_", "n_dynamic_join_required",
                 "n_join_dynamic_required")


class BrokerReplay:
    """Broker events of one group, fed in time order to `on_event`, replayed into the group's `state`: the classic
    protocol here, epoch bumps by `epochs`, causes refined by `refinement`."""

    def __init__(self, state: ReplayState, refinement: CauseRefinement, epochs: EpochReplay) -> None:
        self.state, self.refinement, self.epochs = state, refinement, epochs
        self.ctx, self.rules = state.ctx, state.rules
        self._assignments_logged = False

    def _formed_unlogged(self, kind: str, event: TimelineEvent) -> bool:
        """Whether `event` removes a member (expired, left, fenced) more than NEIGHBOUR_S after the open rebalance
        stabilized, in a group whose log has shown no leader's assignment so far. A pending member (one that never
        completed its join) is removed without a rebalance."""
        current = self.state.current
        return (kind in ("member_failed", "member_left", "member_fenced") and bool(event.get("member_id"))
                and not self._assignments_logged and current is not None and current.stabilized_at is not None
                and secs(event["event_ts"] - current.stabilized_at) > NEIGHBOUR_S
                and not str(event.get("template_id") or "").startswith(_PENDING_ROWS))

    def on_event(self, event: TimelineEvent) -> None:
        kind, member, ts = event["event_type"], event.get("member_id"), event["event_ts"]
        self.flush_implied(before=ts)
        recent = self.state.last_activity is not None and secs(ts - self.state.last_activity) <= NEIGHBOUR_S
        # In a group whose rebalances are epoch bumps (KIP-848 consumer and streams groups), a member event implies
        # no classic rebalance: the bump (or its target assignment) that follows is the rebalance, and none follows
        # the last member's leave.
        state = self.state
        if kind == "assignment_received":
            self._assignments_logged = True
        if self._formed_unlogged(kind, event):
            # A coordinator that never logs the leader's assignment (its version or level) leaves the generation it
            # formed open; a member removed or leaving well after it was formed starts the next rebalance (the
            # coordinator rebalances a Stable group on a removal), so the formed one ends where it stabilized.
            assert state.current is not None and state.current.stabilized_at is not None
            self._close(state.current.stabilized_at, "stabilized")
        if kind in _IMPLY_REBALANCE and member and state.current is None and not recent and not state.bumps and (
                kind == "member_joining" or not self._is_empty()):
            # A member leaving an Empty group (the last one, logged after the group emptied) starts nothing, and a
            # member event within NEIGHBOUR_S of a rebalance's own lines belongs to it, whatever order equal times
            # sort in.
            self.state.implied.append(event)
        elif kind in ("group_stabilized", "group_emptied") and self.state.current is None and self.state.implied:
            # The end of a rebalance whose start line is missing: the member events before it began it.
            self.flush_implied()
        elif kind in _SHOW_REBALANCE_OR_NONE:
            self.state.implied.clear()
        if kind in _SHOW_REBALANCE_OR_NONE or kind == "assignment_received":
            self.state.last_activity = ts
        self._track_coordinator(kind, event)
        if not self._on_member_event(kind, member, ts, event):
            self._on_rebalance_event(kind, ts, event)
        if kind in EPOCH_CAUSES:
            self.state.pending.append(event)
            if len(self.state.pending) > 64:
                del self.state.pending[:32]
        self.state.recent.append(event)
        if len(self.state.recent) > 64:
            del self.state.recent[:32]

    def _track_coordinator(self, kind: str, event: TimelineEvent) -> None:
        """Where the group is coordinated: loads, unloads, moves and the stretches with no coordinator."""
        ts = event["event_ts"]
        broker = to_int(event.get("broker_id"))
        if kind == "group_loaded":
            if broker is not None and self.state.coordinator is not None and broker != self.state.coordinator:
                self.state.moves.append((ts, self.state.coordinator, broker, event["event_id"]))
            elif broker is not None and self.state.unloaded_from is not None:
                # Unloaded, then loaded again (on the same broker after a leader re-election, or on one whose own
                # earlier lines are missing): the group's in-memory state was rebuilt, as after any move.
                self.state.moves.append((ts, self.state.unloaded_from, broker, event["event_id"]))
            elif broker is not None and self.state.coordinator is None and (to_int(event.get("generation")) or 0) > 0:
                # The group's first line is its load at a generation it reached elsewhere: it has just moved here
                # (its old coordinator's lines are not in these logs).
                self.state.moves.append((ts, None, broker, event["event_id"]))
            unloaded_at = self.state.unloads.pop(broker, None) if broker is not None else None
            if unloaded_at is not None and broker is not None:
                # The broker that had unloaded the group loads it again: it was elsewhere or nowhere in between.
                self.state.outages.append((unloaded_at, ts, broker))
            self.state.coordinator, self.state.unloaded_from = broker, None
        elif kind == "group_unloaded":
            unloader = broker if broker is not None else self.state.coordinator
            if unloader is not None:
                self.state.unloads[unloader] = ts
            if broker is None or self.state.coordinator in (None, broker):
                # Only the current coordinator's unload moves the group: an old one's, logged after the group moved,
                # says nothing about where it is.
                self.state.unloaded_from = unloader
            else:
                self.state.coordinator = broker
        elif broker is not None:
            self.state.coordinator = broker

    def _on_member_event(self, kind: str, member: str | None, ts: pd.Timestamp, event: TimelineEvent) -> bool:
        """A member joining, loaded, replaced, removed, leaving or fenced; False when `event` is none of these."""
        if kind in ("member_joining", "member_loaded") and member:
            self.state.join(member, event)
        elif kind == "static_member_replaced":
            old = event.get("old_member_id")
            if old:
                self.state.leave(old, ts, "replaced")
            if member:
                self.state.join(member, event)
        elif kind in ("member_failed", "member_left") and member:
            if kind == "member_failed":
                self.refinement.record_removal(member, ts, self.refinement.expiry_verdict(member, ts)[0].cause)
            self.state.leave(member, ts, "expired" if kind == "member_failed" else "left")
            if self.state.current is not None:
                self.state.current.left.add(member)
                self.state.current.evidence.append({"event_id": event["event_id"], "explanation": f"{kind}: {member}"})
        elif kind == "member_fenced" and member:
            self.state.leave(member, ts, "expired")
        elif kind == "members_removed":
            for gone in _SET_ITEMS.findall(event.get("members") or ""):
                if gone in self.state.members:
                    self.state.leave(gone, ts, "rebalance_timeout")
        else:
            return False
        return True

    def _on_rebalance_event(self, kind: str, ts: pd.Timestamp, event: TimelineEvent) -> None:
        """A rebalance's own lines: started, epoch bumped, converted, stabilized, assignment received, emptied, dead."""
        if kind == "rebalance_started":
            self.state.pending.clear()
            self._start(event)
        elif kind == "group_epoch_bumped" and to_int(event.get("group_epoch")) is not None:
            self.epochs.bump(event)
        elif is_upgrade(event):
            self.epochs.upgrade(event)
        elif kind == "target_assignment_computed" and event["event_id"] in self.state.target_bumps:
            self.epochs.bump({**event, "group_epoch": event["target_epoch"]})
        elif kind == "group_stabilized" and self.state.current is not None:
            current = self.state.current
            current.generation_after = to_int(event.get("generation"))
            current.stabilized_at = ts
            current.members_after = self._stabilized_size(event)
            self.state.mark_generation(current.generation_after)
            self.state.transition(ts, "group_stabilized", current.generation_after, current.rebalance_id, event)
        elif kind == "assignment_received" and self.state.current is not None:
            current = self.state.current
            if to_int(event.get("generation")) == current.generation_after:
                self.state.transition(ts, "assignment_received", current.generation_after, current.rebalance_id, event)
                self._close(ts, "stabilized")
        elif kind == "group_emptied":
            generation = to_int(event.get("generation"))
            if self.state.current is not None:
                self.state.current.generation_after = generation
                self.state.current.members_after = 0
                self._close(ts, "emptied", transition=False)
            for gone in list(self.state.members):
                self.state.leave(gone, ts, "left")
            self.state.size = 0
            self.state.transition(ts, "group_emptied", generation, None, event)
        elif kind == "group_dead":
            self.state.transition(ts, "group_dead", to_int(event.get("generation")), None, event)

    def _stabilized_size(self, event: TimelineEvent) -> int | None:
        """How many members the generation a `Stabilized` line closes has: the count the line gives (brokers from
        2.8 on); else the most of the members the replay knows and those whose own logs joined that generation (a
        member's rejoin into a generation is not logged by older brokers, so the first alone undercounts); None
        when neither knows one (a stabilized generation has at least one member)."""
        count = to_int(event.get("member_count"))
        if count is not None:
            return count
        generation = to_int(event.get("generation"))
        known = max(len(self.state.members), len(self.ctx.joined.get(generation, ())) if generation is not None else 0)
        return known or None

    def _is_empty(self) -> bool:
        return bool(self.state.transitions) and self.state.transitions[-1][1] == "Empty"

    def flush_implied(self, *, before: pd.Timestamp | None = None) -> None:
        """Open the rebalances that member events imply when the coordinator's own line for them is missing (lost
        or cut from the log): a member removed, fenced or joining while the group was not rebalancing makes the
        coordinator start one, unless a line within NEIGHBOUR_S shows it started one or emptied the group.
        `before`: only events that much older than it are settled (None: all, at the end of the log)."""
        while self.state.implied and (before is None or secs(before - self.state.implied[0]["event_ts"]) > NEIGHBOUR_S):
            first = self.state.implied[0]
            together = [e for e in self.state.implied if secs(e["event_ts"] - first["event_ts"]) <= NEIGHBOUR_S]
            del self.state.implied[:len(together)]
            if self.state.current is not None:
                continue
            self._start({**first, "event_type": "rebalance_started", "event_id": f"{first['event_id']}:implied",
                         "generation": None, "reason": None, "client_reason": None}, implied=True)

    def _start(self, event: TimelineEvent, *, implied: bool = False) -> None:
        ts = event["event_ts"]
        self.state.steps = []
        interrupted = self._interrupted_by_move(event)
        if self.state.current is not None:
            self._close(ts, "superseded", transition=False)
        client_reason = event.get("client_reason")
        leave_evidence: list[Evidence] = []
        verdict = classify_reason(event.get("reason"), client_reason)
        if verdict is not None and verdict.detail == "member_leave" and not client_reason:
            left = left_line(self.state.recent, verdict.trigger_member_id, ts)
            if left is not None:
                client_reason = left["client_reason"]
                verdict = classify_reason(event.get("reason"), client_reason)
                leave_evidence = [{"event_id": left["event_id"],
                                   "explanation": f"{left['member_id']} left; client reason: {client_reason}"}]
        verdict = verdict or neighbour_verdict(self.state.recent, ts, to_int(event.get("generation")))
        self.state.consider(verdict.rule, True, verdict.explanation)
        if implied:
            factor = confidence("implied_start")
            verdict = replace(verdict, confidence=round(verdict.confidence * factor, 2),
                              explanation=f"{verdict.explanation}; the coordinator's `Preparing to rebalance` line is "
                              "missing from the log: the rebalance is implied by the member event")
            self.state.consider("implied_start", True, f"confidence x {factor:g}: the start line is missing")
        joining = verdict.detail in ("member_join", "rejoin")
        restarts = verdict.cause in ("membership_change", "unknown") and verdict.detail != "member_leave"
        if interrupted is not None and (restarts or rejoins_under_way(verdict, client_reason)):
            old, new, moved_at = interrupted
            verdict = decide("move_interrupted_rebalance", verdict.trigger_member_id,
                             f"{verdict.explanation}; the rebalance in progress on coordinator {old} was cut off when "
                             f"the group moved to coordinator {new} at {moved_at:%H:%M:%S}, and its members joined "
                             f"again there")
            self.state.consider(verdict.rule, True, verdict.explanation)
        followup = self.refinement.cooperative_followup(verdict, ts, given_reason(client_reason))
        verdict, evidence, link = followup or self.refinement.refine(verdict, ts,
                                                                     client_reason=given_reason(client_reason))
        evidence = leave_evidence + evidence
        size = self.state.size
        before = size if size is not None else (0 if to_int(event.get("generation")) == 0 else None)
        current = OpenRebalance(stable_id(self.state.group_id, event["event_id"]), event, verdict, before, evidence,
                                linked_to=link, trace=self.state.take_steps(verdict))
        self.state.current = current
        trigger = verdict.trigger_member_id if followup is None else None  # a follow-up moves no member
        if trigger and (joining or verdict.detail in ("member_join", "rejoin")):
            if trigger not in self.state.members:
                self.state.join(trigger, event)
            current.joined.add(trigger)
        elif trigger and verdict.cause in REMOVAL_CAUSES:
            self.refinement.record_removal(trigger, ts, verdict.cause)
            self.state.leave(trigger, ts, "poll_timeout" if verdict.cause == "poll_timeout" else "expired")
            current.left.add(trigger)
        elif trigger and verdict.detail == "member_leave":
            self.state.leave(trigger, ts, "left")
            current.left.add(trigger)
        self.state.transition(ts, "rebalance_started", to_int(event.get("generation")), current.rebalance_id, event)

    def _close(self, ts: pd.Timestamp, outcome: str, *, transition: bool = True) -> None:
        current = self.state.current
        assert current is not None
        if outcome in ("stabilized", "superseded") and current.members_after is not None:
            self.state.size = current.members_after
        self.state.rebalances.append(rebalance_row(self.state.group_id, current, completed_at=ts, outcome=outcome))
        self.state.current = None

    def _interrupted_by_move(self, event: TimelineEvent) -> tuple[int | None, int, pd.Timestamp] | None:
        """The coordinator move that cut off the open rebalance, when `event` restarts it on the new coordinator."""
        current, broker = self.state.current, to_int(event.get("broker_id"))
        if current is None or broker is None:
            return None
        for moved_at, old, new, _ in reversed(self.state.moves):
            if (new == broker and current.start["event_ts"] <= moved_at <= event["event_ts"]
                    and secs(event["event_ts"] - moved_at) <= self.rules.coordinator_move_window_s):
                return old, new, moved_at
        return None
