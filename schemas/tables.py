"""StructTypes of every Delta table. Column order here is the order in the tables."""

from __future__ import annotations

from pyspark.sql.types import ArrayType, BooleanType, MapType, StructType

from schemas.gold import GOLD_TABLES, D, I, L, S, T, _schema


BRONZE_FILES = _schema(
    ("file_fingerprint", S, False), ("source_file", S, False), ("instance", S, True), ("file_name", S, True),
    ("file_modified_at", T, True), ("lines_read", L, False), ("candidate_lines", L, False),
    ("duplicate_of", S, True), ("batch_id", L, False), ("ingested_at", T, False),
)

BRONZE_LOG_LINES = _schema(
    ("line_id", S, False), ("source_file", S, False), ("instance", S, True), ("file_name", S, True),
    ("file_fingerprint", S, False), ("line_no", L, False), ("value", S, True), ("line_length", L, False),
    ("batch_id", L, False), ("ingested_at", T, False),
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
    # Added in 0.3.0: true when the line printed no time and event_ts is that of the nearest timestamped line of
    # its file (java.util.logging's message line, slf4j-simple, a stripped excerpt).
    ("ts_inferred", BooleanType(), True),
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
)

EVIDENCE = ArrayType(_schema(("event_id", S, True), ("explanation", S, True)))

GOLD_REBALANCES = _schema(
    ("rebalance_id", S, False), ("group_id", S, False), ("protocol", S, False), ("coordinator", S, True),
    ("generation_before", I, True), ("generation_after", I, True), ("started_at", T, False),
    ("completed_at", T, True), ("duration_ms", L, True), ("outcome", S, False), ("members_before", I, True),
    ("members_after", I, True), ("members_joined", I, True), ("members_left", I, True),
    ("trigger_member_id", S, True), ("cause", S, False), ("cause_detail", S, True),
    ("cause_confidence", D, False), ("evidence", EVIDENCE, True), ("incident_id", S, True),
)

TABLES: dict[str, StructType] = {
    "bronze_files": BRONZE_FILES,
    "bronze_log_lines": BRONZE_LOG_LINES,
    "silver_events": SILVER_EVENTS,
    "silver_gc_pauses": SILVER_GC_PAUSES,
    "silver_quarantine": SILVER_QUARANTINE,
    "silver_accounting": SILVER_ACCOUNTING,
    "gold_rebalances": GOLD_REBALANCES,
    **GOLD_TABLES,
}
