"""Stopping a run on request: Ctrl-C in a terminal (SIGINT) or SIGTERM from a scheduler, a container runtime or
Kubernetes.

A signal does not raise in the middle of whatever the driver was doing (a Py4J call, a Delta commit): it only asks
the run to stop. The run then lets the micro-batches under way finish (up to `FINISH_S` in all), stops the streams
and says what it did. A micro-batch that has not finished by then ends with the JVM, as a kill would end it, and is
not lost: its offsets are in the checkpoint and the next run reads it again, which the tables' idempotent writes
make safe. A second signal stops at once (the
command line prints `interrupted`). The local JVM runs in a process session of its own (`pipelines.session.spark`),
so a signal to the terminal's process group reaches only this driver, which decides.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType, TracebackType

from pyspark.sql.streaming import StreamingQuery

# How long a stopping run waits for the micro-batches under way to finish before it stops them where they are; under
# the 30 s a Kubernetes pod is given between SIGTERM and SIGKILL by default.
FINISH_S = 20.0
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """While entered (in the main thread), SIGINT and SIGTERM set `requested` instead of ending the process; the
    first one's name is `signal_name`. The handlers before it are put back on exit. Entered in another thread
    (where Python allows no handler), it never fires."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.signal_name: str | None = None
        self._before: dict[int, object] = {}

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            self._before = {sig: signal.signal(sig, self._on_signal) for sig in SIGNALS}
        return self

    def renew(self) -> None:
        """Take the signals back after a SparkContext started: PySpark puts its own SIGINT handler in place then
        (cancel every job, raise KeyboardInterrupt)."""
        if self._before:
            for sig in SIGNALS:
                signal.signal(sig, self._on_signal)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for sig, handler in self._before.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]  # what signal.signal returned before
        self._before = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.requested.is_set():  # asked twice: stop now
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        self.requested.set()


def wait_for(query: StreamingQuery, stop: StopRequest | None) -> bool:
    """Wait until `query` ends (raising its error if it failed) or a stop is requested; True when it ended."""
    while stop is None or not stop.requested.is_set():
        if query.awaitTermination(1):
            return True
    return False


def stop_between_batches(queries: list[StreamingQuery], *, finish_s: float = FINISH_S) -> bool:
    """Stop each of `queries`, in order, once no micro-batch of it is under way; False (and the rest left running)
    when one is still in a micro-batch `finish_s` seconds after the call.

    A query is never stopped inside a micro-batch: the interrupted batch's Python error reaches Spark's test for an
    interruption, whose regular expression overflows the stream thread's stack on a long message (a thousand lines
    of `java.lang.StackOverflowError`). The caller ends such a run with its JVM instead (`gateway.halt`)."""
    deadline = time.monotonic() + finish_s
    for query in queries:
        while query.isActive and query.status["isTriggerActive"]:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        query.stop()
    return True
