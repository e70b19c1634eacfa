"""Rebalances of a group whose coordinator's log is absent, rebuilt from its members' own lines (never mixed with
broker evidence, so results with broker logs stay as they are)."""

from __future__ import annotations

import bisect
from typing import Any

import pandas as pd

from pipelines.gold.client_causes import classify_client_signs
from pipelines.gold.client_joins import Join, read_stream, when_joined
from pipelines.gold.client_lines import (
    ASSIGNED_MEMBER,
    CLIENT_CHAIN_S,
    is_sign,
)
from pipelines.gold.client_removals import classify_removal
from pipelines.gold.kinds import client_kinds
from pipelines.gold.records import Evidence, TimelineEvent
from pipelines.gold.replay_state import OpenRebalance, ReplayState, secs, stable_id, to_int
from pipelines.gold.rows import rebalance_row
from pipelines.gold.rulebook import Verdict, confidence, decide


class ClientOnlyReplay:
    """Client events of a group without broker events, replayed by `replay` into the group's `state`."""

    def __init__(self, state: ReplayState) -> None:
        self.state = state
        self.ctx, self.rules = state.ctx, state.rules
        self._unassigned: list[TimelineEvent] = []
        self._by_instance: dict[Any, list[TimelineEvent]] = {}

    def replay(self, events: list[TimelineEvent]) -> None:
        """Rebalances of a group whose coordinator's log is absent, from its members' own lines.

        Each `Successfully joined group with generation N` is the member's side of the rebalance that made
        generation N; members of one generation make one rebalance. Its start is the earliest line of the chain that
        led each member into it (revoke, `(Re-)joining group`, a heartbeat answered `group is rebalancing`, a poll
        timeout, ...), its end the last member's sync or assignment, its cause `causes.classify_client_signs` over
        those lines. Lines after a member's last join that lead to no join make one `open` rebalance.
        """
        # Read per rebalance, so kept once in time order instead of filtered from every line each time.
        self._unassigned = sorted((e for e in events if e["event_type"] == "client_topics_unassigned"),
                                  key=lambda e: e["event_ts"])
        self._by_instance = {}
        streams: dict[tuple[Any, Any], list[TimelineEvent]] = {}
        assignments: dict[int, tuple[TimelineEvent, list[str]]] = {}
        for event in events:
            self._by_instance.setdefault(event.get("instance"), []).append(event)
            streams.setdefault((event.get("instance"), event.get("client_id")), []).append(event)
            generation = to_int(event.get("generation"))
            if event["event_type"] == "client_assignment_computed" and generation is not None:
                assignments[generation] = (event, ASSIGNED_MEMBER.findall(event.get("members") or ""))
        joins: list[Join] = []
        trailing: list[TimelineEvent] = []
        ends: list[TimelineEvent] = []
        for stream in streams.values():
            read_stream(stream, joins, trailing, ends)
        by_generation: dict[int, list[Join]] = {}
        for join in joins:
            by_generation.setdefault(when_joined(join)[0], []).append(join)
        # A member's lines that lead to no join of its own belong to the next generation another member joined.
        order = sorted(by_generation, key=lambda g: min(when_joined(j)[1] for j in by_generation[g]))
        rest = []
        for event in trailing:
            later = [g for g in order if max(when_joined(j)[1] for j in by_generation[g]) >= event["event_ts"]]
            if later and is_sign(event):
                by_generation[later[0]][0]["signs"].append(event)
            else:
                rest.append(event)
        previous = None
        for generation in order:
            self._client_rebalance(generation, by_generation[generation], assignments, previous)
            previous = generation
        self._unjoined_rebalance(rest, ends, [when_joined(j)[1] for j in joins], assignments, previous)

    def _topics_unassigned_before(self, since: pd.Timestamp | None) -> TimelineEvent | None:
        """The leader's last line up to `since` (at most CLIENT_CHAIN_S before it) that its assignment skipped
        subscribed topics it had no metadata for; None when there is none or `since` is unknown."""
        if since is None:
            return None
        early = since - pd.Timedelta(seconds=CLIENT_CHAIN_S)
        i = bisect.bisect_right(self._unassigned, since, key=lambda e: e["event_ts"])
        return self._unassigned[i - 1] if i > 0 and self._unassigned[i - 1]["event_ts"] >= early else None

    def _unjoined_rebalance(self, rest: list[TimelineEvent], ends: list[TimelineEvent],
                            joined_at: list[pd.Timestamp], assignments: dict[int, tuple[TimelineEvent, list[str]]],
                            previous: int | None) -> None:
        """The rebalances the members' lines show without any join line (`episodes`): each begun by signs in `rest`
        and over at the steady states of `ends` after them. One seen only by its end (the members' return to a
        steady state, its start cut from the log) is one too, unless a join just before explains that end."""
        joins = sorted(joined_at)

        def after_a_join(ts: pd.Timestamp) -> bool:
            # The latest join at or before `ts` decides (a group with a long history has many of both).
            i = bisect.bisect_right(joins, ts)
            return i > 0 and secs(ts - joins[i - 1]) <= CLIENT_CHAIN_S

        orphans = [e for e in ends if not after_a_join(e["event_ts"])]
        signs = [e for e in rest if is_sign(e)]
        arrivals = [e for e in rest if e.get("_newcomer")]
        newcomers: list[TimelineEvent] = [{**e, "_unjoined": True} for e in arrivals]
        if not signs and not orphans:
            if not arrivals:
                return
            # A new process's join is a rebalance of the group even when the log ends before it is seen.
            signs = [{**arrivals[0], "_rebalancing": True, "_unjoined": True}]
        for opened, closing in episodes(signs, orphans):
            completed = max((e["event_ts"] for e in closing), default=None)
            self._client_rebalance(None, [{"generation": None, "event": None, "member": None,
                                           "signs": opened or [{**e, "_rebalancing": True} for e in closing],
                                           "newcomers": newcomers, "completed": completed}], assignments, previous)
            newcomers = []

    def _removal(self, gone: list[str], since: pd.Timestamp) -> tuple[Verdict, TimelineEvent] | None:
        """Why the one member the leader's assignment dropped left, from its own process's lines from the rebalance
        on (a poll timeout, an expired session, a GC pause that expired it, a session it lost to an unreachable
        coordinator, or a leave); None when they do not say."""
        if len(gone) != 1:
            return None
        instance = self.ctx.instance_of(gone[0])
        if instance is None:
            return None
        until = since + pd.Timedelta(seconds=self.rules.rejoin_window_s)
        early = since - pd.Timedelta(seconds=CLIENT_CHAIN_S)
        own = self._by_instance.get(instance, [])
        lines = [e for e in own if early <= e["event_ts"] <= until]
        before = [e for e in own if e["event_ts"] < early]
        # A silent log means an expired session only for a client that logs its LeaveGroup at INFO (Java);
        # librdkafka logs its leave only at debug level.
        says_leaves = client_kinds(own).get(instance) != "librdkafka"
        found = classify_removal(gone[0], lines, before[-1] if before and says_leaves else None)
        if found is None:
            return None
        verdict, why = found
        if verdict.cause == "session_timeout":
            tolerance, _ = self.ctx.heartbeat_tolerance(instance, self.rules.heartbeat_tolerance_s)
            pause = self.ctx.pause_covering(instance, since, tolerance_s=tolerance, min_ms=self.rules.gc_pause_min_ms)
            if pause is not None:
                verdict = decide("removal_gc_pause", verdict.trigger_member_id,
                                 f"{verdict.explanation}; its JVM was paused {pause['pause_ms']:.0f} ms by GC "
                                 "until the group started rebalancing", detail=verdict.detail,
                                 confidence=verdict.confidence)
        cut_off = (self.ctx.unreachable_before(instance, why["event_ts"], why.get("client_id"))
                   if verdict.rule == "client_removed_expired" else None)
        if cut_off is not None:
            verdict = decide("client_expired_unreachable", verdict.trigger_member_id,
                             f"{verdict.explanation}; it had lost its coordinator at {cut_off['event_ts']:%H:%M:%S} "
                             f"({cut_off['event_type']})")
            why = cut_off
        return verdict, why

    def _client_rebalance(self, generation: int | None, joins: list[Join],
                          assignments: dict[int, tuple[TimelineEvent, list[str]]], previous: int | None) -> None:
        signs = sorted((e for j in joins for e in j["signs"]), key=lambda e: e["event_ts"])
        newcomers = [e for j in joins for e in j["newcomers"]]
        self.state.steps = []
        verdict, decisive = classify_client_signs(
            signs, newcomers, self.state.consider, lambda line: self.ctx.unreachable_before(
                line.get("instance"), line["event_ts"], line.get("client_id")),
            self._topics_unassigned_before(min(e["event_ts"] for e in signs) if signs else None))
        self.state.consider(verdict.rule, True, verdict.explanation)
        joined_lines = [j["event"] for j in joins if j["event"] is not None]
        evidence: list[Evidence] = []
        if decisive is not None:
            evidence.append({"event_id": decisive["event_id"], "explanation": f"{decisive['event_type']} "
                             f"({decisive.get('client_id') or decisive.get('instance')})"})
        verdict, left, joined = self._assignment_rules(verdict, generation, assignments,
                                                       signs + joined_lines, evidence)
        verdict, changed = self._client_connector_change(verdict, signs)
        if changed is not None:
            evidence.append({"event_id": changed["event_id"], "explanation": "connector or task config changed"})
        for line in joined_lines:
            who = line.get("client_id") or line.get("instance")
            evidence.append({"event_id": line["event_id"], "explanation": f"{who} joined generation {generation}"})
        first = min(signs + joined_lines, key=lambda e: e["event_ts"])
        start: TimelineEvent = {
            **first, "generation": previous if generation is not None and previous == generation - 1 else None,
            "broker_id": None}
        key = f"client-generation-{generation}" if generation is not None else first["event_id"]
        current = OpenRebalance(stable_id(self.state.group_id, key), start, verdict, None, evidence,
                                generation_after=generation, trace=self.state.take_steps(verdict))
        members = {j["member"] for j in joins if j["member"]}
        if generation is not None and generation in assignments:
            current.members_after = len(assignments[generation][1])
        elif members:
            current.members_after = len(members)
        current.joined, current.left = joined, left
        for join in joins:
            if join["member"] and join["event"] is not None:
                self.state.join(join["member"], join["event"])
        if generation is not None:
            self.state.mark_generation(generation)
        completed = [j["completed"] for j in joins if j["completed"] is not None]
        if not completed:
            self.state.rebalances.append(rebalance_row(self.state.group_id, current, completed_at=None, outcome="open"))
        else:
            self.state.rebalances.append(rebalance_row(self.state.group_id, current, completed_at=max(completed),
                                                       outcome="stabilized"))
        self._client_states(current, first, joined_lines, max(completed) if completed else None)

    def _assignment_rules(self, verdict: Verdict, generation: int | None,
                          assignments: dict[int, tuple[TimelineEvent, list[str]]], lines: list[TimelineEvent],
                          evidence: list[Evidence]) -> tuple[Verdict, set[str], set[str]]:
        """Rules client_assignment_diff and client_removed_*: the members the leader's assignment of `generation`
        drops or adds against the one before, and, for one dropped member, why its own lines say it went. Returns
        the verdict and the members that left and joined; appends what it rests on to `evidence`."""
        left: set[str] = set()
        joined: set[str] = set()
        if generation is not None and generation in assignments and generation - 1 in assignments:
            line, now = assignments[generation]
            before = set(assignments[generation - 1][1])
            left, joined = before - set(now), set(now) - before
            if verdict.confidence <= confidence("client_seen_rebalancing") and (left or joined):
                gone, new = sorted(left), sorted(joined)
                detail, trigger = ("member_leave", gone[0]) if gone else ("member_join", new[0])
                verdict = decide("client_assignment_diff", trigger if len(gone or new) == 1 else None,
                                 f"{verdict.explanation}; the leader's assignment of generation {generation} "
                                 f"{'drops ' + ', '.join(gone) if gone else 'adds ' + ', '.join(new)} against "
                                 f"generation {generation - 1}", detail=detail)
                self.state.consider(verdict.rule, True, verdict.explanation)
                evidence.append({"event_id": line["event_id"], "explanation": f"assignment of generation {generation}"})
                removal = self._removal(gone, min(e["event_ts"] for e in lines)) if gone else None
                if removal is not None:
                    verdict, why = removal
                    self.state.consider(verdict.rule, True, verdict.explanation)
                    evidence.append({"event_id": why["event_id"], "explanation": why["event_type"]})
        return verdict, left, joined

    def _client_connector_change(self, verdict: Verdict, signs: list[TimelineEvent]
                                 ) -> tuple[Verdict, TimelineEvent | None]:
        """Rule connector_change on members' lines alone: a Connect worker's connector or task config line among the
        lines that led into a rebalance nobody else named (the members only saw it happen) is what started it."""
        if verdict.rule != "client_seen_rebalancing":
            return verdict, None
        changes = [e for e in signs if e["event_type"] == "connect_connector_changed"]
        if not changes:
            if any(e["event_type"].startswith("connect_") for e in signs):
                self.state.consider("connector_change", False, "no connector or task config line among the workers' "
                                    "lines that led into the rebalance")
            return verdict, None
        change = changes[-1]
        text = (f"client log only: a Connect worker logged '{(change.get('message') or '').strip()}' and the workers "
                "rejoined: the leader hands out the changed connectors and tasks; the coordinator's log is missing")
        self.state.consider("connector_change", True, text)
        return decide("connector_change", verdict.trigger_member_id, text), change

    def _client_states(self, current: OpenRebalance, first: TimelineEvent, joined_lines: list[TimelineEvent],
                       completed_at: pd.Timestamp | None) -> None:
        """The classic states the members' lines imply: PreparingRebalance from the first line of the rebalance,
        CompletingRebalance from the last member's join (the join response closes the join phase), Stable from the
        last sync. The coordinator's own times are unknown, so a rebalance whose lines begin before the previous one
        ended starts its states at that end (the members' clocks and logging order blur the boundary)."""
        floor = self.state.transitions[-1][0] if self.state.transitions else None

        def at(ts: pd.Timestamp) -> pd.Timestamp:
            return ts if floor is None else max(ts, floor)

        generation, rebalance_id = current.generation_after, current.rebalance_id
        self.state.transition(at(first["event_ts"]), "member_rebalancing", current.start.get("generation"),
                              rebalance_id, first)
        if joined_lines and generation is not None:
            last_join = max(joined_lines, key=lambda e: e["event_ts"])
            self.state.transition(at(last_join["event_ts"]), "last_member_joined", generation, rebalance_id, last_join)
            if completed_at is not None:
                self.state.transition(at(max(completed_at, last_join["event_ts"])), "members_synced", generation,
                                      rebalance_id, last_join)
        elif completed_at is not None:
            # Seen without any join line: the members' return to a steady state ends it.
            self.state.transition(at(completed_at), "members_synced", None, rebalance_id, first)


def episodes(signs: list[TimelineEvent], ends: list[TimelineEvent]
             ) -> list[tuple[list[TimelineEvent], list[TimelineEvent]]]:
    """The rebalances that members' lines with no join line make, in time order, each as (the signs that opened
    it, the returns to a steady state that closed it). Signs open one and the ends after them close it; a sign after
    an end opens the next. Ends more than CLIENT_CHAIN_S after an episode's first end (with no sign between) are
    another rebalance, seen only by its end."""
    timeline = sorted([(e["event_ts"], 0, e) for e in signs] + [(e["event_ts"], 1, e) for e in ends],
                      key=lambda t: (t[0], t[1]))
    found: list[tuple[list[TimelineEvent], list[TimelineEvent]]] = []
    opened: list[TimelineEvent] = []
    closing: list[TimelineEvent] = []
    for ts, is_end, line in timeline:
        if closing and (not is_end or secs(ts - closing[0]["event_ts"]) > CLIENT_CHAIN_S):
            found.append((opened, closing))
            opened, closing = [], []
        (closing if is_end else opened).append(line)
    if opened or closing:
        found.append((opened, closing))
    return found
