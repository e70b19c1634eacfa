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
from schemas.tables import DERIVED_TABLES

# Tables that compare every group with all the others (health: the last hour and day before the newest rebalance
# of any group; estate incidents: rebalances of different groups tied by one root), so a build of some groups cannot
# make them: rebuild them with `cross_group_tables` over all groups. The estate incidents also own
# gold_rebalances.estate_incident_id, which a build of some groups leaves as it is stored (ESTATE_OWNED).
CROSS_GROUP = ("gold_group_health", "gold_estate_incidents")
ESTATE_OWNED = "estate_incident_id"


def _as_is(df: DataFrame) -> DataFrame:
    return df


# The hot path: the replay's own tables and the incidents, which the alerts and a run's summary read. The reconstruct
# stream commits them in each micro-batch; the DERIVED tables are refreshed from them on their own clock
# (`pipelines.flow.derived`).
HOT = ("gold_rebalances", "gold_group_states", "gold_member_sessions", "gold_partition_churn", "gold_whatif",
       "gold_incidents")
PER_GROUP_DERIVED = ("gold_config_advice", "gold_rebalance_stats_hourly")
DERIVED = PER_GROUP_DERIVED + CROSS_GROUP
assert sorted(DERIVED) == sorted(DERIVED_TABLES), "schemas.tables.DERIVED_TABLES names the derived tables"


def build_gold(
    events: DataFrame, pauses: DataFrame, rules: Rules, *, persist: Callable[[DataFrame], DataFrame] = _as_is,
    whole_estate: bool = True,
) -> dict[str, DataFrame]:
    """Every gold table (the HOT ones, then the DERIVED ones) of the groups in `events` (silver_events rows;
    `pauses`: silver_gc_pauses), each group's timeline replayed once. `persist` is applied to the frames read more
    than once (the replay and three of the timeline tables): the caller picks the storage level and frees them.
    `whole_estate`: `events` are every group's, so the CROSS_GROUP tables and the rebalances' estate incident ids are
    made too (collecting the estate's rebalances); otherwise they are left out and `estate_incident_id` is null."""
    hot = hot_tables(events, pauses, rules, persist=persist)
    per_group = {**hot, **per_group_derived(hot["gold_rebalances"], hot["gold_member_sessions"], hot["gold_whatif"],
                                            events, pauses)}
    if not whole_estate:
        return per_group
    rebalances = hot["gold_rebalances"]
    cross = cross_group_tables(rebalances, hot["gold_group_states"], hot["gold_member_sessions"], events, pauses,
                               rules)
    return {**per_group, **cross,
            "gold_rebalances": with_estate_ids(rebalances, cross["gold_estate_incidents"])}


def hot_tables(events: DataFrame, pauses: DataFrame, rules: Rules, *,
               persist: Callable[[DataFrame], DataFrame] = _as_is) -> dict[str, DataFrame]:
    """The HOT tables of the groups in `events` (`estate_incident_id` null), each group's timeline replayed once for
    its five timeline tables; `persist` as in `build_gold`."""
    inputs = timeline_input(events, pauses, min_pause_ms=rules.gc_pause_min_ms)
    timeline = timeline_outputs(persist(replay_groups(inputs, rules)))
    rebalances = persist(timeline["gold_rebalances"])
    return {
        "gold_rebalances": rebalances,
        "gold_group_states": persist(timeline["gold_group_states"]),
        "gold_member_sessions": persist(timeline["gold_member_sessions"]),
        "gold_partition_churn": timeline["gold_partition_churn"],
        "gold_whatif": timeline["gold_whatif"],
        "gold_incidents": incidents_from(rebalances),
    }


def per_group_derived(rebalances: DataFrame, sessions: DataFrame, whatif: DataFrame, events: DataFrame,
                      pauses: DataFrame) -> dict[str, DataFrame]:
    """The PER_GROUP_DERIVED tables of some groups from their gold_rebalances, gold_member_sessions and gold_whatif
    rows (rebuilt or stored: `estate_incident_id` plays no part), silver events and GC pauses."""
    return {
        "gold_config_advice": with_benefit(advice_from(rebalances, pauses, sessions, events), whatif),
        "gold_rebalance_stats_hourly": hourly_stats_from(rebalances),
    }


def cross_group_tables(rebalances: DataFrame, states: DataFrame, sessions: DataFrame, events: DataFrame,
                       pauses: DataFrame, rules: Rules) -> dict[str, DataFrame]:
    """The CROSS_GROUP tables from the gold_rebalances, gold_group_states and gold_member_sessions rows, silver
    events and GC pauses of every group."""
    return {"gold_group_health": health_from(rebalances, states),
            "gold_estate_incidents": estate_incidents_from(rebalances, sessions, states, events, pauses,
                                                           params_from(rules))}
