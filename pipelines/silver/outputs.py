"""Shape parsed lines into the silver tables and the per-file accounting."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# The settings of a `ConsumerConfig values:` record (event client_config) kept in silver_events.settings: those that
# decide when a member leaves or is removed and how the group rebalances. Ids have their own columns (group_id,
# client_id, group_instance_id); addresses, paths and credentials are left out.
CONFIG_SETTINGS = (
    "auto.commit.interval.ms", "auto.offset.reset", "default.api.timeout.ms", "enable.auto.commit",
    "fetch.max.wait.ms", "group.protocol", "group.remote.assignor", "heartbeat.interval.ms",
    "internal.leave.group.on.close", "max.poll.interval.ms", "max.poll.records", "metadata.max.age.ms",
    "partition.assignment.strategy", "request.timeout.ms", "session.timeout.ms",
)


def config_settings(text: Column) -> Column:
    """The CONFIG_SETTINGS a config record prints (its TAB-indented `key = value` lines), as a map."""
    pairs = [(k, F.regexp_extract(text, "(?m)^\t" + k.replace(".", "\\.") + " = (.*?)\\s*$", 1))
             for k in CONFIG_SETTINGS]
    settings = F.create_map(*[part for k, v in pairs for part in (F.lit(k), v)])
    return F.map_filter(settings, lambda _k, v: v != "")


def to_events(parsed: DataFrame, *, untimed: bool = False) -> DataFrame:
    """Rows for silver_events: one typed event per record that matched a template and has a time (with `untimed`,
    also those whose time is unknown, as `rebalance parse` shows them; the tables keep them in quarantine)."""
    config = F.col("event_type") == "client_config"
    # The text of the whole record: a joined multi-line record, or one JSON message with embedded line breaks.
    record = F.concat_ws("\n", "body", "continued")
    # A consumer without a group (assign() only, Kafka Streams' restore consumer) prints `group.id = null`.
    group_id = F.when(~config | (F.col("group_id") != "null"), F.col("group_id"))
    keep = F.col("disposition") == "event"
    if untimed:
        keep = keep | (F.col("template_id").isNotNull() & F.col("event_ts").isNull()
                       & (F.col("event_type") != "noise"))
    return parsed.filter(keep).select(
        F.col("line_id").alias("event_id"), "event_ts", "event_type", "template_id", "source_kind",
        group_id.alias("group_id"),
        "member_id", "generation", "state", "reason", "client_reason", "member_count", "static_count", "broker_id",
        "offsets_partition", "client_id", "group_instance_id", "old_member_id", "client_host", "protocol",
        "coordinator", "error", "epoch", "partitions", "topics", "members", "group_epoch", "member_epoch",
        "previous_member_epoch", "target_epoch", "previous_state", "group_protocol", "revoked_partitions", "level",
        "logger", "thread", F.col("body").alias("message"), "instance", "source_file", "line_no", "record_lines",
        "batch_id", "ingested_at", F.when(config, config_settings(record)).alias("settings"), "ts_inferred",
        "ts_line_order",
    )


def to_gc_pauses(parsed: DataFrame) -> DataFrame:
    """Rows for silver_gc_pauses: each stop-the-world pause with its start (end minus duration)."""
    start = F.timestamp_micros(F.unix_micros("gc_end_ts") - (F.col("gc_duration_ms") * 1000).cast("long"))
    return parsed.filter(F.col("disposition") == "gc_pause").select(
        F.col("line_id").alias("pause_id"), "instance", start.alias("started_at"),
        F.col("gc_end_ts").alias("ended_at"), F.col("gc_duration_ms").alias("duration_ms"), "collector",
        "pause_kind", F.col("gc_cause").alias("cause"), F.col("gc_uptime_s").alias("uptime_s"), "source_file",
        "line_no", "batch_id",
    )


def to_quarantine(parsed: DataFrame) -> DataFrame:
    """Rows for silver_quarantine: relevant-looking lines that did not become an event, with the reason."""
    return parsed.filter(F.col("disposition") == "quarantine").select(
        "line_id", "source_file", "instance", "line_no", F.col("quarantine_reason").alias("reason"),
        F.col("value").alias("raw"), "line_length", "batch_id", "ingested_at",
    )


def accounting(
    parsed: DataFrame, files: DataFrame, *, batch_id: int, ingested_at: Column, late_before: Column | None = None
) -> DataFrame:
    """Per file of the batch: lines read = noise + events + GC pauses + quarantined + duplicates, exactly.

    A parsed row is one record: its first line counts as event, GC pause, quarantined or noise, and the lines that
    continue it (a stack trace, GC detail lines) count as noise, like every line that no record holds; a line that
    held several records counts once, as the best of them. Events before
    `late_before` (a timestamp; null or None: none) are counted as late."""
    is_event = F.col("disposition") == "event"
    cutoff = late_before if late_before is not None else F.lit(None).cast("timestamp")
    # A line that held several records (pipelines.silver.glued) counts once, as its best record.
    line = F.col("record_part") == 0

    def lines_that(disposition: str) -> Column:
        return F.sum((line & (F.col("line_disposition") == disposition)).cast("long"))

    counts = parsed.groupBy("source_file").agg(
        lines_that("event").alias("event_lines"),
        lines_that("gc_pause").alias("gc_pause_lines"),
        lines_that("quarantine").alias("quarantined_lines"),
        F.max(F.when(is_event, F.col("event_ts"))).alias("last_event_ts"),
        F.sum((is_event & F.coalesce(F.col("event_ts") < cutoff, F.lit(False))).cast("long")).alias("late_events"),
        F.sum((line & F.col("own_layout_missed")).cast("long")).alias("own_layout_missed_lines"),
        F.min(F.when(F.col("own_layout_missed"), F.substring("value", 1, 300))).alias("own_layout_miss_sample"),
    )
    joined = files.join(counts, "source_file", "left").na.fill(
        0, ["event_lines", "gc_pause_lines", "quarantined_lines", "late_events"]
    )
    duplicate = F.col("duplicate_of").isNotNull()
    relevant = F.col("event_lines") + F.col("quarantined_lines")
    return joined.select(
        F.lit(batch_id).cast("long").alias("batch_id"), "source_file", "instance", "lines_read",
        F.when(duplicate, 0)
        .otherwise(F.col("lines_read") - F.col("event_lines") - F.col("gc_pause_lines") - F.col("quarantined_lines"))
        .cast("long").alias("noise_lines"),
        "event_lines", "gc_pause_lines", "quarantined_lines",
        F.when(duplicate, F.col("lines_read")).otherwise(0).cast("long").alias("duplicate_lines"),
        F.when(relevant > 0, F.col("event_lines") / relevant).alias("coverage"),
        ingested_at.alias("ingested_at"),
        F.when(~duplicate, F.col("last_event_ts")).alias("last_event_ts"),
        F.when(duplicate, 0).otherwise(F.col("late_events")).cast("long").alias("late_events"),
        F.when(~duplicate, F.col("own_layout_missed_lines")).alias("own_layout_missed_lines"),
        F.when(~duplicate, F.col("own_layout_miss_sample")).alias("own_layout_miss_sample"),
    )
