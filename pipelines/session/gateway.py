"""The local session's JVM, started in a process session of its own.

PySpark starts the JVM in the driver's process group, where every signal meant for the driver reaches it too: Ctrl-C
in a terminal (which PySpark has the JVM ignore, but not the Python workers the JVM starts: their tasks fail with a
KeyboardInterrupt) and a SIGTERM to the group from a scheduler (the JVM stops its SparkContext under the running
streams). Either way a stopping run printed pages of Java and Python stack traces. In a session of its own, the JVM
and the Python workers it starts hear only the driver, which ends the run between micro-batches
(`pipelines.flow.stopping`). The JVM still ends with the driver, even one killed with -9: PySpark's gateway exits
when its standard input (a pipe from the driver) closes, and its Python worker daemon when the JVM's pipe does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from subprocess import Popen

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

# Set by a process that already runs the JVM (spark-submit, a notebook's kernel): PySpark connects to it instead.
GATEWAY_PORT_ENV = "PYSPARK_GATEWAY_PORT"
# The JVM this process started, if it did.
_started: list[Popen[bytes]] = []


def start_local(options: dict[str, str]) -> SparkSession:
    """A local Spark session with `options` (the JVM started in its own process session when none runs yet)."""
    connect = (options.get("spark.api.mode") or os.environ.get("SPARK_API_MODE", "")).lower() == "connect"
    # PySpark keeps its gateway after `spark.stop()`, and a new SparkContext reuses it.
    # A SparkContext puts its own SIGINT handler in place (cancel every job, raise KeyboardInterrupt), whoever starts
    # it (this function, PySpark on a running gateway, a local Connect server); a handler the caller set (a run's
    # stop request) is put back.
    handler = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if SparkContext._gateway is None and GATEWAY_PORT_ENV not in os.environ and not connect:
        conf = SparkConf().setAll(list(options.items()))
        gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})  # type: ignore[no-untyped-call]
        _started[:] = [gateway.proc]  # PySpark keeps the process it started on the gateway
        SparkContext(conf=conf, gateway=gateway)
    settings: dict[str, bool | float | int | str | None] = dict(options)
    spark = SparkSession.builder.config(map=settings).getOrCreate()
    if handler is not None and handler is not signal.default_int_handler:
        signal.signal(signal.SIGINT, handler)
    return spark


def jvm_started() -> bool:
    """Whether this process started a JVM that still runs."""
    return any(process.poll() is None for process in _started)


def halt(code: int) -> None:
    """End this process at once with `code`, and the JVM it started with it (SIGKILL), as `kill -9` of both would:
    for a run stopped on request, whose streams are left holding their next micro-batch at the gate. Nothing is lost:
    a batch that did not finish is read again by the next run."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader gone with the same Ctrl-C (`rebalance run | tee log`)
            stream.flush()
    for process in _started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # the JVM leads its process group (its Python daemon has its own)
    os._exit(code)
