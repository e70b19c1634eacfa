"""Compaction of the small files the runs leave: every micro-batch appends a file to each bronze and silver
table and MERGEs new files into the hot gold tables, so a run of an hour adds thousands (the soak benchmark measured
about 5,400 data files an hour), and every scan, MERGE and snapshot of those tables then reads more files than rows.
A table holding at least `compact_min_files` files is bin-packed with Delta's OPTIMIZE, beside the streams, on the
derived clock (an available-now run after its reconstruct step: `pipelines.flow.maintenance_clocks`); no row
changes, so a stream's MERGE that loses a race with it is retried (`writes`) and the compaction that loses one is
tried at its next turn.

Compaction and every MERGE leave the files they replaced on disk (a reader of an older version may still need them):
without a VACUUM a continuous run's folders only grow (the soak benchmark counted about 9,800 data files an hour).
`vacuum` deletes them once they are older than the table's retention (Delta's `delta.deletedFileRetentionDuration`,
7 days unless a table says otherwise), so the files on disk are bounded by what that retention keeps. A retention
shorter than a micro-batch is unsafe beside the streams (a batch may still read a file a commit just replaced)."""

from __future__ import annotations

import time
from collections.abc import Callable

from pyspark.sql import SparkSession

from pipelines.settings.config import Config
from pipelines.storage import lake, writes
from schemas.tables import TABLES


def data_files(spark: SparkSession, cfg: Config, name: str) -> int:
    """The number of data files in the table's current snapshot (0 when it does not exist yet): from the newest
    commit's checksum when this process can read it (`lake.local_file_count`: a session's first DESCRIBE DETAIL of
    each of the 19 tables loads its log, about 12 s in all), else from Delta."""
    if (local := lake.local_file_count(cfg, name)) is not None:
        return local
    ref = lake.table(cfg, name)
    if not ref.exists(spark):
        return 0
    row = spark.sql(f"DESCRIBE DETAIL {ref.sql_name}").select("numFiles").first()
    return int(row[0]) if row is not None and row[0] is not None else 0


def compact(spark: SparkSession, cfg: Config, *, min_files: int,
            on_progress: Callable[[str], None] | None = None,
            stopping: Callable[[], bool] = lambda: False) -> dict[str, tuple[int, int]]:
    """OPTIMIZE every table of the lakehouse that holds at least `min_files` data files; returns, per table
    compacted, its files before and after. This is housekeeping: a table whose compaction fails (most often a lost
    commit race with the stream) is said through `on_progress` and left for the next compaction, never ending the
    run (the rows are in; a run that failed here would fail at every later one). Once `stopping()` says the run is
    stopping, no further table is begun."""
    done: dict[str, tuple[int, int]] = {}
    started = time.monotonic()
    for name in TABLES:
        if stopping():
            break
        try:
            before = data_files(spark, cfg, name)
            if before < min_files:
                continue
            spark.sql(f"OPTIMIZE {lake.table(cfg, name).sql_name}").collect()
            done[name] = (before, data_files(spark, cfg, name))
        except Exception as exc:  # noqa: BLE001 - housekeeping: said, and tried again at the next compaction
            if on_progress is not None:
                why = "lost a commit race" if writes.is_commit_conflict(exc) else f"failed ({_first_line(exc)})"
                on_progress(f"compaction: {name} {why}; tried again at the next compaction")
    if done and on_progress is not None:
        on_progress("compacted " + ", ".join(f"{name} {a} -> {b} files" for name, (a, b) in done.items())
                    + f" ({time.monotonic() - started:.1f} s)")
    return done


# Why VACUUM LITE cannot run: the log no longer holds every removal it would need (a log cleaned up since the last
# vacuum), or a Delta older than 3.3 that has no LITE. The default VACUUM, which lists the table's folder, runs then.
LITE_UNAVAILABLE = ("DELTA_CANNOT_VACUUM_LITE", "PARSE_SYNTAX_ERROR")


def vacuum(spark: SparkSession, cfg: Config, names: list[str], *,
           on_progress: Callable[[str], None] | None = None,
           stopping: Callable[[], bool] = lambda: False) -> list[str]:
    """Delete the data files of `names` that a commit replaced and that are older than each table's retention
    (`delta.deletedFileRetentionDuration`, 7 days by default). VACUUM LITE takes them from the log, so it never
    touches a file a writer is still adding; where LITE is unavailable, the default VACUUM lists the folder with the
    same retention. Returns the tables vacuumed. This is housekeeping: a table that does not exist yet is passed over,
    and one whose VACUUM fails (a lost commit race, a permission) is said through `on_progress` and left for the next
    vacuum, never ending the run. Once `stopping()` says the run is stopping, no further table is begun (a VACUUM
    takes about a second per table, and a stopping run waits for the turn under way)."""
    done: list[str] = []
    started = time.monotonic()
    for name in names:
        if stopping():
            break
        ref = lake.table(cfg, name)
        try:
            if not ref.exists(spark):
                continue
            try:
                spark.sql(f"VACUUM {ref.sql_name} LITE").collect()
            except Exception as exc:  # only LITE being unavailable falls back; anything else is said below
                if not any(reason in str(exc) for reason in LITE_UNAVAILABLE):
                    raise
                spark.sql(f"VACUUM {ref.sql_name}").collect()
        except Exception as exc:  # noqa: BLE001 - housekeeping: said, and tried again at the next vacuum
            if on_progress is not None:
                on_progress(f"vacuum: {name} failed ({_first_line(exc)}); tried again at the next vacuum")
            continue
        done.append(name)
    if done and on_progress is not None:
        on_progress(f"vacuumed {len(done)} table(s) of the files replaced before their retention "
                    f"({time.monotonic() - started:.1f} s)")
    return done


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__
