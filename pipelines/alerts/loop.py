"""Alerts in a continuous run. Each reconstruct batch evaluates the rules of its own groups on the rows it just built
(`batch_alerts`), so an alert follows its rebalance row inside the same micro-batch; the whole rule set runs on the
wall clock between batches (the stuck rule fires with no new line) and after a derived refresh (estate incidents), on
a thread of its own beside the streams. One evaluation at a time: both hold the loop's lock."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from pipelines.alerts.sinks import DeliveryError
from pipelines.alerts.stage import alerts_of_groups, run_alerts
from pipelines.settings.config import Config

Evaluate = Callable[[dt.datetime], object]


class AlertLoop:
    """Calls `evaluate(now)` when poked (new rows were committed) and at least every `every_s` seconds.

    A sink that refuses an alert is reported through `on_progress` and retried at the next evaluation (the delivery
    log says what each sink lacks). Any other error ends the loop; `check()` raises it in the caller's thread, so the
    run stops instead of streaming on without alerts."""

    def __init__(self, evaluate: Evaluate, *, every_s: float,
                 on_progress: Callable[[str], None] | None = None, name: str = "rebalance-alerts") -> None:
        self._evaluate = evaluate
        self.every_s = every_s
        self._on_progress = on_progress
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._error: BaseException | None = None
        self.evaluations = 0
        # Held through each evaluation; whoever else stores or delivers alerts in this process holds it too, so no
        # alert is delivered twice.
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> AlertLoop:
        """Start the thread (the first evaluation runs at once: a stuck group alerts without waiting for a batch)."""
        self._wake.set()
        self._thread.start()
        return self

    def poke(self) -> None:
        """Evaluate as soon as the running evaluation (if any) ends: new gold rows were committed."""
        self._wake.set()

    def check(self) -> None:
        """Raise the error that ended the loop, if one did."""
        if self._error is not None:
            raise self._error

    @property
    def stopping(self) -> bool:
        """Whether a stop was requested: an evaluation under way may end early at a safe point."""
        return self._stopping.is_set()

    def request_stop(self) -> None:
        """Begin no new evaluation (the running one, if any, goes on)."""
        self._stopping.set()
        self._wake.set()

    def stop(self, *, wait_s: float = 120.0) -> None:
        """Let a running evaluation finish (up to `wait_s`), then stop; raises the error that ended the loop."""
        self.request_stop()
        if self._thread.is_alive():
            self._thread.join(wait_s)
        self.check()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self.every_s)
            if self._stopping.is_set():
                return
            self._wake.clear()
            try:
                with self.lock:
                    self._evaluate(dt.datetime.now(dt.timezone.utc))
            except DeliveryError as exc:
                if self._on_progress is not None:
                    self._on_progress(f"alerts: {exc}; retried at the next evaluation")
            except BaseException as exc:  # noqa: BLE001 - handed to the run's thread by check()
                self._error = exc
                return
            finally:
                self.evaluations += 1


class Loops:
    """Several loops driven as one (the alerts and the derived refresh of a continuous run): each call goes to every
    loop, and `check` raises the first error."""

    def __init__(self, *loops: AlertLoop | None) -> None:
        self.loops = [loop for loop in loops if loop is not None]

    def __bool__(self) -> bool:
        return bool(self.loops)

    def start(self) -> Loops:
        """Start every loop."""
        for loop in self.loops:
            loop.start()
        return self

    def check(self) -> None:
        """Raise the first error that ended a loop, if one did."""
        for loop in self.loops:
            loop.check()

    def request_stop(self) -> None:
        """Begin no new evaluation in any loop."""
        for loop in self.loops:
            loop.request_stop()

    def stop(self, *, wait_s: float = 120.0) -> None:
        """Stop every loop, each finishing its evaluation under way within one shared `wait_s`, then raise the first
        error."""
        deadline = time.monotonic() + wait_s
        self.request_stop()
        errors = []
        for loop in self.loops:
            try:
                loop.stop(wait_s=max(0.0, deadline - time.monotonic()))
            except BaseException as exc:  # noqa: BLE001 - the first is raised once every loop has stopped
                errors.append(exc)
        if errors:
            raise errors[0]


def alert_loop(spark: SparkSession, cfg: Config, *,
               on_progress: Callable[[str], None] | None = None) -> AlertLoop:
    """The alerts step of `cfg` as an AlertLoop (not started), evaluated every `alerts.evaluate_every_s` at least."""
    return AlertLoop(lambda now: run_alerts(spark, cfg, run_ts=now, on_progress=on_progress),
                     every_s=cfg.alerts.evaluate_every_s, on_progress=on_progress)


def batch_alerts(spark: SparkSession, cfg: Config, loop: AlertLoop, *,
                 on_progress: Callable[[str], None] | None = None) -> Callable[[dict[str, DataFrame]], None]:
    """The alerts of a reconstruct batch's own groups, evaluated on the rows it just built, inside the batch (a
    continuous run: an alert follows its rebalance row without waiting for the loop). Under the loop's lock, so the
    batch and the loop never deliver the same alert twice. The hot path never waits for the alerts: when the loop is
    evaluating, the batch pokes it instead, and a webhook gets one attempt (a sink that refuses is retried by the
    loop, with its backoff)."""
    once = cfg.model_copy(update={"alerts": cfg.alerts.model_copy(update={"webhook_attempts": 1})})

    def evaluate(tables: dict[str, DataFrame]) -> None:
        if not loop.lock.acquire(blocking=False):
            loop.poke()
            return
        try:
            counts = alerts_of_groups(spark, once, tables, run_ts=dt.datetime.now(dt.timezone.utc),
                                      on_progress=on_progress)
            if counts["new_or_changed"] and on_progress is not None:
                on_progress(f"alerts: {counts['new_or_changed']} new or changed in the batch's groups")
        except DeliveryError as exc:
            if on_progress is not None:
                on_progress(f"alerts: {exc}; retried at the next evaluation")
        finally:
            loop.lock.release()
    return evaluate
