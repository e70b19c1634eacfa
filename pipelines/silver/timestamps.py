"""Timestamps as logs print them: a catalogue of shapes found anywhere in a line's prefix, and their reading as UTC.

A known layout names its timestamp; a line read by a general layout (the message found wherever it sits) has its
time searched in the text before the message. The leftmost shape of the catalogue wins. Shapes without a date take
it from the source (`day`), shapes without an offset are wall-clock time in the source's zone (`tz`).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_FRACTION = r"(?:[.,]\d{1,9})?"
_DASH = "[-\u2013\u2014]"
# Each shape, in the order tried at one position (longer before shorter). Java regex, no named groups.
SHAPES: tuple[str, ...] = (
    # ISO-8601, log4j, Logback; the date's dashes also as a blog's typography prints them (en or em dashes).
    rf"\d{{4}}{_DASH}\d\d{_DASH}\d\d[ T]\d\d:\d\d:\d\d{_FRACTION}(?:Z|[+-]\d\d:?\d\d)?",
    rf"(?<!\d)\d{{8}}T\d{{6}}{_FRACTION}(?:Z|[+-]\d\d:?\d\d)?",  # ISO-8601 basic (`20261119T090000.000`)
    rf"\d{{4}}\.\d\d\.\d\d \d\d:\d\d:\d\d{_FRACTION}",  # ClickHouse
    rf"\d\d/\d\d/\d\d \d\d:\d\d:\d\d{_FRACTION}",  # log4j's ISO8601-less `yy/MM/dd` (Spark, Hadoop)
    r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d{1,2}:\d\d:\d\d [AP]M",  # java.util.logging SimpleFormatter
    rf"[A-Z][a-z]{{2}} +\d{{1,2}} \d\d:\d\d:\d\d{_FRACTION}",  # syslog, journald (no year)
    r"(?<![\d.])1\d{9}\.\d{3,6}(?![\d.])",  # epoch seconds with a fraction (librdkafka)
    r"(?<![\d.])1\d{12}(?![\d.])",  # epoch milliseconds (log platforms)
    # Time of day; not a duration printed with its unit (a .NET TimeSpan: `took 00:00:00.0123456 ms`).
    rf"(?<![\d:.])\d\d:\d\d:\d\d(?![.,]?\d*\s*ms(?![\w-])){_FRACTION}(?![\d:])",
)
_ANY_SHAPE = "(" + "|".join(SHAPES) + ")"


def find_time(text: Column) -> Column:
    """The leftmost timestamp-shaped text in `text`, or null."""
    return F.nullif(F.regexp_extract(text, _ANY_SHAPE, 1), F.lit(""))


def event_time(ts_text: Column, *, tz: Column, day: Column) -> Column:
    """UTC timestamp from timestamp text of any shape of SHAPES (or a layout's own, in one of those shapes).

    Text with an offset is absolute; text without one is wall-clock time in the source's zone `tz`; text without a
    date or a year takes it from `day` (a yyyy-MM-dd string); epoch seconds and milliseconds are absolute."""
    text = F.regexp_replace(ts_text, r"(\d\d:\d\d:\d\d),(\d)", "$1.$2")
    text = F.regexp_replace(text, "^(\\d{4})[\u2013\u2014](\\d\\d)[\u2013\u2014](\\d\\d)", "$1-$2-$3")
    text = F.regexp_replace(text, r"^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)", "$1-$2-$3 $4:$5:$6")
    text = F.regexp_replace(text, r"^(\d{4}-\d\d-\d\d)T", "$1 ")
    text = F.regexp_replace(text, r"^(\d{4})\.(\d\d)\.(\d\d) ", "$1-$2-$3 ")
    text = F.regexp_replace(text, r"^(\d\d)/(\d\d)/(\d\d) ", "20$1-$2-$3 ")
    text = F.when(text.rlike(r"^\d\d:\d\d:\d\d"), F.concat_ws(" ", day, text)).otherwise(text)
    has_offset = text.rlike(r"(Z|[+-]\d\d:?\d\d)$")
    absolute = F.coalesce(
        F.try_to_timestamp(text, F.lit("yyyy-MM-dd HH:mm:ss[.SSSSSSSSS][.SSSSSS][.SSS]XXX")),
        F.try_to_timestamp(text, F.lit("yyyy-MM-dd HH:mm:ss[.SSSSSSSSS][.SSSSSS][.SSS]XX")),
    )
    jul = text.rlike(r"^[A-Z][a-z]{2} \d{1,2}, \d{4} ")
    syslog = text.rlike(r"^[A-Z][a-z]{2} +\d{1,2} \d\d:")
    dated = F.when(syslog, F.concat_ws(" ", F.substring(day, 1, 4), F.regexp_replace(text, " +", " "))).otherwise(text)
    local = F.when(jul, F.try_to_timestamp(text, F.lit("MMM d, yyyy h:mm:ss a"))).when(
        syslog, F.try_to_timestamp(dated, F.lit("yyyy MMM d HH:mm:ss[.SSSSSSSSS][.SSSSSS][.SSS]"))
    ).otherwise(F.try_to_timestamp(text, F.lit("yyyy-MM-dd HH:mm:ss[.SSSSSSSSS][.SSSSSS][.SSS]")))
    epoch_ms = F.timestamp_millis(F.when(text.rlike(r"^\d{13}$"), text.try_cast("long")))
    epoch_s = F.timestamp_micros(
        F.when(text.rlike(r"^\d{10}\.\d+$"), (text.try_cast("double") * 1_000_000).cast("long"))
    )
    return (
        F.when(has_offset, absolute).when(text.rlike(r"^\d{13}$"), epoch_ms).when(text.rlike(r"^\d{10}\.\d+$"), epoch_s)
        .otherwise(F.to_utc_timestamp(local, tz))
    )


_LEVEL_WORDS = (
    r"(?i)(?<![\w-])(trace|trce|finest|finer|debug|dbug|fine|config|info|information|notice|warn|warning|error|fail"
    r"|severe|crit|critical|fatal)(?![\w-])"
)
_SYSLOG_DIGIT = r"(?:^|[^\d])%(\d)\||\b[A-Z_]+-(\d)-[A-Z_]+:|\bLevel: (\d)\b|^\[(\d)\] "
_LEVELS = {
    "TRACE": "TRACE", "TRCE": "TRACE", "FINEST": "TRACE", "FINER": "TRACE", "DEBUG": "DEBUG", "DBUG": "DEBUG",
    "FINE": "DEBUG", "CONFIG": "DEBUG", "INFO": "INFO", "INFORMATION": "INFO", "NOTICE": "INFO", "WARN": "WARN",
    "WARNING": "WARN", "ERROR": "ERROR", "FAIL": "ERROR", "SEVERE": "ERROR", "CRIT": "ERROR", "CRITICAL": "ERROR",
    "FATAL": "ERROR",
}


def find_level(text: Column) -> Column:
    """The log level named in `text` (a level word in any case, or a syslog severity digit as librdkafka prints
    it), as TRACE, DEBUG, INFO, WARN or ERROR; null when none is found."""
    word = F.upper(F.regexp_extract(text, _LEVEL_WORDS, 1))
    named = F.element_at(F.create_map(*[F.lit(x) for kv in _LEVELS.items() for x in kv]), F.nullif(word, F.lit("")))
    digits = [F.regexp_extract(text, _SYSLOG_DIGIT, i) for i in range(1, 5)]
    digit = F.nullif(F.concat(*digits), F.lit("")).cast("int")
    severity = (F.when(digit <= 3, "ERROR").when(digit == 4, "WARN").when(digit <= 6, "INFO")
                .when(digit == 7, "DEBUG"))
    return F.coalesce(severity, named)
