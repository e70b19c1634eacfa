"""Landing to bronze and silver in one micro-batch: the whole of each file is in hand, so positions, duplicate
files and per-file accounting are exact. Every write is idempotent per batch (Delta txnAppId/txnVersion)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines import io
from pipelines.bronze.damaged import damaged_gzips, with_torn_rows
from pipelines.bronze.lines import (
    candidate_lines, file_stats, kept_lines, split_stats, with_split_offsets, with_source_columns,
)
from pipelines.config import Config
from pipelines.silver.outputs import accounting, source_day, source_zone, to_events, to_gc_pauses, to_quarantine
from pipelines.silver.parse import is_candidate, parse_lines
from pipelines.silver.privacy import pseudonymise
from schemas.tables import BRONZE_FILES, BRONZE_LOG_LINES

WRITER_ID = "ingest"


@dataclass
class StagedBatch:
    """The frames one batch of raw lines becomes; persisted so that each table write reuses them."""

    files: DataFrame
    bronze: DataFrame
    parsed: DataFrame
    splits: DataFrame

    def unpersist(self) -> None:
        for df in (self.parsed, self.bronze, self.files, self.splits):
            df.unpersist()


def parse_bronze(bronze: DataFrame, cfg: Config) -> DataFrame:
    """Parse bronze-shaped lines with each source's zone and fallback date."""
    bronze = bronze.withColumn("_tz", source_zone(cfg, F.col("instance")))
    day = source_day(cfg, F.col("instance"), F.col("file_name"), F.col("file_modified_at"), F.col("_tz"))
    return bronze.withColumn("_day", day).transform(parse_lines, tz=F.col("_tz"), day=F.col("_day"))


def stage_batch(raw: DataFrame, cfg: Config, *, existing_files: DataFrame, batch_id: int, now: Column) -> StagedBatch:
    """Raw lines (`value`, `_metadata`) to per-file stats, bronze candidate lines and parsed lines (all persisted)."""
    level = StorageLevel.MEMORY_AND_DISK
    # One scan of the files: per-split stats and the flagged lines (few) in one aggregate; plain noise is not kept.
    splits = with_split_offsets(
        split_stats(with_source_columns(raw, is_candidate=is_candidate(F.col("value"))))
    ).persist(level)
    files = (
        file_stats(splits, existing_fingerprints=existing_files)
        .withColumns({"batch_id": F.lit(batch_id).cast("long"), "ingested_at": now})
        .persist(level)
    )
    bronze = (
        candidate_lines(kept_lines(splits), splits=splits, files=files)
        .withColumns({"batch_id": F.lit(batch_id).cast("long"), "ingested_at": now})
        .persist(level)
    )
    parsed = parse_bronze(bronze, cfg).transform(pseudonymise, cfg).persist(level)
    if cfg.privacy.hash_ids:
        # The raw line repeats the ids: bronze keeps the scrubbed text of the parsed record instead.
        bronze.unpersist()
        bronze = parsed.select([F.col(f.name) for f in BRONZE_LOG_LINES.fields])
    return StagedBatch(files=files, bronze=bronze, parsed=parsed, splits=splits)


def late_cutoff(spark, cfg: Config, batch_id: int) -> Column:
    """The time before which an event of this batch is late: the newest event of the earlier batches minus the
    allowed lateness (null before the first event)."""
    newest = (
        io.read_table(spark, cfg, "silver_accounting").filter(F.col("batch_id") < batch_id)
        .agg(F.max(F.unix_micros("last_event_ts"))).first()[0]
    )
    if newest is None:
        return F.lit(None).cast("timestamp")
    return F.timestamp_micros(F.lit(newest - int(cfg.thresholds.allowed_lateness_s * 1_000_000)))


BatchObserver = Callable[[str, dict[str, int]], None]


def make_ingest_batch(
    cfg: Config, *, on_progress: Callable[[str], None] | None = None, on_batch: BatchObserver | None = None
):
    """The foreachBatch function of the ingest stream: raw landing lines to bronze and silver tables."""

    def ingest_batch(batch_df: DataFrame, batch_id: int) -> None:
        spark = batch_df.sparkSession
        now = F.lit(spark.sql("SELECT current_timestamp() AS t").first()["t"])
        existing = io.read_table(spark, cfg, "bronze_files").filter(F.col("duplicate_of").isNull())
        damaged = damaged_gzips(io.landing_batch_files(cfg, batch_id) or [])
        if on_progress is not None:
            for d in damaged:
                on_progress(f"ingest batch {batch_id}: {d.path}: {d.problem}; the torn line is quarantined "
                            "(reason truncated_gzip)")
        raw = with_torn_rows(spark, batch_df, damaged)
        staged = stage_batch(raw, cfg, existing_files=existing, batch_id=batch_id, now=now)
        try:
            writes = {
                "bronze_log_lines": staged.bronze,
                "silver_events": to_events(staged.parsed),
                "silver_gc_pauses": to_gc_pauses(staged.parsed),
                "silver_quarantine": to_quarantine(staged.parsed),
                "silver_accounting": accounting(staged.parsed, staged.files, batch_id=batch_id, ingested_at=now,
                                                late_before=late_cutoff(spark, cfg, batch_id)),
                # Last: a file counts as ingested only once its lines are in every other table.
                "bronze_files": staged.files.select([f.name for f in BRONZE_FILES.fields]),
            }
            counts = {}
            for name, df in writes.items():
                counts[name] = io.append_once(df, cfg, name, batch_id=batch_id, writer_id=WRITER_ID)
            if on_batch is not None:
                on_batch("ingest", counts)
            if on_progress is not None:
                lines = staged.files.agg(F.sum("lines_read")).first()[0] or 0
                on_progress(
                    f"ingest batch {batch_id}: {counts['bronze_files']} files, {lines} lines, "
                    f"{counts['silver_events']} events, {counts['silver_quarantine']} quarantined"
                )
                late = io.read_table(spark, cfg, "silver_accounting").filter(F.col("batch_id") == batch_id) \
                    .agg(F.sum("late_events")).first()[0]
                if late:
                    on_progress(f"ingest batch {batch_id}: {late} events arrived later than the allowed lateness "
                                f"({cfg.thresholds.allowed_lateness_s:g} s); their groups are rebuilt")
        finally:
            staged.unpersist()

    return ingest_batch
