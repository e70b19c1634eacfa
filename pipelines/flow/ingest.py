"""Landing to bronze and silver in one micro-batch: the whole of each file is in hand, so positions, duplicate
files and per-file accounting are exact. Every write is idempotent per batch (Delta txnAppId/txnVersion)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.bronze.damaged import damaged_gzips, local_path, with_torn_rows
from pipelines.bronze.envelopes import kafka_raw_lines
from pipelines.bronze.lines import LineIds
from pipelines.bronze.repeats import EarlierIngest
from pipelines.flow.found import Found
from pipelines.session.spark import compiled_code
from pipelines.session.steps import step
from pipelines.session.together import run_together
from pipelines.settings.config import Config
from pipelines.settings.sources import resolve_sources
from pipelines.silver.build import SilverBatch, build_silver
from pipelines.silver.privacy import hash_salt
from pipelines.storage import inputs, lake, writes

WRITER_ID = "ingest"


def late_cutoff(spark: SparkSession, cfg: Config, batch_id: int) -> Column:
    """The time before which an event of this batch is late: the newest event of the earlier batches minus the
    allowed lateness (null before the first event)."""
    row = (
        lake.read_table(spark, cfg, "silver_accounting").filter(F.col("batch_id") < batch_id)
        .agg(F.max(F.unix_micros("last_event_ts"))).first()
    )
    assert row is not None  # an aggregate without grouping has exactly one row
    newest = row[0]
    if newest is None:
        return F.lit(None).cast("timestamp")
    return F.timestamp_micros(F.lit(newest - int(cfg.thresholds.allowed_lateness_s * 1_000_000)))


def landed_mb(uris: list[str]) -> float:
    """The size in MB of the landed files `uris` (file URIs, as the landing stream plans them); a file removed since
    counts nothing."""
    total = 0
    for path in filter(None, map(local_path, uris)):
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return total / 1_000_000


def _appender(df: DataFrame, cfg: Config, name: str, batch_id: int) -> Callable[[], int]:
    """The once-per-batch append of `df` to table `name`, as a task for `run_together`."""
    return lambda: writes.append_once(df, cfg, name, batch_id=batch_id, writer_id=WRITER_ID)


BatchObserver = Callable[[str, dict[str, int]], None]


def _write(spark: SparkSession, cfg: Config, staged: SilverBatch, *, batch_id: int, now: Column,
           on_batch: BatchObserver | None, on_progress: Callable[[str], None] | None, found: Found | None,
           started: float) -> None:
    """Append a staged batch to every bronze and silver table, in the order that matters, and report it with the
    seconds since `started` (with `found`, its unread lines by kind are counted there)."""
    rows = staged.tables(batch_id=batch_id, ingested_at=now, late_before=late_cutoff(spark, cfg, batch_id))
    # The lines and events first, side by side; then silver_accounting, which tells the reconstruct stream
    # that the batch's events are there; then bronze_files, which marks its files as ingested.
    quarantine, accounting = rows["silver_quarantine"], rows["silver_accounting"]
    last = [(name, rows.pop(name)) for name in ("silver_accounting", "bronze_files")]
    counts = run_together(spark, {name: _appender(df, cfg, name, batch_id) for name, df in rows.items()})
    for name, df in last:
        counts[name] = writes.append_once(df, cfg, name, batch_id=batch_id, writer_id=WRITER_ID)
    # Counted from the batch's own (pinned) rows, not read back from the tables.
    late = found.add_ingest(batch_id, quarantine, accounting) if found is not None else None
    if on_batch is not None:
        on_batch("ingest", counts)
    if on_progress is not None:
        read = staged.files.agg(F.sum("lines_read")).first()
        assert read is not None  # an aggregate without grouping has exactly one row
        lines = read[0] or 0
        on_progress(
            f"ingest batch {batch_id}: {counts['bronze_files']} files, {lines} lines, "
            f"{counts['silver_events']} events, {counts['silver_quarantine']} quarantined "
            f"in {time.monotonic() - started:.1f} s"
        )
        if late is None:
            late_row = lake.read_table(spark, cfg, "silver_accounting").filter(F.col("batch_id") == batch_id) \
                .agg(F.sum("late_events")).first()
            assert late_row is not None  # an aggregate without grouping has exactly one row
            late = late_row[0]
        if late:
            on_progress(f"ingest batch {batch_id}: {late} events arrived later than the allowed lateness "
                        f"({cfg.thresholds.allowed_lateness_s:g} s); their groups are rebuilt")


def make_ingest_batch(
    cfg: Config, *, line_ids: LineIds = "content", on_progress: Callable[[str], None] | None = None,
    on_batch: BatchObserver | None = None, found: Found | None = None,
) -> Callable[[DataFrame, int], None]:
    """The foreachBatch function of the ingest stream: raw landing lines (or Kafka records) to bronze and silver
    tables, with line ids of the lakehouse's scheme `line_ids` (`pipelines.state.release.check_release` says which);
    with `found`, the lines each batch could not read are counted there by kind."""

    sources, salt = resolve_sources(cfg), hash_salt(cfg)

    def ingest_batch(batch_df: DataFrame, batch_id: int) -> None:
        with step(batch_df.sparkSession, "ingest: parse"):
            ingest_body(batch_df, batch_id)

    def ingest_body(batch_df: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        spark = batch_df.sparkSession
        clock = spark.sql("SELECT current_timestamp() AS t").first()
        assert clock is not None  # a SELECT without FROM has exactly one row
        now = F.lit(clock["t"])
        files = lake.read_table(spark, cfg, "bronze_files")
        compiled = False  # a Kafka batch's size is not known before it is read: it runs as the session does
        existing = files.filter(F.col("duplicate_of").isNull())
        earlier: EarlierIngest | None = None
        if cfg.source == "kafka":
            # A replayed batch must not see its own earlier attempt as where the partitions stopped.
            read_before = files.filter(F.col("batch_id") < batch_id).select(
                F.col("kafka_topic").alias("topic"), F.col("kafka_partition").alias("partition"),
                F.col("kafka_last_offset").alias("last_offset")).filter(F.col("topic").isNotNull())
            raw = kafka_raw_lines(batch_df, envelope=cfg.kafka.envelope, read_before=read_before)
        else:
            planned = inputs.landing_batch_files(cfg, batch_id) or []
            compiled = landed_mb(planned) >= cfg.spark.compiled_from_mb
            damaged = damaged_gzips(planned)
            if on_progress is not None:
                for d in damaged:
                    on_progress(f"ingest batch {batch_id}: {d.path}: {d.problem}; the torn line is quarantined "
                                "(reason truncated_gzip)")
            raw = with_torn_rows(spark, batch_df, damaged)
        if line_ids == "content":
            # A topic's "files" are cut per batch, and a later file may repeat an earlier one's text: repeats count
            # on from the earlier batches (a replayed batch does not count its own earlier attempt).
            before = F.col("batch_id") < batch_id
            earlier = EarlierIngest(files=files.filter(before),
                                    lines=lake.read_table(spark, cfg, "bronze_log_lines").filter(before))
        with compiled_code(spark, compiled):
            staged = build_silver(raw, sources, existing_files=existing, batch_id=batch_id, now=now, hash_salt=salt,
                                  line_ids=line_ids, earlier=earlier)
            try:
                with step(spark, "ingest: append"):
                    _write(spark, cfg, staged, batch_id=batch_id, now=now, on_batch=on_batch,
                           on_progress=on_progress, found=found, started=started)
            finally:
                staged.unpersist()

    return ingest_batch
