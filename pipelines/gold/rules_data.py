"""The rule book's entries as data (pipelines/gold/rulebook.py reads them; docs/causes.md is generated from them).

Each window is either a fixed number of seconds here (WINDOWS) or a configured threshold
(pipelines.settings.config.Thresholds, named by its field), so that every window and confidence the cause rules use
is written once, in this file.
"""

from __future__ import annotations

from typing import Any

# Fixed windows (seconds) and what each one bounds.
WINDOWS: dict[str, tuple[float, str]] = {
    "neighbour_s": (5.0, "member events this close to a rebalance's start (or a bump) belong to it"),
    "poll_line_after_s": (2.0, "a client's poll-timeout line may be logged this long after the coordinator acted"),
    "cooperative_followup_s": (30.0, "a cooperative follow-up rejoin comes this soon after the rebalance it finishes"),
    "connector_change_s": (5.0, "a Connect config write this long before a leader's rejoin is what it hands out"),
    "leave_cascade_s": (30.0, "a leader's metadata rejoin this soon after a leave can be that leave's consequence"),
    "after_outage_s": (30.0, "a new member this soon after the group's coordinator came back lost it meanwhile"),
    "move_return_s": (60.0, "a member alive through a coordinator move that expired it joins again within this (its "
                            "next heartbeat is refused and it rejoins at once); one that does not, in a group its "
                            "expiry emptied, had most likely stopped"),
    "client_chain_s": (60.0, "a member's lines further apart than this before its join are different episodes"),
    "coordinator_outage_s": (1800.0, "a coordinator lost this long before it was found again opens the next rebalance"),
    "orphan_before_s": (2.0, "a group-less client warning belongs to a group whose coordinator acted this soon after"),
    "orphan_after_s": (10.0, "... or this soon before it"),
    "churn_lead_s": (5.0, "churn: a revoke-only cycle goes to a rebalance that starts this soon after it"),
    "churn_tail_s": (5.0, "churn: an assignment goes to the last rebalance when it ended this recently"),
    "churn_departure_s": (1800.0, "churn: a member gone without a LeaveGroup is removed within this (the broker's "
                                  "group.max.session.timeout.ms default)"),
    "churn_risk_s": (5.0, "churn: a failed commit belongs to a member's cycle from this long before its first line"),
    "unreachable_before_s": (60.0, "a member that could not reach its coordinator this long before its session "
                                   "expired lost the session to it"),
    "unreachable_lead_s": (2.0, "... at least this long before: a process waking from a freeze logs its dropped "
                                "connections and its expiry together (and a coordinator found again this close "
                                "to the expiry is the reconnection that learned of it)"),
    "stall_pair_s": (2.0, "a process's own session expiry and its poll timeout this close together (either order) "
                          "are one stall of the whole process: a host waking fires both timers at once"),
    "same_removal_s": (1.0, "one removal asked about twice (the has-failed line, then its rebalance) within this"),
    "resubscribe_s": (2.0, "a subscribe this soon after an unsubscribe from everything is a resubscription"),
    "whatif_back_after_s": (0.5, "what-if: a member's next poll is looked for from this long after its poll timeout"),
    "whatif_return_s": (1800.0, "what-if: a process that joins again later than this is a new start, not a return"),
}

# Configured thresholds (pipelines.settings.config.Thresholds) a rule may name among its windows.
CONFIGURED = ("coordinator_move_window_s", "heartbeat_tolerance_s", "gc_pause_min_ms", "poll_timeout_window_s",
              "rejoin_window_s", "incident_gap_s", "default_session_timeout_ms")

_GC = "GroupCoordinator.scala (classic coordinator, 2.1-3.9) and GroupMetadataManager.java (4.0+)"
_CC = "ConsumerCoordinator.java / AbstractCoordinator.java (Java consumer)"
_RD = "librdkafka rdkafka_cgrp.c"
_LAB = "lab scenario"


# Client reasons (KIP-800) with which a member rejoins a rebalance its coordinator already announced instead of
# asking for one: AbstractCoordinator requests a rejoin with `group is already rebalancing` when a heartbeat, commit
# or SyncGroup is answered REBALANCE_IN_PROGRESS. On a coordinator that has just loaded the group (in Stable: the
# old coordinator's rebalance was never written), that rejoin reads `Leader X re-joining group during Stable`, the
# wording of a metadata change; rule move_interrupted_rebalance reads it as the cut-off rebalance restarting.
REJOIN_UNDER_WAY = (r"group is already rebalancing",)


def _r(id: str, path: str, question: str, cause: str | None, detail: str | None, confidence: float, basis: str,
       windows: tuple[str, ...] = (), kind: str = "base") -> dict[str, Any]:
    return {"id": id, "path": path, "question": question, "cause": cause, "detail": detail,
            "confidence": confidence, "basis": basis, "windows": windows, "kind": kind}


RULE_ROWS: tuple[dict[str, Any], ...] = (
    # -- the coordinator's reason string (Kafka 2.1+), classic protocol ----------------------------------------------
    _r("reason_heartbeat_expiration", "broker", "Did the coordinator remove a member on heartbeat expiration?",
       "session_timeout", "heartbeat_expiration", 0.9, f"{_GC}: `removing member X on heartbeat expiration`; "
       f"{_LAB} session_timeout"),
    _r("reason_leave_group", "broker", "Did the coordinator remove a member on its LeaveGroup?",
       "membership_change", "member_leave", 0.85, f"{_GC}: `removing member X on LeaveGroup`"),
    _r("reason_explicit_leave", "broker", "Did a 4.x coordinator rebalance for an explicit LeaveGroup request?",
       "membership_change", "member_leave", 0.8, f"{_GC}: `explicit LeaveGroup request for (X) members`; {_LAB} "
       "clean_leave on 4.x"),
    _r("reason_new_member", "broker", "Did the coordinator add a new member?", "membership_change", "member_join",
       0.85, f"{_GC}: `Adding new member X`"),
    _r("reason_downgrade_static", "broker", "Did a live conversion back to classic replace a static member?",
       "membership_change", "static_member_replaced", 0.8, f"{_GC}: `Downgrade group G from consumer to classic for "
       "static member replacement`"),
    _r("reason_downgrade_leave", "broker", "Did a live conversion back to classic follow a member's leave?",
       "membership_change", "member_leave", 0.8, f"{_GC}: `Downgrade group G from consumer to classic for member "
       "leaving`"),
    _r("reason_leader_rejoin", "broker", "Did the leader rejoin a Stable group (its metadata changed)?",
       "metadata_change", "leader_rejoin", 0.7, f"{_GC}: `Leader X re-joining group during Stable`"),
    _r("reason_static_member_update", "broker", "Did a static member rejoin with new metadata?",
       "membership_change", "static_member_replaced", 0.8, f"KIP-345; {_GC}: `Updating metadata for static member`"),
    _r("reason_member_metadata_update", "broker", "Did a member rejoin with a new subscription?",
       "metadata_change", "subscription_change", 0.8, f"{_GC}: `Updating metadata for member X`"),
    _r("reason_member_rejoin_during", "broker", "Did a member rejoin during a rebalance or Stable?",
       "membership_change", "member_rejoin", 0.6, f"{_GC}: `Member X joining group during ...`"),
    _r("reason_static_protocol_change", "broker", "Did a static member join with a change of protocol?",
       "membership_change", "static_member_replaced", 0.8, f"KIP-345; {_GC}"),
    _r("reason_sync_expiration", "broker", "Did the coordinator remove members on pending sync expiration?",
       "membership_change", "sync_timeout", 0.7, f"{_GC}: `on pending sync request expiration` (KIP-814, 3.2+)"),
    _r("reason_assignment_store_error", "broker", "Did the coordinator fail to store the group's assignment?",
       "coordinator_change", "coordinator_write_failure", 0.7, f"{_GC}: `Error ... when storing group assignment "
       "during SyncGroup`"),
    _r("reason_group_over_capacity", "broker", "Was a freshly loaded group over its capacity?",
       "coordinator_change", "coordinator_failover", 0.8, f"{_GC}: `Freshly-loaded group ... over capacity`"),
    _r("reason_unrecognised", "broker", "The coordinator printed a reason no rule knows.", "unknown", None, 0.2,
       f"{_GC}: any other `(reason: ...)`"),
    _r("client_reason_given", "broker", "Did the member send a reason of its own (KIP-800) that names the cause?",
       None, None, 0.95, f"KIP-800; {_GC}: `client reason: ...`; {_CC} reasons (`consumer poll timeout has expired`, "
       "`cached metadata has changed`, ...)", (), "refinement"),
    # -- brokers before 2.1: no reason, the member event just before the start -------------------------------------
    _r("neighbour_expired", "broker", "No reason printed: did a member expire just before the start?",
       "session_timeout", "heartbeat_expiration", 0.7, f"{_GC} before 2.1: `Member X ... has failed`",
       ("neighbour_s",)),
    _r("neighbour_left", "broker", "No reason printed: did a member leave just before the start?",
       "membership_change", "member_leave", 0.6, f"{_GC} before 2.1: `has left`", ("neighbour_s",)),
    _r("neighbour_fenced_session", "broker", "No reason printed: was a member fenced for its session just before?",
       "session_timeout", "heartbeat_expiration", 0.6, "GroupMetadataManager.java: `fenced ... session expired`",
       ("neighbour_s",)),
    _r("neighbour_fenced", "broker", "No reason printed: was a member fenced (for anything else) just before?",
       "membership_change", "member_fenced", 0.6, "GroupMetadataManager.java", ("neighbour_s",)),
    _r("neighbour_joined", "broker", "No reason printed: did a member join just before the start?",
       "membership_change", "member_join", 0.6, f"{_GC} before 2.1", ("neighbour_s",)),
    _r("first_generation", "broker", "No reason printed: is this the group's first generation forming?",
       "membership_change", "member_join", 0.6, f"{_GC}: generation 0 is the group's first"),
    _r("no_reason", "broker", "No reason printed and no member event just before the start.", "unknown", None, 0.1,
       f"{_GC} before 2.1"),
    # -- KIP-848 consumer groups and KIP-1071 streams groups: the member event before an epoch bump ----------------
    _r("epoch_fenced_session", "epoch", "Was a member fenced because its session expired just before the bump?",
       "session_timeout", "heartbeat_expiration", 0.9, "KIP-848; GroupMetadataManager.java: `fenced from the group "
       "because the member session expired`", ("neighbour_s",)),
    _r("epoch_fenced_revoke", "epoch", "Was a member fenced for failing to revoke or transition in time?",
       "poll_timeout", "rebalance_timeout", 0.6, "KIP-848: the rebalance timeout is max.poll.interval.ms",
       ("neighbour_s",)),
    _r("epoch_fenced_other", "epoch", "Was a member fenced for a reason no rule knows?", "unknown", "fenced", 0.3,
       "KIP-848", ("neighbour_s",)),
    _r("epoch_member_left", "epoch", "Did a member leave just before the bump?", "membership_change",
       "member_leave", 0.85, "KIP-848: `Member X left the consumer group`", ("neighbour_s",)),
    _r("epoch_static_replaced", "epoch", "Did a static member replace another just before the bump?",
       "membership_change", "static_member_replaced", 0.8, "KIP-848, KIP-345", ("neighbour_s",)),
    _r("epoch_member_joined", "epoch", "Did a member join just before the bump?", "membership_change",
       "member_join", 0.85, "KIP-848: `Member X joins the consumer group`", ("neighbour_s",)),
    _r("epoch_protocol_upgrade", "epoch", "Was the classic group converted to a consumer group just before?",
       "membership_change", "member_join", 0.7, "GroupMetadataManager.java (3.7+): converted on a consumer-protocol "
       "member's join", ("neighbour_s",)),
    _r("epoch_config_changed", "epoch", "Did the group's assignment configuration change just before?",
       "metadata_change", "assignment_config_change", 0.8, "KIP-848 group configs (4.0+)", ("neighbour_s",)),
    _r("epoch_topology_changed", "epoch", "Did a streams member bring a new topology epoch?", "metadata_change",
       "topology_change", 0.7, "KIP-1071 streams groups (4.1+)", ("neighbour_s",)),
    _r("epoch_subscription_changed", "epoch", "Did a member's subscription (or its topics' metadata) change?",
       "metadata_change", "subscription_change", 0.8, "KIP-848", ("neighbour_s",)),
    _r("epoch_no_member_event", "epoch", "No member event just before the bump: the topics' metadata changed.",
       "metadata_change", "partition_count_change", 0.5, "KIP-848: the coordinator bumps on a metadata change",
       ("neighbour_s",)),
    _r("upgrade_without_bump", "epoch", "A conversion to a consumer group with no bump line in the log.",
       "membership_change", "member_join", 0.5, "GroupMetadataManager.java (3.7+)", ("neighbour_s",)),
    _r("target_membership_diff", "epoch", "Only the target assignment is logged: which member did it add or drop?",
       "membership_change", None, 0.5, "KIP-848 `Computed a new target assignment for epoch N`"),
    _r("target_unknown", "epoch", "Only the target assignment is logged and it names no change.", "unknown", None,
       0.2, "KIP-848"),
    # -- members' lines only (the coordinator's log is absent) --------------------------------------------------------
    _r("client_logged_poll_timeout", "client", "Did a member log that its poll timeout expired and leave, other than "
       "in one stall with its own clock's session expiry?",
       "poll_timeout",
       "leave_on_poll_timeout", 0.7, f"{_CC}: `consumer poll timeout has expired`; {_RD}: MAXPOLL", ("stall_pair_s",)),
    _r("client_session_expired", "client", "Was a member told the coordinator no longer knew it?",
       "session_timeout", "heartbeat_expiration", 0.6, f"{_CC}: UNKNOWN_MEMBER_ID, also as the answer to its "
       f"LeaveGroup; {_RD}: SESSTMOUT, `Unknown member`"),
    _r("client_expired_unreachable", "client", "Had the expired member said, shortly before its expiry, that it "
       "could not reach its coordinator (a failed or dropped connection, a transport failure, a timed-out request)?",
       "coordinator_change", "coordinator_unreachable", 0.5, f"{_RD}: the GroupCoordinator handle's FAIL lines, "
       f"a heartbeat's transport failure; {_CC}: `isDisconnected: true`, NetworkClient on the coordinator's node",
       ("unreachable_before_s", "unreachable_lead_s")),
    _r("client_coordinator_moved", "client", "Was a member told its coordinator moved or was unavailable?",
       "coordinator_change", "coordinator_lost", 0.5, f"{_CC}: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, "
       "COORDINATOR_LOAD_IN_PROGRESS"),
    _r("client_rejoin_reason", "client", "Did a member ask to rejoin for a metadata or subscription change?",
       None, None, 0.7, f"{_CC}: `Request joining group due to: ...`; {_RD}: `subscription updated from metadata "
       "change`"),
    _r("client_lost_coordinator", "client", "Did a member lose its coordinator (marked dead) and rejoin?",
       "coordinator_change", "coordinator_lost", 0.5, f"{_CC}: `Group coordinator ... is unavailable or invalid`, "
       "`Marking the coordinator ... dead`", ("client_chain_s", "coordinator_outage_s")),
    _r("client_start_held_by_coordinator", "client", "Did a new process lose or miss its coordinator on its way "
       "into the group, and never get in?", "coordinator_change", "coordinator_lost", 0.45, f"{_CC}: the start "
       "signs of client_start_without_coordinator with no first join after them in the log"),
    _r("client_start_without_coordinator", "client", "Did a new process lose or miss its coordinator on its way "
       "into the group, then join?", "membership_change", "member_join", 0.45, f"{_CC}: NOT_COORDINATOR, "
       "COORDINATOR_NOT_AVAILABLE or `Marking the coordinator ... dead` before a first join: a new cluster or an "
       "offsets topic still loading, or a coordinator that moved"),
    _r("client_unjoined_start", "client", "Did a new process start whose join the log does not reach?",
       "membership_change", "member_join", 0.4, f"{_CC}: `Subscribed to topic(s)`, `Discovered group coordinator`"),
    _r("client_new_member", "client", "Did a new process start and join?", "membership_change", "member_join", 0.6,
       f"{_CC}: the MemberIdRequired round trip (2.2+), subscribe, coordinator discovery"),
    _r("client_lone_leave", "client", "Did a member leave, with only its own log here?", "membership_change",
       "member_leave", 0.45, f"{_CC}: `Member X sending LeaveGroup request`; {_RD}: `Terminating group`"),
    _r("client_leave", "client", "Did a member leave, seen with the others' logs?", "membership_change",
       "member_leave", 0.6, f"{_CC}: `sending LeaveGroup request`"),
    # No surer than client_seen_rebalancing: a leader's assignment that adds or drops a member still decides.
    _r("client_commit_after_removal", "client", "Was a member's commit refused because the group had rebalanced "
       "without it, with no other cause in the lines?", "poll_timeout", "leave_on_poll_timeout", 0.3,
       "CommitFailedException.java (0.10.1-4.x): its message; ConsumerCoordinator.java: raised for "
       "UNKNOWN_MEMBER_ID and ILLEGAL_GENERATION"),
    _r("client_topics_appeared", "client", "Had the leader's last assignment, just before, skipped subscribed "
       "topics it had no metadata for?", "metadata_change", "partition_count_change", 0.5,
       f"{_CC}: `The following subscribed topics are not assigned to any members`; kafka-python's assignors: "
       "`No partition metadata for topic`",
       ("client_chain_s",)),
    _r("client_seen_rebalancing", "client", "The members saw the group rebalancing but not who started it.",
       "membership_change", None, 0.3, f"{_CC}: REBALANCE_IN_PROGRESS answers"),
    _r("client_assignment_diff", "client", "Does the leader's assignment drop or add a member against the last one?",
       "membership_change", None, 0.5, f"{_CC}: `Finished assignment for group at generation N`"),
    _r("client_removed_poll_timeout", "client", "Had the dropped member logged a poll timeout?", "poll_timeout",
       "leave_on_poll_timeout", 0.7, f"{_CC}", ("client_chain_s", "rejoin_window_s")),
    _r("client_removed_leave", "client", "Had the dropped member left on purpose?", "membership_change",
       "member_leave", 0.6, f"{_CC}", ("client_chain_s", "rejoin_window_s")),
    _r("client_removed_expired", "client", "Was the dropped member told its session had expired?",
       "session_timeout", "heartbeat_expiration", 0.6, f"{_CC}", ("client_chain_s", "rejoin_window_s")),
    _r("client_removed_silent", "client", "Did the dropped member's log stop with no leave (a crash or a freeze)?",
       "session_timeout", "heartbeat_expiration", 0.4, f"{_CC}: a Java member always logs its LeaveGroup",
       ("client_chain_s", "rejoin_window_s")),
    # -- refinements: the group's context decides what the first verdict cannot see ---------------------------------
    _r("implied_start", "broker", "Is the coordinator's start line missing (the rebalance implied by a member "
       "event)? Its verdict's confidence is multiplied by this factor.", None, None, 0.7, f"{_GC}",
       ("neighbour_s",), "factor"),
    _r("move_interrupted_rebalance", "broker", "Was a rebalance in progress cut off by a coordinator move and "
       "restarted on the new coordinator (by a member's join, or by the leader rejoining because the old "
       "coordinator had told it the group was rebalancing)?", "coordinator_change", "coordinator_failover", 0.8,
       f"{_GC}: `Loading group metadata` (3.x), `Loaded classic group G with N members` (4.x); {_CC}: "
       f"`group is already rebalancing`; {_LAB} coordinator",
       ("coordinator_move_window_s",), "refinement"),
    _r("cooperative_followup", "any", "Is this the cooperative protocol's second round (a revoke and rejoin) after "
       "the rebalance that just ended? It carries that one's cause, its confidence capped at this value.",
       None, None, 0.85, f"{_CC} (2.4+): `need to revoke partitions and re-join`", ("cooperative_followup_s",),
       "refinement"),
    _r("connector_change", "any", "Did a Connect worker write or remove a connector's or task's config just before "
       "the leader's rejoin?", "metadata_change", "connector_change", 0.85,
       "DistributedHerder.java (Connect): config updates make the leader rejoin", ("connector_change_s",),
       "refinement"),
    _r("leave_cascade", "broker", "Was a leader's metadata rejoin the consequence of a leave of the only member "
       "subscribed to some topic?", "membership_change", "member_leave", 0.75,
       f"{_CC}: the leader's metadata snapshot follows the group's subscription", ("leave_cascade_s",), "refinement"),
    _r("expiry_during_gc_pause", "any", "Was the expired member's JVM in a stop-the-world pause through the "
       "expiry?", "gc_pause", "heartbeat_expiration", 0.9, "JVM unified GC logging (-Xlog:gc*, safepoint); "
       f"{_LAB} gc_pause", ("heartbeat_tolerance_s", "gc_pause_min_ms"), "refinement"),
    _r("expiry_after_poll_timeout", "any", "Did the expired member's client log a poll timeout just before, other "
       "than in one stall with its own clock's session expiry?",
       "poll_timeout", "heartbeat_expiration", 0.85, f"{_RD} under KIP-848 stops heartbeating after MAXPOLL",
       ("poll_timeout_window_s", "poll_line_after_s", "stall_pair_s"), "refinement"),
    _r("expiry_after_coordinator_move", "broker", "Did the member expire soon after the group moved coordinator, "
       "and come back soon after (a member that does not come back had stopped: its process, not the move, ended "
       "its session)?",
       "coordinator_change", "coordinator_failover", 0.75, f"{_GC}: `Loading group metadata`; {_LAB} coordinator",
       ("coordinator_move_window_s", "move_return_s"), "refinement"),
    _r("expiry_while_coordinator_unreachable", "any", "Did the expired member's client say, just before, that it "
       "could not reach its coordinator?", "coordinator_change", "coordinator_unreachable", 0.7,
       f"{_RD}: the GroupCoordinator handle's FAIL lines; {_CC}: `isDisconnected: true`, NetworkClient on the "
       "coordinator's node", ("unreachable_before_s", "unreachable_lead_s"), "refinement"),
    _r("plain_session_expiry", "any", "None of the above: the member sent no heartbeat within its session timeout.",
       "session_timeout", "heartbeat_expiration", 0.9, f"{_GC}", (), "refinement"),
    _r("leave_after_poll_timeout", "any", "Did the leaving member's client log a poll timeout first (no client "
       "reason sent, brokers before 3.2)?", "poll_timeout", "leave_on_poll_timeout", 0.9,
       f"{_CC}: `consumer poll timeout has expired`; {_LAB} poll_timeout",
       ("poll_timeout_window_s", "poll_line_after_s"), "refinement"),
    _r("rejoin_after_removal", "any", "Is the joining member the same process as a member removed against its will "
       "(no restart between; for a client that never logs its start, a line of its own from shortly before the "
       "removal on; no clean leave of that folder's process since)? It carries that removal's cause.", None,
       "rejoin", 0.85,
       "the process's instance folder; its start lines", ("rejoin_window_s",), "refinement"),
    _r("rejoin_after_coordinator_move", "broker", "Did a member rejoin a Stable group (the leader re-joining; a "
       "member 'updating metadata' on brokers before 3.2) right after the group moved coordinator, with no client "
       "reason naming a metadata change of its own?", "coordinator_change", "coordinator_failover", 0.6,
       f"{_GC}: `Loading group metadata`, `Loaded classic group`; {_CC}: `rebalance failed due to ...` (a JoinGroup, "
       f"SyncGroup or heartbeat cut off with its coordinator); {_LAB} coordinator", ("after_outage_s",),
       "refinement"),
    _r("join_after_coordinator_outage", "broker", "Did a new member join right after the group had no coordinator "
       "(unloaded, then loaded)?", "coordinator_change", "coordinator_failover", 0.6,
       f"{_GC}: `Unloading group metadata` / `Loading group metadata`", ("after_outage_s",), "refinement"),
    _r("removal_gc_pause", "client", "Was the dropped member's JVM paused by GC until the group rebalanced?",
       "gc_pause", None, 0.6, "JVM unified GC logging", ("heartbeat_tolerance_s", "gc_pause_min_ms"),
       "refinement"),
    _r("coordinator_log_gap", "broker", "Is the generation missing from the coordinator's log (rebuilt from the "
       "members' lines)? Its confidence is capped at this value.", None, None, 0.6,
       "members' `Successfully joined group with generation N`", (), "cap"),
)
