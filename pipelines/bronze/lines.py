"""Pure transforms from raw landing lines to bronze rows.

A line's position comes from the scan itself: within one file split Spark reads lines in order, so the row's
`monotonically_increasing_id` minus the split's smallest id is its index in the split, and earlier splits of the
same file contribute their line counts. This needs one small aggregate per split, not a sort of the lines.

The files are scanned once: one aggregate per split yields its stats (line count, content hash) and, as a list,
the few lines a record can hold; plain noise lines are counted and hashed there and never stored.

Multi-line records (a stack trace after a log line, the consumer's `Updating assignment with` + TAB lines, a JDK 8
GC record's detail lines, a record a paste hard-wrapped: pipelines/bronze/wraps.py) are joined here, where every
line of a file is in the batch: a line shaped like a continuation is kept with the candidate line it follows, and
the record becomes one bronze row at its first line. Only candidate, possible head and continuation-shaped lines are
sorted, one file split at a time (a possible wrap tail only where the line before it may continue).
"""

from __future__ import annotations

import operator
from functools import reduce
from typing import Literal

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.bronze.encodings import NUL, utf16_as_text
from pipelines.bronze.literals import contains_any
from pipelines.bronze.prefilter import is_candidate
from pipelines.bronze.wraps import (
    ENDS_OPEN,
    MAY_CONTINUE_WRAP,
    WRAP,
    kept_tails,
    leaves_open,
    unwrapped,
    with_wrap_flag,
)

# How a line's id is made: from what it says and where it was written, or (lakehouses begun before that scheme)
# from its file's fingerprint and its line number. See `with_line_ids`.
LineIds = Literal["content", "position"]

MAX_LINE_CHARS = 65_536  # longer lines are kept truncated, with their true length, and quarantined if relevant
MAX_RECORD_LINES = 500  # continuation lines past this many stay unattached (a runaway record must not grow unbounded)

# What a line that continues the record before it starts with (after an optional CRI or docker-compose prefix):
# stack frames, `Caused by:`, an exception's first line, TAB-indented fields of a multi-line Kafka message, the
# lines of Kafka 2.4-2.5's `Updating assignment with` record, and JDK 8 GC detail lines.
CONTINUATION = (
    r"^(?:\d{4}-\d\d-\d\dT\S+ (?:stdout|stderr) [FP] |[\w.-]+\s+\| )?"
    r"(?:\s+at |\s+\.\.\. \d+ (?:more|common frames omitted)|\s*Caused by: |\s*Suppressed: |\t|\s+\["
    r"|\s+\d+[.,]\d+: \[|, \d+[.,]\d+ secs\]|Desired survivor size |- age +\d+:"
    r"|(?:now assigned|compare with previously owned|newly added|revoked) partitions: "
    r"|(?:SEVERE|WARNING|INFO|CONFIG|FINE|FINER|FINEST): "
    r"|(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)(?::|\s*$)"
    # .NET's Microsoft.Extensions.Logging console: the message six spaces in, under its `info: Category[0]` line.
    r"|      \S)"
)
# The first line of a Microsoft.Extensions.Logging console record (`dbug: Category[event id]`, message below).
_MEL_LEVELS = ("trce: ", "dbug: ", "info: ", "warn: ", "fail: ", "crit: ")
# What a possible record head holds anywhere in it (see `may_head` below).
_HEAD_LITERALS = ("WARN", "ERROR", " PM ", " AM ")


def with_source_columns(raw: DataFrame) -> DataFrame:
    """Raw text lines (`value`, `_metadata`, optionally `torn`, `torn_reason`, `scan_id` and the Kafka columns) to one
    narrow row per line: provenance (`source_file`, `file_name`, `file_modified_at`, `block_start`,
    `kafka_topic`, `kafka_partition`, `kafka_offset`), the scan order `scan_id` (given by a Kafka batch),
    `line_length`, `line_hash`, the flags `candidate` (the prefilter's verdict; a torn line is always one),
    `continuation`, `may_head`, `may_continue_wrap` and `torn`, and `value` only where a flag is set (null for plain
    noise).

    The stats of every line and the text of the few lines a record can hold both come from this one frame, which
    `split_stats` reduces in the same scan."""
    path = F.col("_metadata.file_path")

    def given(name: str, kind: str) -> Column:
        return F.col(name) if name in raw.columns else F.lit(None).cast(kind)

    # A UTF-16 file (PowerShell's `>` writes UTF-16LE with a BOM and CRLF ends) read as UTF-8: the line reader ends a
    # line at the CR, then again at the LF after its NUL, so every line is followed by a row holding that lone NUL.
    # Those rows are no lines of the file (its line numbers count without them); the NULs inside its lines go below.
    raw = raw.where(F.coalesce(F.col("value") != NUL, F.lit(True)))
    return raw.select(
        path.alias("source_file"),
        F.col("_metadata.file_name").alias("file_name"),
        F.col("_metadata.file_modification_time").alias("file_modified_at"),
        F.col("_metadata.file_block_start").alias("block_start"),
        F.col("scan_id") if "scan_id" in raw.columns else F.monotonically_increasing_id().alias("scan_id"),
        utf16_as_text(F.col("value")).alias("value"),
        (F.col("torn") if "torn" in raw.columns else F.lit(False)).alias("torn"),
        given("torn_reason", "string").alias("torn_reason"),
        given("kafka_topic", "string").alias("kafka_topic"),
        given("kafka_partition", "int").alias("kafka_partition"),
        given("kafka_offset", "long").alias("kafka_offset"),
    ).select(
        "*",
        F.coalesce(F.length("value"), F.lit(0)).cast("long").alias("line_length"),
        F.xxhash64("value").alias("line_hash"),
        (F.coalesce(is_candidate(F.col("value")), F.lit(False)) | F.col("torn")).alias("candidate"),
        F.coalesce(F.col("value").rlike(CONTINUATION), F.lit(False)).alias("continuation"),
        # A WARN or ERROR line may carry a stack trace, a line ending with ':' a list (`ConsumerConfig values:`), and
        # java.util.logging's time line (`Jul 17, 2026 1:50:29 PM <logger>`) and .NET's `info: Category[0]` line
        # their message; a line that ends open may be hard-wrapped (pipelines/bronze/wraps.py): kept as a possible
        # record head even when it is no candidate.
        (contains_any(F.col("value"), _HEAD_LITERALS) | F.col("value").rlike(ENDS_OPEN)
         | reduce(operator.or_, [F.col("value").startswith(level) for level in _MEL_LEVELS]))
        .alias("may_head"),
        F.coalesce(F.col("value").rlike(MAY_CONTINUE_WRAP), F.lit(False)).alias("may_continue_wrap"),
    ).withColumn(
        "leaves_open",
        (F.col("candidate") | F.col("may_head") | F.col("may_continue_wrap")) & leaves_open(F.col("value")),
    ).withColumn(
        "value", F.when(F.col("candidate") | F.col("continuation") | F.col("may_head") | F.col("may_continue_wrap"),
                        F.col("value"))
    )


SPLIT_KEYS = ("source_file", "instance", "file_name", "file_modified_at", "block_start", "kafka_topic",
              "kafka_partition")
_KEPT = ("scan_id", "value", "line_length", "candidate", "continuation", "may_head", "may_continue_wrap",
         "leaves_open", "torn", "torn_reason", "kafka_offset")


def split_stats(lines: DataFrame) -> DataFrame:
    """One row per file split: its first scan id, line count, candidate count, content hash parts and `kept`, the
    lines that carry a flag (candidate, continuation, possible head, possible wrap tail) with their scan id, text and
    flags."""
    flagged = F.col("candidate") | F.col("continuation") | F.col("may_head") | F.col("may_continue_wrap")
    splits = lines.groupBy(*[key for key in SPLIT_KEYS if key != "instance"]).agg(
        F.min("scan_id").alias("first_scan_id"),
        F.count(F.lit(1)).alias("split_lines"),
        F.sum(F.col("candidate").cast("long")).alias("split_candidates"),
        F.bit_xor("line_hash").alias("split_hash"),
        F.sum("line_length").alias("split_chars"),
        F.min("kafka_offset").alias("split_first_offset"),
        F.max("kafka_offset").alias("split_last_offset"),
        F.collect_list(F.when(flagged, F.struct(*_KEPT))).alias("kept"),
    )
    # The instance is the folder of the file (`<landing>/<instance>/<file>`, or a Kafka record's
    # `kafka:/<topic>/<partition>/<instance>/<file>@<offset>`): read from the path once per split, not per line.
    return splits.withColumn("instance", F.element_at(F.split(F.col("source_file"), "/"), -2))


def kept_lines(splits: DataFrame) -> DataFrame:
    """The flagged lines that `split_stats` kept, one row each, with their split's provenance columns (possible wrap
    tails only where they may continue the line before them: `kept_tails`)."""
    # Sorted once into a column of its own: kept_tails reads each element's neighbour in it.
    kept = splits.select(*SPLIT_KEYS, F.array_sort("kept").alias("kept"))
    kept = kept.select(*SPLIT_KEYS, kept_tails(F.col("kept")).alias("kept"))
    # Whether the split kept any possible wrap tail: `join_records` weighs wraps only in splits that did. Computed in
    # a projection of its own, before the explode: beside the generator, it would be evaluated above it, so every
    # exploded row would carry (and copy) the split's whole array, memory quadratic in the split's kept lines.
    has_tails = F.exists("kept", lambda x: x["may_continue_wrap"]).alias("has_wrap_tails")
    kept = kept.select(*SPLIT_KEYS, has_tails, "kept")
    return kept.select(*SPLIT_KEYS, "has_wrap_tails", F.explode("kept").alias("_k")).select(
        *SPLIT_KEYS, "has_wrap_tails", "_k.*")


def with_split_offsets(splits: DataFrame) -> DataFrame:
    """Add `lines_before`: how many lines of the same file precede each split."""
    before = Window.partitionBy("source_file").orderBy("block_start").rowsBetween(Window.unboundedPreceding, -1)
    return splits.withColumn("lines_before", F.coalesce(F.sum("split_lines").over(before), F.lit(0)))


def file_stats(splits: DataFrame, *, existing_fingerprints: DataFrame) -> DataFrame:
    """One row per file: totals, a content fingerprint, and `duplicate_of` when the same content was landed before
    (under another name, in this batch or an earlier one)."""
    files = splits.groupBy("source_file", "instance", "file_name", "file_modified_at", "kafka_topic",
                           "kafka_partition").agg(
        F.sum("split_lines").alias("lines_read"),
        F.sum("split_candidates").alias("candidate_lines"),
        F.bit_xor("split_hash").alias("content_hash"),
        F.sum("split_chars").alias("content_chars"),
        F.min("split_first_offset").alias("kafka_first_offset"),
        F.max("split_last_offset").alias("kafka_last_offset"),
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


def join_records(lines: DataFrame) -> DataFrame:
    """Candidate, continuation and possible head lines (with `line_no`) to records: a head line with the
    continuation lines that directly follow it (`value` joined with newlines, a hard-wrapped line with WRAP;
    `record_lines`, total `line_length`), kept when one of its lines is a candidate, or when its hard-wrapped lines
    read as one are. A continuation line that follows no head stays alone if it is a candidate itself and is dropped
    otherwise (it is noise, like every line that no record holds)."""
    for flag, default in (("may_continue_wrap", False), ("leaves_open", False), ("has_wrap_tails", True)):
        if flag not in lines.columns:
            lines = lines.withColumn(flag, F.lit(default))
    split = Window.partitionBy("source_file", "block_start").orderBy("line_no")
    upto = split.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    lines = with_wrap_flag(lines)
    head, line_no = ~F.col("continuation") & ~F.col("_wrap") & ~F.col("_listed"), F.col("line_no")
    lines = lines.withColumn("_prev", F.lag("line_no").over(split))
    # The latest line that starts a chain: a head (odd code) or a continuation after a gap (even code).
    chain_start = F.when(head, line_no * 2 + 1).when(F.coalesce(line_no - F.col("_prev") != 1, F.lit(True)),
                                                      line_no * 2)
    lines = lines.withColumn("_start", F.max(chain_start).over(upto))
    start = F.floor(F.col("_start") / 2).cast("long")
    attached = ~head & (F.col("_start") % 2 == 1) & (line_no - start <= MAX_RECORD_LINES)
    records = lines.filter(head | attached | F.col("candidate")).withColumn(
        "_record", F.when(attached, start).otherwise(line_no)
    )
    separator = F.when(F.col("_wrap") & attached, F.lit(WRAP)).otherwise(F.lit("\n"))
    parts = F.array_sort(F.collect_list(F.struct("line_no", separator.alias("s"),
                                                 F.substring("value", 1, MAX_LINE_CHARS).alias("v"))))
    grouped = records.groupBy("source_file", "block_start", F.col("_record").alias("line_no")).agg(
        F.first("instance").alias("instance"),
        F.first("file_name").alias("file_name"),
        F.first("file_modified_at").alias("file_modified_at"),
        F.first("file_fingerprint").alias("file_fingerprint"),
        F.concat_ws("", F.transform(parts, lambda p, i: F.when(i == 0, p["v"]).otherwise(F.concat(p["s"], p["v"]))))
        .alias("value"),
        # Each separator counts: one character for a newline, two for a wrap (WRAP).
        (F.sum("line_length") + F.count(F.lit(1)) - 1 + F.sum((F.col("_wrap") & attached).cast("long")))
        .alias("line_length"),
        F.count(F.lit(1)).alias("record_lines"),
        F.max("candidate").alias("_candidate"),
        F.max(F.col("_wrap") & attached).alias("_wrapped"),
        F.max("torn").alias("torn"),
        F.max("torn_reason").alias("torn_reason"),
        F.first("kafka_topic").alias("kafka_topic"),
        F.first("kafka_partition").alias("kafka_partition"),
        F.min("kafka_offset").alias("kafka_offset"),
    )
    # A wording the wrap cut in two is in neither line alone.
    kept = F.col("_candidate") | (F.col("_wrapped") & F.coalesce(is_candidate(unwrapped(F.col("value"))), F.lit(False)))
    return grouped.filter(kept).drop("_candidate", "_wrapped")


def short_hash(*parts: Column) -> Column:
    """The project's 24-character id of `parts` (SHA-256 of the parts joined by `|`)."""
    return F.substring(F.sha2(F.concat_ws("|", *parts), 256), 1, 24)


def with_line_ids(records: DataFrame, *, scheme: LineIds = "content",
                  earlier_contents: DataFrame | None = None) -> DataFrame:
    """Add `content_hash` (of the instance, file name and record text) and `line_id`.

    Under the `content` scheme the id is the content hash for the first record of a file with that text, and a hash
    of it and `n` for its n-th repeat (in line order). It depends on what the line says and where it was written,
    not on how it was read, so the same estate read from landed files or from a Kafka topic (whose "files" are cut
    per micro-batch) gives the same ids, and with them the same event, rebalance and incident ids.
    `earlier_contents` (`content_hash` of records ingested by earlier batches) continues the repeat count across
    batches, so a text repeated in a later file of the same instance and name (a topic's next batch, a GC log
    restarted at the same uptime) still gets an id of its own.

    Under the `position` scheme (lakehouses begun by releases before the content scheme, see
    `pipelines.state.release`) the id is a hash of the file's fingerprint and the line number, as those releases made
    it, so that continuing such a lakehouse gives the ids a rebuild would give."""
    records = records.withColumn("content_hash", short_hash(F.coalesce("instance", F.lit("")),
                                                             F.coalesce("file_name", F.lit("")), F.col("value")))
    if scheme == "position":
        return records.withColumn("line_id", short_hash(F.col("file_fingerprint"), F.col("line_no")))
    same_text = Window.partitionBy("instance", "file_name", "content_hash").orderBy("source_file", "line_no")
    repeat = F.row_number().over(same_text) - 1
    if earlier_contents is not None:
        here = records.select("content_hash").distinct()
        seen = (earlier_contents.join(F.broadcast(here), "content_hash")
                .groupBy("content_hash").agg(F.count(F.lit(1)).alias("_seen")))
        records = records.join(seen, "content_hash", "left")
        repeat = repeat + F.coalesce(F.col("_seen"), F.lit(0))
    records = records.withColumn("_repeat", repeat)
    line_id = F.when(F.col("_repeat") == 0, F.col("content_hash")).otherwise(
        short_hash(F.col("content_hash"), F.col("_repeat").cast("string")))
    return records.withColumn("line_id", line_id).drop("_repeat", "_seen")


def candidate_lines(lines: DataFrame, *, splits: DataFrame, files: DataFrame, line_ids: LineIds = "content",
                    earlier_contents: DataFrame | None = None) -> DataFrame:
    """The flagged lines of `kept_lines` to candidate records of non-duplicate files with `line_no` (1-based, of the
    record's first line), `record_lines`, `file_fingerprint`, `value` truncated to MAX_LINE_CHARS, and the stable
    `content_hash` and `line_id` of `with_line_ids`."""
    offsets = splits.select("source_file", "block_start", "first_scan_id", "lines_before")
    keep = files.filter(F.col("duplicate_of").isNull()).select("source_file", "file_fingerprint")
    line_no = F.col("scan_id") - F.col("first_scan_id") + F.col("lines_before") + 1
    return (
        lines.join(F.broadcast(offsets), ["source_file", "block_start"])
        .join(F.broadcast(keep), "source_file")
        .withColumn("line_no", line_no)
        .transform(join_records)
        .withColumn("value", F.substring("value", 1, MAX_LINE_CHARS))
        .transform(with_line_ids, scheme=line_ids, earlier_contents=earlier_contents)
    )
