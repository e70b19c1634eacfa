"""Why a rebalance started, read from the broker's reason string (Kafka 2.1+) and neighbouring member events.

Rules (each documented with the Kafka behaviour behind it; the reason wordings are in templates.yml's source):
- `removing member X on heartbeat expiration`: the coordinator's session timer for X fired (no heartbeat within
  session.timeout.ms): session_timeout.
- `Removing member X on LeaveGroup; client reason: consumer poll timeout has expired.` (3.2+): the client's
  heartbeat thread saw max.poll.interval.ms pass without poll() and sent LeaveGroup: poll_timeout.
- `removing member X on LeaveGroup` with any other or no client reason: a clean leave: membership_change.
- `Adding new member X ...`: a member joined: membership_change.
- `Leader X re-joining group during Stable`: the leader saw its cached topic metadata change (partition count or
  a new topic matching a pattern): metadata_change; a client reason refines it.
- `Updating metadata for member X`: the member rejoined with a new subscription: metadata_change.
- Before 2.1 there is no reason: a `has failed` or `has left` line just before the start names the trigger.

Refinements with the members' own logs (GroupContext) decide what the broker cannot see:
- gc_pause: the expired member's JVM (found through its client log's instance folder) was in a stop-the-world
  pause that began before the expiry and lasted until (within one heartbeat interval of) it.
- coordinator_change: the expiry came within `coordinator_move_window_s` after the group was loaded by a new
  coordinator: the member never reached the new coordinator.
- poll_timeout on brokers before 3.2 (no client reason): the leaving member's client logged the poll timeout.
- rejoin: a member removed by an expiry, a GC pause or a poll timeout that joins again from the same process (no
  process start in between) carries that cause into the rebalance its join opens.
- Kafka 4.x opens a classic leave's rebalance with `explicit LeaveGroup request for (X) members.`; the client's reason
  is on the separate `[Group G] Member X has left group through explicit LeaveGroup request; client reason: ...` line
  just before it, which decides (a poll timeout there is poll_timeout). A client reason the leaver sent itself
  outranks a poll-timeout line in its log, and one poll-timeout line explains one leave only.
- Kafka 4.x converts a group back to the classic protocol when its last consumer-protocol member leaves; the
  rebalance the downgrade opens (`Downgrade group G from consumer to classic for member leaving.`) is that leave.
- coordinator_change (failover): a rebalance still open when the group moved to a new coordinator, restarted there
  by its members joining again, is the failover's cost; so is a new member's join within seconds of the group's load
  after a stretch with no coordinator (unloaded, then loaded again): its session ran out while it could reach none.
- membership_change after a leave: a leader's `cached metadata has changed` rejoin within seconds of a member's leave,
  when the leaver alone subscribed to some topic (client logs' `Subscribed to topic(s)`), is that leave's consequence:
  the group's subscription shrank, not the topics' partitions.

Client-only groups (no broker log of the group was landed; `classify_client_signs`): each `Successfully joined group
with generation N` a member logs is one rebalance (generation_after N; several members at the same generation are one
rebalance) and the members' own lines since their previous join say why, with less confidence than a broker reason:
- `consumer poll timeout has expired` (the heartbeat thread left the group after max.poll.interval.ms): poll_timeout.
- `Request joining group due to: cached metadata has changed ...` (the leader saw a partition count change) or a
  subscription change: metadata_change.
- `Marking the coordinator ... dead` / `Group coordinator ... is unavailable or invalid` before the rejoin: the member
  lost its coordinator and had to find one again: coordinator_change (`coordinator_lost`, low confidence: the group may
  have stayed on the same broker).
- a process that subscribed or discovered its coordinator, or was told to `re-join with the given member-id` (the
  MemberIdRequired round trip of a new member, 2.2+), before its first join: membership_change / member_join.
- a clean `sending LeaveGroup request` (close; librdkafka's `Terminating group`, `Closing consumer`, `LeaveGroup
  response received`): membership_change / member_leave, with less confidence when only the leaver's own lines are
  there (the rebalance of the members that stay is inferred). A coordinator the closing client forgets at or after
  its own leave is the close's consequence, not a coordinator change.
- only `Attempt to heartbeat failed since group is rebalancing` or `group is already rebalancing`: another member
  started it; membership_change with low confidence. The leader's `Finished assignment for group at generation N:
  {...}` lists the members, so a member missing from (or new in) the assignment of N compared with N-1 names it.

KIP-848 `consumer` groups (new coordinator, 3.7+) have no JoinGroup and no generations: every
`[GroupId G] Bumped group epoch to N` is one rebalance (generation_after N), and the broker line just before it says
why: `Member X joins the consumer group` (member_join, or rejoin as above: the member id stays the same),
`Member X left the consumer group` (member_leave, or poll_timeout when X's client logged the poll timeout: the client
leaves the group itself), `Member X fenced from the group because the member session expired` (session_timeout, or
gc_pause as above), fenced for failing to revoke or transition in time (poll_timeout, rebalance_timeout: the
rebalance timeout is max.poll.interval.ms); no member line at all means the subscribed topics' metadata changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pandas as pd

from pipelines.gold.records import TimelineEvent
from pipelines.gold.replay_state import NEIGHBOUR_S, NEW_MEMBER_REASON
from pipelines.gold.rulebook import Verdict, decide
from pipelines.gold.rules_data import REJOIN_UNDER_WAY

CAUSES = (
    "session_timeout", "poll_timeout", "gc_pause", "membership_change", "metadata_change", "coordinator_change",
    "unknown",
)


# The coordinator's reason strings, each with the rule book entry it matches (its cause, detail and confidence are
# there); group 1 of a pattern is the member that triggered it.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"removing member (\S+) on heartbeat expiration", re.I), "reason_heartbeat_expiration"),
    (re.compile(r"removing member (\S+) on LeaveGroup", re.I), "reason_leave_group"),
    # Kafka 4.x new coordinator: the client reason is only on the separate "has left" line.
    (re.compile(r"explicit `LeaveGroup` request for \(([^,)\s]+)[^)]*\) members", re.I), "reason_explicit_leave"),
    (NEW_MEMBER_REASON, "reason_new_member"),
    # Kafka 4.x, a group converted live back to the classic protocol: the rebalance the downgrade starts names no
    # member (the one that left is on the `left the consumer group` line before it).
    (re.compile(r"Downgrade group \S+ from consumer to classic for static member replacement", re.I),
     "reason_downgrade_static"),
    (re.compile(r"Downgrade group \S+ from consumer to classic(?: for member leaving)?\.?$", re.I),
     "reason_downgrade_leave"),
    (re.compile(r"leader (\S+) re-joining group", re.I), "reason_leader_rejoin"),
    (re.compile(r"Updating metadata for static member (\S+)", re.I), "reason_static_member_update"),
    (re.compile(r"Updating metadata for member (\S+)", re.I), "reason_member_metadata_update"),
    (re.compile(r"Member (\S+) joining group during", re.I), "reason_member_rejoin_during"),
    (re.compile(r"static member (\S+) with instance id .* joined with change of protocol", re.I),
     "reason_static_protocol_change"),
    (re.compile(r"Removing (.*) on pending sync request expiration", re.I), "reason_sync_expiration"),
    (re.compile(r"rror\b.*when storing group assignment during SyncGroup \(member: ([^)]+)\)", re.I),
     "reason_assignment_store_error"),
    (re.compile(r"Freshly-loaded group .*over capacity", re.I), "reason_group_over_capacity"),
)

CLIENT_REASONS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"consumer poll timeout has expired", re.I), "poll_timeout", "leave_on_poll_timeout"),
    (re.compile(r"cached metadata has changed", re.I), "metadata_change", "partition_count_change"),
    (re.compile(r"subscription has changed|does not match the current subscription", re.I), "metadata_change",
     "subscription_change"),
    # librdkafka: the subscribed topics' partition count or existence changed (`initiating rebalance`, `Rejoining
    # group without an assignment`).
    (re.compile(r"metadata for subscribed topic\(s\) has changed", re.I), "metadata_change",
     "partition_count_change"),
    # aiokafka: the partition counts of the subscribed topics changed (`Metadata for topic has changed from {..} to
    # {..}`, a topic -> partition count snapshot).
    (re.compile(r"metadata for topic has changed from", re.I), "metadata_change", "partition_count_change"),
    # librdkafka: a pattern subscription now matches other topics.
    (re.compile(r"subscription updated from metadata change", re.I), "metadata_change", "subscription_change"),
    # Kafka Streams (KIP-441): the follow-up rebalance its assignor scheduled while warm-up replicas catch up after
    # an instance joined; planned, and no member joined or left for it.
    (re.compile(r"triggered followup rebalance scheduled", re.I), "membership_change", "probing_rebalance"),
    # brod: the application changed the member's topics (`re-joining group, reason:topics`, an Erlang atom).
    (re.compile(r"^:?topics$"), "metadata_change", "subscription_change"),
)


def given_reason(client_reason: str | None) -> str | None:
    """The reason a member sent with its request, None when it sent none (4.x brokers print `not provided` for a
    client without KIP-800 reasons, such as librdkafka)."""
    if not client_reason or client_reason.strip().lower() in ("not provided", "null"):
        return None
    return client_reason


def rejoins_under_way(verdict: Verdict, client_reason: str | None) -> bool:
    """A leader's rejoin whose client reason says its coordinator had announced a rebalance (rules_data's
    REJOIN_UNDER_WAY): it joins that rebalance rather than asking for one for a metadata change."""
    reason = given_reason(client_reason)
    return verdict.rule == "reason_leader_rejoin" and reason is not None and any(
        re.search(pattern, reason, re.I) for pattern in REJOIN_UNDER_WAY)


def classify_reason(reason: str | None, client_reason: str | None) -> Verdict | None:
    """The verdict a broker reason string gives on its own, or None when there is no reason to read."""
    if not reason:
        return None
    for pattern, rule_id in _RULES:
        match = pattern.search(reason)
        if not match:
            continue
        trigger = match.group(1) if match.groups() else None
        explanation = f"broker reason: {reason}"
        if client_reason:
            explanation += f"; client reason: {client_reason}"
            for client_pattern, client_cause, client_detail in CLIENT_REASONS:
                if client_pattern.search(client_reason):
                    return decide("client_reason_given", trigger, explanation, cause=client_cause,
                                  detail=client_detail)
        return decide(rule_id, trigger, explanation)
    return decide("reason_unrecognised", None, f"broker reason not recognised: {reason}")


def _just_before(recent: list[TimelineEvent], ts: pd.Timestamp) -> Iterator[TimelineEvent]:
    """The coordinator's lines within NEIGHBOUR_S before `ts`, the latest first (`recent` is in time order)."""
    for event in reversed(recent):
        if (ts - event["event_ts"]).total_seconds() > NEIGHBOUR_S:
            return
        yield event


def neighbour_verdict(recent: list[TimelineEvent], ts: pd.Timestamp, generation: int | None) -> Verdict:
    """No reason printed (brokers before 2.1): the member event within NEIGHBOUR_S before the start names the
    trigger (rules neighbour_expired .. no_reason)."""
    for event in _just_before(recent, ts):
        if event["event_type"] == "member_failed":
            return decide("neighbour_expired", event["member_id"],
                          "no reason printed; member expired just before the start")
        if event["event_type"] == "member_left":
            return decide("neighbour_left", event["member_id"],
                          "no reason printed; member left just before the start")
        if event["event_type"] == "member_fenced":
            said = f"{event.get('reason') or ''} {event.get('message') or ''}"
            return decide("neighbour_fenced_session" if "session" in said.lower() else "neighbour_fenced",
                          event["member_id"],
                          f"no reason printed; member fenced just before the start ({said.strip()[:120]})")
        if event["event_type"] == "member_joining":
            return decide("neighbour_joined", event.get("member_id"),
                          "no reason printed; a member joined just before the start")
    if generation == 0:
        return decide("first_generation", None,
                      "no reason printed; the group's first generation forms as its members join")
    return decide("no_reason", None, "no reason printed and no member event just before the start")


def left_line(recent: list[TimelineEvent], member: str | None, ts: pd.Timestamp) -> TimelineEvent | None:
    """Kafka 4.x: the separate `has left group ...; client reason: ...` line of `member` just before `ts`."""
    for event in _just_before(recent, ts):
        if event["event_type"] == "member_left" and event.get("member_id") == member and event.get("client_reason"):
            return event
    return None
