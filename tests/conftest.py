"""One Spark session for the whole test run (local[2], 2 shuffle partitions, UI off, UTC, Delta configured)."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.settings.config import Config, load_config

DATA = Path(__file__).parent / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def silver_batch(raw, cfg: Config | None = None, now=None):
    """The pipeline's one bronze-to-silver build over raw lines, as the ingest stream runs it (batch 0, nothing
    ingested before), stamped `now` (a timestamp column; the current time when None)."""
    from pyspark.sql import functions as F

    from pipelines.settings.sources import resolve_sources
    from pipelines.silver.build import build_silver
    from pipelines.silver.privacy import hash_salt
    from pipelines.storage import lake

    cfg = cfg or load_config()
    return build_silver(raw, resolve_sources(cfg), existing_files=lake.empty(raw.sparkSession, "bronze_files"),
                        batch_id=0, now=F.current_timestamp() if now is None else now, hash_salt=hash_salt(cfg))


def staged_files(spark, root: Path, files: dict[str, list[str]]):
    """`silver_batch` over `files` (name -> lines) written into the instance folder `root` (created)."""
    from pipelines.storage import inputs

    root.mkdir(parents=True)
    for name, lines in files.items():
        (root / name).write_text("\n".join(lines) + "\n")
    return silver_batch(inputs.read_files(spark, sorted(root.iterdir())), load_config())


def parse_with(bronze, cfg: Config | None = None):
    """Bronze-shaped records parsed with the sources of `cfg` (default configuration when None)."""
    from pipelines.settings.sources import resolve_sources
    from pipelines.silver.build import parse_records

    return parse_records(bronze, resolve_sources(cfg or load_config()))


def land_files(files: list[Path], landing: Path) -> None:
    """Land `files` (each in its instance folder) the way a shipper should: copied under a hidden name, then renamed,
    so the file source never sees a half-written file."""
    for file in files:
        target = landing / file.parent.name / file.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target.with_name("." + target.name))
        target.with_name("." + target.name).rename(target)


def parse_file_lines(spark, lines: list[str], *, instance: str, file_name: str = "consumer.log",
                     modified: dt.datetime = dt.datetime(2024, 5, 14, 12)) -> dict[int, dict]:
    """`lines` as one landed file of `instance`, parsed with the default sources; line number -> its silver row."""
    from pyspark.sql import functions as F

    bronze = spark.createDataFrame(
        [(f"{instance}-{i}", f"file:/landing/{instance}/{file_name}", instance, file_name, modified, i, line,
          len(line), 0) for i, line in enumerate(lines, start=1)],
        "line_id string, source_file string, instance string, file_name string, file_modified_at timestamp, "
        "line_no long, value string, line_length long, batch_id long",
    ).withColumn("ingested_at", F.current_timestamp())
    return {r["line_no"]: r.asDict() for r in parse_with(bronze).collect()}


# The run time of the shared estates' runs (a fixed clock, so that the runs compared carry the same one).
RUN_TS = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
# The local session of the tests (`make_config`'s `spark` settings).
SPARK_SETTINGS = {"master": "local[2]", "shuffle_partitions": 2, "driver_memory": "6g"}


def make_config(root: Path, **overrides) -> Config:
    """A test configuration whose landing and lakehouse live under `root`."""
    values = {
        "landing": root / "landing",
        "lakehouse": root / "lakehouse",
        # The whole default tier shares one session: at 2g its old generation filled up (97% after the survival
        # tests began, over 1,000 full collections taking 18 minutes), and the late tests failed or crawled.
        "spark": SPARK_SETTINGS,
    }
    values.update(overrides)
    cfg = load_config(None, values)
    # The lakehouse's maintenance runs on the wall clock (`pipelines.flow.maintenance_clocks`): a session-wide
    # lakehouse run again a quarter of an hour later would compact and vacuum in the middle of another test. Only the
    # tests that give `compact_every_s` have it.
    return cfg if "compact_every_s" in overrides else cfg.model_copy(update={"compact_every_s": None})


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from pipelines.session.spark import get_spark

    cfg = make_config(tmp_path_factory.mktemp("session"))
    # With Spark's Kafka source: the kafka_source tier shares this one session.
    session = get_spark(cfg, app_name="rebalance-tests", kafka=True)
    yield session
    session.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """Forget the Delta table logs the test opened: tests write new lakehouse paths, and Delta keeps each table's
    log and snapshot cached for an hour, which in one session for the whole run is hundreds of MB of heap."""
    session = getattr(item, "funcargs", {}).get("spark")
    if session is not None and getattr(session, "_jvm", None) is not None:
        session._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()


@pytest.fixture
def workspace(tmp_path) -> Path:
    """An empty landing directory and lakehouse location for one test."""
    (tmp_path / "landing").mkdir()
    return tmp_path


def land(source: Path, landing: Path) -> None:
    """Copy instance folders into the landing directory, each file atomically (write then rename)."""
    for instance in sorted(p for p in source.iterdir() if p.is_dir()):
        target_dir = landing / instance.name
        target_dir.mkdir(parents=True, exist_ok=True)
        for file in sorted(instance.iterdir()):
            partial = target_dir / f".{file.name}.partial"
            shutil.copyfile(file, partial)
            partial.rename(target_dir / file.name)


def run_cli_killed_after(conf: Path, seconds: float, *, env: dict[str, str] | None = None) -> bool:
    """Start `rebalance run --conf conf` as its own process group and `kill -9` the whole group (the Python driver
    and its JVM) if it is still running after `seconds`; True when it was killed, False when it ended first."""
    proc = subprocess.Popen([sys.executable, "-m", "jobs.cli", "run", "--conf", str(conf)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        # The driver's JVM runs in a process group of its own (pipelines/session/gateway.py): kill both at once.
        groups = {proc.pid, *child_groups(proc.pid)}
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        proc.wait()
        return True


def child_groups(pid: int) -> set[int]:
    """The process groups of `pid`'s children (Linux's /proc; empty elsewhere)."""
    groups = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # a process that ended while we looked
        if int(fields[1]) == pid:  # state, ppid, pgrp, ...
            groups.add(int(fields[2]))
    return groups


class Receiver:
    """A local webhook receiver on 127.0.0.1 that fails its first `failures` requests with HTTP 500."""

    def __init__(self, failures: int = 0) -> None:
        import http.server
        import json
        import threading

        self.failures, self.requests, self.received = failures, 0, []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests += 1
                if receiver.requests <= receiver.failures:
                    self.send_response(500)
                    self.end_headers()
                    return
                receiver.received.append((self.headers.get("Idempotency-Key"), json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/secret-token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def estate(spark, tmp_path_factory):
    """One simulated estate (Kafka 3.6 wording, every cause, a storm) run through the whole pipeline once, with
    alerts delivered to a local webhook that fails twice before it recovers."""
    from pipelines.flow.run import run
    from simulator import simulate

    root = tmp_path_factory.mktemp("estate")
    sim = simulate(root, seed=21, groups=3, hours=2.0, kafka_version="3.6")
    cfg = make_config(root, landing=sim.landing_dir, alerts={"webhook_backoff_s": 0.01})
    receiver = Receiver(failures=2)
    run_ts = RUN_TS
    # The webhook is configured for this run only, so that other tests' runs never post to this receiver.
    os.environ[cfg.alerts.webhook_url_env] = receiver.url
    try:
        summary = run(spark, cfg, run_ts=run_ts)
    finally:
        os.environ.pop(cfg.alerts.webhook_url_env, None)
    try:
        yield {"cfg": cfg, "sim": sim, "receiver": receiver, "summary": summary, "run_ts": run_ts}
    finally:
        receiver.close()


@pytest.fixture(scope="session")
def small_sim(tmp_path_factory):
    """A small simulated estate (two groups, one hour, Kafka 3.6 wordings): the landing files the connect and
    cluster tiers each run elsewhere and compare with `small_run`."""
    from simulator import simulate

    return simulate(tmp_path_factory.mktemp("small-estate") / "sim", seed=21, groups=2, hours=1.0,
                    kafka_version="3.6")


@pytest.fixture(scope="session")
def small_run(spark, small_sim, tmp_path_factory) -> dict:
    """`small_sim` run once by this session (at RUN_TS) with its report: the classic local run that the
    Spark Connect run and the standalone cluster's run must equal."""
    from jobs.commands import write_report
    from pipelines.flow.run import run

    root = tmp_path_factory.mktemp("small-run")
    shutil.copytree(small_sim.landing_dir, root / "landing")
    cfg = make_config(root, landing=root / "landing")
    summary = run(spark, cfg, run_ts=RUN_TS)
    write_report(spark, cfg, root / "report.html")
    return {"cfg": cfg, "summary": summary, "report": root / "report.html"}


@contextlib.contextmanager
def continuous_run(spark, cfg: Config, on_progress=None):
    """`rebalance run --trigger continuous` of `cfg` on a thread of its own for the block (its progress lines to
    `on_progress`); yields the list its failure lands in. On leaving, the streams are stopped and the run must have
    ended without one."""
    import threading

    from pipelines.flow.run import run

    failure: list[BaseException] = []

    def running() -> None:
        try:
            run(spark, cfg, trigger="continuous", on_progress=on_progress)
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            failure.append(exc)

    thread = threading.Thread(target=running, daemon=True)
    thread.start()
    try:
        yield failure
    finally:
        for query in spark.streams.active:
            query.stop()
        thread.join(120)
    assert not thread.is_alive() and failure == []

