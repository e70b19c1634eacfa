"""The wordings the client-path rules read in a member's lines: what it hears from its coordinator (an expired
session, a coordinator gone or moved), a poll timeout, the round trip of a new member. The rules themselves are in
pipelines/gold/client_causes.py."""

from __future__ import annotations

import re
from typing import Any

from pipelines.gold.records import TimelineEvent
from pipelines.gold.rulebook import window

POLL_TIMEOUT = re.compile(r"poll timeout has expired|maximum poll interval .* exceeded", re.I)
POLL_TIMEOUT_EVENTS = ("client_poll_timeout", "connect_poll_timeout")
COORDINATOR_LOST = ("client_coordinator_lost",)
# The lines that carry the coordinator's answer to a member (its error, also in a refused commit) or the member's own
# view of its session.
EXPIRY_ANSWERS = ("client_heartbeat_failed", "client_join_failed", "client_sync_failed", "client_fenced",
                  "client_coordinator_lost", "client_rejoin_requested", "client_generation_reset",
                  "client_rebalance_failed", "client_commit_failed")
# A refused LeaveGroup answers only for the member's session: `the coordinator is not aware of this member` says the
# coordinator had removed it before it left (its expiry, while a suspended host or a stalled process sent no
# heartbeat), and nothing of where the coordinator is (a closing client's leave may go to a coordinator that moved).
EXPIRED_ANSWERS = (*EXPIRY_ANSWERS, "client_leave_failed")
# A member's own clock saying its session ran out, not the coordinator's answer (`OWN_EXPIRY`).
_OWN_EXPIRY_WORDS = r"session timed out|heartbeat session expired"
# What a member hears when the coordinator no longer knows it: its session expired there (Java's UNKNOWN_MEMBER_ID
# and `member id ... is not valid`, librdkafka's `Broker: Unknown member`, kafka-python's and aiokafka's `local
# member_id was not recognized`), or what it sees itself when its own
# session runs out (librdkafka's SESSTMOUT, the Java client's `session timed out without receiving a heartbeat
# response`, kafka-python 2.x's `Heartbeat session expired` as the reason it marks the coordinator dead).
EXPIRED = re.compile(r"UNKNOWN_MEMBER_ID|unknown member|UnknownMemberId|member id .* is not valid"
                     rf"|is not aware of this member|{_OWN_EXPIRY_WORDS}"
                     r"|member_id was not recognized"
                     # Sarama's and kafka-go's texts of UNKNOWN_MEMBER_ID (wordings/client_errors.yml).
                     r"|member is not known in the current generation|member id is not in the current generation",
                     re.I)
# What a member hears when its coordinator moved or is gone: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE (Java's
# message `The coordinator is not available.` too, as a DEBUG `SyncGroup failed: ..` prints it), a load.
COORDINATOR_GONE = re.compile(r"NOT_COORDINATOR|not coordinator|not the correct coordinator|NotCoordinator"
                              r"|COORDINATOR_NOT_AVAILABLE|coordinator (?:is )?not available"
                              r"|coordinator load in progress"
                              # The same errors as Sarama's and kafka-go's texts word them.
                              r"|not coordinated by this broker"
                              r"|still loading offsets after a leader change|group load in progress"
                              r"|offset's topic has not yet been created"
                              # brod: its error atoms before 3.0 (`GroupCoordinatorNotAvailable`) and the loss of
                              # the member's own connection to its coordinator (`{connection_down, Reason}`).
                              r"|CoordinatorNotAvailable|connection_down", re.I)
NEW_MEMBER_SIGNS = re.compile(r"need to re-join with the given member-id", re.I)
# What a member says when it cannot reach its coordinator at all: the transport failed (librdkafka's last error of a
# SESSTMOUT, `Local: Broker transport failure`, `All broker connections are down`; a refused connection) or the
# coordinator did not answer in time (`Local: Timed out`, a request timed out), or Java's coordinator loss with
# `isDisconnected: true` (the network client lost the connection, 2.6+), or kafka-python's and aiokafka's reasons for
# marking it dead (`Node Disconnected`, `KafkaConnectionError`, `Request timed out after N ms`: its own timer, not
# the coordinator's REQUEST_TIMED_OUT answer, `Broker: Request timed out` / `The request timed out.`, which came back).
UNREACHABLE = re.compile(r"transport failure|all broker connections are down|connection refused|ECONNREFUSED"
                         r"|isDisconnected: true|Local: Timed out|(?<!Broker: )request timed out after \d+ ?ms"
                         r"|node disconnected"
                         r"|KafkaConnectionError|Connect call failed", re.I)
UNREACHABLE_ANSWERS = ("client_session_timeout", "client_heartbeat_failed", "client_coordinator_lost")


def said(event: TimelineEvent) -> str:
    """What a member's line says: its error, reason and message."""
    return " ".join(str(event.get(k) or "") for k in ("error", "reason", "message"))


def coordinator_gone(event: TimelineEvent) -> bool:
    """Whether a member was told its coordinator moved or is not available (NOT_COORDINATOR and its kin)."""
    return event["event_type"] in EXPIRY_ANSWERS and bool(COORDINATOR_GONE.search(said(event)))


def coordinator_trouble(event: TimelineEvent) -> bool:
    """Whether a member lost its coordinator (marked it dead, found it unavailable) or was told it had moved: the
    signs of `coordinator_gone` and COORDINATOR_LOST together."""
    return event["event_type"] in COORDINATOR_LOST or coordinator_gone(event)


def coordinator_unreachable(event: TimelineEvent) -> bool:
    """Whether a member's line says it could not reach its coordinator: its connection to the coordinator failed or
    dropped (`client_coordinator_disconnected`), or an expiry, failed heartbeat or coordinator loss names a transport
    failure or a timed-out request (UNREACHABLE)."""
    return event["event_type"] == "client_coordinator_disconnected" or (
        event["event_type"] in UNREACHABLE_ANSWERS and bool(UNREACHABLE.search(said(event))))


def is_poll_timeout(event: TimelineEvent) -> bool:
    """Whether a member's line says its poll timeout expired (its own line, or the reason of a leave or reset)."""
    return event["event_type"] in POLL_TIMEOUT_EVENTS or (
        event["event_type"] in ("client_leaving", "client_generation_reset")
        and bool(POLL_TIMEOUT.search(event.get("reason") or "")))


# A member's own clock saying its session ran out (librdkafka's SESSTMOUT, the Java client's `session timed out
# without receiving a heartbeat response`, kafka-python's `Heartbeat session expired`), not the coordinator's
# answer: a poll timeout's own leave earns the coordinator's UNKNOWN_MEMBER_ID too, and an application may log that
# refused commit before the poll timeout's error.
OWN_EXPIRY = re.compile(_OWN_EXPIRY_WORDS, re.I)
# librdkafka names its handle `<client.id>#consumer-<n>`; the member id the broker gives it starts with client.id.
RDKAFKA_HANDLE = re.compile(r"^(?P<client>.+)#(?:consumer|producer)-\d+$")


def same_client(one: str | None, other: str | None) -> bool:
    """Whether two lines' client ids may name the same client (librdkafka's handle `<client.id>#consumer-N` is its
    client.id); a line without one may be any."""
    if not one or not other:
        return True
    base = [m.group("client") if (m := RDKAFKA_HANDLE.match(c)) else c for c in (one, other)]
    return one == other or base[0] == base[1]


def says_own_expiry(event: TimelineEvent) -> bool:
    """Whether a member's line is its own clock saying its session ran out (`OWN_EXPIRY`)."""
    return event["event_type"] == "client_session_timeout" or (
        event["event_type"] in COORDINATOR_LOST and bool(OWN_EXPIRY.search(said(event))))


def frozen_with(poll_timeout: TimelineEvent, lines: list[TimelineEvent]) -> TimelineEvent | None:
    """The line of `lines` from the same process as `poll_timeout` in which its own clock said its session ran out,
    within `stall_pair_s` of it in either order; or None. The clients heartbeat from a thread of their own, so a slow
    poll loop never expires a session: the two together are one stall of the whole process (a host asleep, a stopped
    JVM), whose timers fire at once when it wakes."""
    pair = window("stall_pair_s")
    for event in lines:
        if (says_own_expiry(event) and event.get("instance") == poll_timeout.get("instance")
                and same_client(event.get("client_id"), poll_timeout.get("client_id"))
                and abs((event["event_ts"] - poll_timeout["event_ts"]).total_seconds()) <= pair):
            return event
    return None


def says_expired(event: TimelineEvent) -> bool:
    """Whether a member's line says its session expired (its own view, or the coordinator's answer)."""
    return event["event_type"] == "client_session_timeout" or (
        event["event_type"] in EXPIRED_ANSWERS and bool(EXPIRED.search(said(event))))


def is_newcomer_sign(event: TimelineEvent) -> bool:
    """A line a process logs on its way into the group for the first time (subscribe, coordinator discovery, the
    MemberIdRequired round trip of a new member)."""
    if event["event_type"] in ("client_subscribed", "client_coordinator_discovered"):
        return True
    return (event["event_type"] == "client_rejoin_requested"
            and bool(NEW_MEMBER_SIGNS.search(event.get("reason") or "")))


def process_of(event: TimelineEvent) -> tuple[Any, Any]:
    """The process a member's line comes from: its instance folder and client id."""
    return event.get("instance"), event.get("client_id")


def before_own_close(signs: list[TimelineEvent]) -> list[TimelineEvent]:
    """`signs` without the coordinator losses a process logged at or after its own clean leave: a closing client
    forgets its coordinator (librdkafka's `is no longer coordinator` once its group handle terminates), which says
    nothing about the coordinator."""
    closed: dict[tuple[Any, Any], Any] = {}
    for event in signs:
        if event["event_type"] == "client_leaving" and not POLL_TIMEOUT.search(event.get("reason") or ""):
            closed.setdefault(process_of(event), event["event_ts"])
    return [e for e in signs if not (e["event_type"] in COORDINATOR_LOST and process_of(e) in closed
                                     and e["event_ts"] >= closed[process_of(e)])]
