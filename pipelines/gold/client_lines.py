"""What a member's own lines say about its part in a rebalance: the lines that lead into one, those that only
explain one, those that end its part, and the chain of lines that led a member into each join."""

from __future__ import annotations

import re

from pipelines.gold.records import TimelineEvent
from pipelines.gold.replay_state import secs
from pipelines.gold.rulebook import window

# The lines a member logs on its way into a rebalance, the lines that only explain one, and the lines that say its
# part of the rebalance is over.
CLIENT_SIGNS = frozenset({
    "client_joining", "client_rejoin_requested", "client_partitions_revoked", "client_partitions_lost",
    "client_heartbeat_failed", "client_poll_timeout", "client_leaving", "client_leave_failed",
    "client_generation_reset", "client_join_failed", "client_sync_failed", "client_rebalance_failed", "client_fenced",
    "client_coordinator_lost",
    # librdkafka's own session timer, Kafka Streams threads that found themselves out of the group, Connect workers.
    "client_session_timeout", "streams_thread_fenced", "streams_rebalance_requested", "connect_rebalance_started",
    "connect_rebalance_failed", "connect_poll_timeout", "connect_config_mismatch", "connect_connector_changed",
    "streams_rebalance_failed",
})
# A Connect worker's `Joined group at generation N` is its join, as a consumer's `Successfully joined group`.
JOINED = frozenset({"client_joined", "connect_joined"})
CLIENT_CONTEXT = frozenset({"client_subscribed", "client_coordinator_discovered", "client_unsubscribed"})
CLIENT_DONE = frozenset({"client_synced", "client_partitions_assigned"})
# A member's lines more than this apart before its join belong to different episodes (a coordinator hiccup an hour
# before is not this rebalance's start); a poll timeout or a leave always opens the rebalance its rejoin closes.
CLIENT_CHAIN_S = window("client_chain_s")
COORDINATOR_OUTAGE_S = window("coordinator_outage_s")
_LOOKUPS = ("client_coordinator_lost", "client_coordinator_discovered")
ASSIGNED_MEMBER = re.compile(r"([^\s{},=]+)=Assignment\(")


def is_sign(event: TimelineEvent) -> bool:
    """A line that shows its member taking part in a rebalance."""
    return event["event_type"] in CLIENT_SIGNS or bool(event.get("_rebalancing"))


def named_chain(chain: list[TimelineEvent], member: str | None) -> list[TimelineEvent]:
    """Each line of a member's chain named by the member id it was logged under: a line that prints none (the
    poll-timeout warning) takes the id of the next line that does (its LeaveGroup), else of the join."""
    named, carry = [], member
    for event in reversed(chain):
        if event.get("member_id"):
            carry = event["member_id"]
        named.append(event if event.get("_member") else {**event, "_member": carry})
    return named[::-1]


def chain_into_join(signs: list[TimelineEvent]) -> list[TimelineEvent]:
    """The member's lines that led into its join: the last run with no gap over CLIENT_CHAIN_S, and any poll
    timeout or leave before it (its rejoin may come minutes later, when the slow batch ends). A coordinator lost
    before the gap and found again in the last run is kept too: the member had no coordinator all that time (a
    broker down for minutes), so the loss opened the rebalance its rediscovery leads into."""
    start = 0
    for i in range(1, len(signs)):
        if secs(signs[i]["event_ts"] - signs[i - 1]["event_ts"]) > CLIENT_CHAIN_S:
            start = i
    kept = {id(e) for e in signs[:start] if e["event_type"] in ("client_poll_timeout", "client_leaving")}
    before = [e for e in signs[:start] if e["event_type"] in _LOOKUPS]
    # The run after the gap must open with the rediscovery: a new loss first, or a subscribe (a process started
    # again under the same client id), makes the old loss another episode; so does an outage past the window.
    ahead = [e for e in signs[start:] if e["event_type"] in (*_LOOKUPS, "client_subscribed")]
    if (before and before[-1]["event_type"] == "client_coordinator_lost" and ahead
            and ahead[0]["event_type"] == "client_coordinator_discovered"
            and secs(ahead[0]["event_ts"] - before[-1]["event_ts"]) <= COORDINATOR_OUTAGE_S):
        kept.add(id(before[-1]))
    return [e for e in signs[:start] if id(e) in kept] + signs[start:]


