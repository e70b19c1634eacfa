"""KIP-848 consumer groups (the new coordinator, Kafka 4.x): each group-epoch bump is one rebalance, caused by the
member event just before it; its states (Assigning, Reconciling, Stable, Empty) and its completion come from the
target-assignment line and the members' assignment states."""

from __future__ import annotations

import re

import pandas as pd

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
from pipelines.gold.rulebook import Verdict, decide


def epoch_verdict(event: TimelineEvent | None) -> Verdict:
    """The cause the broker's member event before a KIP-848 epoch bump gives (before client-log refinement)."""
    if event is None:
        return decide("epoch_no_member_event", None,
                      "no member joined, left or was fenced just before the epoch bump: the metadata of the "
                      "subscribed topics changed")
    kind, member, line = event["event_type"], event.get("member_id"), f"broker: {event['event_type']}"
    if kind == "member_fenced":
        reason = event.get("reason") or ""
        if re.search(r"session (?:expired|timeout)", reason, re.IGNORECASE):
            return decide("epoch_fenced_session", member, f"{member} fenced because {reason}")
        if re.search(r"revoke|transition from epoch|rebalance timeout", reason, re.IGNORECASE):
            return decide("epoch_fenced_revoke", member,
                          f"{member} fenced because {reason} (its rebalance timeout is max.poll.interval.ms)")
        return decide("epoch_fenced_other", member, f"{member} fenced because {reason}")
    if kind == "member_left":
        return decide("epoch_member_left", member, f"{member} left the group")
    if kind == "static_member_replaced":
        return decide("epoch_static_replaced", member, f"static member {member} replaced {event.get('old_member_id')}")
    if kind == "member_joining":
        return decide("epoch_member_joined", member, f"{member} joined the group")
    if is_upgrade(event):
        return decide("epoch_protocol_upgrade", None, _CONVERTED)
    if kind == "group_config_changed":
        return decide("epoch_config_changed", None,
                      f"the group's assignment configuration changed to {event.get('reason')}")
    if kind == "streams_topology_changed":
        return decide("epoch_topology_changed", member, f"{member} brought topology epoch {event.get('epoch')}")
    return decide("epoch_subscription_changed", member, f"{line}: {member or 'the group'} changed its subscription")


# The new coordinator converts a classic group to a consumer group only while handling the heartbeat of a member that
# joins with the consumer protocol (GroupMetadataManager, 3.7+), and that join bumps the group epoch.
_CONVERTED = ("the classic group was converted to a consumer group, which the coordinator does when a member joins it "
              "with the consumer protocol (group.protocol=consumer)")


def is_upgrade(event: TimelineEvent) -> bool:
    """A `Converted the (empty) classic group to a consumer group` line: a consumer-protocol member joined."""
    return (event["event_type"] == "group_protocol_converted"
            and str(event.get("group_protocol") or "").lower() == "consumer")


class EpochReplay:
    """Epoch bumps of KIP-848 groups replayed into the group's `state` (the broker replay hands them here); their
    causes are refined by `refinement`."""

    def __init__(self, state: ReplayState, refinement: CauseRefinement) -> None:
        self.state, self.refinement = state, refinement
        self.ctx = state.ctx

    def upgrade(self, event: TimelineEvent) -> None:
        """A classic group converted to a consumer group with no `Bumped group epoch` line within NEIGHBOUR_S of it
        (an excerpt, or a log cut there): the epoch rebalance of the member whose join converted it, open, its epoch
        and member unknown."""
        ts = event["event_ts"]
        if any(abs(secs(b - ts)) <= NEIGHBOUR_S for b in self.state.bumps):
            return
        self.state.steps = []
        verdict = decide("upgrade_without_bump", None,
                         f"{_CONVERTED}; the `Bumped group epoch` line and the member's own join line are not in the "
                         "log, so the epoch and the member are unknown")
        current = OpenRebalance(stable_id(self.state.group_id, event["event_id"]), event, verdict, None, [],
                                protocol="consumer", trace=self.state.take_steps(verdict))
        self.state.rebalances.append(rebalance_row(self.state.group_id, current, completed_at=None, outcome="open"))
        self.state.transition(ts, "converted_without_bump", None, current.rebalance_id, event)

    def bump(self, event: TimelineEvent) -> None:
        """KIP-848: a consumer group's epoch bump is one rebalance; its cause is the member event just before it."""
        ts, epoch = event["event_ts"], to_int(event["group_epoch"])
        assert epoch is not None  # the bump templates capture {group_epoch} as digits
        pending = [e for e in self.state.pending if secs(ts - e["event_ts"]) <= NEIGHBOUR_S]
        self.state.pending.clear()
        decisive = min(pending, key=lambda e: EPOCH_CAUSES.index(e["event_type"]), default=None)
        verdict = epoch_verdict(decisive)
        self.state.steps = []
        self.state.consider(verdict.rule, True, verdict.explanation)
        verdict, evidence, link = self.refinement.refine(verdict, ts, protocol="consumer")
        if decisive is not None:
            line = f"{decisive['event_type']}: {decisive.get('member_id')}"
            if decisive.get("reason"):
                line += f" ({decisive['reason']})"
            evidence = [Evidence(event_id=decisive["event_id"], explanation=line), *evidence]
        before = self.state.epoch_size if self.state.epoch_size is not None else (0 if epoch == 1 else None)
        current = OpenRebalance(stable_id(self.state.group_id, event["event_id"]), event, verdict, before, evidence,
                                generation_after=epoch, linked_to=link, protocol="consumer",
                                generation_before=epoch - 1, trace=self.state.take_steps(verdict))
        for e in pending:
            who = e.get("member_id")
            if e["event_type"] in ("member_joining", "static_member_replaced") and who:
                current.joined.add(who)
            elif e["event_type"] in ("member_left", "member_fenced") and who:
                current.left.add(who)
        trigger = verdict.trigger_member_id
        if trigger and verdict.cause in REMOVAL_CAUSES and verdict.detail != "rejoin":
            self.refinement.record_removal(trigger, ts, verdict.cause, current.rebalance_id)
        current.members_after = len(self.state.members)
        self.state.epoch_size = current.members_after
        self.state.mark_generation(epoch)
        completed_at, outcome = self._epoch_completion(current, ts)
        self.state.rebalances.append(rebalance_row(self.state.group_id, current, completed_at=completed_at,
                                                   outcome=outcome))
        self._epoch_states(current, event, ts, completed_at, outcome)

    def _epoch_states(self, current: OpenRebalance, event: TimelineEvent, ts: pd.Timestamp,
                      completed_at: pd.Timestamp | None, outcome: str) -> None:
        """A consumer group's states around one epoch bump, as the new coordinator derives them: Assigning until
        the target assignment of the epoch is computed, Reconciling until every member has reached it, then Stable;
        Empty when the bump left no member."""
        epoch, rebalance_id = current.generation_after, current.rebalance_id
        if outcome == "emptied":
            self.state.transition(ts, "epoch_emptied", epoch, rebalance_id, event)
            return
        self.state.transition(ts, "epoch_bumped", epoch, rebalance_id, event)
        targeted = self.state.targets.get(epoch) if epoch is not None else None
        later = [b for b in self.state.bumps if b > ts]
        settled_from = ts
        if targeted is not None and targeted >= ts and (not later or targeted < later[0]):
            self.state.transition(targeted, "target_computed", epoch, rebalance_id, event)
            settled_from = targeted
        if outcome == "stabilized" and completed_at is not None:
            self.state.transition(max(completed_at, settled_from), "members_reconciled", epoch, rebalance_id, event)

    def _epoch_completion(self, current: OpenRebalance, ts: pd.Timestamp) -> tuple[pd.Timestamp | None, str]:
        """When the members reached the epoch's target assignment: their clients' STABLE transitions, else the
        broker's target-assignment line; `superseded` when the next bump came first, `open` when nothing says."""
        later = [b for b in self.state.bumps if b > ts]
        end = later[0] if later else None
        if not current.members_after:
            return ts, "emptied"
        epoch = current.generation_after
        targeted = self.state.targets.get(epoch) if epoch is not None else None
        done = [t for t in (targeted,) if t is not None and (end is None or t < end)]
        for member in self.state.members:
            seen, stable_at = self.ctx.reached_stable(member, ts, end)
            if not seen:
                continue
            if stable_at is None:
                return (end, "superseded") if end is not None else (None, "open")
            done.append(stable_at)
        if done:
            return max(done), "stabilized"
        return (end, "superseded") if end is not None else (None, "open")

    def target_only_epochs(self, events: list[TimelineEvent]) -> None:
        """KIP-848 broker logs with `Computed a new target assignment for epoch N` but no `Bumped group epoch` line at
        all (an excerpt, or a log level that hides it): epoch N was bumped, for a reason the missing lines would have
        named, so the cause is unknown. Done when the members' assignment states last turned STABLE before the next
        target."""
        targets = sorted((e for e in events if e.get("source_kind") == "broker"
                          and e["event_type"] == "target_assignment_computed" and to_int(e.get("target_epoch"))),
                         key=lambda e: e["event_ts"])
        seen: set[int] = set()
        previous: set[str] | None = None
        for index, event in enumerate(targets):
            epoch = to_int(event["target_epoch"])
            assert epoch is not None  # `targets` keeps only events with a target epoch
            if epoch in seen:
                continue
            seen.add(epoch)
            ts, end = event["event_ts"], targets[index + 1]["event_ts"] if index + 1 < len(targets) else None
            stable = [e["event_ts"] for e in events if e.get("source_kind") == "broker"
                      and e["event_type"] == "member_epoch_updated" and (e.get("state") or "").upper() == "STABLE"
                      and e["event_ts"] >= ts and (end is None or e["event_ts"] < end)]
            members = set(_TARGET_MEMBER.findall(event.get("members") or "")) or None
            verdict = _target_verdict(epoch, previous, members)
            previous = members
            self.state.steps = []
            current = OpenRebalance(stable_id(self.state.group_id, event["event_id"]), event, verdict, None, [],
                                    generation_after=epoch, protocol="consumer", generation_before=epoch - 1,
                                    trace=self.state.take_steps(verdict))
            completed = max(stable) if stable else None
            self.state.rebalances.append(rebalance_row(self.state.group_id, current, completed_at=completed,
                                                       outcome="stabilized" if completed is not None else "open"))
            self.state.transition(ts, "target_computed", epoch, current.rebalance_id, event)
            if completed is not None:
                self.state.transition(completed, "members_reconciled", epoch, current.rebalance_id, event)


# A member of a logged target assignment: `<member id>=MemberAssignment(` (3.8+) or `=Assignment(` (3.6-3.7).
_TARGET_MEMBER = re.compile(r"([^\s{},=]+)=(?:Member)?Assignment\(")


def _target_verdict(epoch: int, before: set[str] | None, now: set[str] | None) -> Verdict:
    """Why group epoch `epoch` was bumped when only its target assignment is logged: the members its target adds or
    drops against the previous target's, else unknown."""
    if before is not None and now is not None and before != now:
        left, joined = sorted(before - now), sorted(now - before)
        detail, who = ("member_leave", left) if left else ("member_join", joined)
        change = (f"drops {', '.join(left)}" if left else "") + (" and " if left and joined else "") + (
            f"adds {', '.join(joined)}" if joined else "")
        return decide("target_membership_diff", who[0] if len(who) == 1 else None,
                      f"the target assignment of group epoch {epoch} {change} against the previous target (the "
                      "`Bumped group epoch` line and the member's own event are not in the log)", detail=detail)
    return decide("target_unknown", None,
                  f"the coordinator computed the target assignment of group epoch {epoch}, but its log holds neither "
                  "the `Bumped group epoch` line nor the member event that caused it")
