"""Parse candidate records into typed events: envelope, layout, Kafka prefix, template, typed fields.

Everything here is Spark SQL expressions built from data (layouts.py, wordings/*.yml, gc.py): no Python UDF.
A record is one line or, joined in bronze, a line and the lines that continue it (`value` holds them with `\\n`; the
lines of a hard-wrapped record with pipelines.bronze.wraps.WRAP, read here as one line).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from pipelines.bronze.literals import contains_any
from pipelines.bronze.wraps import unwrapped
from pipelines.jvm.matcher import template_match
from pipelines.settings.sources import UserLayout
from pipelines.silver.fields import typed_fields
from pipelines.silver.gc import with_gc_pause
from pipelines.silver.glued import line_disposition, split_glued
from pipelines.silver.layouts import strip_envelope, with_layout
from pipelines.silver.packing import at, chosen, literal_array, literal_map, pack_all
from pipelines.silver.suffixes import MESSAGE_SUFFIX
from pipelines.silver.templates import SEARCH_MARK, Alternation, CompiledTemplate, build_alternation, load_templates
from pipelines.silver.timestamps import event_time, find_level, find_time

# The Kafka prefixes of a message: broker coordinators (classic and new) and the Java client's LogContext
# (consumers; Kafka Connect workers and Confluent Schema Registry's leader election use the same group code, each
# under its own LogContext: SchemaRegistryCoordinator's is `[Schema registry clientId=.., groupId=..] `), and
# ruby-kafka's tag of its consumer's group.
KAFKA_PREFIX = (
    r"^(?:\[GroupCoordinator (?:id=)?(\d+)(?: topic=\S+ partition=(\d+))?\]:? "
    r"|\[GroupMetadataManager brokerId=(\d+)\] "
    r"|\[Group Metadata Manager on Broker (\d+)\]: "
    # Up to three brackets a layout prints between its own fields and the prefix: Kafka Connect's connector context
    # (`[my-sink|task-0] `), an MDC (`[] `, `[traceId=...] `), a thread the pattern puts after the level.
    r"|(?:\[[^\]\n]*\] ?){0,3}?"
    # Text extraction (a PDF, an OCR'd screenshot) may lose the blanks and the case inside it: `[ConsumerClientId=`.
    # A paste that elides the group (`[Consumer clientId=xxx] `) keeps the rest of the prefix.
    r"\[(?:Consumer|ShareConsumer|Worker|Schema registry) ?(?:instanceId=([^,\]]*), ?)?[cC]lientId=([^,\]]*)"
    r"(?:, ?groupId=([^\]]*))?\] ?"
    # ruby-kafka 0.7.6+ tags a consumer's lines with its group and assignment: `[[<group>] {<topic>: 0, 1}:] `.
    r"|\[\[([^\]\n]+)\] \{[^}\n]*\}:\] "
    # The same brackets before a Kafka Streams prefix, which its templates spell out (`stream-thread [<thread>] `).
    r"|(?:\[[^\]\n]*\] ?){1,3}(?=stream-(?:thread|client) \[))?"
    r"([\s\S]*)$"
)
# A line no template knows is quarantined (not dropped as noise) when it looks like it is about groups.
RELEVANT_LOGGER = (
    r"(?i)(coordinator\.group|groupcoordinator|consumercoordinator|abstractcoordinator|workercoordinator"
    r"|coordinatorrequestmanager|heartbeatrequestmanager|groupmetadata|membership|rebalancelistener"
    r"|schemaregistrycoordinator)"
)
RELEVANT_TEXT = (
    r"(?i)(groupcoordinator|groupmetadatamanager|rebalanc|\bgeneration\b|\bgroup\b.*\bmember|\bmember\b.*\bgroup"
    r"|heartbeat|leavegroup|joingroup|\[GroupId)"
)
_JUL_RECORD = r"^([^\n]* [AP]M [^\n]*)\n((?:SEVERE|WARNING|INFO|CONFIG|FINE|FINER|FINEST): )"
# .NET's Microsoft.Extensions.Logging console format: `info: Category[event id]`, the message indented below.
_MEL_RECORD = r"^((?:trce|dbug|info|warn|fail|crit): [^\n]*\[\d+\])\n\s+"
# The Java client's heartbeat thread is named after its group (AbstractCoordinator's HeartbeatThread:
# `kafka-coordinator-heartbeat-thread | <group>`), so a layout that prints the thread names the group of a line whose
# message and prefix do not.
_HEARTBEAT_THREAD_GROUP = r"kafka-coordinator-heartbeat-thread \| ([^\]\s,\"']+)"
# The logger that log4j's `(%c)` appends to the last line of a multi-line message.
_TRAILING_LOGGER = r"\s\(([\w.$-]+)\)\s*$"


def match_templates(text: Column, candidate: Column,
                    alternation: Alternation) -> tuple[Column, Callable[[Column], Column]]:
    """The packed match of the first template that matches `text` (the alternation's `searching` semantics), null
    where none matches or `candidate` is false; and how to read the 1-based number of that template from it.

    Where the session runs the project's JVM matcher, only the templates whose literal `text` holds are tried, one
    by one; elsewhere (Spark Connect, no jar) the whole alternation runs as one regex, on the texts that hold some
    template's literal (a match holds its template's literal). Both give the same array: the choice slot, then one
    slot per field of `alternation.fields`."""
    one_by_one = template_match(text, alternation.literals, alternation.branch_patterns,
                                alternation.branch_slot_groups, SEARCH_MARK)
    if one_by_one is not None:
        return F.when(candidate, one_by_one), lambda parts: F.get(parts, 0).cast("int")
    packed = pack_all(text, alternation.searching, alternation.slots, choice=alternation.wrap_groups)
    count = len(alternation.template_ids)
    return F.when(candidate & contains_any(text, alternation.literals), packed), lambda parts: chosen(parts, count)


def _lookup(template_id: Column, templates: tuple[CompiledTemplate, ...], attribute: str) -> Column:
    return F.element_at(literal_map({t.template.id: getattr(t.template, attribute) for t in templates}), template_id)


@lru_cache(maxsize=1)
def _alternation() -> Alternation:
    return build_alternation(load_templates())


def _with_record(lines: DataFrame) -> DataFrame:
    """Split each record into `line` (its first line, envelope removed) and `_rest` (the lines after it)."""
    if "record_lines" not in lines.columns:
        lines = lines.withColumn("record_lines", F.lit(1).cast("long"))
    if "torn" not in lines.columns:
        lines = lines.withColumn("torn", F.lit(False))
    if "torn_reason" not in lines.columns:
        lines = lines.withColumn("torn_reason", F.lit(None).cast("string"))
    # java.util.logging's SimpleFormatter prints the time and logger on one line and `LEVEL: message` on the next:
    # the two are read as one line.
    text = F.regexp_replace(strip_envelope(unwrapped(F.col("value"))), _JUL_RECORD, "$1 $2")
    parsed = lines.withColumn("_text", F.regexp_replace(text, _MEL_RECORD, "$1 "))
    text = F.col("_text")
    newline = F.instr(text, "\n")
    return parsed.select(
        "*",
        F.when(newline > 0, F.substring(text, F.lit(1), newline - 1)).otherwise(text).alias("line"),
        F.nullif(F.when(newline > 0, F.expr("substr(_text, instr(_text, '\\n') + 1)")), F.lit("")).alias("_rest"),
    )


def _with_prefix(parsed: DataFrame) -> DataFrame:
    """Add the Kafka prefix's fields, `body` (the message after it) and `continued` (later lines of the record)."""
    slots = [[1, 3, 4], [2], [5], [6], [7, 8], [9]]  # broker id, partition, instance id, client id, group id, body
    parsed = parsed.withColumn("_prefix", pack_all(F.col("msg"), KAFKA_PREFIX, slots))
    prefix, rest, log4j = F.col("_prefix"), F.col("_rest"), F.col("layout") == "kafka_log4j"
    trailing_logger = F.nullif(F.regexp_extract(rest, _TRAILING_LOGGER, 1), F.lit(""))
    return parsed.select(
        *[c for c in parsed.columns if c != "logger"],
        F.coalesce(F.col("logger"), F.when(log4j, trailing_logger)).alias("logger"),
        at(prefix, 1).alias("_broker_id"),
        at(prefix, 2).alias("_prefix_partition"),
        at(prefix, 3).alias("_prefix_instance_id"),
        at(prefix, 4).alias("client_id_prefix"),
        at(prefix, 5).alias("_prefix_group_id"),
        F.nullif(F.regexp_extract(F.col("line"), _HEARTBEAT_THREAD_GROUP, 1), F.lit("")).alias("_thread_group_id"),
        F.coalesce(F.get(prefix, 5), F.col("msg")).alias("body"),
        F.when(log4j, F.regexp_replace(rest, _TRAILING_LOGGER, "")).otherwise(rest).alias("continued"),
    )


def parse_lines(
    lines: DataFrame, *, tz: Column, day: Column, user_layouts: Sequence[UserLayout] = (),
    formatted_time: Callable[[Column], Column | None] = lambda _: None,
) -> DataFrame:
    """Parse bronze records (`value` plus provenance) into one row per record with a `disposition`.

    `disposition` is `event`, `gc_pause`, `quarantine` or `noise`; `tz` and `day` give each line's source time
    zone and fallback date; `user_layouts` are the sources' own layouts; `formatted_time` reads a line's time text
    with its source's own format (None: no source has one). Output columns: provenance, layout fields,
    typed event fields, GC pause fields, `disposition`, `quarantine_reason`.

    Pin the result (persist, or write it) before filtering it: a query that filters the unpinned frame (such as
    `.where("template_id IS NOT NULL").count()`) never leaves Spark's optimizer, whose plan grows until the driver
    runs out of memory. The pipeline pins it (`pipelines.silver.build`).
    """
    templates = load_templates()
    alternation = _alternation()
    # GC lines are parsed first: most candidate lines of an estate are GC lines, and a line the GC parser knows
    # needs no layout or Kafka prefix (their regexes cost more than the GC match itself). Before the templates
    # also because the template match breaks Spark's generated code into two stages there, and each stage's code
    # must stay under the JVM's 64 KB method limit.
    known_gc = F.col("gc_duration_ms").isNotNull() | F.col("gc_noise")
    parsed = (
        _with_record(split_glued(lines)).transform(with_gc_pause, tz=tz, continued="_rest")
        .transform(with_layout, user_layouts=user_layouts, skip=known_gc).transform(_with_prefix)
    )
    body, continued = F.col("body"), F.col("continued")
    body_full = F.when(continued.isNotNull(), F.concat(body, F.lit("\n"), continued)).otherwise(body)
    # The template match is the costly step, so it runs only where it can match: not on lines the GC parser
    # already knows (and, on the SQL path, only on text holding the literal of some template).
    not_gc = ~(F.col("gc_duration_ms").isNotNull() | F.col("gc_noise"))
    # A line no layout knows (a prefix the parser has never seen, a stripped paste, a client without a Kafka
    # prefix) may still hold a known message: its templates are searched anywhere in it (the same regex, told so by
    # a mark), and its time and level in the whole line.
    unknown = F.col("layout") == "plain"
    searched = F.when(unknown, F.concat(F.lit(SEARCH_MARK), F.regexp_replace(body_full, MESSAGE_SUFFIX, "")))
    parts, position_in = match_templates(F.coalesce(searched, body_full), not_gc, alternation)
    parsed = parsed.withColumns({
        "_parts": parts,
        "ts_text": F.coalesce(F.col("ts_text"), F.when(unknown, find_time(F.col("msg")))),
        "level": F.coalesce(F.col("level"), F.when(unknown, find_level(F.col("msg")))),
    })
    # A column of its own: the level check and the id both read it, and an expression used twice is evaluated twice.
    position = position_in(F.col("_parts"))
    parsed = parsed.withColumn(
        "_matched", F.when(position.isNotNull(), F.element_at(literal_array(alternation.template_ids), position))
    )
    matched = F.col("_matched")
    required_level = F.element_at(
        literal_map({t.template.id: t.template.level for t in templates if t.template.level}), matched
    )
    parsed = parsed.withColumn(
        "template_id", F.when(required_level.isNull() | (F.col("level") == required_level), matched)
    )
    template_id = F.col("template_id")
    parts = F.when(template_id.isNotNull(), F.col("_parts"))
    parsed = parsed.select(
        "*",
        *[expr.alias(name) for name, expr in typed_fields(parts, alternation).items()],
        _lookup(template_id, templates, "event").alias("event_type"),
        F.when(template_id.isNotNull(), _lookup(template_id, templates, "kind")).alias("source_kind"),
        _own_time(F.col("ts_text"), tz=tz, day=day, formatted_time=formatted_time).alias("_own_ts"),
    )
    # The windows below sort whole rows by file: the packed matches and the record's texts are not carried along.
    parsed = parsed.drop("_parts", "_prefix", "_gc", "_text", "_rest", "_matched")
    parsed = parsed.transform(_with_inferred_time, tz=tz, day=day).transform(_with_file_group)
    parsed = parsed.select(*[c for c in parsed.columns if not c.startswith("_")], *_disposition(template_id))
    return parsed.withColumn("line_disposition", line_disposition(F.col("disposition")))


def _own_time(ts_text: Column, *, tz: Column, day: Column,
              formatted_time: Callable[[Column], Column | None]) -> Column:
    """A record's own time: read with its source's format where one is set and fits, else from the catalogue."""
    catalogued = event_time(ts_text, tz=tz, day=day)
    formatted = formatted_time(ts_text)
    return catalogued if formatted is None else F.coalesce(formatted, catalogued)


# A record without a time of its own takes the time of the nearest timestamped record of its file, when the records
# around it agree within this many seconds (else the time is unknown and the record is kept without one).
INFERRED_TIME_SPREAD_S = 300


def _whole_file() -> WindowSpec:
    """A whole file, in the line order of the frame that looks back: Spark computes the window functions of one
    partitioning and order in one sort, so the per-file aggregates ride along instead of sorting the rows again."""
    return Window.partitionBy("source_file").orderBy("line_no", "record_part").rowsBetween(Window.unboundedPreceding,
                                                                             Window.unboundedFollowing)


def _with_inferred_time(parsed: DataFrame, *, tz: Column, day: Column) -> DataFrame:
    """`event_ts` (the record's own time, one inferred from its neighbours in the file, or, in a file that printed
    no time at all, its line order from the file's day), `ts_inferred` and `ts_line_order`."""
    own = F.col("_own_ts")
    # Both neighbours come from frames that grow from the partition's start: Spark computes those in one pass, but
    # recomputes a frame that ends at the partition's end for every row (a file of 40,000 records took 39 s that
    # way, 0.6 s this way). So the next time is the last one before the row in descending line order.
    earlier = Window.partitionBy("source_file").orderBy("line_no", "record_part").rowsBetween(
        Window.unboundedPreceding, -1)
    later = Window.partitionBy("source_file").orderBy(F.col("line_no").desc(), F.col("record_part").desc()) \
        .rowsBetween(Window.unboundedPreceding, -1)
    before = F.last(own, ignorenulls=True).over(earlier)
    after = F.last(own, ignorenulls=True).over(later)
    spread = F.abs(F.unix_timestamp(after) - F.unix_timestamp(before))
    agreed = F.when(spread.isNull() | (spread <= INFERRED_TIME_SPREAD_S), F.coalesce(before, after))
    typed = F.col("template_id").isNotNull()
    inferred = F.when(own.isNull() & typed, agreed)
    # A file without a single time still tells the order of its events: a stripped paste, a dump of bare messages.
    # Their replay needs only that order; durations from it are not real and the gold rows say so.
    untimed_file = F.count(own).over(_whole_file()) == 0
    midnight = F.to_utc_timestamp(F.to_timestamp(day, "yyyy-MM-dd"), tz)
    by_order = F.when(untimed_file & typed, F.timestamp_millis(F.unix_millis(midnight) + F.col("line_no")))
    return parsed.withColumns({
        "event_ts": F.coalesce(own, inferred, by_order),
        # True, or null for a line with a time of its own (as in rows written before the column existed).
        "ts_inferred": F.when(own.isNull() & F.coalesce(inferred, by_order).isNotNull(), F.lit(True)),
        "ts_line_order": F.when(by_order.isNotNull(), F.lit(True)),
    })


def _with_file_group(parsed: DataFrame) -> DataFrame:
    """A client line that names no group (librdkafka's poll timeout, a stripped excerpt) is about the group that
    every other line of its file names, when they name exactly one."""
    groups = F.collect_set(F.when(F.col("source_kind") == "client", F.col("group_id"))).over(_whole_file())
    fill = F.when((F.col("source_kind") == "client") & F.col("group_id").isNull() & (F.size(groups) == 1),
                  F.element_at(groups, 1))
    return parsed.withColumn("group_id", F.coalesce(F.col("group_id"), fill))


def _disposition(template_id: Column) -> list[Column]:
    msg, level = F.col("msg"), F.col("level")
    relevant = (
        template_id.isNotNull()
        | F.col("client_id_prefix").isNotNull()
        | F.col("_broker_id").isNotNull()
        | F.coalesce(F.col("logger").rlike(RELEVANT_LOGGER), F.lit(False))
        | msg.rlike(RELEVANT_TEXT)
    )
    gc_line = F.col("gc_candidate") & template_id.isNull()
    gc_timed = gc_line & F.col("gc_duration_ms").isNotNull()
    torn = F.col("torn")
    disposition = (
        F.when(torn, "quarantine")
        .when(gc_timed & F.col("gc_end_ts").isNotNull(), "gc_pause")
        .when(F.col("event_type") == "noise", "noise")
        .when(template_id.isNotNull() & F.col("event_ts").isNotNull(), "event")
        .when(template_id.isNotNull() | gc_timed, "quarantine")
        .when(gc_line & F.col("gc_noise"), "noise")
        # DEBUG and TRACE wordings are outside the catalog: counted as noise, not as unknown wordings.
        .when(F.coalesce(level.isin("DEBUG", "TRACE"), F.lit(False)), "noise")
        .when(relevant | gc_line, "quarantine")
        .otherwise("noise")
    )
    reason = (
        F.when(torn, F.coalesce(F.col("torn_reason"), F.lit("truncated_gzip")))
        .when(template_id.isNotNull() | gc_timed, "no_timestamp")
        .when(gc_line, "unknown_gc_line")
        .when(F.col("line_length") > F.length(F.col("value")), "line_too_long")
        .when(~F.is_valid_utf8(F.col("value")) | F.col("value").contains("\ufffd"), "invalid_utf8")
        .otherwise("no_template")
    )
    return [disposition.alias("disposition"), F.when(disposition == "quarantine", reason).alias("quarantine_reason")]
