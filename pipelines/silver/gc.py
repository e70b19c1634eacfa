"""JVM GC and safepoint pause lines (JDK 8 and JDK 9+ unified logging), parsed into pause columns."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

GC_PREFILTER: tuple[str, ...] = ("Pause ", "GC pause", "Full GC", "application threads were stopped", "Safepoint \"")

# JDK 9+ unified logging: `[decorations]... GC(n) Pause <kind> [(phase)] [(cause)] [heap] <ms>ms`.
_UNIFIED = (
    r"^((?:\[[^\]]*\])+)\s*GC\((\d+)\) Pause (Young|Full|Remark|Cleanup|Mixed|Initial Mark|Mark Start|Mark End|"
    r"Relocate Start|Init Mark|Final Mark|Init Update Refs|Final Update Refs|Degenerated GC|Final Roots)"
    r"(.*?) (\d+(?:\.\d+)?)ms\s*$"
)
_UNIFIED_SAFEPOINT = (
    r"^((?:\[[^\]]*\])+)\s*Safepoint \"([^\"]+)\", Time since last: \d+ ns, Reaching safepoint: \d+ ns, "
    r"(?:Cleanup: \d+ ns, )?At safepoint: \d+ ns, Total: (\d+) ns"
)
_UNIFIED_STOPPED = r"^((?:\[[^\]]*\])+)\s*Total time for which application threads were stopped: (\d+\.\d+) seconds"
# JDK 8: `<iso-ts>: <uptime>: [GC pause (cause) (young), 0.05 secs]` or `Total time for which ... stopped: N seconds`.
_JDK8_PREFIX = r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4})?:? ?(?:\d+\.\d+: )?"
_JDK8_GC = _JDK8_PREFIX + r"\[(GC pause|Full GC|GC) ?\((.+?)\)(?: \((young|mixed)\))?(?: \(initial-mark\))?.*?, (\d+\.\d+) secs\]"
_JDK8_STOPPED = _JDK8_PREFIX + r"Total time for which application threads were stopped: (\d+\.\d+) seconds"
_PHASES = r"^(?: \((?:Normal|Concurrent Start|Prepare Mixed|Mixed|Concurrent End)\))? \((.+?)\)(?: \d|$)"
_DECOR_TIME = r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(?:[+-]\d{4}|Z))\]"
_DECOR_UPTIME = r"\[(\d+\.\d+)s\]"


def _ts_from_text(text: Column, tz: Column) -> Column:
    norm = F.regexp_replace(text, "T", " ")
    absolute = F.try_to_timestamp(norm, F.lit("yyyy-MM-dd HH:mm:ss.SSSXX"))
    return F.coalesce(absolute, F.to_utc_timestamp(F.try_to_timestamp(norm, F.lit("yyyy-MM-dd HH:mm:ss.SSS")), tz))


def with_gc_pause(df: DataFrame, *, tz: Column) -> DataFrame:
    """Add `gc_candidate` and, for pause lines, `gc_end_ts`, `gc_duration_ms`, `gc_uptime_s`, `collector`,
    `pause_kind`, `gc_cause` (from column `line`)."""
    line = F.col("line")
    unified = line.rlike(_UNIFIED)
    safepoint = line.rlike(_UNIFIED_SAFEPOINT)
    stopped = line.rlike(_UNIFIED_STOPPED)
    jdk8_gc = line.rlike(_JDK8_GC)
    jdk8_stopped = line.rlike(_JDK8_STOPPED)
    decorations = (
        F.when(unified, F.regexp_extract(line, _UNIFIED, 1))
        .when(safepoint, F.regexp_extract(line, _UNIFIED_SAFEPOINT, 1))
        .when(stopped, F.regexp_extract(line, _UNIFIED_STOPPED, 1))
    )
    ts_text = F.coalesce(
        F.nullif(F.regexp_extract(decorations, _DECOR_TIME, 1), F.lit("")),
        F.when(jdk8_gc, F.nullif(F.regexp_extract(line, _JDK8_GC, 1), F.lit(""))),
        F.when(jdk8_stopped, F.nullif(F.regexp_extract(line, _JDK8_STOPPED, 1), F.lit(""))),
    )
    kind = (
        F.when(unified, F.regexp_extract(line, _UNIFIED, 3))
        .when(safepoint | stopped | jdk8_stopped, F.lit("Safepoint"))
        .when(jdk8_gc, F.when(F.regexp_extract(line, _JDK8_GC, 2) == "Full GC", "Full").otherwise("Young"))
    )
    cause = (
        F.when(unified, F.regexp_extract(F.regexp_extract(line, _UNIFIED, 4), _PHASES, 1))
        .when(safepoint, F.regexp_extract(line, _UNIFIED_SAFEPOINT, 2))
        .when(jdk8_gc, F.regexp_extract(line, _JDK8_GC, 3))
    )
    duration_ms = (
        F.when(unified, F.regexp_extract(line, _UNIFIED, 5).try_cast("double"))
        .when(safepoint, F.regexp_extract(line, _UNIFIED_SAFEPOINT, 3).try_cast("double") / 1e6)
        .when(stopped, F.regexp_extract(line, _UNIFIED_STOPPED, 2).try_cast("double") * 1000)
        .when(jdk8_gc, F.regexp_extract(line, _JDK8_GC, 5).try_cast("double") * 1000)
        .when(jdk8_stopped, F.regexp_extract(line, _JDK8_STOPPED, 2).try_cast("double") * 1000)
    )
    collector = (
        F.when(F.coalesce(cause, F.lit("")).contains("G1") | kind.isin("Remark", "Cleanup", "Mixed"), "G1")
        .when(kind.isin("Mark Start", "Mark End", "Relocate Start"), "ZGC")
        .when(kind.isin("Init Mark", "Final Mark", "Init Update Refs", "Final Update Refs", "Degenerated GC"),
              "Shenandoah")
        .when(kind == "Safepoint", "safepoint")
        .otherwise("unknown")
    )
    candidate = None
    for literal in GC_PREFILTER:
        c = line.contains(literal)
        candidate = c if candidate is None else candidate | c
    return df.withColumns(
        {
            "gc_candidate": candidate & F.col("template_id").isNull(),
            "gc_end_ts": _ts_from_text(ts_text, tz),
            "gc_duration_ms": duration_ms,
            "gc_uptime_s": F.nullif(F.regexp_extract(F.coalesce(decorations, F.lit("")), _DECOR_UPTIME, 1),
                                    F.lit("")).try_cast("double"),
            "collector": collector,
            "pause_kind": kind,
            "gc_cause": F.nullif(cause, F.lit("")),
        }
    )
