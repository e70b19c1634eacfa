"""Readers and writers: the only module that touches storage. Transforms elsewhere stay pure."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamReader
from pyspark.sql.types import StructType

from pipelines import delta_sql
from pipelines.bronze.damaged import damaged_gzips, with_torn_rows
from pipelines.config import Config
from pipelines.errors import PipelineStateError
from schemas.tables import TABLES

if TYPE_CHECKING:
    from delta.tables import DeltaTable

# A commit that lost a race with another writer (an OPTIMIZE, a VACUUM, a second job) is retried this often.
CONFLICT_ATTEMPTS = 6
CONFLICT_BACKOFF_S = 0.5
# Conflicts retried by this process, per table (the survival tests and the run summary read it).
conflicts_retried: dict[str, int] = {}
_T = TypeVar("_T")

# Delta's idempotent-write key: a replayed micro-batch with the same (app id, batch id) is skipped by Delta.
TXN_APP_PREFIX = "kafka-rebalance"
# Delta's optimistic-concurrency conflicts, by error class: every subclass of the JVM's
# DeltaConcurrentModificationException (ConcurrentAppend, ConcurrentDeleteRead, ...), and nothing else.
CONFLICT_CONDITIONS = frozenset({
    "DELTA_CONCURRENT_APPEND", "DELTA_CONCURRENT_DELETE_DELETE", "DELTA_CONCURRENT_DELETE_READ",
    "DELTA_CONCURRENT_TRANSACTION", "DELTA_CONCURRENT_WRITE", "DELTA_METADATA_CHANGED", "DELTA_PROTOCOL_CHANGED",
})
# A commit file of a Delta log: its name is the table version it made (the Delta protocol's layout).
_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
# The streaming query that reads the landing directory (its checkpoint folder has this name).
INGEST_QUERY = "ingest"


class TableRef:
    """Where one table lives: a path under the lakehouse directory, or a Unity Catalog name."""

    def __init__(self, cfg: Config, name: str) -> None:
        self.name = name
        self.path = None if cfg.uses_catalog else str((cfg.lakehouse / name).resolve())
        self.full_name = f"{cfg.catalog}.{cfg.schema_name}.{name}" if cfg.uses_catalog else None

    @property
    def sql_name(self) -> str:
        """The table in SQL: its catalog name, or delta.`path`."""
        return self.full_name or f"delta.{delta_sql.quote_name(str(self.path))}"

    def delta(self, spark: SparkSession) -> DeltaTable:
        """delta-spark's Python handle of the table; classic sessions only (tests and maintenance, not the pipeline,
        which runs through Spark Connect too)."""
        from delta.tables import DeltaTable

        if self.full_name:
            return DeltaTable.forName(spark, self.full_name)
        assert self.path is not None  # a table without a catalog name has a path (TableRef)
        return DeltaTable.forPath(spark, self.path)

    def exists(self, spark: SparkSession) -> bool:
        """True when the table exists (for a path, when the path holds a Delta table)."""
        if self.full_name:
            return spark.catalog.tableExists(self.full_name)
        try:
            # Resolving the schema reads the log's metadata only; DESCRIBE DETAIL also lists every data file (a Spark
            # job per table: 0.4-0.8 s each at the start of every run).
            spark.read.format("delta").load(self.path).schema  # noqa: B018 (resolved for its exception)
        except AnalysisException:
            return False
        return True


def table(cfg: Config, name: str) -> TableRef:
    """The reference of a known table name (see schemas.tables.TABLES)."""
    if name not in TABLES:
        raise KeyError(f"unknown table {name!r}; known: {', '.join(TABLES)}")
    return TableRef(cfg, name)


SETUP_THREADS = 4  # tables created or checked at once by ensure_tables


def ensure_tables(spark: SparkSession, cfg: Config, names: list[str] | None = None) -> None:
    """Create the Delta tables that do not exist yet, with their declared schemas, and bring older tables up to date.

    Upgrades are additive: a nullable column declared since the table was made is added in place. Anything else (a
    missing required column, a changed type) stops with the table and column named, before any write."""
    def ensure(name: str) -> None:
        ref = table(cfg, name)
        if ref.exists(spark):
            _upgrade(spark, ref, TABLES[name])
        else:
            spark.sql(delta_sql.create_table(ref.sql_name, TABLES[name]))

    # Each table is its own Delta log, and most of a creation is the driver waiting on one table's files and
    # commit: side by side, a fresh lakehouse's tables take a fraction of the time one after the other did.
    with ThreadPoolExecutor(max_workers=SETUP_THREADS, thread_name_prefix="ensure-table") as pool:
        for _ in pool.map(ensure, names or list(TABLES)):
            pass  # re-raises the first table's error, after every table was tried


def _upgrade(spark: SparkSession, ref: TableRef, declared: StructType) -> None:
    actual = {f.name: f for f in (spark.read.table(ref.full_name) if ref.full_name
                                  else spark.read.format("delta").load(ref.path)).schema.fields}
    problems, added = [], []
    for field in declared.fields:
        found = actual.get(field.name)
        if found is None and field.nullable:
            added.append(field)
        elif found is None:
            problems.append(f"required column {field.name} is missing")
        elif found.dataType != field.dataType:
            problems.append(f"column {field.name} is {found.dataType.simpleString()}, "
                            f"this release writes {field.dataType.simpleString()}")
    if problems:
        raise PipelineStateError(
            f"table {ref.name} was written by an incompatible release: {'; '.join(problems)}. Rebuild it from the "
            "landing files with `rebalance run --rebuild`, or run the release that wrote it"
        )
    if added:
        columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in added)
        spark.sql(f"ALTER TABLE {ref.sql_name} ADD COLUMNS ({columns})")


def read_table(spark: SparkSession, cfg: Config, name: str, *, version: int | None = None) -> DataFrame:
    """A batch read of one table (of its snapshot at `version`, when given)."""
    ref = table(cfg, name)
    reader = spark.read if version is None else spark.read.option("versionAsOf", version)
    return reader.table(ref.full_name) if ref.full_name else reader.format("delta").load(ref.path)


def table_version(spark: SparkSession, cfg: Config, name: str) -> int:
    """The latest Delta version of one table: for a table under the lakehouse directory, the newest commit file in
    its `_delta_log` (Delta names each commit `<version, 20 digits>.json`; no Spark job); for a catalog table, or a
    path this process cannot see (a remote Spark Connect server), `DESCRIBE HISTORY`."""
    ref = table(cfg, name)
    if ref.path is not None:
        try:
            found = [int(m.group(1)) for entry in os.scandir(Path(ref.path) / "_delta_log")
                     if (m := _COMMIT_FILE.match(entry.name))]
        except (FileNotFoundError, NotADirectoryError):
            found = []
        if found:
            return max(found)
    return delta_sql.latest_version(spark, ref.sql_name)


def read_table_stream(spark: SparkSession, cfg: Config, name: str) -> DataFrame:
    """A streaming read of one Delta table (new commits only)."""
    ref = table(cfg, name)
    reader = spark.readStream.format("delta")
    return reader.table(ref.full_name) if ref.full_name else reader.load(ref.path)


def read_landing(spark: SparkSession, cfg: Config) -> DataFrame:
    """Stream the lines of closed files under `<landing>/<instance>/<file>` with their file metadata.

    Locally this is Spark's text file source; on Databricks, Auto Loader (`source_format: cloudFiles`). Locally every
    file under the landing directory is read, at any depth, unless a name on its path below the landing directory
    starts with `.` or `_` (files being copied in); a file's instance is the folder it sits in.
    """
    reader: DataStreamReader = spark.readStream
    if cfg.source_format == "cloudFiles":
        reader = reader.format("cloudFiles").option("cloudFiles.format", "text").option(
            "cloudFiles.maxFilesPerTrigger", str(cfg.max_files_per_trigger)
        )
        pattern = str(cfg.landing) + "/*/*"
    else:
        # A damaged gzip would fail every retry of its batch; Spark keeps its readable lines and the ingest batch
        # quarantines the rest (pipelines/bronze/damaged.py).
        reader = reader.format("text").option("maxFilesPerTrigger", str(cfg.max_files_per_trigger)) \
            .option("ignoreCorruptFiles", "true").option("recursiveFileLookup", "true")
        # The landing's own entries, listed by the source: a glob that names every file (`*/*`) makes each listing
        # (one at stream creation, one per batch) a Spark job of one task per landed file, which cost 33 s per run
        # on a 30-day landing of 6,671 files.
        pattern = str(cfg.landing.resolve()) + "/[!._]*"
    return reader.load(pattern).select("value", "_metadata")


def read_kafka(spark: SparkSession, cfg: Config) -> DataFrame:
    """Stream the records of the configured Kafka topics (`key`, `value` as strings, `topic`, `partition`, `offset`,
    `timestamp`); offsets live in the ingest checkpoint, so each record is read once.

    Offsets that retention deleted before they were read do not stop the stream (`failOnDataLoss` false): the ingest
    batch finds the gap and quarantines one record that counts it (pipelines/bronze/envelopes.py)."""
    k = cfg.kafka
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", k.bootstrap_servers or "")
        .option("subscribe", ",".join(k.topics))
        .option("startingOffsets", k.starting_offsets)
        .option("failOnDataLoss", "false")
    )
    if k.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(k.max_offsets_per_trigger))
    for key, value in k.options.items():
        reader = reader.option(key, value)
    return reader.load().select(
        F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"),
        "topic", "partition", "offset", "timestamp",
    )


def read_source(spark: SparkSession, cfg: Config) -> DataFrame:
    """The ingest stream of the configured source: landing files or Kafka topics."""
    return read_kafka(spark, cfg) if cfg.source == "kafka" else read_landing(spark, cfg)


def with_conflict_retries(name: str, commit: Callable[[], _T]) -> _T:
    """Run one Delta commit, again after a concurrent-modification conflict, with exponential backoff.

    Safe because every commit of the pipeline is idempotent: an append carries its txnVersion and a MERGE re-reads
    the table. After `CONFLICT_ATTEMPTS` the conflict is raised (the micro-batch fails and is replayed on restart)."""
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            return commit()
        except Exception as exc:  # only a commit conflict is retried; anything else is re-raised
            if not is_commit_conflict(exc) or attempt == CONFLICT_ATTEMPTS:
                raise
            conflicts_retried[name] = conflicts_retried.get(name, 0) + 1
            time.sleep(CONFLICT_BACKOFF_S * 2 ** (attempt - 1))
    raise AssertionError("unreachable")


def is_commit_conflict(exc: BaseException) -> bool:
    """True when `exc` is Delta's optimistic-concurrency conflict (one of `CONFLICT_CONDITIONS`).

    A Spark Connect client gets the error class as the exception's condition. A classic session leaves most conflicts
    as a plain Py4JJavaError, and a conflict inside a failed job is a cause of another error; both print the class in
    brackets in their text, which names the whole chain of causes."""
    if isinstance(exc, PySparkException) and exc.getCondition() in CONFLICT_CONDITIONS:
        return True
    text = str(exc)
    return any(f"[{condition}]" in text for condition in CONFLICT_CONDITIONS)


def append_once(df: DataFrame, cfg: Config, name: str, *, batch_id: int, writer_id: str) -> int:
    """Append `df` to a table exactly once per (writer, batch): a replayed batch is skipped by Delta itself.

    Returns the number of rows in `df` (cheap when `df` is persisted)."""
    ref = table(cfg, name)
    rows = df.select([c.name for c in TABLES[name].fields])
    count = rows.count()
    if count == 0:
        return 0
    writer = (
        rows.write.format("delta").mode("append")
        .option("txnAppId", f"{TXN_APP_PREFIX}.{writer_id}.{name}").option("txnVersion", batch_id)
    )
    if ref.full_name:
        full_name = ref.full_name  # narrowed to str, which a lambda does not see through `ref`
        with_conflict_retries(name, lambda: writer.saveAsTable(full_name))
    else:
        with_conflict_retries(name, lambda: writer.save(ref.path))
    return count


def append(df: DataFrame, cfg: Config, name: str) -> None:
    """A plain append (callers guarantee the rows are new)."""
    ref = table(cfg, name)
    writer = df.select([c.name for c in TABLES[name].fields]).write.format("delta").mode("append")
    if ref.full_name:
        full_name = ref.full_name  # narrowed to str, which a lambda does not see through `ref`
        with_conflict_retries(name, lambda: writer.saveAsTable(full_name))
    else:
        with_conflict_retries(name, lambda: writer.save(ref.path))


def merge(
    spark: SparkSession,
    df: DataFrame,
    cfg: Config,
    name: str,
    *,
    keys: list[str],
    update: list[str] | None = None,
    update_when: str | None = None,
    insert: bool = True,
    delete_unmatched_when: str | None = None,
) -> None:
    """One SQL MERGE of `df` into a table on `keys` (null-safe), retried after a commit conflict.

    Matched rows get the `update` columns of `df` where `update_when` holds; unmatched rows of `df` are inserted
    when `insert`; rows of the table that `df` lacks are deleted where `delete_unmatched_when` holds. Conditions
    are SQL that name the table `t` and `df` `s`."""
    with delta_sql.temp_view(df) as source:
        sql = delta_sql.merge(
            table(cfg, name).sql_name, source, on=delta_sql.null_safe_keys(keys),
            update={c: f"s.{delta_sql.quote_name(c)}" for c in update or []}, update_when=update_when,
            insert_all=insert, delete_unmatched_when=delete_unmatched_when,
        )
        with_conflict_retries(name, lambda: spark.sql(sql))


def replace_keys(
    spark: SparkSession, df: DataFrame, cfg: Config, name: str, *, keys: list[str], scope: str
) -> None:
    """Make the rows of a table that fall in `scope` exactly `df`, in one MERGE on `keys`.

    Rows of `df` are updated (only when they changed) or inserted; rows of the table in `scope` that `df` no longer
    has are deleted. `scope` is a SQL condition that refers to the table as `t`.
    """
    columns = [c.name for c in TABLES[name].fields]
    changed = " OR ".join(
        f"NOT (t.{q} <=> s.{q})" for q in (delta_sql.quote_name(c) for c in columns if c not in keys)
    )
    merge(spark, df.select(columns), cfg, name, keys=keys, update=columns, update_when=changed,
          delete_unmatched_when=scope)


def checkpoint_dir(cfg: Config, query: str) -> Path:
    """The checkpoint folder of one streaming query."""
    return cfg.checkpoint_root / query


def read_files(spark: SparkSession, paths: list[Path]) -> DataFrame:
    """A batch read of the lines of the given files, with the same columns the landing stream has, and a torn-line
    row for each damaged gzip file (as the ingest batch adds)."""
    resolved = [p.resolve() for p in paths]
    raw = spark.read.format("text").option("ignoreCorruptFiles", "true").load([str(p) for p in resolved])
    return with_torn_rows(spark, raw.select("value", "_metadata"), damaged_gzips([p.as_uri() for p in resolved]))


def landing_files(cfg: Config) -> list[Path]:
    """Every file under the landing directory that the landing stream reads: at any depth, unless a name on its path
    below the landing directory starts with `.` or `_` (files being copied in)."""
    return sorted(p for p in cfg.landing.rglob("*") if p.is_file()
                  and not any(part.startswith((".", "_")) for part in p.relative_to(cfg.landing).parts))


def landing_batch_files(cfg: Config, batch_id: int) -> list[str] | None:
    """The files the local landing stream planned for one micro-batch, from its checkpoint's file-source log (one
    JSON line per file after a version line; every tenth batch is compacted into `<id>.compact` with all earlier
    entries). None when the log cannot tell (Auto Loader keeps its own state)."""
    log = checkpoint_dir(cfg, INGEST_QUERY) / "sources" / "0"
    for name in (str(batch_id), f"{batch_id}.compact"):
        file = log / name
        if file.is_file():
            entries = [json.loads(line) for line in file.read_text().splitlines()[1:] if line.strip()]
            return [e["path"] for e in entries if e.get("batchId") == batch_id]
    return None


def empty(spark: SparkSession, name: str) -> DataFrame:
    """An empty frame with the schema of a table (for batch paths that have no tables)."""
    return spark.createDataFrame([], TABLES[name])
