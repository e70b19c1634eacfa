"""`rebalance sql`: one query, or a prompt, over every table as a view of its own name.

On the local default the fast engine answers (pipelines.storage.fastsql: delta-rs and DuckDB, no JVM); Spark answers
with `--engine spark`, `--remote` (or SPARK_REMOTE), on Databricks, for Unity Catalog tables, and for any query the fast
engine rejects. Both engines print through the same code, so the output has one shape."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipelines.settings.config import Config, ConfigError

Rows = tuple[list[str], list[list[Any]]]
HISTORY_FILE = Path("~/.rebalance_sql_history")
PROMPT, MORE = "rebalance> ", "      ...> "


def uses_spark(args: argparse.Namespace, cfg: Config) -> str | None:
    """Why Spark answers rather than the fast engine (None: the fast engine answers)."""
    if getattr(args, "engine", "auto") == "spark":
        return "--engine spark"
    if getattr(args, "remote", None) or os.environ.get("SPARK_REMOTE"):
        return "a Spark Connect server"
    if "DATABRICKS_RUNTIME_VERSION" in os.environ:
        return "the Databricks runtime"
    if cfg.uses_catalog:
        return "Unity Catalog tables"
    return None


def print_rows(columns: list[str], rows: list[list[Any]], fmt: str, *, out=None) -> None:
    """Print a result as `table` (aligned, then "(N rows)"), `json` (one object per row) or `csv`."""
    from jobs.commands import _format_cell, _json_value, print_table

    out = out or sys.stdout
    if fmt == "json":
        for row in rows:
            out.write(json.dumps({c: _json_value(v) for c, v in zip(columns, row, strict=True)}) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows([[_format_cell(v) for v in row] for row in rows])
    else:
        print_table(columns, rows, out=out, max_width=100)
        out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


class Engines:
    """The fast engine of a local lakehouse and, started only when needed, Spark over the same tables."""

    def __init__(self, args: argparse.Namespace, cfg: Config) -> None:
        self.args, self.cfg = args, cfg
        self.spark_reason = uses_spark(args, cfg)
        self.fast = None
        self._spark = None
        self.views: list[str] = []
        if self.spark_reason is None:
            from pipelines.storage.fastsql import FastLakehouse

            if not cfg.lakehouse.is_dir():
                raise ConfigError(f"no lakehouse at {cfg.lakehouse}; run `rebalance demo` or `rebalance run` first, "
                                  "or pass --lakehouse DIR")
            self.fast = FastLakehouse(cfg.lakehouse)
            self.views = list(self.fast.tables)
            if not self.views:
                raise ConfigError(f"{cfg.lakehouse} holds no tables yet; run `rebalance run` first")
        else:
            self.spark()

    def spark(self):
        """The Spark session with every table registered as a view (started on first use)."""
        if self._spark is None:
            from jobs.commands import _open_lakehouse

            _cfg, self._spark, self.views = _open_lakehouse(self.args, "rebalance-sql")
        return self._spark

    def spark_query(self, query: str, limit: int) -> Rows:
        """Columns and rows of one query answered by Spark (ConfigError for a query Spark rejects)."""
        from pyspark.errors import AnalysisException, ParseException
        from pyspark.logger import PySparkLogger

        spark = self.spark()
        # The command reports a query Spark rejects in one line; PySpark would also log a JSON record of it with the
        # whole JVM stack trace on stderr. Only while this query runs: the loggers are the process's.
        loggers = [PySparkLogger.getLogger(name) for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
        was = [logger.disabled for logger in loggers]
        for logger in loggers:
            logger.disabled = True
        try:
            df = spark.sql(query)
            return df.columns, [list(r) for r in df.limit(limit).collect()]
        except (AnalysisException, ParseException) as exc:
            raise ConfigError(f"the query is not valid: {str(exc).splitlines()[0]}; "
                              f"tables: {', '.join(self.views)}") from None
        finally:
            for logger, disabled in zip(loggers, was, strict=True):
                logger.disabled = disabled

    def query(self, query: str, limit: int, *, warn: Callable[[str], None]) -> Rows:
        """Answer with the fast engine where it can; else say why on `warn` and answer with Spark. A query over a
        derived table that lags the hot tables says so on `warn` first."""
        from pipelines.state.pending import lag_note
        from schemas.tables import DERIVED_TABLES

        note = lag_note(self.cfg, [name for name in DERIVED_TABLES if name in query.lower()])
        if note is not None:
            warn(f"rebalance sql: {note}")
        if self.fast is not None:
            from pipelines.storage.fastsql import FastSqlUnsupportedError

            if _is_show_tables(query):
                return ["namespace", "tableName", "isTemporary"], [["", name, True] for name in self.views]
            try:
                return self.fast.query(query, limit=limit)
            except FastSqlUnsupportedError as exc:
                warn(f"rebalance sql: {exc}; answering with Spark (a few seconds more)")
        return self.spark_query(query, limit)


def _is_show_tables(query: str) -> bool:
    return " ".join(query.strip().rstrip(";").split()).upper() == "SHOW TABLES"


def _warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_sql(args: argparse.Namespace, cfg: Config) -> int:
    """Run one SQL query over the tables and print the result, or open the prompt when there is no query."""
    engines = Engines(args, cfg)
    if args.query is None:
        return shell(engines, args)
    columns, rows = engines.query(args.query, args.limit, warn=_warn)
    print_rows(columns, rows, args.format)
    return 0


def shell(engines: Engines, args: argparse.Namespace, *, stdin=None) -> int:
    """The prompt: statements end with `;` (several lines until then), `.tables`, `.schema NAME`, `.quit`; history
    is kept in ~/.rebalance_sql_history. From a pipe (not a terminal) it reads the same way without prompting."""
    stdin = stdin or sys.stdin
    interactive = stdin.isatty()
    history = HISTORY_FILE.expanduser()
    readline = _readline(history)
    if interactive:  # a script piped in gets only the answers, as from sqlite3
        print(f"rebalance sql on {engines.cfg.lakehouse} ({'Spark' if engines.fast is None else 'fast engine'}); "
              "end a query with ';', .tables, .schema NAME, .help, .quit", flush=True)
    pending: list[str] = []
    while True:
        line = _read(MORE if pending else PROMPT, stdin, interactive)
        if line is None:
            break
        if readline is not None and not interactive and line.strip():
            readline.add_history(line)  # input() keeps a typed line itself; a piped one is kept the same way
        if not pending and line.strip().startswith("."):
            if not _dot_command(engines, line.strip()):
                break
            continue
        pending.append(line)
        text = "\n".join(pending).strip()
        if not text.endswith(";"):
            continue
        pending = []
        if text.rstrip(";").strip():
            _answer(engines, text.rstrip(";"), args)
    if readline is not None:
        _save_history(readline, history)
    return 0


def _answer(engines: Engines, query: str, args: argparse.Namespace) -> None:
    try:
        columns, rows = engines.query(query, args.limit, warn=_warn)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return
    print_rows(columns, rows, args.format)
    sys.stdout.flush()


def _dot_command(engines: Engines, line: str) -> bool:
    """Run one dot command; False for `.quit`."""
    word, _, rest = line.partition(" ")
    if word in (".quit", ".exit", ".q"):
        return False
    if word == ".tables":
        print("\n".join(engines.views), flush=True)
    elif word == ".schema" and rest.strip():
        name = rest.strip()
        if name not in engines.views:
            print(f"error: no table {name!r}; .tables lists them", file=sys.stderr, flush=True)
        elif engines.fast is not None:
            print_rows(["column", "type"], [list(c) for c in engines.fast.schema(name)], "table")
        else:
            df = engines.spark().table(name)
            print_rows(["column", "type"], [[f.name, f.dataType.simpleString()] for f in df.schema.fields], "table")
    else:
        print(".tables            the tables\n.schema NAME       one table's columns and types\n"
              ".quit              leave (so does Ctrl-D)\nanything else is SQL, run when a line ends with ';'",
              flush=True)
    sys.stdout.flush()
    return True


def _read(prompt: str, stdin, interactive: bool) -> str | None:
    if interactive:
        try:
            return input(prompt)
        except EOFError:
            print()
            return None
    line = stdin.readline()
    return None if line == "" else line.rstrip("\n")


def _readline(history: Path):
    try:
        import readline
    except ImportError:  # Windows without pyreadline: the prompt works, without history
        return None
    with contextlib.suppress(OSError):  # no history yet
        readline.read_history_file(history)
    readline.set_history_length(1000)
    return readline


def _save_history(readline, history: Path) -> None:
    try:
        readline.write_history_file(history)
    except OSError as exc:
        _warn(f"rebalance sql: history not saved to {history}: {exc}")
