"""StructTypes of the gold tables beyond gold_rebalances."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# One letter each, so that a table's columns read as one line per few fields.
S, I, L, D, T, B = StringType(), IntegerType(), LongType(), DoubleType(), TimestampType(), BooleanType()  # noqa: E741


def _schema(*fields: tuple[str, DataType, bool]) -> StructType:
    return StructType([StructField(name, dtype, nullable) for name, dtype, nullable in fields])


GOLD_GROUP_STATES = _schema(
    ("state_id", S, False), ("group_id", S, False), ("state", S, False), ("generation", I, True),
    ("coordinator", S, True), ("started_at", T, False), ("ended_at", T, True), ("duration_ms", L, True),
    ("rebalance_id", S, True),
    # Added in 0.4.0: the protocol the group spoke in this state (classic, consumer, streams): a group converted live
    # between the classic and the consumer protocol shows the conversion where it changes.
    ("protocol", S, True),
)

GOLD_MEMBER_SESSIONS = _schema(
    ("session_id", S, False), ("group_id", S, False), ("member_id", S, False), ("client_id", S, True),
    ("group_instance_id", S, True), ("instance", S, True), ("client_host", S, True), ("joined_at", T, True),
    ("left_at", T, True), ("end_reason", S, False), ("first_generation", I, True), ("last_generation", I, True),
    ("rebalances", I, False),
    # Added in 0.3.0: java, librdkafka, streams, connect (and kafka-python, aiokafka, kafkajs, kafka-go, sarama,
    # franz-go, ruby-kafka, brod), from the member's own lines (null when none tells).
    ("client_kind", S, True),
    # Added in 0.4.0: the member's group type (consumer, streams, connect, share). A share group's sessions are its
    # only rows: its members come and go without a rebalance.
    ("group_type", S, True),
)

GOLD_INCIDENTS = _schema(
    ("incident_id", S, False), ("group_id", S, False), ("started_at", T, False), ("ended_at", T, True),
    ("rebalances", L, False), ("unavailable_ms", L, True), ("root_cause", S, False), ("root_cause_detail", S, True),
    ("causes", ArrayType(S), True), ("rebalance_ids", ArrayType(S), True), ("summary", S, False),
)

GOLD_CONFIG_ADVICE = _schema(
    ("group_id", S, False), ("rule", S, False), ("observed", S, False), ("configured", S, True),
    ("advice", S, False), ("severity", S, False), ("evidence_rebalance_ids", ArrayType(S), True),
    # Added after 0.5.0 (nullable, so an older table gains them in place): the change the what-if weighed for this
    # rule on the group's own history (gold_whatif), how many of its rebalances it avoids and the rebalancing time
    # saved; the report ranks a group's advice by them.
    ("whatif_change", S, True), ("avoided_rebalances", L, True), ("saved_ms", L, True),
)

GOLD_GROUP_HEALTH = _schema(
    ("group_id", S, False), ("state", S, True), ("state_since", T, True), ("generation", I, True),
    ("last_rebalance_at", T, True), ("last_cause", S, True), ("rebalances_1h", L, False),
    ("unavailable_ms_1h", L, False), ("rebalances_24h", L, False), ("unavailable_ms_24h", L, False),
    ("dominant_cause_24h", S, True), ("as_of", T, True),
)

GOLD_REBALANCE_STATS_HOURLY = _schema(
    ("hour", T, False), ("group_id", S, False), ("cause", S, False), ("rebalances", L, False),
    ("unavailable_ms", L, True), ("p50_duration_ms", L, True), ("p95_duration_ms", L, True),
)

# Added after 0.5.0: per rebalance and member, the partitions its lines say it gave up, received and lost, what it
# owned before and after, and its reprocessing risk (pipelines/gold/churn.py). Lists are null where the client
# prints counts only (librdkafka).
GOLD_PARTITION_CHURN = _schema(
    ("churn_id", S, False), ("rebalance_id", S, True), ("group_id", S, False), ("member", S, False),
    ("instance", S, True), ("client_id", S, True), ("member_id", S, True), ("revoked", I, False),
    ("assigned", I, False), ("lost", I, False), ("owned_before", I, True), ("owned_after", I, True),
    ("kept", I, True), ("revoked_partitions", ArrayType(S), True), ("assigned_partitions", ArrayType(S), True),
    ("lost_partitions", ArrayType(S), True),
    # Reprocessing risk: the member's failed commits around the move, the partitions whose records since their last
    # commit the next owner may process again (lost ones, and those given away after a failed commit; null lists
    # where the client prints counts), and the verdict: commit_failed, partitions_lost or none.
    ("commit_failures", I, False), ("exposed", I, True), ("exposed_partitions", ArrayType(S), True),
    ("reprocessing_risk", S, False),
    ("first_event_at", T, False), ("last_event_at", T, False), ("event_ids", ArrayType(S), False),
)

# Added after 0.5.0: each rebalance weighed under a changed client setting (pipelines/gold/whatif.py): the standard
# changes of each group's own history, one row per change and rebalance.
GOLD_WHATIF = _schema(
    ("whatif_id", S, False), ("group_id", S, False), ("change", S, False), ("rebalance_id", S, False),
    ("started_at", T, False), ("cause", S, False), ("verdict", S, False), ("saved_ms", L, True),
    ("delay_ms", L, True), ("observed_ms", L, True), ("detail", S, False),
)

# Added in 0.7.0: rebalances of different groups tied by one root event (pipelines/gold/estate.py): a coordinator
# that stalled or moved, one process hosting members of several groups, a deploy wave, or a burst with nothing shared.
GOLD_ESTATE_INCIDENTS = _schema(
    ("estate_incident_id", S, False), ("root_kind", S, False), ("root_instance", S, True), ("started_at", T, False),
    ("ended_at", T, True), ("groups", ArrayType(S), False), ("groups_unaffected", ArrayType(S), True),
    ("rebalance_ids", ArrayType(S), False), ("unavailable_group_ms", L, True), ("cause_rule", S, False),
    ("evidence", ArrayType(_schema(("event_id", S, True), ("explanation", S, True))), True), ("summary", S, False),
    # Added in 0.7.0 too: why each group of groups_unaffected did not rebalance (pipelines/gold/estate_spared.py).
    ("groups_unaffected_why", ArrayType(_schema(("group_id", S, True), ("why", S, True))), True),
)

GOLD_ALERTS = _schema(
    ("alert_id", S, False), ("rule", S, False), ("severity", S, False), ("group_id", S, False),
    ("opened_at", T, False), ("closed_at", T, True), ("summary", S, False), ("rebalance_ids", ArrayType(S), True),
    ("incident_id", S, True), ("delivered_to", ArrayType(S), True),
)

GOLD_ALERT_DELIVERIES = _schema(
    ("alert_id", S, False), ("sink", S, False), ("delivered_at", T, False), ("attempts", I, False),
)

# One row per quality run and rule (pipelines/quality): what was checked, at which table version, and the verdict.
GOLD_QUALITY_RESULTS = _schema(
    ("run_ts", T, False), ("table_name", S, False), ("rule", S, False), ("expectation", S, False),
    ("success", B, False), ("checked_rows", L, True), ("unexpected_count", L, True), ("samples", S, True),
    ("error", S, True), ("table_version", L, True),
)

GOLD_TABLES: dict[str, StructType] = {
    "gold_group_states": GOLD_GROUP_STATES,
    "gold_member_sessions": GOLD_MEMBER_SESSIONS,
    "gold_incidents": GOLD_INCIDENTS,
    "gold_config_advice": GOLD_CONFIG_ADVICE,
    "gold_group_health": GOLD_GROUP_HEALTH,
    "gold_rebalance_stats_hourly": GOLD_REBALANCE_STATS_HOURLY,
    "gold_partition_churn": GOLD_PARTITION_CHURN,
    "gold_whatif": GOLD_WHATIF,
    "gold_estate_incidents": GOLD_ESTATE_INCIDENTS,
    "gold_alerts": GOLD_ALERTS,
    "gold_alert_deliveries": GOLD_ALERT_DELIVERIES,
    "gold_quality_results": GOLD_QUALITY_RESULTS,
}
