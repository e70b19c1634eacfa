"""The one bronze-to-silver build: raw landing lines and the resolved sources in, every bronze and silver frame of
a batch out. The ingest stream, `rebalance parse`, the batch oracle and the tests all call `build_silver`, so a
source's zone, date and own layout reach the parser the same way everywhere."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.bronze.lines import (
    LineIds,
    candidate_lines,
    file_stats,
    kept_lines,
    split_stats,
    with_source_columns,
    with_split_offsets,
)
from pipelines.bronze.repeats import EarlierIngest
from pipelines.session.caching import pin, unpin
from pipelines.session.recipes import recorded
from pipelines.settings.sources import Sources
from pipelines.silver.outputs import accounting, to_events, to_gc_pauses, to_quarantine
from pipelines.silver.parse import parse_lines
from pipelines.silver.privacy import pseudonymise
from schemas.tables import BRONZE_FILES, BRONZE_LOG_LINES


@dataclass
class SilverBatch:
    """The frames one batch of raw lines becomes, pinned (`pipelines.session.caching.pin`): computed once, and each
    table write plans against the stored rows."""

    files: DataFrame
    bronze: DataFrame
    parsed: DataFrame
    splits: DataFrame

    def tables(self, *, batch_id: int, ingested_at: Column, late_before: Column | None = None) -> dict[str, DataFrame]:
        """The rows of every bronze and silver table, in the order they must be written: `bronze_files` last, so
        that a file counts as ingested only once its lines are in every other table."""
        return {
            "bronze_log_lines": self.bronze,
            "silver_events": to_events(self.parsed),
            "silver_gc_pauses": to_gc_pauses(self.parsed),
            "silver_quarantine": to_quarantine(self.parsed),
            "silver_accounting": accounting(self.parsed, self.files, batch_id=batch_id, ingested_at=ingested_at,
                                            late_before=late_before),
            "bronze_files": self.files.select([f.name for f in BRONZE_FILES.fields]),
        }

    def unpersist(self) -> None:
        """Release the pinned frames."""
        for df in (self.parsed, self.bronze, self.files, self.splits):
            unpin(df)


def parse_records(bronze: DataFrame, sources: Sources) -> DataFrame:
    """Parse bronze-shaped records with each source's zone, fallback date and own layout.

    The parse's columns depend only on the sources and the frame's schema: they are built once per process and
    repeated on every later batch (`pipelines.session.recipes`)."""
    return recorded(bronze, lambda frame: _parsed(frame, sources), key=("parse_records", sources))


def _parsed(bronze: DataFrame, sources: Sources) -> DataFrame:
    zoned = bronze.withColumn("_tz", sources.zone(F.col("instance")))
    day = sources.day(F.col("instance"), file_name=F.col("file_name"), modified=F.col("file_modified_at"),
                      tz=F.col("_tz"))
    parsed = zoned.withColumn("_day", day).transform(
        parse_lines, tz=F.col("_tz"), day=F.col("_day"), user_layouts=sources.user_layouts,
        formatted_time=lambda ts_text: sources.formatted_time(F.col("instance"), ts_text, tz=F.col("_tz")),
    )
    # A candidate line of a folder with its own pattern that the pattern did not read (null: no pattern applies):
    # counted in silver_accounting, so a pattern that stopped matching is reported rather than silently bypassed.
    own = sources.has_own_layout(F.col("instance"))
    missed = own & ~F.col("gc_candidate") & ~F.col("layout").startswith("user_")
    return parsed.withColumn("own_layout_missed", F.when(own, missed))


def build_silver(
    raw: DataFrame, sources: Sources, *, existing_files: DataFrame, batch_id: int, now: Column,
    hash_salt: str | None = None, line_ids: LineIds = "content", earlier: EarlierIngest | None = None,
) -> SilverBatch:
    """Raw lines (`value`, `_metadata`, optionally `torn`) to per-file stats, bronze candidate records and parsed
    records, all computed now and pinned (`pipelines.session.caching.pin`). `existing_files` holds the fingerprints of
    files ingested before (duplicates are counted, not parsed); `hash_salt`, when given, replaces member ids and
    hosts by salted hashes; `line_ids` is the lakehouse's line-id scheme and `earlier` (what the earlier batches
    ingested) continues the repeat counts of its `content` scheme (see `with_line_ids`)."""
    # Each frame is pinned (computed and kept without its plan): the next one, and every table write after them,
    # then plans against stored rows instead of the whole parse.
    # One scan of the files: per-split stats and the flagged lines (few) in one aggregate; plain noise is not kept.
    splits = pin(with_split_offsets(split_stats(with_source_columns(raw))))
    stamp = {"batch_id": F.lit(batch_id).cast("long"), "ingested_at": now}
    files = pin(file_stats(splits, existing_fingerprints=existing_files).withColumns(stamp))
    earlier_contents = earlier.contents_for(files) if earlier is not None else None
    bronze = pin(candidate_lines(kept_lines(splits), splits=splits, files=files, line_ids=line_ids,
                                 earlier_contents=earlier_contents).withColumns(stamp))
    parsed = pin(parse_records(bronze, sources).transform(pseudonymise, salt_value=hash_salt))
    if hash_salt is not None:
        # The raw line repeats the ids: bronze keeps the scrubbed text of the parsed record instead.
        unpin(bronze)
        # A line that held several records (pipelines.silver.glued) keeps them all; only its first carries the
        # line's content hash, which the next batches count repeats of.
        first = F.col("record_part") == 0
        bronze = parsed.select([F.when(first, F.col(f.name)).alias(f.name) if f.name == "content_hash"
                                else F.col(f.name) for f in BRONZE_LOG_LINES.fields])
    return SilverBatch(files=files, bronze=bronze, parsed=parsed, splits=splits)
