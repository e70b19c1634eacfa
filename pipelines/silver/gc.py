"""JVM GC and safepoint pause lines (JDK 8 -XX:+PrintGCDetails and JDK 9+ unified logging), parsed into pause
columns with one regex pass per candidate line (the shapes below form one anchored alternation)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.bronze.literals import contains_any
from pipelines.bronze.prefilter import GC_LITERALS
from pipelines.silver.packing import at, pack_all

# Unified logging decorations, any subset in the fixed order time, utctime, uptime, timemillis, uptimemillis,
# timenanos, uptimenanos, hostname, pid, tid, level, tags; each padded to the widest value seen (`[info ]`).
_DECOR = r"((?:\[[^\]\n]*\])+)\s*"
_KINDS = (
    "Young|Full|Remark|Cleanup|Mixed|Initial Mark|Mark Start|Mark End|Relocate Start|Init Mark|Final Mark|"
    "Init Update Refs|Final Update Refs|Init Update|Final Update|Degenerated GC|Final Roots|Init Evac|Final Evac"
)
# JDK 8: `<date>: <uptime>: ` (either part optional) before each record.
_JDK8_TS = r"(?:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(?:[+-]\d{4}|Z)): )?(?:(\d+[.,]\d+): )?"
_SHAPES = (
    # 1-5 unified pause end line: `GC(12) [y: ]Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 5.123ms`
    rf"{_DECOR}(?:GC\((\d+)\) )?(?:[yYO]: )?Pause ({_KINDS})([^\n]*?) (\d+(?:[.,]\d+)?)ms\s*",
    # 6-8 JDK 13+ `Safepoint "op", Time since last: .., Reaching safepoint: .., At safepoint: .., Total: N ns`
    rf'{_DECOR}Safepoint "([^"\n]+)",[^\n]*?Total: (\d+) ns[^\n]*',
    # 9-12 JDK 8 (-XX:+PrintGCApplicationStoppedTime) and JDK 9-12 [safepoint]: `Total time ... stopped: N seconds`
    rf"(?:{_DECOR})?{_JDK8_TS}Total time for which application threads were stopped: (\d+[.,]\d+) seconds[^\n]*",
    # 13-16 JDK 8 collection: `[GC pause (cause) (young), N secs]`, `[Full GC (cause) ...]`, `[GC (cause) [PSYoungGen..`
    rf"{_JDK8_TS}\[(GC pause|Full GC|GC remark|GC cleanup|GC(?=--| ?[(\[]))([^\n]*)",
    # 17 known lines that are no pause: unified start lines (no duration yet), JDK 8 `Application time:`
    rf"({_DECOR}GC\(\d+\) (?:[yYO]: )?Pause (?![^\n]* \d+(?:[.,]\d+)?ms\s*$)[^\n]*|{_JDK8_TS}Application time: [^\n]*)",
)
_PATTERN = "^(?:" + "|".join(f"(?:{s})" for s in _SHAPES) + ")$"
# Slots of a packed match: decorations, pause ms, kind, rest, safepoint op, safepoint ns, stopped seconds,
# JDK 8 date, JDK 8 uptime, JDK 8 token, JDK 8 rest, known non-pause line.
_SLOTS = [[1, 6, 9, 18], [5], [3], [4], [7], [8], [12], [10, 13, 19], [11, 14, 20], [15], [16], [17]]
DECOR, MS, KIND, REST, OP, NS, STOPPED, DATE8, UPTIME8, TOKEN8, REST8, NOISE = range(1, 13)
_PHASE_THEN_CAUSE = (
    r"^(?: ?\((?:Normal|Concurrent Start|Prepare Mixed|Mixed|Concurrent End|Major|Minor)\))? ?"
    r"\((?!(?:Major|Minor)\))((?:[^()]|\([^()]*\))+)\)"
)


def _ts_from_text(text: Column, tz: Column) -> Column:
    norm = F.regexp_replace(text, "T", " ")
    absolute = F.try_to_timestamp(norm, F.lit("yyyy-MM-dd HH:mm:ss.SSSXX"))
    return F.coalesce(absolute, F.to_utc_timestamp(F.try_to_timestamp(norm, F.lit("yyyy-MM-dd HH:mm:ss.SSS")), tz))


def _number(text: Column) -> Column:
    return F.regexp_replace(text, ",", ".").try_cast("double")


def _decorations(decor: Column) -> tuple[Column, Column, Column]:
    """(time text, epoch milliseconds, JVM uptime in seconds) from unified-logging decorations."""
    time_text = F.nullif(F.regexp_extract(decor, r"\[(\d{4}-\d\d-\d\dT[\d:.]+(?:[+-]\d{4}|Z))\s*\]", 1), F.lit(""))
    epoch_ms = F.coalesce(
        F.nullif(F.regexp_extract(decor, r"\[(\d{11,})ms\s*\]", 1), F.lit("")).try_cast("long"),
        F.floor(F.nullif(F.regexp_extract(decor, r"\[(\d{17,})ns\s*\]", 1), F.lit("")).try_cast("double") / 1e6),
    )
    uptime_s = F.nullif(F.regexp_extract(decor, r"\[(\d+[.,]\d+)s\s*\]", 1), F.lit(""))
    uptime_ms = F.nullif(F.regexp_extract(decor, r"\[(\d{1,10})ms\s*\]", 1), F.lit("")).try_cast("double")
    return time_text, epoch_ms, F.coalesce(_number(uptime_s), uptime_ms / 1e3)


def _jdk8_kind_collector(token: Column, rest: Column, cause: Column, record: Column) -> tuple[Column, Column]:
    kind = (
        F.when(token == "Full GC", "Full").when(token == "GC remark", "Remark").when(token == "GC cleanup", "Cleanup")
        .when(token == "GC pause", F.when(rest.contains("(mixed)"), "Mixed").otherwise("Young"))
        .when(cause == "CMS Initial Mark", "Initial Mark").when(cause == "CMS Final Remark", "Remark")
        .otherwise("Young")
    )
    collector = (
        F.when(record.rlike(r"PSYoungGen|ParOldGen|PSOldGen"), "Parallel")
        .when(record.rlike(r"ParNew|CMS"), "CMS")
        .when(record.rlike(r"DefNew|Tenured"), "Serial")
        .when(token.isin("GC pause", "GC remark", "GC cleanup") | F.coalesce(cause, F.lit("")).contains("G1"), "G1")
        .otherwise("unknown")
    )
    return kind, collector


def _unified_collector(kind: Column, rest: Column, cause: Column) -> Column:
    return (
        F.when(kind.isin("Mark Start", "Mark End", "Relocate Start"), "ZGC")
        .when(kind.isin("Init Mark", "Final Mark", "Init Update Refs", "Final Update Refs", "Init Update",
                        "Final Update", "Degenerated GC", "Final Roots", "Init Evac", "Final Evac"), "Shenandoah")
        .when(F.coalesce(cause, F.lit("")).contains("G1") | kind.isin("Remark", "Cleanup", "Mixed")
              | rest.rlike(r"^ \((?:Normal|Concurrent Start|Prepare Mixed|Mixed|Concurrent End)\)"), "G1")
        .otherwise("unknown")
    )


def with_gc_pause(df: DataFrame, *, tz: Column, continued: str) -> DataFrame:
    """Add `gc_candidate` (the line has a GC literal), `gc_noise` (a known GC line that is no pause) and, for pause
    lines, `gc_end_ts`, `gc_duration_ms`, `gc_uptime_s`, `collector`, `pause_kind`, `gc_cause` (from the column
    `line` and the record's later lines in the column `continued`)."""
    line = F.col("line")
    candidate = contains_any(line, GC_LITERALS)
    df = df.withColumn("_gc", F.when(candidate, pack_all(line, _PATTERN, _SLOTS)))
    g = F.col("_gc")
    time_text, epoch_ms, decor_uptime = _decorations(at(g, DECOR))
    record = F.concat_ws("\n", line, F.col(continued))
    rest8 = F.coalesce(at(g, REST8), F.lit(""))
    # The pause ends the record's first line, or (with -XX:+PrintAdaptiveSizePolicy) a later `, N secs]` line;
    # `real=` of `[Times: ...]` is the last resort.
    secs8 = F.coalesce(
        F.nullif(F.regexp_extract(rest8, r"^.*, (\d+[.,]\d+) secs\]", 1), F.lit("")),
        F.nullif(F.regexp_extract(record, r"\n, (\d+[.,]\d+) secs\]", 1), F.lit("")),
        F.nullif(F.regexp_extract(record, r"real=(\d+[.,]\d+) secs", 1), F.lit("")),
    )
    df = df.withColumns({
        "_gc_ts": F.coalesce(_ts_from_text(F.coalesce(time_text, at(g, DATE8)), tz), F.timestamp_millis(epoch_ms)),
        "_gc_ms": F.when(at(g, TOKEN8).isNotNull(), _number(secs8) * 1000),
        "_gc_cause": F.nullif(F.regexp_extract(F.coalesce(at(g, REST), rest8), _PHASE_THEN_CAUSE, 1), F.lit("")),
    })
    unified, safepoint, stopped, jdk8 = (at(g, slot).isNotNull() for slot in (MS, NS, STOPPED, TOKEN8))
    ts, jdk8_ms, cause = F.col("_gc_ts"), F.col("_gc_ms"), F.col("_gc_cause")
    jdk8_kind, jdk8_collector = _jdk8_kind_collector(at(g, TOKEN8), rest8, cause, record)
    duration_ms = (
        F.when(unified, _number(at(g, MS)))
        .when(safepoint, at(g, NS).try_cast("double") / 1e6)
        .when(stopped, _number(at(g, STOPPED)) * 1000)
        .otherwise(jdk8_ms)
    )
    # JDK 8 stamps a collection when it starts; unified logging and the stopped-time lines when the pause ends.
    end_ts = F.when(duration_ms.isNotNull(), F.when(
        jdk8, F.timestamp_micros(F.unix_micros(ts) + F.round(jdk8_ms * 1000).cast("long"))
    ).otherwise(ts))
    kind = F.when(unified, at(g, KIND)).when(safepoint | stopped, F.lit("Safepoint")).when(jdk8, jdk8_kind)
    collector = (
        F.when(unified, _unified_collector(at(g, KIND), F.coalesce(at(g, REST), F.lit("")), cause))
        .when(safepoint | stopped, F.lit("safepoint")).when(jdk8, jdk8_collector)
    )
    cause = F.when(unified | jdk8, cause).when(safepoint, at(g, OP))
    uptime = F.coalesce(decor_uptime, _number(at(g, UPTIME8)))
    return df.select(
        *[c for c in df.columns if not c.startswith("_gc")],
        F.coalesce(candidate, F.lit(False)).alias("gc_candidate"),
        F.coalesce(at(g, NOISE).isNotNull(), F.lit(False)).alias("gc_noise"),
        end_ts.alias("gc_end_ts"),
        duration_ms.alias("gc_duration_ms"),
        uptime.alias("gc_uptime_s"),
        F.coalesce(collector, F.when(candidate, F.lit("unknown"))).alias("collector"),
        kind.alias("pause_kind"),
        cause.alias("gc_cause"),
    )
