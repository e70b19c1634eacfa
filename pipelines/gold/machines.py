"""The group state machines, one per protocol, declared as tables: what moves a group into each state (the
`*_MOVES` tables: a happening the logs show, and the state it leads to), and which transitions are legal (the
`*_TRANSITIONS` tables). The replay records a state only through a move (`ReplayState.transition` takes the move's
name): broker.py walks the classic machine, epochs.py the consumer and streams one, client_only.py the classic one
as the members' lines show it. The quality rule `legal_transition` (pipelines/quality/derived.py) checks every
stored state against the transition tables, and tests check the replay's own transitions against them."""

from __future__ import annotations

from typing import Literal

# gold_group_states.state: the classic group coordinator's states, and those of KIP-848 consumer groups (the new
# coordinator derives Assigning, Reconciling and Stable from the group, target and member epochs).
CLASSIC_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
CONSUMER_ONLY_STATES = ("Assigning", "Reconciling")
STATES = CLASSIC_STATES + CONSUMER_ONLY_STATES

# Kafka's GroupMetadata `validPreviousStates`, as (previous, next). One addition: Dead -> PreparingRebalance, a group
# re-created under the same id after it was deleted (the new group's initial Empty state is never logged).
CLASSIC_TRANSITIONS = (
    ("Stable", "PreparingRebalance"), ("CompletingRebalance", "PreparingRebalance"), ("Empty", "PreparingRebalance"),
    ("PreparingRebalance", "CompletingRebalance"),
    ("CompletingRebalance", "Stable"),
    ("PreparingRebalance", "Empty"),
    ("Stable", "Dead"), ("PreparingRebalance", "Dead"), ("CompletingRebalance", "Dead"), ("Empty", "Dead"),
    ("Dead", "Dead"), ("Dead", "PreparingRebalance"),
)

# KIP-848 consumer groups: the state follows the epochs. A bump (a member joined, left, was fenced, or the metadata
# changed) starts Assigning from any state, also from Assigning or Reconciling when bumps come fast; the new target
# leads to Reconciling, or straight to Stable when every member already holds it; a bump that leaves no member, or a
# deletion, ends the story. Reconciling is reached only through Assigning.
CONSUMER_TRANSITIONS = (
    ("Empty", "Assigning"), ("Assigning", "Assigning"), ("Reconciling", "Assigning"), ("Stable", "Assigning"),
    ("Dead", "Assigning"),
    ("Assigning", "Reconciling"),
    ("Assigning", "Stable"), ("Reconciling", "Stable"),
    ("Assigning", "Empty"), ("Reconciling", "Empty"), ("Stable", "Empty"),
    ("Empty", "Dead"), ("Assigning", "Dead"), ("Reconciling", "Dead"), ("Stable", "Dead"), ("Dead", "Dead"),
)

# The name of every move of the three tables below (mypy checks each name the replay passes).
Move = Literal["rebalance_started", "group_stabilized", "assignment_received", "group_emptied", "group_dead",
               "epoch_bumped", "converted_without_bump", "target_computed", "members_reconciled", "epoch_emptied",
               "member_rebalancing", "last_member_joined", "members_synced"]

# The classic protocol (GroupCoordinator): each coordinator line that moves a group, and the state it moves it to.
CLASSIC_MOVES: dict[Move, str] = {
    "rebalance_started": "PreparingRebalance",  # `Preparing to rebalance group` (or a start a member event implies)
    "group_stabilized": "CompletingRebalance",  # `Stabilized group ... generation N`: every member has joined
    "assignment_received": "Stable",  # the leader's assignment reached the members of the generation (SyncGroup)
    "group_emptied": "Empty",  # the last member left (`Group ... transitioned to Empty`)
    "group_dead": "Dead",  # the group was deleted or expired
}
# KIP-848 consumer groups and KIP-1071 streams groups (the new coordinator): what happens around one epoch bump.
CONSUMER_MOVES: dict[Move, str] = {
    "epoch_bumped": "Assigning",  # `Bumped group epoch`: a member joined, left or was fenced, or metadata changed
    "converted_without_bump": "Assigning",  # a conversion to a consumer group whose bump line is not in the log
    "target_computed": "Reconciling",  # `Computed a new target assignment for epoch N`
    "members_reconciled": "Stable",  # every member reached the epoch's target (their STABLE lines, or the target)
    "epoch_emptied": "Empty",  # the bump left no member
}
# The classic protocol as its members' own lines show it, when the coordinator's log is absent.
CLIENT_ONLY_MOVES: dict[Move, str] = {
    "member_rebalancing": "PreparingRebalance",  # the first member line into the rebalance
    "last_member_joined": "CompletingRebalance",  # the join response closes the join phase
    "members_synced": "Stable",  # the last member's sync or assignment; or, with no join line, its steady state
}
MOVES: dict[Move, str] = {**CLASSIC_MOVES, **CONSUMER_MOVES, **CLIENT_ONLY_MOVES}
