"""Spark SQL over the local lakehouse without Spark: delta-rs reads each Delta table's log (its files and
schema), sqlglot translates the query from Spark's dialect, DuckDB runs it over the tables' Parquet files scanned
lazily (columns and filters pushed down), and the rows come back shaped as PySpark's `collect()` shapes them.

Anything this engine cannot answer faithfully (a Delta feature it does not read, a statement or function it does not
translate, an error) raises FastSqlUnsupportedError with the reason, so that the caller can ask Spark instead."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    from sqlglot import exp

# Reader features whose tables delta-rs scans to the same rows as Spark. Deletion vectors (rows deleted without
# rewriting a file) and column mapping (physical column names that differ from the logical ones) are answered by
# Spark: a Parquet scan of such a table would return deleted rows or misnamed columns.
READABLE_READER_FEATURES = frozenset({"timestampNtz", "vacuumProtocolCheck", "v2Checkpoint", "checkpointProtection"})
# Delta's primitive types (the protocol's names) as DuckDB's.
DUCK_TYPES = {
    "string": "VARCHAR", "long": "BIGINT", "integer": "INTEGER", "short": "SMALLINT", "byte": "TINYINT",
    "float": "FLOAT", "double": "DOUBLE", "boolean": "BOOLEAN", "binary": "BLOB", "date": "DATE",
    "timestamp": "TIMESTAMPTZ", "timestamp_ntz": "TIMESTAMP",
}
# How sqlglot spells the format `unix_timestamp(x)` takes when none is given ('yyyy-MM-dd HH:mm:ss').
SPARK_DEFAULT_UNIX_FORMAT = "%Y-%mstrict-%dstrict %Hstrict:%Mstrict:%Sstrict"
# The reader features in words, for the fallback line.
FEATURE_WORDS = {"deletionVectors": "deletion vectors", "columnMapping": "column mapping"}
# Functions both engines know under one name but compute differently (Spark's hash is Murmur3 over 32 bits).
SAME_NAME_OTHER_MEANING = frozenset({"hash"})
# Spark's order of NULLs (first when ascending, last when descending), which DuckDB reverses by default.
SPARK_NULL_ORDER = "nulls_first_on_asc_last_on_desc"


class FastSqlUnsupportedError(Exception):
    """The fast engine cannot answer this query faithfully; the message says why (Spark can)."""


def delta_tables(root: Path) -> list[str]:
    """The Delta tables directly under `root` (folders with a `_delta_log`; not the `_checkpoints` and other `_`
    folders of the pipeline), by name."""
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("_") and (p / "_delta_log").is_dir())


def check_readable(name: str, protocol: Any, configuration: dict[str, str]) -> None:
    """Raise FastSqlUnsupportedError when a table needs a Delta feature that the Parquet scan lacks."""
    mapping = configuration.get("delta.columnMapping.mode", "none")
    if mapping != "none":
        raise FastSqlUnsupportedError(f"{name} uses Delta column mapping (mode {mapping})")
    features = set(protocol.reader_features or ())
    unread = sorted(FEATURE_WORDS.get(f, f) for f in features - READABLE_READER_FEATURES)
    if protocol.min_reader_version >= 3 and unread:
        raise FastSqlUnsupportedError(f"{name} uses Delta features the fast engine does not read ({', '.join(unread)})")
    if protocol.min_reader_version > 3:
        raise FastSqlUnsupportedError(f"{name} needs Delta reader version {protocol.min_reader_version}")
    if configuration.get("delta.enableDeletionVectors", "false").lower() == "true":
        raise FastSqlUnsupportedError(f"{name} has deletion vectors enabled")


def duck_type(delta_type: Any) -> str:
    """The DuckDB type of a Delta schema type (the JSON of the Delta protocol: a name, or an array, map or struct)."""
    if isinstance(delta_type, dict):
        kind = delta_type["type"]
        if kind == "array":
            return f"{duck_type(delta_type['elementType'])}[]"
        if kind == "map":
            return f"MAP({duck_type(delta_type['keyType'])}, {duck_type(delta_type['valueType'])})"
        if kind == "struct":
            return "STRUCT(" + ", ".join(f"{_quote(f['name'])} {duck_type(f['type'])}"
                                         for f in delta_type["fields"]) + ")"
        raise FastSqlUnsupportedError(f"unknown Delta type {kind!r}")
    if delta_type in DUCK_TYPES:
        return DUCK_TYPES[delta_type]
    if delta_type.startswith("decimal("):
        return str(delta_type).upper()
    raise FastSqlUnsupportedError(f"unknown Delta type {delta_type!r}")


def view_sql(name: str, fields: list[dict[str, Any]], files: list[str], in_files: set[str]) -> str:
    """A DuckDB view of one Delta table: its files scanned lazily by DuckDB's Parquet reader, every column cast to
    its Delta type (Spark writes timestamps as INT96, which DuckDB reads without a zone), NULL for a column that none
    of the files has yet."""
    columns = ", ".join(
        f"CAST({_quote(f['name']) if f['name'] in in_files else 'NULL'} AS {duck_type(f['type'])}) "
        f"AS {_quote(f['name'])}" for f in fields)
    if not files:
        return f"CREATE VIEW {_quote(name)} AS SELECT {columns} WHERE false"
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    return f"CREATE VIEW {_quote(name)} AS SELECT {columns} FROM read_parquet([{listed}], union_by_name = true)"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def spark_value(value: Any) -> Any:
    """A value as PySpark's `collect()` gives it: timestamps with a zone as naive local times, structs as dicts."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone().replace(tzinfo=None)
    if isinstance(value, dict):
        return {k: spark_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [spark_value(v) for v in value]
    return value


def _spark_name(node: exp.Expression) -> str:
    """The name Spark gives an unaliased select item: its SQL with lower-case functions, count(*) as count(1),
    parenthesised operators and string literals unquoted."""
    from sqlglot import exp

    def spark_form(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Count) and isinstance(n.this, exp.Star):
            return exp.Anonymous(this="count", expressions=[exp.Literal.number(1)])
        if isinstance(n, exp.Literal) and n.is_string:
            return exp.Var(this=n.this)
        if isinstance(n, (exp.Binary, exp.Not)) and not isinstance(n, (exp.Dot, exp.Bracket)) \
                and not isinstance(n.parent, exp.Paren):
            return exp.Paren(this=n.copy())
        return n

    if isinstance(node, exp.Column):
        return node.name
    return node.copy().transform(spark_form).sql(dialect="spark", normalize_functions="lower")


def _with_spark_names(select: object) -> None:
    """Alias each unaliased computed item of the outermost SELECT as Spark names it, so both engines agree."""
    from sqlglot import exp

    if not isinstance(select, exp.Select):
        return
    select.set("expressions", [
        item if isinstance(item, (exp.Alias, exp.Column, exp.Star))
        else exp.alias_(item, _spark_name(item), quoted=True) for item in select.expressions])


def _epoch_of_timestamps(node: exp.Expression) -> exp.Expression:
    """`unix_timestamp(ts)` with Spark's default format: sqlglot makes it a string parse, which DuckDB refuses for a
    timestamp; an epoch of the value cast to a zoned timestamp answers for timestamps and default-format strings."""
    from sqlglot import exp

    if isinstance(node, exp.StrToUnix) and node.args.get("format") is not None \
            and node.args["format"].this == SPARK_DEFAULT_UNIX_FORMAT:
        zoned = exp.cast(node.this.copy(), exp.DataType.build("TIMESTAMPTZ", dialect="duckdb"))
        seconds = exp.Floor(this=exp.Anonymous(this="epoch", expressions=[zoned]))
        return exp.cast(seconds, exp.DataType.build("BIGINT"))
    return node


def translate(query: str) -> tuple[str, set[str]]:
    """The DuckDB form of one Spark SQL query and the unqualified table names it reads (FastSqlUnsupportedError when the
    text is not one query, or uses what sqlglot cannot translate)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = [s for s in sqlglot.parse(query, read="spark") if s is not None]
    except SqlglotError as exc:
        raise FastSqlUnsupportedError(f"the query does not parse as Spark SQL here ({_first_line(exc)})") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise FastSqlUnsupportedError("the fast engine answers one SELECT (or WITH, VALUES) query at a time")
    tree = statements[0]
    _with_spark_names(tree)
    duck_tree = tree.transform(_epoch_of_timestamps)
    for call in tree.find_all(exp.Anonymous):
        if call.name.lower() in SAME_NAME_OTHER_MEANING:
            raise FastSqlUnsupportedError(f"DuckDB's {call.name.lower()}() differs from Spark's")
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    tables = {t.name for t in tree.find_all(exp.Table) if not t.db and t.name not in ctes}
    try:
        return duck_tree.sql(dialect="duckdb", unsupported_level=sqlglot.ErrorLevel.RAISE), tables
    except SqlglotError as exc:
        raise FastSqlUnsupportedError(f"the query uses what the fast engine does not translate ({_first_line(exc)})") \
            from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class FastLakehouse:
    """The Delta tables under one lakehouse directory, each a DuckDB view of its own name, opened on first use."""

    def __init__(self, root: Path) -> None:
        import duckdb

        self.root = root
        self.tables = delta_tables(root)
        self._registered: set[str] = set()
        self._conn: duckdb.DuckDBPyConnection = duckdb.connect()
        self._conn.execute("SET TimeZone = 'UTC'")  # Spark's session zone in this project: hour() etc. agree
        self._conn.execute(f"SET default_null_order = '{SPARK_NULL_ORDER}'")

    def _register(self, name: str) -> None:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError

        if name in self._registered:
            return
        try:
            table = DeltaTable(str(self.root / name))
            metadata = table.metadata()
            check_readable(name, table.protocol(), dict(metadata.configuration))
            if metadata.partition_columns:
                raise FastSqlUnsupportedError(f"{name} is partitioned ({', '.join(metadata.partition_columns)})")
            files = table.file_uris()
            fields = json.loads(table.schema().to_json())["fields"]
        except DeltaError as exc:
            raise FastSqlUnsupportedError(f"delta-rs cannot read {name} ({_first_line(exc)})") from None
        self._conn.execute(view_sql(name, fields, files, self._file_columns(files)))
        self._registered.add(name)

    def _file_columns(self, files: list[str]) -> set[str]:
        """The top-level columns present in at least one of the files (a column added later is in none of the older
        ones)."""
        if not files:
            return set()
        found = self._conn.execute("DESCRIBE SELECT * FROM read_parquet(?, union_by_name = true)", [files])
        return {row[0] for row in found.fetchall()}

    def schema(self, name: str) -> list[tuple[str, str]]:
        """(column, DuckDB type) of one table, in order (KeyError for an unknown name)."""
        if name not in self.tables:
            raise KeyError(name)
        self._register(name)
        return [(row[0], row[1]) for row in self._conn.execute(f'DESCRIBE "{name}"').fetchall()]

    def query(self, query: str, *, limit: int | None = None) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows (at most `limit`) of one Spark SQL query, values shaped as PySpark collects them."""
        import duckdb

        duck_sql, referenced = translate(query)
        for name in sorted(referenced & set(self.tables)):
            self._register(name)
        try:
            cursor = self._conn.execute(duck_sql)
            columns = [d[0] for d in cursor.description or []]
            rows = cursor.fetchall() if limit is None else cursor.fetchmany(limit)
        except duckdb.Error as exc:
            raise FastSqlUnsupportedError(f"DuckDB rejects the query ({_first_line(exc)})") from None
        return columns, [[spark_value(v) for v in row] for row in rows]

    def rows(self, query: str) -> list[dict[str, Any]]:
        """Every row of one query as a dict of column to value (the shape of `Row.asDict(recursive=True)`)."""
        columns, rows = self.query(query)
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def close(self) -> None:
        """Release DuckDB's connection."""
        self._conn.close()
