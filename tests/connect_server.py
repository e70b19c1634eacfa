"""A local Spark Connect server for the `connect` test tier: PySpark's own jars plus Delta's, bound to 127.0.0.1 on a
free port, and tied to the life of the process that started it."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

from pipelines.session.spark import (
    CODEGEN_CACHE_ENTRIES,
    LOCAL_LISTING_PATHS,
    LOCAL_PAGE_SIZE,
    LOG4J_CONFIG,
    delta_jars,
)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
PR_SET_PDEATHSIG = 1
READY_TIMEOUT_S = 180


class ConnectServer:
    """A running server: its `url` (sc://127.0.0.1:PORT), its process, and `stop()`."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process, self.port, self.log = process, port, log
        self.url = f"sc://127.0.0.1:{port}"

    def stop(self) -> None:
        """Stop the server and every process it started (its Python workers), then wait for it."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel sends SIGKILL when the test process dies, even by SIGKILL,
    # and the setting survives spark-submit's exec of the JVM. A new process group lets stop() reach the workers.
    os.setsid()
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(command: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start `command` in its own process group, output to `log`, killed by the kernel when this process dies."""
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                preexec_fn=_die_with_parent)


def start(workdir: Path, *, python_path: Path) -> ConnectServer:
    """Start a server whose Python workers import the project from `python_path`; wait until it accepts clients."""
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    confs = {
        "spark.master": "local[2]",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.jars": ",".join(str(p) for p in delta_jars()),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.databricks.delta.autoCompact.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile={LOG4J_CONFIG} -XX:-DontCompileHugeMethods",
        "spark.sql.warehouse.dir": str(workdir / "warehouse"),
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        "spark.buffer.pageSize": LOCAL_PAGE_SIZE,
        "spark.sql.sources.parallelPartitionDiscovery.threshold": str(LOCAL_LISTING_PATHS),
    }
    command = [str(spark_submit), "--class", SERVER_CLASS, "--name", "rebalance-connect-tests"]
    for key, value in confs.items():
        command += ["--conf", f"{key}={value}"]
    command.append("spark-internal")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(python_path),
           "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_REMOTE", None)
    log = workdir / "server.log"
    server = ConnectServer(spawn(command, env=env, cwd=workdir, log=log), port, log)
    _wait_ready(server)
    return server


def _wait_ready(server: ConnectServer) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited ({server.process.returncode}); see {server.log}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"the Spark Connect server did not listen within {READY_TIMEOUT_S} s; see {server.log}")
