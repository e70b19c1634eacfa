"""The table registry: every Delta table's name, layer, StructType and key columns (`REGISTRY`), and the
StructTypes by name (`TABLES`). Column order here is the order in the tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pyspark.sql.types import ArrayType, BooleanType, MapType, StructType

from schemas.gold import GOLD_TABLES, D, I, L, S, T, _schema

BRONZE_FILES = _schema(
    ("file_fingerprint", S, False), ("source_file", S, False), ("instance", S, True), ("file_name", S, True),
    ("file_modified_at", T, True), ("lines_read", L, False), ("candidate_lines", L, False),
    ("duplicate_of", S, True), ("batch_id", L, False), ("ingested_at", T, False),
    # Added in 0.4.0 (nullable, null for landing files): a Kafka "file" (the records of one topic partition, instance
    # and file in one micro-batch) and the offsets it spans; the next batch's first offset is checked against them.
    ("kafka_topic", S, True), ("kafka_partition", I, True), ("kafka_first_offset", L, True),
    ("kafka_last_offset", L, True),
)

BRONZE_LOG_LINES = _schema(
    ("line_id", S, False), ("source_file", S, False), ("instance", S, True), ("file_name", S, True),
    ("file_fingerprint", S, False), ("line_no", L, False), ("value", S, True), ("line_length", L, False),
    ("batch_id", L, False), ("ingested_at", T, False),
    # Added in 0.4.0 (nullable, null for landing files): where a line read from Kafka came from (the offset of the
    # record's first line).
    ("kafka_topic", S, True), ("kafka_partition", I, True), ("kafka_offset", L, True),
    # Added in 0.5.0 (null in rows written before): a hash of the instance, file name and record text, from which
    # `line_id` is made; a topic's next batch counts the repeats of a text from it.
    ("content_hash", S, True),
)

SILVER_EVENTS = _schema(
    ("event_id", S, False), ("event_ts", T, False), ("event_type", S, False), ("template_id", S, False),
    ("source_kind", S, False), ("group_id", S, True), ("member_id", S, True), ("generation", I, True),
    ("state", S, True), ("reason", S, True), ("client_reason", S, True), ("member_count", I, True),
    ("static_count", I, True), ("broker_id", I, True), ("offsets_partition", I, True), ("client_id", S, True),
    ("group_instance_id", S, True), ("old_member_id", S, True), ("client_host", S, True), ("protocol", S, True),
    ("coordinator", S, True), ("error", S, True), ("epoch", S, True), ("partitions", S, True),
    ("topics", S, True), ("members", S, True), ("group_epoch", I, True), ("member_epoch", I, True),
    ("previous_member_epoch", I, True), ("target_epoch", I, True), ("previous_state", S, True),
    ("group_protocol", S, True), ("revoked_partitions", S, True), ("level", S, True), ("logger", S, True),
    ("thread", S, True), ("message", S, True), ("instance", S, True), ("source_file", S, False),
    ("line_no", L, False), ("record_lines", L, True), ("batch_id", L, False), ("ingested_at", T, False),
    # Added in 0.2.0 (nullable, so a 0.1.0 table gains it in place): what a member's `ConsumerConfig values:` record
    # (event client_config) sets for its group membership, key -> value as printed (session.timeout.ms,
    # heartbeat.interval.ms, max.poll.interval.ms, partition.assignment.strategy, group.protocol, ...).
    ("settings", MapType(S, S), True),
    # Added in 0.3.0: true (else null) when the line printed no time and event_ts is that of the nearest timestamped
    # line of its file (java.util.logging's message line, slf4j-simple, a stripped excerpt).
    ("ts_inferred", BooleanType(), True),
    # Added in 0.3.0: true (else null) when the record's whole file printed no time at all (a stripped paste, a bare
    # message dump): event_ts is then the file's date at midnight plus the line number in milliseconds, so only the
    # order of the file's events is real, not their times or durations.
    ("ts_line_order", BooleanType(), True),
)

SILVER_GC_PAUSES = _schema(
    ("pause_id", S, False), ("instance", S, True), ("started_at", T, False), ("ended_at", T, False),
    ("duration_ms", D, False), ("collector", S, True), ("pause_kind", S, True), ("cause", S, True),
    ("uptime_s", D, True), ("source_file", S, False), ("line_no", L, False), ("batch_id", L, False),
)

SILVER_QUARANTINE = _schema(
    ("line_id", S, False), ("source_file", S, False), ("instance", S, True), ("line_no", L, False),
    ("reason", S, False), ("raw", S, True), ("line_length", L, False), ("batch_id", L, False),
    ("ingested_at", T, False),
)

SILVER_ACCOUNTING = _schema(
    ("batch_id", L, False), ("source_file", S, False), ("instance", S, True), ("lines_read", L, False),
    ("noise_lines", L, False), ("event_lines", L, False), ("gc_pause_lines", L, False),
    ("quarantined_lines", L, False), ("duplicate_lines", L, False), ("coverage", D, True),
    ("ingested_at", T, False),
    # Added in 0.2.0 (nullable, so a 0.1.0 table gains them in place): the newest event time of the file, and its
    # events older than the newest event ingested before this batch minus thresholds.allowed_lateness_s.
    ("last_event_ts", T, True), ("late_events", L, True),
    # Added in 0.6.0: the file's candidate lines that its source's own pattern (sources[].pattern) did not match
    # (null: no pattern applies to the file), and the first of them.
    ("own_layout_missed_lines", L, True), ("own_layout_miss_sample", S, True),
)

EVIDENCE = ArrayType(_schema(("event_id", S, True), ("explanation", S, True)))

GOLD_REBALANCES = _schema(
    ("rebalance_id", S, False), ("group_id", S, False), ("protocol", S, False), ("coordinator", S, True),
    ("generation_before", I, True), ("generation_after", I, True), ("started_at", T, False),
    ("completed_at", T, True), ("duration_ms", L, True), ("outcome", S, False), ("members_before", I, True),
    ("members_after", I, True), ("members_joined", I, True), ("members_left", I, True),
    ("trigger_member_id", S, True), ("cause", S, False), ("cause_detail", S, True),
    ("cause_confidence", D, False), ("evidence", EVIDENCE, True), ("incident_id", S, True),
    # Added in 0.3.0: consumer, streams, connect (share groups have no rebalances), from the group's own lines.
    ("group_type", S, True),
    # Added in 0.6.0: the id of the rule book entry that decided the cause (pipelines/gold/rules_data.py).
    ("cause_rule", S, True),
    # Added in 0.6.0: causes the evidence does not rule out, each with the line that would decide it.
    ("cause_alternatives", ArrayType(_schema(("cause", S, True), ("confidence", D, True), ("decided_by", S, True))),
     True),
    # Added in 0.7.0: the estate incident (gold_estate_incidents) the rebalance belongs to, else null.
    ("estate_incident_id", S, True),
)

Layer = Literal["bronze", "silver", "gold"]


@dataclass(frozen=True)
class Table:
    """One Delta table: its name, medallion layer, schema, and the columns whose values identify one row (the MERGE
    key of the tables rebuilt in place, the uniqueness the quality rules check)."""

    name: str
    layer: Layer
    schema: StructType
    keys: tuple[str, ...]

    def __post_init__(self) -> None:
        missing = [k for k in self.keys if k not in self.schema.fieldNames()]
        if not self.keys or missing:
            raise ValueError(f"table {self.name}: key columns {missing or '(none)'} are not columns of its schema; "
                             f"name at least one of {', '.join(self.schema.fieldNames())}")


REGISTRY: dict[str, Table] = {t.name: t for t in (
    Table("bronze_files", "bronze", BRONZE_FILES, ("source_file",)),
    Table("bronze_log_lines", "bronze", BRONZE_LOG_LINES, ("line_id",)),
    Table("silver_events", "silver", SILVER_EVENTS, ("event_id",)),
    Table("silver_gc_pauses", "silver", SILVER_GC_PAUSES, ("pause_id",)),
    Table("silver_quarantine", "silver", SILVER_QUARANTINE, ("line_id",)),
    Table("silver_accounting", "silver", SILVER_ACCOUNTING, ("batch_id", "source_file")),
    Table("gold_rebalances", "gold", GOLD_REBALANCES, ("rebalance_id",)),
    Table("gold_group_states", "gold", GOLD_TABLES["gold_group_states"], ("state_id",)),
    Table("gold_member_sessions", "gold", GOLD_TABLES["gold_member_sessions"], ("session_id",)),
    Table("gold_incidents", "gold", GOLD_TABLES["gold_incidents"], ("incident_id",)),
    Table("gold_config_advice", "gold", GOLD_TABLES["gold_config_advice"], ("group_id", "rule")),
    Table("gold_group_health", "gold", GOLD_TABLES["gold_group_health"], ("group_id",)),
    Table("gold_rebalance_stats_hourly", "gold", GOLD_TABLES["gold_rebalance_stats_hourly"],
          ("hour", "group_id", "cause")),
    Table("gold_partition_churn", "gold", GOLD_TABLES["gold_partition_churn"], ("churn_id",)),
    Table("gold_whatif", "gold", GOLD_TABLES["gold_whatif"], ("whatif_id",)),
    Table("gold_estate_incidents", "gold", GOLD_TABLES["gold_estate_incidents"], ("estate_incident_id",)),
    Table("gold_alerts", "gold", GOLD_TABLES["gold_alerts"], ("alert_id",)),
    Table("gold_alert_deliveries", "gold", GOLD_TABLES["gold_alert_deliveries"], ("alert_id", "sink")),
    Table("gold_quality_results", "gold", GOLD_TABLES["gold_quality_results"], ("run_ts", "table_name", "rule")),
)}

TABLES: dict[str, StructType] = {name: table.schema for name, table in REGISTRY.items()}

# Gold tables derived from the hot ones and refreshed on their own clock (pipelines/flow/derived.py); every other
# gold table of the replay is committed in each reconstruct micro-batch.
DERIVED_TABLES = ("gold_config_advice", "gold_rebalance_stats_hourly", "gold_group_health", "gold_estate_incidents")


def keys_of(name: str) -> tuple[str, ...]:
    """The key columns of a registered table (KeyError naming the known tables otherwise)."""
    if name not in REGISTRY:
        raise KeyError(f"unknown table {name!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[name].keys
