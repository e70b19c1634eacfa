"""The group state machines, one per protocol, declared as tables of legal transitions, beside the replay that
produces the states (broker.py and client_only.py walk the classic machine, epochs.py the consumer and streams one).
The quality rule `legal_transition` (pipelines/quality/derived.py) checks every stored state against these tables,
and tests/test_gold.py checks the replay's own transitions on plain event values against them."""

from __future__ import annotations

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

