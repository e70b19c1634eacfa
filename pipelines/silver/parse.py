"""Parse candidate lines into typed events: envelope, layout, Kafka prefix, template, typed fields.

Everything here is Spark SQL expressions built from data (layouts.py, templates.yml, gc.py): no Python UDF.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.silver.gc import GC_PREFILTER, with_gc_pause
from pipelines.silver.layouts import SEP, event_time, strip_envelope, with_layout
from pipelines.silver.templates import (
    FIELD_COLUMNS,
    INT_FIELDS,
    Alternation,
    CompiledTemplate,
    build_alternation,
    load_templates,
)

# The Kafka prefixes of a message: broker coordinators (classic and new) and the Java consumer's LogContext.
KAFKA_PREFIX = (
    r"^(?:\[GroupCoordinator (?:id=)?(\d+)(?: topic=\S+ partition=\d+)?\]:? "
    r"|\[GroupMetadataManager brokerId=(\d+)\] "
    r"|\[Group Metadata Manager on Broker (\d+)\]: "
    r"|\[Consumer (?:instanceId=([^,\]]*), )?clientId=([^,\]]*), groupId=([^\]]*)\] )?(.*)$"
)
# A line no template knows is quarantined (not dropped as noise) when it looks like it is about groups.
RELEVANT_LOGGER = r"(?i)(coordinator|groupmetadata|membership|rebalancelistener)"
RELEVANT_TEXT = r"(?i)(groupcoordinator|groupmetadatamanager|rebalanc|\bgeneration\b|\bgroup\b.*\bmember|\bmember\b.*\bgroup|heartbeat|leavegroup|joingroup)"


def _pack_all(value: Column, pattern: str, group_count: int) -> Column:
    """Every group of an anchored regex in one pass, as an array (empty strings for groups that did not take part);
    null when the regex does not match."""
    # The anchored regex replaces the whole line when it matches, so the marker tells a match without a second pass.
    marker = "\u0002"
    packed = F.regexp_replace(value, pattern, marker + SEP.join(f"${i}" for i in range(1, group_count + 1)))
    return F.when(packed.startswith(marker), F.split(F.substring(packed, 2, 1 << 30), SEP))


def _at(parts: Column, group: int) -> Column:
    return F.nullif(F.get(parts, group - 1), F.lit(""))


def _sql_literal(value: str | int) -> str:
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal_map(pairs: dict[str, str] | dict[str, int]) -> Column:
    """A constant map column built in one call (one SQL literal instead of a py4j call per entry)."""
    return F.expr("map(" + ", ".join(f"{_sql_literal(k)}, {_sql_literal(v)}" for k, v in pairs.items()) + ")")


def _matched_template(parts: Column, alternation: Alternation) -> Column:
    # The matched template is the first whose wrapping group is non-empty.
    wraps = F.expr("array(" + ", ".join(f"_parts[{g - 1}]" for g in alternation.wrap_groups) + ")")
    position = F.array_position(F.transform(wraps, lambda x: x != F.lit("")), True)
    ids = F.expr("array(" + ", ".join(_sql_literal(i) for i in alternation.template_ids) + ")")
    return F.when(position > 0, F.element_at(ids, position.cast("int")))


def _field(parts: Column, template_id: Column, alternation: Alternation, field: str) -> Column:
    groups = {tid: g[field] for tid, g in alternation.field_groups.items() if field in g}
    if not groups:
        return F.lit(None).cast("int" if field in INT_FIELDS else "string")
    group = F.element_at(literal_map(groups), template_id)
    expr = F.nullif(F.trim(F.when(group.isNotNull(), F.get(parts, group - 1))), F.lit(""))
    return expr.try_cast("int") if field in INT_FIELDS else expr


def _lookup(template_id: Column, templates: tuple[CompiledTemplate, ...], attribute: str) -> Column:
    return F.element_at(literal_map({t.template.id: getattr(t.template, attribute) for t in templates}), template_id)


def parse_lines(lines: DataFrame, *, tz: Column, day: Column) -> DataFrame:
    """Parse bronze lines (`value` plus provenance) into one row per line with a `disposition`.

    `disposition` is `event`, `gc_pause`, `quarantine` or `noise`; `tz` and `day` give each line's source time
    zone and fallback date. Output columns: provenance, layout fields, typed event fields, GC pause fields.
    """
    templates = load_templates()
    parsed = lines.withColumn("line", strip_envelope(F.col("value"))).transform(with_layout)
    msg = F.col("msg")
    parsed = parsed.withColumn("_prefix", _pack_all(msg, KAFKA_PREFIX, 7))
    prefix = F.col("_prefix")
    parsed = parsed.select(
        "*",
        F.coalesce(_at(prefix, 1), _at(prefix, 2), _at(prefix, 3)).alias("_broker_id"),
        _at(prefix, 4).alias("_prefix_instance_id"),
        _at(prefix, 5).alias("client_id_prefix"),
        _at(prefix, 6).alias("_prefix_group_id"),
        F.coalesce(F.get(prefix, 6), msg).alias("body"),
    )
    body = F.col("body")
    alternation = build_alternation(templates)
    parsed = parsed.withColumn("_parts", _pack_all(body, alternation.pattern, alternation.group_count))
    parsed = parsed.withColumn("template_id", _matched_template(F.col("_parts"), alternation))
    template_id = F.col("template_id")
    fields = {}
    for name in ("group_id", "member_id", "old_member_id", "instance_id", "client_id", "client_host", "generation",
                 "offsets_partition", "member_count", "static_count", "state", "protocol", "coordinator", "error",
                 "epoch", "reason", "partitions", "topics", "members"):
        fields[FIELD_COLUMNS.get(name, name)] = _field(F.col("_parts"), template_id, alternation, name)
    merged = {"group_id", "group_instance_id", "client_id", "reason"}
    parsed = parsed.select(
        "*",
        *[expr.alias(f"_t_{name}" if name in merged else name) for name, expr in fields.items()],
        _lookup(template_id, templates, "event").alias("event_type"),
        F.when(template_id.isNotNull(), _lookup(template_id, templates, "kind")).alias("source_kind"),
        event_time(F.col("ts_text"), tz=tz, day=day).alias("event_ts"),
    )
    reason = F.col("_t_reason")
    parsed = parsed.select(
        "*",
        F.coalesce(F.col("_t_group_id"), F.col("_prefix_group_id")).alias("group_id"),
        F.coalesce(F.col("_t_group_instance_id"), F.col("_prefix_instance_id")).alias("group_instance_id"),
        F.coalesce(F.col("_t_client_id"), F.col("client_id_prefix")).alias("client_id"),
        F.col("_broker_id").try_cast("int").alias("broker_id"),
        F.regexp_replace(reason, "; client reason: .*$", "").alias("reason"),
        F.nullif(F.regexp_extract(reason, "; client reason: (.*)$", 1), F.lit("")).alias("client_reason"),
    )
    parsed = parsed.transform(with_gc_pause, tz=tz)
    relevant = (
        template_id.isNotNull()
        | F.col("client_id_prefix").isNotNull()
        | F.col("_broker_id").isNotNull()
        | F.coalesce(F.col("logger").rlike(RELEVANT_LOGGER), F.lit(False))
        | msg.rlike(RELEVANT_TEXT)
    )
    disposition = (
        F.when(F.col("gc_duration_ms").isNotNull() & F.col("gc_end_ts").isNotNull(), "gc_pause")
        .when(F.col("event_type") == "noise", "noise")
        .when(template_id.isNotNull() & F.col("event_ts").isNotNull(), "event")
        .when(relevant | F.col("gc_candidate") | F.col("gc_duration_ms").isNotNull(), "quarantine")
        .otherwise("noise")
    )
    quarantine_reason = (
        F.when(template_id.isNotNull() | F.col("gc_duration_ms").isNotNull(), "no_timestamp")
        .when(F.col("gc_candidate"), "unknown_gc_line")
        .when(F.col("line_length") > F.length(F.col("value")), "line_too_long")
        .when(F.col("value").contains("\ufffd"), "invalid_utf8")
        .otherwise("no_template")
    )
    keep = [c for c in parsed.columns if not c.startswith("_")]
    return parsed.select(
        *keep,
        disposition.alias("disposition"),
        F.when(disposition == "quarantine", quarantine_reason).alias("quarantine_reason"),
    )


# The bronze prefilter: a line is a candidate when it contains one of these (cheap `contains`, no regex).
PREFILTER_LITERALS: tuple[str, ...] = (
    "roupCoordinator",
    "roupMetadataManager",
    "Group Metadata Manager",
    "[Consumer ",
    " group",
    "oordinator",
    *GC_PREFILTER,
)


def is_candidate(value: Column) -> Column:
    """True for lines worth parsing: they contain one of the prefilter literals."""
    cond = None
    for literal in PREFILTER_LITERALS:
        c = value.contains(literal)
        cond = c if cond is None else (cond | c)
    return cond
