"""Writes to the lakehouse's Delta tables: appends made once per micro-batch, MERGEs, and the retry of a commit that
lost a race with another writer. Every write of the pipeline goes through here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from pipelines.settings.config import Config
from pipelines.storage import delta_sql
from pipelines.storage.lake import table
from schemas.tables import TABLES

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
    """True when `exc` is Delta's optimistic-concurrency conflict (one of `CONFLICT_CONDITIONS`, or a sub-condition of
    one: Delta 4.4 reports `DELTA_CONCURRENT_APPEND.WITHOUT_HINT`).

    A Spark Connect client gets the error class as the exception's condition. A classic session leaves most conflicts
    as a plain Py4JJavaError, and a conflict inside a failed job is a cause of another error; both print the class in
    brackets in their text, which names the whole chain of causes."""
    if isinstance(exc, PySparkException) and (exc.getCondition() or "").split(".")[0] in CONFLICT_CONDITIONS:
        return True
    text = str(exc)
    return any(f"[{condition}]" in text or f"[{condition}." in text for condition in CONFLICT_CONDITIONS)


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
        # On the source's own session, where its view is: a micro-batch's frames belong to the stream's session,
        # whose temporary views the caller's session does not see.
        with_conflict_retries(name, lambda: df.sparkSession.sql(sql))


def replace_keys(
    spark: SparkSession, df: DataFrame, cfg: Config, name: str, *, keys: list[str], scope: str,
    keep: tuple[str, ...] = (),
) -> None:
    """Make the rows of a table that fall in `scope` exactly `df`, in one MERGE on `keys`.

    Rows of `df` are updated (only when they changed) or inserted; rows of the table in `scope` that `df` no longer
    has are deleted. `scope` is a SQL condition that refers to the table as `t`. Columns in `keep` belong to another
    writer: a matched row keeps its stored value, and a change there alone is no change.
    """
    columns = [c.name for c in TABLES[name].fields]
    owned = [c for c in columns if c not in keep]
    changed = " OR ".join(
        f"NOT (t.{q} <=> s.{q})" for q in (delta_sql.quote_name(c) for c in owned if c not in keys)
    )
    merge(spark, df.select(columns), cfg, name, keys=keys, update=owned, update_when=changed,
          delete_unmatched_when=scope)

