"""What each rule's verdict cannot rule out (the rule book's alternatives, read by pipelines/gold/rulebook.py with
the rows of pipelines/gold/rules_data.py; pipelines/gold/alternatives.py puts them on a verdict)."""

from __future__ import annotations

# What a verdict cannot rule out: per deciding rule, the other causes the same lines are consistent with, each with
# its confidence, the log that would decide it (`client`: the trigger member's client log; `gc`: the GC log of its
# process; `broker`: the group coordinator's log) and the line to look for there. An alternative whose log the
# replay did read is dropped (that log was consulted and did not decide it): pipelines/gold/alternatives.py.
_POLL_LEAVE = ("poll_timeout", 0.35, "client", "a `consumer poll timeout has expired` line (Java) or MAXPOLL "
               "(librdkafka) in the leaving member's log: a member whose poll loop stalls leaves the group itself, "
               "and a coordinator before 3.2 logs no reason for a LeaveGroup")
_GC_EXPIRY = ("gc_pause", 0.3, "gc", "a stop-the-world pause of the member's JVM at least as long as its session "
              "timeout, ending at the expiry, in the GC log of its process")
_COORDINATOR_EXPIRY = ("coordinator_change", 0.15, "broker", "`Loading group metadata` / `Unloading group metadata` "
                       "for the group's partition in the coordinators' logs just before: heartbeats to a moving "
                       "coordinator fail")
_REJOIN = (("session_timeout", 0.2, "client", "the joining process's own log showing it was removed (UNKNOWN_MEMBER_ID"
            ", `has expired`) and rejoined without a restart"),
           ("poll_timeout", 0.2, "client", "the joining process's own log showing a poll timeout and a rejoin without "
            "a restart"))
_FROM_BROKER = (("session_timeout", 0.2, "broker", "`removing member ... on heartbeat expiration` in the coordinator's "
                 "log at the rebalance's start"),
                ("membership_change", 0.2, "broker", "`Adding new member` / `on LeaveGroup` in the coordinator's log"),
                ("metadata_change", 0.15, "broker", "`Leader ... re-joining group during Stable` or `Updating "
                 "metadata` in the coordinator's log"),
                ("coordinator_change", 0.1, "broker", "`Loading group metadata` in a coordinator's log just before"))
# A member that only saw the group rebalance may be the one whose poll loop outran its limit: a CommitFailedException
# says so in its own text, but it also follows a join or a leave of another member (commits fail during any
# rebalance), so it leaves the cause open rather than deciding it.
_SLOW_POLL = ("poll_timeout", 0.2, "client", "`consumer poll timeout has expired` (Java) or MAXPOLL (librdkafka) in a "
              "member's log; a CommitFailedException blames the poll loop but also follows another member's join")
_LEAVES = ("reason_leave_group", "reason_explicit_leave", "reason_downgrade_leave", "neighbour_left",
           "epoch_member_left", "client_leave", "client_lone_leave", "client_removed_leave")
_EXPIRIES = ("reason_heartbeat_expiration", "neighbour_expired", "neighbour_fenced_session", "epoch_fenced_session",
             "plain_session_expiry", "client_session_expired", "client_removed_expired", "client_removed_silent")
_JOINS = ("reason_new_member", "neighbour_joined", "epoch_member_joined", "client_new_member", "client_unjoined_start")
# A start that met a coordinator it could not use: its log says whether it had moved or held the group all along.
_START_MOVE = ("coordinator_change", 0.3, "broker", "`Loading group metadata` or `Unloading group metadata` for the "
               "group's offsets partition in a coordinator's log around the start")
_START_JOIN = ("membership_change", 0.3, "broker", "the coordinator's log holding the group, loaded and answering, "
               "while the process tried: the errors were its own lookup, and its join is the cause")
ALTERNATIVES: dict[str, tuple[tuple[str, float, str, str], ...]] = {
    **dict.fromkeys(_LEAVES, (_POLL_LEAVE,)),
    **dict.fromkeys(_EXPIRIES, (_GC_EXPIRY, _COORDINATOR_EXPIRY)),
    **dict.fromkeys(_JOINS, _REJOIN),
    **dict.fromkeys(("client_seen_rebalancing", "client_assignment_diff"), _FROM_BROKER + (_SLOW_POLL,)),
    "client_commit_after_removal": (_FROM_BROKER[0], _FROM_BROKER[1], _GC_EXPIRY),
    "client_lost_coordinator": (_FROM_BROKER[1],),
    "client_start_held_by_coordinator": (_START_JOIN,),
    "client_start_without_coordinator": (_START_MOVE, *_REJOIN),
    "client_coordinator_moved": (_FROM_BROKER[1],),
    **dict.fromkeys(("client_expired_unreachable", "expiry_while_coordinator_unreachable"), (
        ("session_timeout", 0.3, "broker", "the coordinator's log holding the group, loaded and answering, while the "
         "member was cut off: its own network or a freeze, not the coordinator"),)),
    "no_reason": (("session_timeout", 0.2, "client", "UNKNOWN_MEMBER_ID or `has expired` in a member's log"),
                  ("poll_timeout", 0.2, "client", "`consumer poll timeout has expired` in a member's log"),
                  ("membership_change", 0.2, "client", "a member's `sending LeaveGroup request` or first join")),
}
