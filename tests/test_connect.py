"""Spark Connect: the whole pipeline through a local Spark Connect server (Delta's jars and SQL extension on its
classpath) makes the same gold tables, report and command output as the classic session; and the one-line errors
of `--remote` when the client packages are missing or the server is unreachable."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

from jobs.cli import main as cli
from pipelines.storage import lake
from schemas.tables import TABLES
from tests import connect_server
from tests.conftest import RUN_TS, make_config
from tests.connect_client import SQL

ROOT = Path(__file__).resolve().parents[1]
CLIENT_TIMEOUT_S = 600
# Columns that hold the wall clock of the run, not its results.
WALL_CLOCK = {"gold_alert_deliveries": ["delivered_at"]}


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    """A local Spark Connect server for this module; stopped at teardown, and killed with the test process."""
    server = connect_server.start(tmp_path_factory.mktemp("connect-server"), python_path=ROOT)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def two_runs(connect_url, small_sim, request, tmp_path_factory):
    """The small estate run by a client process through the Spark Connect server, beside the classic session's run
    of the same landing files (`small_run`)."""
    base = tmp_path_factory.mktemp("connect-estate")
    remote = base / "connect"
    shutil.copytree(small_sim.landing_dir, remote / "landing")
    parse_file = next(p for p in sorted(small_sim.landing_dir.glob("*/*")) if "server" in p.name)

    # The two runs overlap when the classic one is not made yet: each spends much of its time waiting on its
    # driver, so together they take less time.
    started = time.monotonic()
    log = base / "client.log"
    with log.open("w") as out:  # a file, not a pipe that nobody reads while the classic run goes on
        client = subprocess.Popen(
            [sys.executable, "-m", "tests.connect_client", connect_url, str(remote), RUN_TS.isoformat(),
             str(parse_file)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True,
        )
    try:
        classic = request.getfixturevalue("small_run")
        client.wait(timeout=CLIENT_TIMEOUT_S)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    output = log.read_text()
    assert client.returncode == 0, output[-3000:]
    summary_lines = [line for line in output.splitlines() if line.startswith("run: ")]
    print(f"connect run: {time.monotonic() - started:.0f} s; {summary_lines}")
    return {"classic": classic["cfg"], "classic_report": classic["report"], "summary": classic["summary"],
            "connect": make_config(remote, landing=remote / "landing"), "client": output, "parse_file": parse_file}


@pytest.mark.connect
@pytest.mark.parametrize("name", [n for n in TABLES if n.startswith("gold_")])
def test_gold_tables_are_the_same_through_spark_connect(spark, two_runs, name):
    drop = WALL_CLOCK.get(name, [])
    classic = lake.read_table(spark, two_runs["classic"], name).drop(*drop)
    remote = lake.read_table(spark, two_runs["connect"], name).drop(*drop)
    assertDataFrameEqual(remote, classic)


@pytest.mark.connect
def test_every_stream_and_step_wrote_through_spark_connect(spark, two_runs):
    cfg = two_runs["connect"]
    # foreachBatch and MERGE (gold), applyInPandas (the state machines behind gold_group_states), quality, alerts.
    for name in ("silver_events", "gold_rebalances", "gold_group_states", "gold_quality_results", "gold_alerts"):
        assert lake.read_table(spark, cfg, name).limit(1).count() == 1, name
    # The summary of a Connect run is read back from Delta's history; appends count as the classic run counts them.
    appended = [f"{name} +{n}" for name, n in two_runs["summary"].added.items() if n and not name.startswith("gold_")]
    assert len(appended) >= 5
    assert all(f"{count}," in two_runs["client"] or f"{count};" in two_runs["client"] for count in appended)


@pytest.mark.connect
def test_report_and_commands_are_the_same_through_spark_connect(spark, two_runs):
    remote = two_runs["connect"].lakehouse.parent
    assert (remote / "report.html").read_text() == two_runs["classic_report"].read_text()
    code, out, _ = _cli(["sql", SQL, "--lakehouse", str(two_runs["classic"].lakehouse), "--format", "json"])
    assert code == 0 and out
    assert (remote / "cli" / "sql.jsonl").read_text() == out
    code, out, _ = _cli(["parse", str(two_runs["parse_file"])])
    assert code == 0 and out
    assert (remote / "cli" / "parse.jsonl").read_text() == out


def test_an_unreachable_server_is_one_line_with_the_fix(tmp_path):
    (tmp_path / "lakehouse").mkdir()
    url = f"sc://127.0.0.1:{connect_server.free_port()}"
    code, _, err = _cli(["sql", "SELECT 1", "--lakehouse", str(tmp_path / "lakehouse"), "--remote", url])
    assert code == 1
    assert err.count("\n") == 1 and "cannot reach the Spark Connect server at 127.0.0.1:" in err
    assert "--remote / SPARK_REMOTE" in err


def test_missing_connect_packages_are_one_line_with_the_fix(tmp_path, monkeypatch):
    (tmp_path / "lakehouse").mkdir()
    monkeypatch.setitem(sys.modules, "grpc", None)  # what an install without pyspark[connect] looks like
    code, _, err = _cli(["sql", "SELECT 1", "--lakehouse", str(tmp_path / "lakehouse"), "--remote", "sc://127.0.0.1:1"])
    assert code == 1
    assert err.count("\n") == 1 and "pip install 'pyspark[connect]" in err


def test_a_url_that_is_not_spark_connect_is_a_usage_error(tmp_path):
    (tmp_path / "lakehouse").mkdir()
    code, _, err = _cli(["sql", "SELECT 1", "--lakehouse", str(tmp_path / "lakehouse"), "--remote", "http://x:1"])
    assert code == 2 and "sc://host:port" in err


def test_the_server_dies_with_the_process_that_started_it(tmp_path):
    """The kernel kills what connect_server.spawn started when its parent dies, even by SIGKILL (a crashed test run)."""
    parent = subprocess.Popen(
        [sys.executable, "-c", "import os, time; from pathlib import Path; from tests import connect_server; "
         f"p = connect_server.spawn(['sleep', '600'], env=dict(os.environ), cwd=Path('{tmp_path}'), "
         f"log=Path('{tmp_path}/log')); print(p.pid, flush=True); time.sleep(600)"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"  # a zombie has exited; only its parent's wait is missing
    except FileNotFoundError:
        return False


def test_the_pipeline_uses_nothing_spark_connect_lacks():
    """No JVM in a Connect client: no SparkContext, RDDs, Py4J or delta-spark's Python builder in the pipeline. Four
    classic-only uses are sanctioned, each skipped for a Connect session: the DeltaTable handle (TableRef.delta, for
    classic sessions' tests and maintenance), `caching.unpin`, which frees a pinned frame's rows at once (a
    Connect client pins by persisting), the one-pass literal matcher (`pipelines/jvm/matcher.py`), which only
    builds its column for a column that has a JVM handle and otherwise leaves the search to Spark's `contains`, and
    the step name a local session gives its Spark jobs (`pipelines/session/steps.py`: a Connect client has no local
    properties to set, and names none)."""
    banned = ("sparkContext", ".rdd", "_jvm", "_jdf", "import py4j", "from py4j", "java_exception", "DeltaTable.")
    found = [f"{path.relative_to(ROOT)}: {word}" for path in sorted((ROOT / "pipelines").rglob("*.py"))
             for word in banned if word in path.read_text()]
    assert found == ["pipelines/jvm/matcher.py: _jvm", "pipelines/session/caching.py: .rdd",
                     "pipelines/session/caching.py: _jdf", "pipelines/session/steps.py: sparkContext",
                     "pipelines/storage/lake.py: DeltaTable."]
