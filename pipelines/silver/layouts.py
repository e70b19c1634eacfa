"""Line layouts (how a logging framework wraps a message) as data, and the transform that applies them.

Each layout is a regex with named groups: `ts` (timestamp text), `level`, `thread`, `logger`, `msg`. The first
layout that matches a line wins. Patterns are written in Python syntax and stripped of group names for Java.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

_ISO = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"


@dataclass(frozen=True)
class Layout:
    """One way a line can wrap a Kafka message."""

    name: str
    pattern: str

    @property
    def java_pattern(self) -> str:
        return re.sub(r"\(\?P<\w+>", "(", self.pattern)

    def group(self, name: str) -> int:
        return re.compile(self.pattern).groupindex.get(name, 0)


LAYOUTS: tuple[Layout, ...] = (
    # Kafka's own log4j layout `[%d] %p %m (%c)%n` (broker server.log, Kafka tools, many clients);
    # an optional `,<timestamp>` suffix is what CloudWatch exports append after the logger.
    Layout(
        "kafka_log4j",
        r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (?P<level>[A-Z]+) (?P<msg>.*?)"
        r"(?: \((?P<logger>[\w.$-]+)\))?(?:,\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})?\s*$",
    ),
    # Spring Boot 1.x to 3.2+: `%d %5p PID --- [app] [thread] logger : msg`.
    Layout(
        "spring_boot",
        rf"^(?P<ts>{_ISO})\s+(?P<level>[A-Z]+) +\d+ --- (?:\[[^\]]*\] )?\[\s*(?P<thread>[^\]]*)\] "
        r"(?P<logger>\S+)\s+: (?P<msg>.*?)(?:,\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})?$",
    ),
    # Logback with a full date: `%d [%thread] %-5level %logger - %msg`.
    Layout(
        "logback_dated",
        rf"^(?P<ts>{_ISO}) \[(?P<thread>[^\]]*)\] (?P<level>[A-Z]+)\s+(?P<logger>\S+) -{{1,2}} (?P<msg>.*)$",
    ),
    # Logback's defaults (BasicConfigurator and 1.3+ TTLL): time of day only, the date comes from elsewhere.
    Layout(
        "logback_time",
        r"^(?P<ts>\d\d:\d\d:\d\d[.,]\d{3}) \[(?P<thread>[^\]]*)\] (?P<level>[A-Z]+)\s+(?P<logger>\S+) -{1,2} (?P<msg>.*)$",
    ),
    # Anything else: the whole line is the message (a user pattern per source will slot in before this).
    Layout("plain", r"^(?P<msg>.*)$"),
)

# Envelopes that wrap a layout: ANSI colours, CRI container logs, docker-compose service prefixes.
_ANSI = r"\x1b\[[0-9;]*[A-Za-z]"
_CRI = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) [FP] "
_COMPOSE = r"^[\w.-]+\s+\| "


def strip_envelope(line: Column) -> Column:
    """Remove colour codes and container prefixes so the layout regexes see the application's own line."""
    cleaned = F.regexp_replace(line, _ANSI, "")
    cleaned = F.regexp_replace(cleaned, _CRI, "")
    return F.regexp_replace(cleaned, _COMPOSE, "")


SEP = "\u0001"  # joins a layout's or template's groups in one regexp_replace; never in a log line we keep


def packed_groups(value: Column, choice: Column, patterns: dict[str, tuple[str, int]]) -> Column:
    """All groups of the chosen pattern in one regex pass: `choice` names a key of `patterns`
    (key -> (java regex, group count)); the result is an array of the groups' texts."""
    expr = None
    for key, (pattern, count) in patterns.items():
        replacement = SEP.join(f"${i}" for i in range(1, count + 1))
        packed = F.regexp_replace(value, pattern, replacement)
        expr = F.when(choice == key, packed) if expr is None else expr.when(choice == key, packed)
    return F.split(expr, SEP) if expr is not None else F.array()


def pick(parts: Column, choice: Column, indices: dict[str, int]) -> Column:
    """The group of `parts` that `indices` (key -> 1-based group index) names for each row's `choice`."""
    if not indices:
        return F.lit(None).cast("string")
    mapping = F.create_map(*[x for key, index in indices.items() for x in (F.lit(key), F.lit(index))])
    index = F.element_at(mapping, choice)
    return F.nullif(F.when(index.isNotNull(), F.get(parts, index - 1)), F.lit(""))


def with_layout(df: DataFrame, *, line_col: str = "line") -> DataFrame:
    """Add `layout`, `ts_text`, `level`, `thread`, `logger`, `msg` from the first layout matching `line_col`."""
    line = F.col(line_col)
    layout_expr = None
    for layout in LAYOUTS:
        cond = line.rlike(layout.java_pattern)
        layout_expr = F.when(cond, layout.name) if layout_expr is None else layout_expr.when(cond, layout.name)
    patterns = {lay.name: (lay.java_pattern, re.compile(lay.pattern).groups) for lay in LAYOUTS}
    df = df.withColumn("layout", layout_expr)
    df = df.withColumn("_layout_parts", packed_groups(line, F.col("layout"), patterns))
    parts, choice = F.col("_layout_parts"), F.col("layout")
    keep = [c for c in df.columns if c != "_layout_parts"]

    def field(name: str) -> Column:
        return pick(parts, choice, {lay.name: lay.group(name) for lay in LAYOUTS if lay.group(name)})

    return df.select(
        *keep,
        field("ts").alias("ts_text"),
        field("level").alias("level"),
        field("thread").alias("thread"),
        field("logger").alias("logger"),
        F.coalesce(field("msg"), F.lit("")).alias("msg"),
    )


def event_time(ts_text: Column, *, tz: Column, day: Column) -> Column:
    """UTC timestamp from a layout's timestamp text.

    Text with an offset is absolute; text without one is wall-clock time in the source's zone `tz`; text with
    only a time of day takes its date from `day` (a yyyy-MM-dd string).
    """
    text = F.regexp_replace(F.regexp_replace(ts_text, ",", "."), "T", " ")
    text = F.when(text.rlike(r"^\d\d:\d\d:\d\d"), F.concat_ws(" ", day, text)).otherwise(text)
    has_offset = text.rlike(r"(Z|[+-]\d\d:?\d\d)$")
    absolute = F.coalesce(
        F.try_to_timestamp(text, F.lit("yyyy-MM-dd HH:mm:ss[.SSSSSSSSS][.SSSSSS][.SSS]XXX")),
        F.try_to_timestamp(text, F.lit("yyyy-MM-dd HH:mm:ss[.SSSSSSSSS][.SSSSSS][.SSS]XX")),
    )
    local = F.try_to_timestamp(text, F.lit("yyyy-MM-dd HH:mm:ss[.SSSSSSSSS][.SSSSSS][.SSS]"))
    return F.when(has_offset, absolute).otherwise(F.to_utc_timestamp(local, tz))
