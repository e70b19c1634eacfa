"""A member's own view of a rebalance: the state transitions (Kafka Streams client and threads, librdkafka's join
and group states, the KIP-848 member) and refused commits that show its side of a rebalance begin and end."""

from __future__ import annotations

import re

from pipelines.gold.records import TimelineEvent

_STATE_EVENTS = frozenset({"streams_state_changed", "client_member_state_changed"})
# States a member enters when a rebalance takes its partitions or its membership (Kafka Streams client and thread,
# librdkafka's join and group states, the KIP-848 member), and the steady states it returns to when it is over.
_REBALANCING_STATES = frozenset({
    "rebalancing", "partitions_revoked", "wait-join", "wait-metadata", "wait-sync", "wait-assign-call",
    "wait-assign-rebalance_cb", "wait-revoke-rebalance_cb", "wait-unassign-call", "wait-unassign-to-complete",
    "wait-incr-unassign-to-complete", "term", "joining", "reconciling", "fenced", "prepare_leaving", "leaving",
})
_STEADY_STATES = frozenset({"running", "steady", "stable"})


def _state(event: TimelineEvent, key: str) -> str:
    return str(event.get(key) or "").lower()


# An offset commit refused because the group moved on (CommitFailedException, librdkafka's COMMITFAIL with an
# illegal generation): the member learns of a rebalance it was not part of.
_COMMIT_AFTER_REBALANCE = re.compile(r"rebalanc|generation|unknown member|member id .* not valid"
                                     r"|not part of an active group|kicked out", re.I)
# The rows of Java's CommitFailedException (kafka-python's CommitFailedError): the group moved on without the member.
# Read by row, not by text: an application that logs the exception under its own line (`log.error("..", e)`) keeps
# the exception's text in a later line of the record, which the event's message does not hold.
COMMIT_AFTER_REMOVAL_ROWS = frozenset({"c_commit_failed_exception", "c_commit_failed_kicked_out",
                                       "p_commit_failed_error", "e_java_commit_failed", "e_java_commit_kicked_out"})


def committed_after_removal(event: TimelineEvent) -> bool:
    """A commit refused because the group had rebalanced without the member (CommitFailedException)."""
    return event["event_type"] == "client_commit_failed" and event.get("template_id") in COMMIT_AFTER_REMOVAL_ROWS


def enters_rebalance(event: TimelineEvent) -> bool:
    """A member's state transition into a rebalancing state, or a commit refused because the group rebalanced: its
    side of a rebalance began."""
    if event["event_type"] == "client_commit_failed":
        said = f"{event.get('reason') or ''} {event.get('message') or ''}"
        return committed_after_removal(event) or bool(_COMMIT_AFTER_REBALANCE.search(said))
    return event["event_type"] in _STATE_EVENTS and _state(event, "state") in _REBALANCING_STATES


def leaves_rebalance(event: TimelineEvent) -> bool:
    """A member's return to a steady state from a rebalancing one (a Streams thread's `PARTITIONS_ASSIGNED ->
    RUNNING`, librdkafka's join state `steady`), or a KIP-848 member's new assignment: its side of a rebalance
    ended."""
    if event["event_type"] == "client_assignment_updated":
        return True
    return (event["event_type"] in _STATE_EVENTS and _state(event, "state") in _STEADY_STATES
            and _state(event, "previous_state") not in ("", "created", "starting", "init"))
