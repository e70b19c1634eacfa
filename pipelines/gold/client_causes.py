"""Why a rebalance seen only in its members' own lines happened (the coordinator's log is absent): the client-path
rules of the rule book, as an ordered list of predicates over the members' lines (`CLIENT_RULES`). The first that
applies decides; each one consulted leaves a step in the trace when one is kept.

See pipelines/gold/client_signs.py (and pipelines/gold/causes.py for the rejoin reasons) for the wordings each rule
reads, and docs/causes.md for the rules themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipelines.gold.causes import CLIENT_REASONS
from pipelines.gold.client_signs import (
    COORDINATOR_LOST,
    before_own_close,
    coordinator_gone,
    coordinator_trouble,
    frozen_with,
    is_newcomer_sign,
    is_poll_timeout,
    process_of,
    said,
    says_expired,
)
from pipelines.gold.member_states import committed_after_removal
from pipelines.gold.records import TimelineEvent
from pipelines.gold.rulebook import Verdict, decide

# What a verdict from members' lines alone cannot see, said in its explanation.
MISSING = "; the coordinator's log is missing, so its own reason is unknown"


def _who(event: TimelineEvent) -> str:
    return event.get("_member") or event.get("client_id") or event.get("instance") or "a member"


@dataclass(frozen=True)
class Signs:
    """What the client-path rules read: the members' lines since their previous join (each with `_member`), the
    first lines of processes that joined for the first time, and the processes starting (their first line here is
    their way into the group)."""

    lines: list[TimelineEvent]
    newcomers: list[TimelineEvent]
    starting: set[tuple[Any, Any]]
    unreachable: Callable[[TimelineEvent], TimelineEvent | None] | None = None
    # The leader's line, shortly before these, that its assignment skipped subscribed topics with no metadata yet.
    topics_unassigned: TimelineEvent | None = None


Found = tuple[Verdict, TimelineEvent | None]


def _polled_out(signs: Signs) -> Found | None:
    for event in signs.lines:
        # A poll timeout logged in one stall with the process's own session expiry is the expiry's (`frozen_with`):
        # the expiry rule decides.
        if is_poll_timeout(event) and frozen_with(event, signs.lines) is None:
            return decide("client_logged_poll_timeout", event.get("_member"),
                          f"client log only: {_who(event)} logged that its consumer poll timeout expired "
                          "(max.poll.interval.ms) and left the group" + MISSING), event
    return None


def _expired(signs: Signs) -> Found | None:
    for event in signs.lines:
        if says_expired(event):
            cut_off = _unreachable_before(signs, event)
            if cut_off is not None:
                return decide("client_expired_unreachable", event.get("_member"),
                              f"client log only: {_who(event)} could not reach its coordinator "
                              f"({said(cut_off).strip()[:120]}) and its session expired "
                              f"({said(event).strip()[:120]})" + MISSING), cut_off
            return decide("client_session_expired", event.get("_member"),
                          f"client log only: {_who(event)} was no longer a member when it next reached the "
                          f"coordinator ({said(event).strip()[:160]}): its session had expired" + MISSING), event
    return None


def _unreachable_before(signs: Signs, expiry: TimelineEvent) -> TimelineEvent | None:
    """The line of the expired member's process (through `Signs.unreachable`) saying shortly before its expiry that
    it could not reach its coordinator: its session ran out because its heartbeats could not get through, not because
    it stopped sending them. An expiry that names a transport failure itself is not enough: a process waking from a
    freeze finds its connections dropped too."""
    return signs.unreachable(expiry) if signs.unreachable is not None else None


def _coordinator_moved(signs: Signs) -> Found | None:
    for event in signs.lines:
        if process_of(event) in signs.starting:
            continue
        if coordinator_gone(event):
            return decide("client_coordinator_moved", event.get("_member"),
                          f"client log only: {_who(event)} was told its coordinator had moved or was unavailable "
                          f"({said(event).strip()[:160]})" + MISSING), event
    return None


def _rejoin_reason(signs: Signs) -> Found | None:
    for event in signs.lines:
        if event["event_type"] != "client_rejoin_requested":
            continue
        # A process still on its way into the group (its first lines here are its subscribe or coordinator lookup)
        # has no assignment a metadata change could invalidate: librdkafka asks to rejoin "from metadata change"
        # when the first metadata of its new subscription arrives. That rejoin is part of its first join.
        if process_of(event) in signs.starting:
            continue
        # A wording without a reason field says it in its message (librdkafka's `subscription updated from metadata
        # change: rejoining group`).
        reason = event.get("reason") or event.get("message") or ""
        if not event.get("reason") and event.get("topics"):
            reason = "assignment does not match the current subscription"
        for pattern, cause, detail in CLIENT_REASONS:
            if (cause == "metadata_change" or detail == "probing_rebalance") and pattern.search(reason):
                return decide("client_rejoin_reason", event.get("_member"),
                              f"client log only: {_who(event)} asked to rejoin because {reason}", cause=cause,
                              detail=detail), event
    return None


def _lost_coordinator(signs: Signs) -> Found | None:
    for event in signs.lines:
        if event["event_type"] in COORDINATOR_LOST and process_of(event) not in signs.starting:
            return decide("client_lost_coordinator", event.get("_member"),
                          f"client log only: {_who(event)} lost its group coordinator "
                          f"({event.get('reason') or 'marked dead'}) and rejoined"), event
    return None


def _start_trouble(signs: Signs, *, joined: bool) -> TimelineEvent | None:
    """The first line where a new process lost or could not reach its coordinator on its way in, among the processes
    whose join the log reaches (`joined`) or those it never sees get in."""
    unjoined = {process_of(e) for e in signs.newcomers if e.get("_unjoined")}
    return next((e for e in signs.lines if coordinator_trouble(e) and process_of(e) in signs.starting
                 and (process_of(e) not in unjoined) == joined), None) if signs.newcomers else None


def _start_held_by_coordinator(signs: Signs) -> Found | None:
    """A new process that lost or could not find its coordinator on its way in and never got in as far as the log
    goes (a lookup loop, a crash, the log ending on it): the coordinator held the group, and its join is left open
    until the coordinator's log shows the group loaded and answering."""
    event = _start_trouble(signs, joined=False)
    if event is None:
        return None
    return decide("client_start_held_by_coordinator", event.get("_member"),
                  f"client log only: {_who(event)} started and lost or could not reach its coordinator "
                  f"({said(event).strip()[:160] or 'marked dead'}); the log never shows it get into the group"
                  + MISSING), event


def _start_without_coordinator(signs: Signs) -> Found | None:
    """A new process that lost or could not find its coordinator on its way in, then joined: a cluster or offsets
    topic still loading looks the same from the client as a coordinator that moved, so the join decides and the
    move stays open until the coordinator's log is read."""
    event = _start_trouble(signs, joined=True)
    if event is None:
        return None
    return decide("client_start_without_coordinator", event.get("_member"),
                  f"client log only: {_who(event)} started and, on its way into the group, lost or could not "
                  f"reach its coordinator ({said(event).strip()[:160] or 'marked dead'}), then joined" + MISSING,
                  ), event


def _unjoined_start(signs: Signs) -> Found | None:
    if signs.newcomers and signs.lines and all(e.get("_unjoined") for e in signs.lines):
        event = signs.newcomers[0]
        return decide("client_unjoined_start", event.get("_member"),
                      f"client log only: {_who(event)} started and was on its way into the group ("
                      f"{event['event_type']}); the log ends before its join, so the rebalance that join makes is "
                      "inferred" + MISSING), event
    return None


def _new_member(signs: Signs) -> Found | None:
    if signs.newcomers:
        event = signs.newcomers[0]
        return decide("client_new_member", event.get("_member"),
                      f"client log only: {_who(event)} started and joined the group"), event
    return None


def _left(signs: Signs, *, alone: bool) -> Found | None:
    for event in signs.lines:
        if event["event_type"] != "client_leaving":
            continue
        # Only the leaver's own lines: the rebalance of the members that stay is inferred, not seen.
        lone = all(process_of(e) == process_of(event) for e in signs.lines)
        if lone != alone:
            return None
        if lone:
            return decide("client_lone_leave", event.get("_member"),
                          f"client log only: {_who(event)} left the group "
                          f"({event.get('reason') or 'LeaveGroup'}); no other member's log is here, so the "
                          "rebalance of the members that stay is inferred (none follows the last member's or a "
                          "static member's close)" + MISSING), event
        return decide("client_leave", event.get("_member"),
                      f"client log only: {_who(event)} left the group ({event.get('reason') or 'LeaveGroup'})"), event
    return None


def _commit_after_removal(signs: Signs) -> Found | None:
    for event in signs.lines:
        # Kafka raises CommitFailedException for UNKNOWN_MEMBER_ID and ILLEGAL_GENERATION answers (and, up to 2.4,
        # REBALANCE_IN_PROGRESS during a sync); its own text names the poll loop outrunning max.poll.interval.ms.
        if committed_after_removal(event):
            return decide("client_commit_after_removal", event.get("_member"),
                          f"client log only: {_who(event)} committed after the group had rebalanced without it "
                          "(CommitFailedException), which Kafka's own text puts down to the time between its "
                          "poll() calls outrunning max.poll.interval.ms; no line names another cause" + MISSING), event
    return None


def _topics_appeared(signs: Signs) -> Found | None:
    # The leader assigned what the metadata held; once the skipped topics' partitions are known (auto-created, or
    # created after the consumers started) the group rejoins: kafka-python with no line that says why.
    if (event := signs.topics_unassigned) is None:
        return None
    return decide("client_topics_appeared", None,
                  f"client log only: the leader's previous assignment skipped subscribed topics it had no metadata "
                  f"for ({(event.get('topics') or '').strip()[:120]}); the group rebalanced again once they "
                  "appeared, with no other cause in the lines"), event


def _seen_rebalancing(signs: Signs) -> Found | None:
    return decide("client_seen_rebalancing", None,
                  "client log only: the members saw the group rebalancing (heartbeat or join answered "
                  "REBALANCE_IN_PROGRESS) but not who started it"), (signs.lines[0] if signs.lines else None)


# The client path's base rules in the rule book's order: the first that applies decides.
CLIENT_RULES: tuple[tuple[str, Callable[[Signs], Found | None]], ...] = (
    ("client_logged_poll_timeout", _polled_out),
    ("client_session_expired", _expired),  # client_expired_unreachable when its coordinator was out of reach
    ("client_coordinator_moved", _coordinator_moved),
    ("client_rejoin_reason", _rejoin_reason),
    ("client_lost_coordinator", _lost_coordinator),
    ("client_start_held_by_coordinator", _start_held_by_coordinator),
    ("client_start_without_coordinator", _start_without_coordinator),
    ("client_unjoined_start", _unjoined_start),
    ("client_new_member", _new_member),
    ("client_lone_leave", lambda s: _left(s, alone=True)),
    ("client_leave", lambda s: _left(s, alone=False)),
    ("client_commit_after_removal", _commit_after_removal),
    ("client_topics_appeared", _topics_appeared),
    ("client_seen_rebalancing", _seen_rebalancing),
)


def classify_client_signs(lines: list[TimelineEvent], newcomers: list[TimelineEvent],
                          consider: Callable[[str, bool, str], None] | None = None,
                          unreachable: Callable[[TimelineEvent], TimelineEvent | None] | None = None,
                          topics_unassigned: TimelineEvent | None = None) -> Found:
    """The verdict of a rebalance seen only in client logs: `lines` are the members' lines since their previous
    join (each with `_member`, the member id of its process where known), `newcomers` the first lines of processes
    that joined for the first time; `unreachable` finds, for a member's line, the line of its process just before
    saying it could not reach its coordinator; `topics_unassigned` is the leader's line, shortly before, that its
    last assignment skipped subscribed topics with no metadata. Returns the verdict and the line that decided it
    (None when none did); `consider` hears each rule that did not apply."""
    lines = before_own_close(lines)
    # A process whose first line here is its way into the group (a subscribe, its first coordinator lookup) may hear
    # that no coordinator is available yet (a new cluster, an offsets topic still loading): its start, not a
    # coordinator change. A process that was already joining or in the group when it lost its coordinator is not.
    first_lines: dict[tuple[Any, Any], TimelineEvent] = {}
    for event in sorted(lines + newcomers, key=lambda e: e["event_ts"]):
        first_lines.setdefault(process_of(event), event)
    new_processes = {process_of(e) for e in newcomers}
    starting = {p for p, e in first_lines.items() if is_newcomer_sign(e) and p in new_processes}
    signs = Signs(lines, newcomers, starting, unreachable, topics_unassigned)
    for rule_id, applies in CLIENT_RULES:
        found = applies(signs)
        if found is not None:
            return found
        if consider is not None:
            consider(rule_id, False, f"none of the {len(lines)} member lines of this rebalance says so")
    raise AssertionError("client_seen_rebalancing always applies")

