"""Stopping a run on request: Ctrl-C in a terminal (SIGINT) or SIGTERM from a scheduler, a container runtime or
Kubernetes.

A signal does not raise in the middle of whatever the driver was doing (a Py4J call, a Delta commit): it only asks
the run to stop. From then on a micro-batch that has not begun waits at its entry and writes nothing; the ones under
way finish (up to `FINISH_S` in all), and the run ends. A local run ends with its JVM (`gateway.halt`), as a kill
would end it: a stream is never stopped inside a micro-batch, whose interrupted Python error reaches Spark's test
for an interruption, a regular expression that overflows the stream thread's stack on a long message (a thousand
lines of `java.lang.StackOverflowError`). Nothing is lost either way: a batch that did not finish has its offsets
in the checkpoint and the next run reads it again, which the tables' idempotent writes make safe. A second signal
stops at once.

The local JVM runs in a process session of its own (`pipelines.session.gateway`), so a signal to the terminal's
process group reaches only this driver, which decides.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

# How long a stopping run waits for the micro-batches under way to finish; under the 30 s a Kubernetes pod is given
# between SIGTERM and SIGKILL by default.
FINISH_S = 20.0
SIGNALS = (signal.SIGINT, signal.SIGTERM)

BatchFn = Callable[[Any, int], None]


class StopRequest:
    """While entered (in the main thread), SIGINT and SIGTERM set `requested` instead of ending the process (a
    second one raises KeyboardInterrupt); the first one's name is `signal_name`. The handlers before it are put back
    on exit. Entered in another thread (where Python allows no handler), it never fires."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.signal_name: str | None = None
        self._before: dict[int, object] = {}
        self._running = 0
        self._changed = threading.Condition()

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            self._before = {sig: signal.signal(sig, self._on_signal) for sig in SIGNALS}
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for sig, handler in self._before.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]  # what signal.signal returned before
        self._before = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.requested.is_set():  # asked twice: stop now
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        self.requested.set()

    def guard(self, batch_fn: BatchFn) -> BatchFn:
        """`batch_fn` behind the gate: once a stop is requested, a micro-batch that had not begun waits at its entry
        (for good: the run ends with its JVM) instead of writing."""

        def guarded(df: Any, batch_id: int) -> None:
            with self._changed:
                if self.requested.is_set():
                    self._changed.wait_for(lambda: False)  # parked until the process ends
                self._running += 1
            try:
                batch_fn(df, batch_id)
            finally:
                with self._changed:
                    self._running -= 1
                    self._changed.notify_all()

        return guarded

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no guarded micro-batch is under way (new ones are held at the gate once a stop is requested);
        False when one still is after `timeout_s`."""
        with self._changed:
            return self._changed.wait_for(lambda: self._running == 0, timeout=timeout_s)


def wait_for(query: Any, stop: StopRequest | None) -> bool:
    """Wait until the streaming `query` ends (raising its error if it failed) or a stop is requested; True when it
    ended."""
    while not requested(stop):
        if query.awaitTermination(1):
            return True
    return False


def deadline_after(seconds: float) -> Callable[[], float]:
    """The seconds left until `seconds` from now (never below zero)."""
    end = time.monotonic() + seconds
    return lambda: max(0.0, end - time.monotonic())


def requested(stop: StopRequest | None) -> bool:
    """Whether `stop` is given and a stop was requested."""
    return stop is not None and stop.requested.is_set()


def end_requested(stop: StopRequest, queries: list[Any], loop: Any, *, connect: bool,
                  on_progress: Callable[[str], None] | None) -> bool:
    """End a run whose stop was requested: let the micro-batches under way finish (up to FINISH_S) with new ones
    held at the gate, and the alert loop's evaluation under way in what time is left; through Spark Connect, where
    the batches run in the server, stop the queries there. Raises a query's own failure; False when a micro-batch
    was still under way at the deadline. A local session's streams are left running, held at the gate: the caller
    ends the process and its JVM (`gateway.halt`)."""
    if on_progress is not None:
        on_progress(f"{stop.signal_name}: stopping once the micro-batches under way finish (up to {FINISH_S:.0f} s; "
                    "a second signal stops at once)")
    left = deadline_after(FINISH_S)
    if loop is not None:
        loop.request_stop()  # no new evaluation while the batches under way finish
    if connect:
        for query in queries:
            query.stop()
        finished = True
    else:
        finished = stop.wait_idle(left())
    if loop is not None:
        loop.stop(wait_s=left())
    for query in queries:
        if not query.isActive:
            query.awaitTermination(1)  # returns at once; raises the error of a query that failed
    return finished
