"""The cluster tier: the built wheel, alone in a virtualenv, runs the pipeline as the driver of a Spark standalone
cluster (a master and two one-core worker JVMs on 127.0.0.1, executors running that virtualenv's Python), and the
gold tables equal those of this session's local run of the same landing files, ids included; `rebalance parse`
from that virtualenv prints what it prints from the checkout."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import time

import pytest
import yaml
from pyspark.testing import assertDataFrameEqual

from bench import cluster
from jobs.cli import main as cli
from pipelines.storage import lake
from schemas.tables import TABLES
from tests.conftest import make_config

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(cluster.java_missing(), reason="no Java runtime on PATH for the Spark cluster")]

RUN_TIMEOUT_S = 900
# Tables whose rows hold the wall clock of the run that wrote them (quality results, alert deliveries) or depend on
# it (an alert opened by a condition that lasts until "now"): compared on the replay's tables only.
RUN_CLOCK = {"gold_quality_results", "gold_alert_deliveries", "gold_alerts"}


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A virtualenv holding only the wheel built from this checkout (and its dependencies)."""
    root = tmp_path_factory.mktemp("wheel")
    started = time.monotonic()
    python = cluster.wheel_venv(root)
    print(f"wheel virtualenv: {time.monotonic() - started:.0f} s")
    return {"python": python, "bin": python.parent, "root": root}


@pytest.fixture(scope="module")
def two_runs(small_sim, small_run, shipped, tmp_path_factory):
    """The small estate run by the wheel's `rebalance run` as the driver of a standalone cluster, beside this
    session's local run of the same landing files (`small_run`: local[*], the checkout)."""
    base = tmp_path_factory.mktemp("cluster-estate")
    remote = base / "cluster"
    shutil.copytree(small_sim.landing_dir, remote / "landing")

    with cluster.standalone_cluster(shipped["python"], base) as spark_cluster:
        conf = remote / "cluster.yml"
        conf.write_text(yaml.safe_dump({
            "landing": str(remote / "landing"), "lakehouse": str(remote / "lakehouse"),
            "spark": {"master": spark_cluster.url, "driver_memory": "1g", "shuffle_partitions": 4,
                      "conf": {"spark.executor.memory": "1g", "spark.executor.cores": 1,
                               "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}},
        }))
        started = time.monotonic()
        result = subprocess.run([str(shipped["bin"] / "rebalance"), "run", "--conf", str(conf)], cwd=remote,
                                env=cluster.clean_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        print(f"cluster run: {time.monotonic() - started:.0f} s")
        executors = sorted(spark_cluster.logs.parent.glob("worker-*/app-*/*/stderr"))
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return {"local": small_run["cfg"], "cluster": make_config(remote, landing=remote / "landing"),
            "stdout": result.stdout, "executors": executors, "sim": small_sim}


def test_the_cluster_ran_the_work_on_both_workers(two_runs):
    """The executors of both workers ran (each left its log), so the run was not local[*] in disguise."""
    workers = {path.parts[-4] for path in two_runs["executors"]}
    assert workers == {"worker-0", "worker-1"}, two_runs["executors"]
    assert "run finished:" in two_runs["stdout"]


@pytest.mark.parametrize("name", [n for n in TABLES if n.startswith("gold_") and n not in RUN_CLOCK])
def test_gold_tables_on_the_cluster_equal_the_local_run(spark, two_runs, name):
    local = lake.read_table(spark, two_runs["local"], name)
    remote = lake.read_table(spark, two_runs["cluster"], name)
    assert remote.count() == local.count()
    assertDataFrameEqual(remote, local)


def test_the_wheel_alone_parses_as_the_checkout_does(shipped, two_runs, tmp_path):
    """`rebalance parse` from the wheel's virtualenv, run outside the checkout, prints the checkout's events."""
    log = next(p for p in sorted(two_runs["sim"].landing_dir.glob("*/*")) if "server" in p.name)
    shipped_out = subprocess.run([str(shipped["bin"] / "rebalance"), "parse", str(log)], cwd=tmp_path,
                                 env=cluster.clean_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert shipped_out.returncode == 0, shipped_out.stderr[-2000:]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli(["parse", str(log)]) == 0
    shipped_events = [json.loads(line) for line in shipped_out.stdout.splitlines() if line.startswith("{")]
    checkout_events = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    assert len(checkout_events) > 10
    assert shipped_events == checkout_events
