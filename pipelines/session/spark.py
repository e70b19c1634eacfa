"""The Spark session: the one Databricks gives us, or a local one with Delta Lake configured."""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from pipelines.jvm.build import project_jar
from pipelines.jvm.classdata import discard, driver_options, keep_at_exit, mapped
from pipelines.session.gateway import start_local
from pipelines.session.remote import REMOTE_ENV, connect_session
from pipelines.session.versions import check_spark, delta_artifacts, kafka_artifacts
from pipelines.settings.config import Config

# Generated-code classes kept per JVM: a whole run (ingest, reconstruct, quality, alerts) generates several hundred.
CODEGEN_CACHE_ENTRIES = 2_000
# The memory page a local session's sorts, aggregations and hash joins take at a time. Spark sizes it from the
# driver's memory and cores (64 MB here): each of a run's hundreds of small operators zeroed a 64 MB array for a few
# rows, every one a G1 "humongous" allocation that began a concurrent marking (28 of an increment's 30). Below half
# of a G1 region (2 MB with a 4 GB heap) a page is an ordinary object; a record larger than a page still gets a page
# of its own size. Measured: a one-hour increment 0.944x the time, a first run over 1 M lines 0.945x.
LOCAL_PAGE_SIZE = "512k"
# Paths a local session lists on the driver before it lists them in a Spark job (Spark's default is 32).
LOCAL_LISTING_PATHS = 1_000_000
# How a local session evaluates expressions. Spark compiles each query to Java classes before it runs, which in a
# new JVM costs more than the rows of a scheduled run's small batches: interpreted, a one-hour increment's whole
# run took 72 s instead of 87 s. Only an ingest batch of many megabytes of landed files pays the compiling back
# (`compiled_code`).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
COMPILED = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}

MAVEN_REPO = os.environ.get("REBALANCE_MAVEN_REPO", "https://repo1.maven.org/maven2")
LOG4J_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"
JAR_CACHE = Path(os.environ.get("REBALANCE_JAR_CACHE", Path.home() / ".cache" / "kafka-rebalance" / "jars"))


class SparkSetupError(RuntimeError):
    """The local Spark session could not be prepared (for example, Delta's jars could not be fetched)."""


def _download(url: str, target: Path) -> None:
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - fixed https Maven Central URL
        data = response.read()
    with urllib.request.urlopen(url + ".sha1", timeout=60) as response:  # noqa: S310
        expected = response.read().decode().split()[0].strip()
    actual = hashlib.sha1(data).hexdigest()  # noqa: S324 - Maven publishes SHA-1 checksums
    if actual != expected:
        raise SparkSetupError(f"checksum mismatch for {url}: got {actual}, Maven Central says {expected}")
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)


def delta_jars(cache: Path = JAR_CACHE) -> list[Path]:
    """Delta Lake's jars for the installed Spark and delta-spark (pipelines/session/versions.py), fetched once from
    Maven Central (checksums verified) and reused from the cache."""
    return maven_jars(delta_artifacts(), cache)


def kafka_jars(cache: Path = JAR_CACHE) -> list[Path]:
    """Spark's Kafka source jars, fetched like Delta's (only by sessions that read Kafka)."""
    return maven_jars(kafka_artifacts(), cache)


def maven_jars(artifacts: tuple[tuple[str, str, str], ...], cache: Path = JAR_CACHE) -> list[Path]:
    """Jars from Maven Central, fetched once (checksums verified) and reused from the cache."""
    cache.mkdir(parents=True, exist_ok=True)
    jars = []
    for group, artifact, versions in artifacts:
        jars.append(_cached_jar(group, artifact, versions.split("|"), cache))
    return jars


def _cached_jar(group: str, artifact: str, versions: list[str], cache: Path) -> Path:
    """The first of `versions` already cached or fetched; a SparkSetupError naming the first URL otherwise."""
    for version in versions:
        target = cache / f"{artifact}-{version}.jar"
        if target.exists():
            return target
    failure = ""
    for version in versions:
        target = cache / f"{artifact}-{version}.jar"
        url = f"{MAVEN_REPO}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.jar"
        print(f"fetching {artifact}-{version}.jar from Maven Central (once)", file=sys.stderr)
        try:
            _download(url, target)
            return target
        except OSError as exc:
            failure = failure or f"could not fetch {url}: {exc}"
    raise SparkSetupError(f"{failure}. Check network access to Maven Central, or set REBALANCE_MAVEN_REPO to a "
                          f"mirror, or put the jar in {cache}")


def on_databricks() -> bool:
    """True inside a Databricks runtime, where the session and Delta are provided."""
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


def get_spark(
    cfg: Config,
    *,
    app_name: str = "rebalance",
    session: SparkSession | None = None,
    remote: str | None = None,
    kafka: bool | None = None,
) -> SparkSession:
    """Return `session` if given; a Spark Connect session to `remote` (sc://host:port) if given; the platform's
    session on Databricks; a Spark Connect session to SPARK_REMOTE if set; else a local session with Delta (and
    Spark's Kafka source when `kafka`, by default when the configured source is Kafka).

    Settings that a streaming checkpoint freezes at its first run (shuffle partitions, the state store) are
    fixed here for the local session (a remote server keeps its own), and the session time zone is UTC so that
    every timestamp in the tables is UTC.
    """
    if session is not None:
        return session
    if remote:
        return connect_session(remote)
    if on_databricks():
        return SparkSession.builder.getOrCreate()
    if os.environ.get(REMOTE_ENV):
        return connect_session(os.environ[REMOTE_ENV])
    # A local session runs the installed pyspark: refuse one outside the tested range before fetching any jar.
    check_spark()
    # The Kafka jars are fetched only when needed: a landing-files user neither downloads nor loads them.
    wanted = delta_jars() + (kafka_jars() if (cfg.source == "kafka" if kafka is None else kafka) else [])
    # The project's own jar (the one-pass literal matcher); without it the same filters run as Spark's `contains`.
    wanted += [jar for jar in [project_jar(JAR_CACHE)] if jar is not None]
    jars = ",".join(str(p) for p in wanted)
    class_data, recording = driver_options(JAR_CACHE, wanted, enabled=cfg.spark.class_data_sharing)
    # Spark's generated code for the parse stage has methods of 15-25 KB of bytecode; HotSpot leaves methods over
    # 8 KB interpreted unless told otherwise.
    driver_java_options = f"-Dlog4j.configurationFile={LOG4J_CONFIG} -XX:-DontCompileHugeMethods"
    # Python workers (applyInPandas) must run the interpreter that has this package, not whatever is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    options = {
        "spark.master": cfg.spark.master,
        "spark.app.name": app_name,
        "spark.jars": jars,
        "spark.driver.memory": cfg.spark.driver_memory,
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(cfg.spark.shuffle_partitions),
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.databricks.delta.autoCompact.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # With the UI off, the driver's status store still keeps the plans and metrics of the last 1,000 SQL
        # executions, jobs and stages: a long `run` (or one test session) grew its heap by hundreds of MB for a
        # page nobody can open.
        "spark.sql.ui.retainedExecutions": "50",
        "spark.ui.retainedJobs": "100",
        "spark.ui.retainedStages": "100",
        "spark.ui.retainedTasks": "10000",
        "spark.driver.extraJavaOptions": f"{driver_java_options} {class_data}".rstrip(),
        "spark.sql.warehouse.dir": str(cfg.lakehouse.resolve() / "_warehouse"),
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # Spark keeps the classes it compiled for generated code in a cache of 100 sources by default. One silver
        # build alone generates about 124, so every micro-batch evicted what the one before compiled and compiled
        # all of it again (about 2 s per ingest batch, and the JIT's work on them lost with it).
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        "spark.buffer.pageSize": LOCAL_PAGE_SIZE,
        # A local session reads files from a local (or mounted) file system, where listing a path is one system call.
        # Above 32 paths Spark lists them in a job of one task per path instead, and a restarted stream lists every
        # file of its last batch again: 22 s of a run after a batch of 6,671 files (`python -m bench.history`).
        "spark.sql.sources.parallelPartitionDiscovery.threshold": str(LOCAL_LISTING_PATHS),
        **INTERPRETED,
        # The configuration's own settings last: a cluster's executor sizes, or any default above overridden on purpose.
        **{name: str(setting).lower() if isinstance(setting, bool) else str(setting)
           for name, setting in cfg.spark.conf.items()},
    }
    started = SparkContext._active_spark_context is None
    try:
        spark = start_local(options)
    except PySparkRuntimeError:
        archive = mapped(JAR_CACHE, wanted, enabled=cfg.spark.class_data_sharing)
        if not started or archive is None:
            raise
        # A damaged archive (a disk that filled up, a copied cache) must not stop every later run: drop it, start
        # without it, and let a later session record a new one.
        print(f"the JVM did not start with the class data archive {archive}; removed it, starting without",
              file=sys.stderr)
        discard(archive)
        spark = start_local({**options, "spark.driver.extraJavaOptions": driver_java_options})
    if recording is not None and started:
        keep_at_exit(recording)
    return spark


@contextmanager
def compiled_code(spark: SparkSession, wanted: bool) -> Iterator[None]:
    """Run the block with Spark's generated code when `wanted` and the session interprets by default (a local
    session, see INTERPRETED); any other session runs the block as it is."""
    key = "spark.sql.codegen.factoryMode"
    if not wanted or spark.conf.get(key, None) != INTERPRETED[key]:
        yield
        return
    for name, value in COMPILED.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in INTERPRETED.items():
            spark.conf.set(name, value)
