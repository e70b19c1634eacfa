"""Pure transforms from raw landing lines to bronze rows.

A line's position comes from the scan itself: within one file split Spark reads lines in order, so the row's
`monotonically_increasing_id` minus the split's smallest id is its index in the split, and earlier splits of the
same file contribute their line counts. This needs one small aggregate per split, not a sort of the lines.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

MAX_LINE_CHARS = 65_536  # longer lines are kept truncated, with their true length, and quarantined if relevant


def with_source_columns(raw: DataFrame, *, is_candidate: Column) -> DataFrame:
    """Add provenance (`source_file`, `instance`, `file_name`, `file_modified_at`, `block_start`), the scan order
    `scan_id`, `line_length` and `candidate` to raw text lines (`value`, `_metadata`)."""
    path = F.col("_metadata.file_path")
    parts = F.split(path, "/")
    return raw.select(
        path.alias("source_file"),
        F.element_at(parts, -2).alias("instance"),
        F.col("_metadata.file_name").alias("file_name"),
        F.col("_metadata.file_modification_time").alias("file_modified_at"),
        F.col("_metadata.file_block_start").alias("block_start"),
        F.monotonically_increasing_id().alias("scan_id"),
        F.col("value"),
    ).select(
        "*",
        F.coalesce(F.length("value"), F.lit(0)).cast("long").alias("line_length"),
        F.coalesce(is_candidate, F.lit(False)).alias("candidate"),
    )


def split_stats(lines: DataFrame) -> DataFrame:
    """One row per file split: its first scan id, line count, candidate count and content hash parts."""
    return lines.groupBy("source_file", "instance", "file_name", "file_modified_at", "block_start").agg(
        F.min("scan_id").alias("first_scan_id"),
        F.count(F.lit(1)).alias("split_lines"),
        F.sum(F.col("candidate").cast("long")).alias("split_candidates"),
        F.bit_xor(F.xxhash64("value")).alias("split_hash"),
        F.sum("line_length").alias("split_chars"),
    )


def with_split_offsets(splits: DataFrame) -> DataFrame:
    """Add `lines_before`: how many lines of the same file precede each split."""
    before = Window.partitionBy("source_file").orderBy("block_start").rowsBetween(Window.unboundedPreceding, -1)
    return splits.withColumn("lines_before", F.coalesce(F.sum("split_lines").over(before), F.lit(0)))


def file_stats(splits: DataFrame, *, existing_fingerprints: DataFrame) -> DataFrame:
    """One row per file: totals, a content fingerprint, and `duplicate_of` when the same content was landed before
    (under another name, in this batch or an earlier one)."""
    files = splits.groupBy("source_file", "instance", "file_name", "file_modified_at").agg(
        F.sum("split_lines").alias("lines_read"),
        F.sum("split_candidates").alias("candidate_lines"),
        F.bit_xor("split_hash").alias("content_hash"),
        F.sum("split_chars").alias("content_chars"),
    )
    files = files.withColumn(
        "file_fingerprint",
        F.sha2(F.concat_ws("|", F.coalesce("instance", F.lit("")), "lines_read", "content_hash", "content_chars"), 256),
    )
    first_in_batch = Window.partitionBy("file_fingerprint").orderBy("source_file")
    files = files.withColumn("_first", F.first("source_file").over(first_in_batch))
    earlier = existing_fingerprints.select(
        F.col("file_fingerprint").alias("_fp"), F.col("source_file").alias("_earlier")
    ).dropDuplicates(["_fp"])
    files = files.join(F.broadcast(earlier), files.file_fingerprint == earlier._fp, "left")
    duplicate_of = F.coalesce(F.col("_earlier"), F.when(F.col("_first") != F.col("source_file"), F.col("_first")))
    return files.withColumn("duplicate_of", duplicate_of).drop("_first", "_fp", "_earlier", "content_hash",
                                                                 "content_chars")


def candidate_lines(lines: DataFrame, *, splits: DataFrame, files: DataFrame) -> DataFrame:
    """Candidate lines of non-duplicate files with `line_no` (1-based), `file_fingerprint`, a stable `line_id`,
    and `value` truncated to MAX_LINE_CHARS."""
    offsets = splits.select("source_file", "block_start", "first_scan_id", "lines_before")
    keep = files.filter(F.col("duplicate_of").isNull()).select("source_file", "file_fingerprint")
    line_no = F.col("scan_id") - F.col("first_scan_id") + F.col("lines_before") + 1
    return (
        lines.filter("candidate")
        .join(F.broadcast(offsets), ["source_file", "block_start"])
        .join(F.broadcast(keep), "source_file")
        .withColumn("line_no", line_no)
        .withColumn("line_id", F.substring(F.sha2(F.concat_ws("|", "file_fingerprint", "line_no"), 256), 1, 24))
        .withColumn("value", F.substring("value", 1, MAX_LINE_CHARS))
    )
