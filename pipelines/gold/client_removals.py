"""Why a member the leader's assignment dropped left, from its own process's lines (the coordinator's log is
absent): the removal rules of the client path (`client_removed_*` in docs/causes.md)."""

from __future__ import annotations

from pipelines.gold.client_causes import MISSING
from pipelines.gold.client_signs import frozen_with, is_poll_timeout, said, says_expired
from pipelines.gold.records import TimelineEvent
from pipelines.gold.rulebook import Verdict, decide


def classify_removal(member: str, lines: list[TimelineEvent],
                     last_line: TimelineEvent | None) -> tuple[Verdict, TimelineEvent] | None:
    """Why `member`, dropped from the leader's assignment, left: its own process's `lines` around the rebalance say
    whether it logged a poll timeout, heard that the coordinator no longer knew it (its session had expired), or
    left on purpose. A process whose log is here (`last_line`: its last line before the rebalance) and says none of
    these did not leave on purpose (a member always logs its LeaveGroup): it crashed or froze and the coordinator
    expired it. None when its log is not here."""
    for event in lines:
        if is_poll_timeout(event) and frozen_with(event, lines) is None:
            return decide("client_removed_poll_timeout", member,
                          f"client log only: {member}, dropped from the assignment, had logged that its consumer "
                          "poll timeout expired" + MISSING), event
        if event["event_type"] == "client_leaving":
            return decide("client_removed_leave", member,
                          f"client log only: {member}, dropped from the assignment, left the group "
                          f"({event.get('reason') or 'LeaveGroup'})" + MISSING), event
        if says_expired(event):
            return decide("client_removed_expired", member,
                          f"client log only: {member}, dropped from the assignment, was no longer a member when it "
                          f"next reached the coordinator ({said(event).strip()[:160]}): its session had expired"
                          + MISSING), event
    if last_line is None:
        return None
    return decide("client_removed_silent", member,
                  f"client log only: {member}, dropped from the assignment, logged no LeaveGroup, poll timeout or "
                  "error around the rebalance: it stopped (a crash or a freeze) and its session expired"
                  + MISSING), last_line

