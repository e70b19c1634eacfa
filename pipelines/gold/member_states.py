"""A member's own view of a rebalance: the state transitions (Kafka Streams client and threads, librdkafka's join
and group states, the KIP-848 member) and refused commits that show its side of a rebalance begin and end."""

from __future__ import annotations

import re
from typing import Any

_STATE_EVENTS = frozenset({"streams_state_changed", "client_member_state_changed"})
# States a member enters when a rebalance takes its partitions or its membership (Kafka Streams client and thread,
# librdkafka's join and group states, the KIP-848 member), and the steady states it returns to when it is over.
_REBALANCING_STATES = frozenset({
    "rebalancing", "partitions_revoked", "wait-join", "wait-metadata", "wait-sync", "wait-assign-call",
    "wait-assign-rebalance_cb", "wait-revoke-rebalance_cb", "wait-unassign-call", "wait-unassign-to-complete",
    "wait-incr-unassign-to-complete", "term", "joining", "reconciling", "fenced", "prepare_leaving", "leaving",
})
_STEADY_STATES = frozenset({"running", "steady", "stable"})


def _state(event: dict[str, Any], key: str) -> str:
    return str(event.get(key) or "").lower()


# An offset commit refused because the group moved on (CommitFailedException, librdkafka's COMMITFAIL with an
# illegal generation): the member learns of a rebalance it was not part of.
_COMMIT_AFTER_REBALANCE = re.compile(r"rebalanc|generation|unknown member|member id .* not valid", re.I)


def enters_rebalance(event: dict[str, Any]) -> bool:
    """A member's state transition into a rebalancing state, or a commit refused because the group rebalanced: its
    side of a rebalance began."""
    if event["event_type"] == "client_commit_failed":
        return bool(_COMMIT_AFTER_REBALANCE.search(f"{event.get('reason') or ''} {event.get('message') or ''}"))
    return event["event_type"] in _STATE_EVENTS and _state(event, "state") in _REBALANCING_STATES


def leaves_rebalance(event: dict[str, Any]) -> bool:
    """A member's return to a steady state from a rebalancing one (a Streams thread's `PARTITIONS_ASSIGNED ->
    RUNNING`, librdkafka's join state `steady`), or a KIP-848 member's new assignment: its side of a rebalance
    ended."""
    if event["event_type"] == "client_assignment_updated":
        return True
    return (event["event_type"] in _STATE_EVENTS and _state(event, "state") in _STEADY_STATES
            and _state(event, "previous_state") not in ("", "created", "starting", "init"))
