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
from typing import Any

from pipelines.gold.rulebook import Verdict, decide

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
    (re.compile(r"Adding new member (\S+)", re.I), "reason_new_member"),
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

_CLIENT_REASONS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"consumer poll timeout has expired", re.I), "poll_timeout", "leave_on_poll_timeout"),
    (re.compile(r"cached metadata has changed", re.I), "metadata_change", "partition_count_change"),
    (re.compile(r"subscription has changed|does not match the current subscription", re.I), "metadata_change",
     "subscription_change"),
    (re.compile(r"the consumer unsubscribed from all topics", re.I), "metadata_change", "subscription_change"),
    # librdkafka: the subscribed topics' partition count or existence changed (`initiating rebalance`, `Rejoining
    # group without an assignment`).
    (re.compile(r"metadata for subscribed topic\(s\) has changed", re.I), "metadata_change",
     "partition_count_change"),
    # librdkafka: a pattern subscription now matches other topics.
    (re.compile(r"subscription updated from metadata change", re.I), "metadata_change", "subscription_change"),
    # Kafka Streams (KIP-441): the follow-up rebalance its assignor scheduled while warm-up replicas catch up after
    # an instance joined; planned, and no member joined or left for it.
    (re.compile(r"triggered followup rebalance scheduled", re.I), "membership_change", "probing_rebalance"),
)


def given_reason(client_reason: str | None) -> str | None:
    """The reason a member sent with its request, None when it sent none (4.x brokers print `not provided` for a
    client without KIP-800 reasons, such as librdkafka)."""
    if not client_reason or client_reason.strip().lower() in ("not provided", "null"):
        return None
    return client_reason


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
            for client_pattern, client_cause, client_detail in _CLIENT_REASONS:
                if client_pattern.search(client_reason):
                    return decide("client_reason_given", trigger, explanation, cause=client_cause,
                                  detail=client_detail)
        return decide(rule_id, trigger, explanation)
    return decide("reason_unrecognised", None, f"broker reason not recognised: {reason}")


_POLL_TIMEOUT = re.compile(r"poll timeout has expired|maximum poll interval .* exceeded", re.I)
_POLL_TIMEOUT_EVENTS = ("client_poll_timeout", "connect_poll_timeout")
_COORDINATOR_LOST = ("client_coordinator_lost",)
# The lines that carry the coordinator's answer to a member (its error) or the member's own view of its session.
_EXPIRY_ANSWERS = ("client_heartbeat_failed", "client_join_failed", "client_sync_failed", "client_fenced",
                   "client_coordinator_lost", "client_rejoin_requested", "client_generation_reset",
                   "client_rebalance_failed")
# What a member hears when the coordinator no longer knows it: its session expired there (Java's UNKNOWN_MEMBER_ID
# and `member id ... is not valid`, librdkafka's `Broker: Unknown member`, kafka-python's and aiokafka's `local
# member_id was not recognized`), or what it sees itself when its own
# session runs out (librdkafka's SESSTMOUT, the Java client's `session timed out without receiving a heartbeat
# response`).
_EXPIRED = re.compile(r"UNKNOWN_MEMBER_ID|unknown member|member id .* is not valid|is not aware of this member"
                      r"|session timed out|member_id was not recognized", re.I)
# What a member hears when its coordinator moved or is gone: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a load.
_COORDINATOR_GONE = re.compile(r"NOT_COORDINATOR|not coordinator|not the correct coordinator|NotCoordinator"
                               r"|COORDINATOR_NOT_AVAILABLE|coordinator not available|coordinator load in progress",
                               re.I)
_NEW_MEMBER_SIGNS = re.compile(r"need to re-join with the given member-id", re.I)
# What a verdict from members' lines alone cannot see, said in its explanation.
_MISSING = "; the coordinator's log is missing, so its own reason is unknown"


def _said(event: dict[str, Any]) -> str:
    return " ".join(str(event.get(k) or "") for k in ("error", "reason", "message"))


def _who(event: dict[str, Any]) -> str:
    return event.get("_member") or event.get("client_id") or event.get("instance") or "a member"


def classify_client_signs(signs: list[dict[str, Any]],
                          newcomers: list[dict[str, Any]]) -> tuple[Verdict, dict[str, Any] | None]:
    """The verdict of a rebalance seen only in client logs: `signs` are the members' lines since their previous
    join (each with `_member`, the member id of its process where known), `newcomers` the first lines of processes
    that joined for the first time. Returns the verdict and the line that decided it (None when none did)."""
    signs = _before_own_close(signs)
    # A process whose first line here is its way into the group (a subscribe, its first coordinator lookup) may hear
    # that no coordinator is available yet (a new cluster, an offsets topic still loading): its start, not a
    # coordinator change. A process that was already joining or in the group when it lost its coordinator is not.
    first_lines: dict[tuple[Any, Any], dict[str, Any]] = {}
    for event in sorted(signs + newcomers, key=lambda e: e["event_ts"]):
        first_lines.setdefault(_process(event), event)
    new_processes = {_process(e) for e in newcomers}
    starting = {p for p, e in first_lines.items() if is_newcomer_sign(e) and p in new_processes}
    for event in signs:
        reason = event.get("reason") or ""
        if event["event_type"] in _POLL_TIMEOUT_EVENTS or (
            event["event_type"] in ("client_leaving", "client_generation_reset") and _POLL_TIMEOUT.search(reason)
        ):
            return decide("client_logged_poll_timeout", event.get("_member"),
                          f"client log only: {_who(event)} logged that its consumer poll timeout expired "
                          "(max.poll.interval.ms) and left the group" + _MISSING), event
    for event in signs:
        expired = event["event_type"] == "client_session_timeout" or (
            event["event_type"] in _EXPIRY_ANSWERS and _EXPIRED.search(_said(event)))
        if expired:
            return decide("client_session_expired", event.get("_member"),
                          f"client log only: {_who(event)} was no longer a member when it next reached the "
                          f"coordinator ({_said(event).strip()[:160]}): its session had expired" + _MISSING), event
    for event in signs:
        if _process(event) in starting:
            continue
        if event["event_type"] in _EXPIRY_ANSWERS and _COORDINATOR_GONE.search(_said(event)):
            return decide("client_coordinator_moved", event.get("_member"),
                          f"client log only: {_who(event)} was told its coordinator had moved or was unavailable "
                          f"({_said(event).strip()[:160]})" + _MISSING), event
    for event in signs:
        if event["event_type"] != "client_rejoin_requested":
            continue
        # A wording without a reason field says it in its message (librdkafka's `subscription updated from metadata
        # change: rejoining group`).
        reason = event.get("reason") or event.get("message") or ""
        if not event.get("reason") and event.get("topics"):
            reason = "assignment does not match the current subscription"
        for pattern, cause, detail in _CLIENT_REASONS:
            if (cause == "metadata_change" or detail == "probing_rebalance") and pattern.search(reason):
                return decide("client_rejoin_reason", event.get("_member"),
                              f"client log only: {_who(event)} asked to rejoin because {reason}", cause=cause,
                              detail=detail), event
    for event in signs:
        if event["event_type"] in _COORDINATOR_LOST and _process(event) not in starting:
            return decide("client_lost_coordinator", event.get("_member"),
                          f"client log only: {_who(event)} lost its group coordinator "
                          f"({event.get('reason') or 'marked dead'}) and rejoined"), event
    if newcomers and signs and all(e.get("_unjoined") for e in signs):
        event = newcomers[0]
        return decide("client_unjoined_start", event.get("_member"),
                      f"client log only: {_who(event)} started and was on its way into the group ("
                      f"{event['event_type']}); the log ends before its join, so the rebalance that join makes is "
                      "inferred" + _MISSING), event
    if newcomers:
        event = newcomers[0]
        return decide("client_new_member", event.get("_member"),
                      f"client log only: {_who(event)} started and joined the group"), event
    for event in signs:
        if event["event_type"] == "client_leaving":
            if all(_process(e) == _process(event) for e in signs):
                # Only the leaver's own lines: the rebalance of the members that stay is inferred, not seen.
                return decide("client_lone_leave", event.get("_member"),
                              f"client log only: {_who(event)} left the group "
                              f"({event.get('reason') or 'LeaveGroup'}); no other member's log is here, so the "
                              "rebalance of the members that stay is inferred (none follows the last member's or a "
                              "static member's close)" + _MISSING), event
            return decide("client_leave", event.get("_member"),
                          f"client log only: {_who(event)} left the group "
                          f"({event.get('reason') or 'LeaveGroup'})"), event
    first = signs[0] if signs else None
    return decide("client_seen_rebalancing", None,
                  "client log only: the members saw the group rebalancing (heartbeat or join answered "
                  "REBALANCE_IN_PROGRESS) but not who started it"), first


def _process(event: dict[str, Any]) -> tuple[Any, Any]:
    return event.get("instance"), event.get("client_id")


def _before_own_close(signs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`signs` without the coordinator losses a process logged at or after its own clean leave: a closing client
    forgets its coordinator (librdkafka's `is no longer coordinator` once its group handle terminates), which says
    nothing about the coordinator."""
    closed: dict[tuple[Any, Any], Any] = {}
    for event in signs:
        if event["event_type"] == "client_leaving" and not _POLL_TIMEOUT.search(event.get("reason") or ""):
            closed.setdefault(_process(event), event["event_ts"])
    return [e for e in signs if not (e["event_type"] in _COORDINATOR_LOST and _process(e) in closed
                                     and e["event_ts"] >= closed[_process(e)])]


def classify_removal(member: str, lines: list[dict[str, Any]],
                     last_line: dict[str, Any] | None) -> tuple[Verdict, dict[str, Any]] | None:
    """Why `member`, dropped from the leader's assignment, left: its own process's `lines` around the rebalance say
    whether it logged a poll timeout, heard that the coordinator no longer knew it (its session had expired), or
    left on purpose. A process whose log is here (`last_line`: its last line before the rebalance) and says none of
    these did not leave on purpose (a member always logs its LeaveGroup): it crashed or froze and the coordinator
    expired it. None when its log is not here."""
    for event in lines:
        if event["event_type"] in _POLL_TIMEOUT_EVENTS or (
            event["event_type"] in ("client_leaving", "client_generation_reset")
            and _POLL_TIMEOUT.search(event.get("reason") or "")
        ):
            return decide("client_removed_poll_timeout", member,
                          f"client log only: {member}, dropped from the assignment, had logged that its consumer "
                          "poll timeout expired" + _MISSING), event
        if event["event_type"] == "client_leaving":
            return decide("client_removed_leave", member,
                          f"client log only: {member}, dropped from the assignment, left the group "
                          f"({event.get('reason') or 'LeaveGroup'})" + _MISSING), event
        if event["event_type"] == "client_session_timeout" or (
                event["event_type"] in _EXPIRY_ANSWERS and _EXPIRED.search(_said(event))):
            return decide("client_removed_expired", member,
                          f"client log only: {member}, dropped from the assignment, was no longer a member when it "
                          f"next reached the coordinator ({_said(event).strip()[:160]}): its session had expired"
                          + _MISSING), event
    if last_line is None:
        return None
    return decide("client_removed_silent", member,
                  f"client log only: {member}, dropped from the assignment, logged no LeaveGroup, poll timeout or "
                  "error around the rebalance: it stopped (a crash or a freeze) and its session expired"
                  + _MISSING), last_line


def is_newcomer_sign(event: dict[str, Any]) -> bool:
    """A line a process logs on its way into the group for the first time (subscribe, coordinator discovery, the
    MemberIdRequired round trip of a new member)."""
    if event["event_type"] in ("client_subscribed", "client_coordinator_discovered"):
        return True
    return (event["event_type"] == "client_rejoin_requested"
            and bool(_NEW_MEMBER_SIGNS.search(event.get("reason") or "")))
