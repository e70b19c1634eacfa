"""Every gold table from silver events and GC pauses, in one pure build: the reconstruct stream runs it over the
groups a batch touched and MERGEs the rows in, the batch oracle runs it over every group."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from pipelines.gold.aggregates import health_from, hourly_stats_from
from pipelines.gold.estate_frames import estate_incidents_from, params_from, with_estate_ids
from pipelines.gold.incidents import advice_from, incidents_from, with_benefit
from pipelines.gold.rebalances import replay_groups, timeline_input, timeline_outputs
from pipelines.gold.timeline import Rules

# Tables that compare every group with all the others (health: the last hour and day before the newest rebalance
# of any group; estate incidents: rebalances of different groups tied by one root), so a build of some groups cannot
# make them: rebuild them with `cross_group_tables` over all groups. The estate incidents also own
# gold_rebalances.estate_incident_id, which a build of some groups leaves as it is stored (ESTATE_OWNED).
CROSS_GROUP = ("gold_group_health", "gold_estate_incidents")
ESTATE_OWNED = "estate_incident_id"


def _as_is(df: DataFrame) -> DataFrame:
    return df


def build_gold(
    events: DataFrame, pauses: DataFrame, rules: Rules, *, persist: Callable[[DataFrame], DataFrame] = _as_is,
    whole_estate: bool = True,
) -> dict[str, DataFrame]:
    """Every gold table (gold_rebalances, gold_group_states, gold_member_sessions, gold_partition_churn,
    gold_whatif, gold_incidents, gold_config_advice, gold_rebalance_stats_hourly, gold_group_health) of the groups
    in `events` (silver_events rows; `pauses`: silver_gc_pauses). Each group's timeline is replayed once for all five
    timeline tables. `persist` is applied to the frames read more than once (the replay and three of the timeline
    tables): the caller picks the storage level and frees them. `whole_estate`: `events` are every group's, so the
    CROSS_GROUP tables and the rebalances' estate incident ids are made too (collecting the estate's rebalances);
    otherwise they are left out and `estate_incident_id` is null."""
    inputs = timeline_input(events, pauses, min_pause_ms=rules.gc_pause_min_ms)
    timeline = timeline_outputs(persist(replay_groups(inputs, rules)))
    rebalances = persist(timeline["gold_rebalances"])
    sessions = persist(timeline["gold_member_sessions"])
    states = persist(timeline["gold_group_states"])
    per_group = {
        "gold_rebalances": rebalances,
        "gold_group_states": states,
        "gold_member_sessions": sessions,
        "gold_partition_churn": timeline["gold_partition_churn"],
        "gold_whatif": timeline["gold_whatif"],
        "gold_incidents": incidents_from(rebalances),
        "gold_config_advice": with_benefit(advice_from(rebalances, pauses, sessions, events),
                                           timeline["gold_whatif"]),
        "gold_rebalance_stats_hourly": hourly_stats_from(rebalances),
    }
    if not whole_estate:
        return per_group
    cross = cross_group_tables(rebalances, states, sessions, events, pauses, rules)
    return {**per_group, **cross,
            "gold_rebalances": with_estate_ids(rebalances, cross["gold_estate_incidents"])}


def cross_group_tables(rebalances: DataFrame, states: DataFrame, sessions: DataFrame, events: DataFrame,
                       pauses: DataFrame, rules: Rules) -> dict[str, DataFrame]:
    """The CROSS_GROUP tables from the gold_rebalances, gold_group_states and gold_member_sessions rows, silver
    events and GC pauses of every group."""
    return {"gold_group_health": health_from(rebalances, states),
            "gold_estate_incidents": estate_incidents_from(rebalances, sessions, states, events, pauses,
                                                           params_from(rules))}
