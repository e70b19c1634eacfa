"""The lakehouse's Delta tables: where each one lives (a path or a Unity Catalog name), created or brought up
to date with its declared schema, read as a batch or a stream, and its latest version."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from pipelines.settings.config import Config, ConfigError
from pipelines.state.errors import PipelineStateError
from pipelines.storage import delta_sql
from schemas.tables import TABLES

if TYPE_CHECKING:
    from delta.tables import DeltaTable

# A commit file of a Delta log: its name is the table version it made (the Delta protocol's layout).
_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


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
        return self.schema(spark) is not None

    def schema(self, spark: SparkSession) -> StructType | None:
        """The table's schema, or None when it does not exist."""
        if self.full_name:
            return spark.read.table(self.full_name).schema if spark.catalog.tableExists(self.full_name) else None
        try:
            # Resolving the schema reads the log's metadata only; DESCRIBE DETAIL also lists every data file (a Spark
            # job per table: 0.4-0.8 s each at the start of every run).
            return spark.read.format("delta").load(self.path).schema
        except AnalysisException:
            return None


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
        actual = ref.schema(spark)  # one read of the table's log, for both questions (it cost two before)
        if actual is not None:
            _upgrade(spark, ref, actual, TABLES[name])
        else:
            spark.sql(delta_sql.create_table(ref.sql_name, TABLES[name]))

    # Each table is its own Delta log, and most of a creation is the driver waiting on one table's files and
    # commit: side by side, a fresh lakehouse's tables take a fraction of the time one after the other did.
    with ThreadPoolExecutor(max_workers=SETUP_THREADS, thread_name_prefix="ensure-table") as pool:
        for _ in pool.map(ensure, names or list(TABLES)):
            pass  # re-raises the first table's error, after every table was tried


def _upgrade(spark: SparkSession, ref: TableRef, schema: StructType, declared: StructType) -> None:
    actual = {f.name: f for f in schema.fields}
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
    found = local_version(cfg, name)
    return found if found is not None else delta_sql.latest_version(spark, table(cfg, name).sql_name)


def _log_dir(cfg: Config, name: str) -> Path | None:
    """The `_delta_log` folder of a table under the lakehouse directory; None for a catalog table."""
    path = table(cfg, name).path
    return None if path is None else Path(path) / "_delta_log"


def local_version(cfg: Config, name: str) -> int | None:
    """The newest commit in the `_delta_log` folder of a table under the lakehouse directory, None when there is
    none to see (a catalog table, a path this process cannot see, a table not created yet)."""
    log = _log_dir(cfg, name)
    if log is None:
        return None
    try:
        with os.scandir(log) as entries:
            found = [int(m.group(1)) for entry in entries if (m := _COMMIT_FILE.match(entry.name))]
    except (FileNotFoundError, NotADirectoryError):
        return None
    return max(found, default=None)


def local_file_count(cfg: Config, name: str) -> int | None:
    """The data files of a table's newest version, from the checksum Delta writes beside each commit
    (`<version>.crc`), without Spark; None when there is none to read (a catalog table, no table yet, a commit whose
    checksum is not written, or one that cannot be parsed)."""
    version, log = local_version(cfg, name), _log_dir(cfg, name)
    if version is None or log is None:
        return None
    try:
        found = json.loads((log / f"{version:020d}.crc").read_bytes())
        return int(found["numFiles"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# The operations that rearrange or delete files without changing a row (their commits' actions say dataChange false).
_NO_ROW_CHANGED = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END"})


def local_commits_change_no_row(cfg: Config, name: str, after: int, upto: int) -> bool:
    """Whether every commit of a table after version `after` up to `upto` is a compaction or a vacuum, whose actions
    change no row, read from its local log; False when one is anything else or cannot be read."""
    log = _log_dir(cfg, name)
    if log is None:
        return False
    try:
        for version in range(after + 1, upto + 1):
            for line in (log / f"{version:020d}.json").read_text(encoding="utf-8").splitlines():
                action = json.loads(line) if line.strip() else {}
                if "commitInfo" in action and action["commitInfo"].get("operation") not in _NO_ROW_CHANGED:
                    return False
                if any(action.get(kind, {}).get("dataChange", False) for kind in ("add", "remove")):
                    return False
    except (OSError, ValueError, AttributeError):
        return False
    return True


def local_versions(cfg: Config, names: Iterable[str]) -> dict[str, int] | None:
    """`local_version` of each named table; None when any one has none to read (the caller then asks Spark, or
    does the work)."""
    found: dict[str, int] = {}
    for name in sorted(names):
        if (version := local_version(cfg, name)) is None:
            return None
        found[name] = version
    return found


def read_table_stream(spark: SparkSession, cfg: Config, name: str) -> DataFrame:
    """A streaming read of one Delta table (new commits only)."""
    ref = table(cfg, name)
    reader = spark.readStream.format("delta")
    return reader.table(ref.full_name) if ref.full_name else reader.load(ref.path)


def empty(spark: SparkSession, name: str) -> DataFrame:
    """An empty frame with the schema of a table (for batch paths that have no tables)."""
    return spark.createDataFrame([], TABLES[name])


def register_views(spark: SparkSession, cfg: Config) -> list[str]:
    """Make every existing table queryable by its own name, so that `SHOW TABLES` lists exactly them: temporary
    views over the Delta paths, or, with Unity Catalog, the configured catalog and schema made current."""
    if cfg.uses_catalog:
        assert cfg.catalog is not None  # uses_catalog is `catalog is not None`
        spark.catalog.setCurrentCatalog(cfg.catalog)
        assert cfg.schema_name is not None  # Config requires schema beside catalog
        spark.catalog.setCurrentDatabase(cfg.schema_name)
        return [name for name in TABLES if table(cfg, name).exists(spark)]
    names = []
    for name in TABLES:
        if not table(cfg, name).exists(spark):
            # A view left by another lakehouse in this session must not answer for a table this one lacks.
            spark.catalog.dropTempView(name)
            continue
        read_table(spark, cfg, name).createOrReplaceTempView(name)
        names.append(name)
    return names


def reset(cfg: Config) -> None:
    """Delete every table and checkpoint of a local lakehouse, keeping the landing files (`run --rebuild`)."""
    if cfg.uses_catalog:
        raise ConfigError("--rebuild works on local lakehouses only; drop the Unity Catalog tables by hand")
    for name in TABLES:
        shutil.rmtree(cfg.lakehouse / name, ignore_errors=True)
    shutil.rmtree(cfg.checkpoint_root, ignore_errors=True)
