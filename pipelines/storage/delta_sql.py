"""Delta statements as SQL text: what a classic session and a Spark Connect session both run (the Python
`DeltaTable` builder needs a JVM in this process, or Delta's own Connect plugin on the server)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def quote_name(name: str) -> str:
    """A column or path identifier in backticks."""
    return "`" + name.replace("`", "``") + "`"


def string_literal(value: str) -> str:
    """A SQL string literal of `value` (Spark's parser reads backslash escapes)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def timestamp_literal(value: dt.datetime) -> str:
    """A SQL timestamp of `value`, independent of the session time zone; a naive value is local time, as PySpark
    reads a naive datetime it is given."""
    aware = value if value.tzinfo is not None else value.astimezone()
    return f"timestamp_micros({(aware - _EPOCH) // dt.timedelta(microseconds=1)})"


def create_table(target: str, schema: StructType) -> str:
    """`CREATE TABLE IF NOT EXISTS` of a Delta table with `schema`'s columns, types and NOT NULL constraints
    (nested fields stay nullable, as every schema of this project declares them)."""
    columns = ", ".join(
        f"{quote_name(f.name)} {f.dataType.simpleString()}{'' if f.nullable else ' NOT NULL'}" for f in schema.fields
    )
    return f"CREATE TABLE IF NOT EXISTS {target} ({columns}) USING delta"


def merge(
    target: str,
    source: str,
    *,
    on: str,
    update: Mapping[str, str] | None = None,
    update_when: str | None = None,
    insert_all: bool = False,
    delete_unmatched_when: str | None = None,
) -> str:
    """A `MERGE INTO target t USING source s ON on` statement: update the columns of `update` (column -> source
    expression) where matched and `update_when` holds, insert unmatched source rows, delete target rows without a
    source row where `delete_unmatched_when` holds."""
    clauses = []
    if update:
        condition = f" AND ({update_when})" if update_when else ""
        assignments = ", ".join(f"t.{quote_name(c)} = {e}" for c, e in update.items())
        clauses.append(f"WHEN MATCHED{condition} THEN UPDATE SET {assignments}")
    if insert_all:
        clauses.append("WHEN NOT MATCHED THEN INSERT *")
    if delete_unmatched_when is not None:
        clauses.append(f"WHEN NOT MATCHED BY SOURCE AND ({delete_unmatched_when}) THEN DELETE")
    return f"MERGE INTO {target} t USING {source} s ON {on} " + " ".join(clauses)


def null_safe_keys(keys: Sequence[str]) -> str:
    """The ON condition that matches rows of `t` and `s` equal (null-safe) on every key."""
    return " AND ".join(f"t.{quote_name(k)} <=> s.{quote_name(k)}" for k in keys)


@contextmanager
def temp_view(df: DataFrame) -> Iterator[str]:
    """`df` as a temporary view of a fresh name for the duration of the block (a MERGE source)."""
    name = f"merge_source_{uuid.uuid4().hex}"
    df.createOrReplaceTempView(name)
    try:
        yield name
    finally:
        df.sparkSession.catalog.dropTempView(name)


def latest_version(spark: SparkSession, target: str) -> int:
    """The latest commit version of a Delta table, from `DESCRIBE HISTORY`."""
    row = spark.sql(f"DESCRIBE HISTORY {target} LIMIT 1").select("version").first()
    assert row is not None  # a Delta table's history holds at least the commit that created it
    return int(row[0])
