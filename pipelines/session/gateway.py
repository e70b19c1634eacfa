"""The local session's JVM, started in a process session of its own.

PySpark starts the JVM in the driver's process group, where every signal meant for the driver reaches it too: Ctrl-C
in a terminal (which PySpark has the JVM ignore, but not the Python workers the JVM starts: their tasks fail with a
KeyboardInterrupt) and a SIGTERM to the group from a scheduler (the JVM stops its SparkContext under the running
streams). Either way a stopping run printed pages of Java and Python stack traces. In a session of its own, the JVM
and its workers hear only the driver, which stops the run between micro-batches (`pipelines.flow.stopping`). The
JVM still ends with the driver, even one killed with -9: PySpark's gateway exits when its standard input (a pipe
from the driver) closes.
"""

from __future__ import annotations

import os
import signal
import sys
from subprocess import Popen

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

# Set by a process that already runs the JVM (spark-submit, a notebook's kernel): PySpark connects to it instead.
GATEWAY_PORT_ENV = "PYSPARK_GATEWAY_PORT"
# The JVM this process started, if it did.
_jvm: list[Popen[bytes]] = []


def start_local(options: dict[str, str]) -> SparkSession:
    """A local Spark session with `options` (the JVM started in its own process session when none runs yet)."""
    if SparkContext._active_spark_context is None and GATEWAY_PORT_ENV not in os.environ:
        conf = SparkConf().setAll(list(options.items()))
        gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})  # type: ignore[no-untyped-call]
        _jvm[:] = [gateway.proc]  # PySpark keeps the process it started on the gateway
        SparkContext(conf=conf, gateway=gateway)
    settings: dict[str, bool | float | int | str | None] = dict(options)
    return SparkSession.builder.config(map=settings).getOrCreate()


def halt(code: int) -> None:
    """End this process at once with `code`, and the JVM it started with it (SIGKILL), as `kill -9` of both would:
    for a run stopped with a micro-batch still under way, whose JVM would otherwise print that batch's interruption
    as it shut down. Nothing is lost: the batch is read again by the next run."""
    sys.stdout.flush()
    sys.stderr.flush()
    for process in _jvm:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # the JVM leads its own process group, its Python workers in it
    os._exit(code)
