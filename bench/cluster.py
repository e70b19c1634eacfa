"""The product as it is shipped, outside this checkout: a virtualenv with only the built wheel (and its dependencies)
installed, and a Spark standalone cluster of one master and two one-core workers on 127.0.0.1, each its own JVM,
whose executors run that virtualenv's Python. Used by tests/test_cluster.py and the scale benchmark (bench/scale.py)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 90


def build_wheel(out: Path) -> Path:
    """The project's wheel, built from this checkout into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
                   check=True, cwd=out, capture_output=True)
    wheels = sorted(out.glob("kafka_rebalance_analytics-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def wheel_venv(root: Path) -> Path:
    """A virtualenv under `root` with the wheel and its runtime dependencies (no checkout, no dev extra); the path
    of its Python. The dependencies come from pip's cache when `make setup` filled it."""
    wheel = build_wheel(root / "dist")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True)
    return python


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a process that must not see this checkout: no PYTHONPATH, no PYSPARK_PYTHON of the
    test session, Spark bound to the loopback address."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME", "SPARK_REMOTE")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running standalone cluster: its master URL and its processes."""

    url: str
    processes: list[subprocess.Popen[bytes]]
    logs: Path

    def workers_registered(self) -> int:
        """How many workers the master's log says registered."""
        text = (self.logs / "master.log").read_text(errors="replace")
        return len(re.findall(r"Registering worker", text))


@contextmanager
def standalone_cluster(python: Path, workdir: Path, *, workers: int = 2,
                       worker_memory: str = "2g") -> Iterator[Cluster]:
    """Start Spark's own Master and `workers` Worker JVMs (one core each) from the virtualenv's pyspark; stop them
    when the block ends."""
    probe = "import os, pyspark; print(os.path.dirname(pyspark.__file__))"
    spark_home = Path(subprocess.run([str(python), "-c", probe], check=True, capture_output=True,
                                     text=True).stdout.strip())
    spark_class = spark_home / "bin" / "spark-class"
    logs = workdir / "cluster-logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = clean_env(SPARK_HOME=str(spark_home), SPARK_WORKER_DIR=str(workdir / "worker-dirs"),
                    SPARK_LOG_DIR=str(logs))
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        out = (logs / f"{name}.log").open("wb")
        processes.append(subprocess.Popen([str(spark_class), *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True))

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(_free_port()))
        for n in range(workers):
            start(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores",
                  "1", "--memory", worker_memory, "--webui-port", str(_free_port()),
                  "--work-dir", str(workdir / f"worker-{n}"))
        cluster = Cluster(url, processes, logs)
        deadline = time.monotonic() + START_TIMEOUT_S
        while cluster.workers_registered() < workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise RuntimeError(f"the standalone cluster did not start; logs in {logs}")
            time.sleep(0.5)
        yield cluster
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def java_missing() -> bool:
    """True when no Java runtime is on PATH (the cluster tier then skips with that reason)."""
    return shutil.which("java") is None
