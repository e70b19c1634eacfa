"""`rebalance sql` and the report's data on both engines: the fast engine (delta-rs, sqlglot, DuckDB) must print what
Spark prints, query for query, on real lakehouses written by the pipeline; and it must leave to Spark what it cannot
read faithfully."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from jobs.cli import main

ROOT = Path(__file__).resolve().parents[1]
# The README and the pages it links to in docs/ (its reference sections live there).
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# The queries people type: the README's own, then group by, windows, timestamps, arrays of evidence, joins of
# rebalances with their events, a CTE, unaliased expressions (whose column names must match too).
TYPICAL = [
    "SELECT cause, count(*) FROM gold_rebalances GROUP BY cause",
    "SELECT group_id, cause, count(*) AS n, sum(duration_ms) AS total_ms, round(avg(duration_ms) / 1000, 1) AS avg_s, "
    "max(duration_ms) FROM gold_rebalances GROUP BY group_id, cause HAVING count(*) > 0 ORDER BY total_ms DESC",
    "SELECT group_id, rebalance_id, started_at, "
    "row_number() OVER (PARTITION BY group_id ORDER BY started_at, rebalance_id) AS n, "
    "sum(duration_ms) OVER (PARTITION BY group_id ORDER BY started_at, rebalance_id) AS running_ms, "
    "lag(cause) OVER (PARTITION BY group_id ORDER BY started_at, rebalance_id) AS previous_cause, "
    "rank() OVER (ORDER BY duration_ms DESC) AS longest FROM gold_rebalances",
    "SELECT date_trunc('hour', started_at) AS hour, hour(started_at) AS h, count(*) AS n, min(started_at) AS first, "
    "max(completed_at) AS last FROM gold_rebalances GROUP BY 1, 2 ORDER BY 1",
    "SELECT rebalance_id, date_format(started_at, 'yyyy-MM-dd HH:mm:ss') AS at, to_date(started_at) AS day, "
    "unix_timestamp(completed_at) - unix_timestamp(started_at) AS seconds, completed_at > started_at AS ordered "
    "FROM gold_rebalances WHERE started_at >= TIMESTAMP '2026-11-20 08:30:00' ORDER BY started_at, rebalance_id",
    "SELECT rebalance_id, size(evidence) AS n, evidence[0].explanation AS first, evidence[0].event_id AS first_id, "
    "evidence FROM gold_rebalances ORDER BY rebalance_id",
    "SELECT r.rebalance_id, e.event_id, e.explanation FROM gold_rebalances r LATERAL VIEW explode(r.evidence) t AS e",
    "SELECT incident_id, causes, array_contains(causes, 'gc_pause') AS gc, rebalance_ids, summary "
    "FROM gold_incidents WHERE size(rebalance_ids) > 1",
    "SELECT r.rebalance_id, r.cause, count(e.event_id) AS events, count(DISTINCT e.member_id) AS members, "
    "min(e.event_ts) AS first_event FROM gold_rebalances r JOIN silver_events e ON e.group_id = r.group_id "
    "AND e.event_ts BETWEEN r.started_at AND r.completed_at GROUP BY r.rebalance_id, r.cause",
    "SELECT r.group_id, r.started_at, e.event_type, e.reason FROM gold_rebalances r LEFT JOIN silver_events e "
    "ON e.event_id = r.evidence[0].event_id ORDER BY r.started_at, r.group_id",
    "WITH worst AS (SELECT group_id, sum(duration_ms) AS ms FROM gold_rebalances GROUP BY group_id ORDER BY ms DESC "
    "LIMIT 2) SELECT w.group_id, w.ms, i.incident_id, i.started_at FROM worst w JOIN gold_incidents i "
    "ON i.group_id = w.group_id ORDER BY i.started_at",
    "SELECT group_id, coalesce(trigger_member_id, 'none') AS who, CASE WHEN duration_ms > 5000 THEN 'long' ELSE "
    "'short' END AS kind, upper(cause) AS cause, length(rebalance_id) AS id_length FROM gold_rebalances",
    "SELECT event_type, count(*) AS n FROM silver_events GROUP BY event_type",
    "SELECT instance, max(duration_ms) AS longest_ms FROM silver_gc_pauses GROUP BY instance",
    "SHOW TABLES",
]


def readme_queries() -> list[str]:
    """Every complete query of the `rebalance sql` examples of the README and its docs/ pages."""
    return [q for page in DOCS for q in re.findall(r'"(SELECT [^"]+)"', page.read_text(encoding="utf-8"))
            if "..." not in q]


def estate_tables(lakehouse: Path) -> list[str]:
    """The Delta tables of a lakehouse."""
    from pipelines.storage.fastsql import delta_tables

    return delta_tables(lakehouse)


def every_table(lakehouse: Path) -> list[str]:
    """`SELECT *` of every table: each Delta type the pipeline writes, through both readers."""
    from pipelines.storage.fastsql import delta_tables

    return [f"SELECT * FROM {name}" for name in delta_tables(lakehouse)]


def _normal(value):
    """Only what may differ without being wrong: the last bits of a float (summation order)."""
    if isinstance(value, float):
        return round(value, 9) if math.isfinite(value) else str(value)
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return value


def answer(capsys, lakehouse: Path, query: str, engine: str, fmt: str = "json") -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `rebalance sql` on one engine."""
    code = main(["sql", query, "--lakehouse", str(lakehouse), "--engine", engine, "--format", fmt,
                 "--limit", "1000000"])
    out, err = capsys.readouterr()
    return code, out, err


# Queries whose order is total (a unique last key): the order itself must agree, NULLs first when ascending and last
# when descending as in Spark; printed as table and csv text, the bytes must agree.
ORDERED = [
    "SELECT group_id, started_at, duration_ms, cause, evidence FROM gold_rebalances ORDER BY started_at, rebalance_id",
    "SELECT trigger_member_id, rebalance_id FROM gold_rebalances ORDER BY trigger_member_id, rebalance_id",
    "SELECT trigger_member_id, rebalance_id FROM gold_rebalances ORDER BY trigger_member_id DESC, rebalance_id",
]


def _rows(text: str) -> list:
    return [_normal(json.loads(line)) for line in text.splitlines()]


def assert_engines_agree(capsys, lakehouse: Path, queries: list[str]) -> None:
    """Each query answered by the fast engine (no fallback) and by Spark gives the same columns and the same rows (as
    a multiset: Spark leaves the order of ties open); the ORDERED queries give the same sequence and text."""
    for query in queries:
        code, fast, err = answer(capsys, lakehouse, query, "auto")
        assert code == 0 and "answering with Spark" not in err, (query, err)
        code, slow, err = answer(capsys, lakehouse, query, "spark")
        assert code == 0, (query, err)
        fast_rows, slow_rows = _rows(fast), _rows(slow)
        assert [list(r) for r in fast_rows[:1]] == [list(r) for r in slow_rows[:1]], query  # column names, in order
        key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
        assert sorted(fast_rows, key=key) == sorted(slow_rows, key=key), query
    for query in ORDERED:
        assert _rows(answer(capsys, lakehouse, query, "auto")[1]) == _rows(answer(capsys, lakehouse, query, "spark")[1])
        for fmt in ("table", "csv"):
            assert answer(capsys, lakehouse, query, "auto", fmt)[1] == answer(capsys, lakehouse, query, "spark", fmt)[1]


def test_both_engines_answer_alike_on_the_simulated_estate(estate, capsys):
    lakehouse = estate["cfg"].lakehouse
    assert len(readme_queries()) >= 4
    assert_engines_agree(capsys, lakehouse, readme_queries() + TYPICAL + every_table(lakehouse))


def test_both_engines_collect_the_same_report_data(spark, estate):
    from pipelines.report.data import collect, collect_fast

    cfg = estate["cfg"]
    for group_types in ((), ("consumer",), ("streams", "share")):
        fast = collect_fast(cfg, group_types=group_types)
        slow = collect(spark, cfg, group_types=group_types)
        assert list(fast) == list(slow)
        for section in slow:
            assert [_normal(r) for r in fast[section]] == [_normal(r) for r in slow[section]], section
    assert collect_fast(cfg)["rebalances"], "the estate has rebalances: the comparison is not of empty lists"


def test_a_query_the_fast_engine_rejects_is_answered_by_spark(estate, capsys):
    lakehouse = estate["cfg"].lakehouse
    # A Spark function DuckDB does not have, and one DuckDB has under the same name with another meaning: one line on
    # stderr, then Spark's answer.
    for call in ("format_number(duration_ms, 0)", "hash(rebalance_id)"):
        query = f"SELECT rebalance_id, {call} AS x FROM gold_rebalances"
        code, out, err = answer(capsys, lakehouse, query, "auto")
        assert code == 0 and err.count("answering with Spark") == 1, err
        assert out == answer(capsys, lakehouse, query, "spark")[1] and out.count("\n") > 10
    # A statement that is not a query goes to Spark too.
    code, out, err = answer(capsys, lakehouse, "DESCRIBE gold_incidents", "auto")
    assert code == 0 and "answering with Spark" in err and "incident_id" in out
    # A query Spark rejects as well ends as today: exit 2 and Spark's reason.
    code, _out, err = answer(capsys, lakehouse, "SELECT no_such_column FROM gold_rebalances", "auto")
    assert code == 2 and "the query is not valid" in err


@pytest.mark.parametrize("properties", [
    {"delta.enableDeletionVectors": "true"},
    {"delta.columnMapping.mode": "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"},
])
def test_delta_features_the_parquet_scan_cannot_read_go_to_spark(spark, tmp_path, capsys, properties):
    """Databricks enables deletion vectors and column mapping; a table with either is read by Spark, whose answer
    reflects the deleted rows and the renamed column."""
    lakehouse = tmp_path / "lakehouse"
    path = lakehouse / "gold_alerts"
    spark.range(10).selectExpr("CAST(id AS STRING) AS alert_id", "id % 3 AS severity").write.format("delta") \
        .save(str(path))
    sets = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({sets})")
    if "delta.columnMapping.mode" in properties:
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN severity TO level")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE alert_id = '0'")
    column = "level" if "delta.columnMapping.mode" in properties else "severity"
    code, out, err = answer(capsys, lakehouse, f"SELECT alert_id, {column} FROM gold_alerts", "auto")
    assert code == 0 and err.count("answering with Spark") == 1, err
    assert ("deletion vectors" if "delta.enableDeletionVectors" in properties else "column mapping") in err
    assert sorted(json.loads(line)["alert_id"] for line in out.splitlines()) == [str(i) for i in range(1, 10)]


def test_the_prompt_answers_multi_line_queries_and_dot_commands(estate, tmp_path, capsys):
    """`rebalance sql` without a query, driven through stdin as a person types: a query over three lines ended by
    `;`, `.tables`, `.schema NAME`, an unknown table (an error, and the prompt goes on), `.quit`."""
    import os
    import subprocess
    import sys

    lakehouse = estate["cfg"].lakehouse
    typed = ("SELECT cause, count(*) AS n\n  FROM gold_rebalances\n  GROUP BY cause ORDER BY cause;\n"
             ".tables\n.schema gold_incidents\n.schema nothing_here\n"
             "SELECT count(*) AS n FROM gold_incidents;\n.quit\nSELECT 'never run';\n")
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "sql", "--lakehouse", str(lakehouse)], input=typed,
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    main(["sql", "SELECT cause, count(*) AS n FROM gold_rebalances GROUP BY cause ORDER BY cause",
          "--lakehouse", str(lakehouse)])
    expected = capsys.readouterr().out
    assert expected in out  # the three-line query, printed as the one-shot command prints it
    assert set(estate_tables(lakehouse)) <= set(out.splitlines())  # .tables, one name a line
    assert re.search(r"\n\s*incident_id\s+VARCHAR\n", out) and "causes" in out  # .schema gold_incidents
    assert "no table 'nothing_here'" in done.stderr
    main(["sql", "SELECT count(*) AS n FROM gold_incidents", "--lakehouse", str(lakehouse)])
    assert capsys.readouterr().out in out  # the prompt went on after the error
    assert "never run" not in out and "rebalance>" not in out  # no prompt text when stdin is a pipe
    history = (tmp_path / ".rebalance_sql_history").read_text(encoding="utf-8")
    assert "GROUP BY cause ORDER BY cause;" in history and ".schema gold_incidents" in history


LAB = Path(__file__).resolve().parent / "data" / "kafka-lab" / "4.2.2"


@pytest.mark.skipif(not (LAB / "landing").is_dir(), reason="no Kafka 4.2 lab corpus committed")
def test_both_engines_answer_alike_on_a_lab_lakehouse(spark, tmp_path, capsys):
    """Real Kafka 4.2 logs (classic, KIP-848 and share groups, streams): the pipeline's batch build of every table,
    written as Delta tables, then the same queries through both engines."""
    from pipelines.flow.batch import batch_tables
    from pipelines.settings.config import load_config

    cfg = load_config(None, {"landing": LAB / "landing", "lakehouse": tmp_path / "lakehouse"})
    with batch_tables(spark, cfg) as tables:
        for name, frame in tables.items():
            frame.write.format("delta").save(str(cfg.lakehouse / name))
    queries = [q for q in TYPICAL if "gold_incidents" not in q or (cfg.lakehouse / "gold_incidents").is_dir()]
    assert_engines_agree(capsys, cfg.lakehouse, queries + every_table(cfg.lakehouse))


def test_the_prompt_in_a_terminal_keeps_history(estate, tmp_path):
    """At a terminal (a pseudo-terminal here): the prompt shows, a query typed over two lines runs at `;`, `.quit`
    leaves, and the lines are in the history file for the next session."""
    import os
    import pty
    import select
    import subprocess
    import sys
    import time

    primary, secondary = pty.openpty()
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "dumb"}
    proc = subprocess.Popen([sys.executable, "-m", "jobs.cli", "sql", "--lakehouse", str(estate["cfg"].lakehouse)],
                            stdin=secondary, stdout=secondary, stderr=secondary, env=env, close_fds=True)
    os.close(secondary)
    seen = b""

    def read_until(marker: bytes, timeout: float = 120) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1)
            if ready:
                try:
                    seen += os.read(primary, 65536)
                except OSError:  # the child closed the terminal
                    break
        assert marker in seen, seen.decode(errors="replace")[-2000:]

    try:
        read_until(b"rebalance> ")
        os.write(primary, b"SELECT count(*) AS n\n")
        read_until(b"...> ")
        os.write(primary, b"FROM gold_rebalances;\n")
        read_until(b"(1 row)")
        os.write(primary, b".quit\n")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    history = (tmp_path / ".rebalance_sql_history").read_text(encoding="utf-8")
    assert "SELECT count(*) AS n" in history and "FROM gold_rebalances;" in history
