"""Alerts in a continuous run: the alerts step runs after every reconstruct batch, so an alert follows its rebalance
row within the same micro-batch latency, and on the wall clock between batches, so the stuck rule fires with no new
line. One evaluation at a time, on a thread of its own beside the streams."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable

from pyspark.sql import SparkSession

from pipelines.alerts.sinks import DeliveryError
from pipelines.alerts.stage import run_alerts
from pipelines.settings.config import Config

Evaluate = Callable[[dt.datetime], object]


class AlertLoop:
    """Calls `evaluate(now)` when poked (a reconstruct batch committed) and at least every `every_s` seconds.

    A sink that refuses an alert is reported through `on_progress` and retried at the next evaluation (the delivery
    log says what each sink lacks). Any other error ends the loop; `check()` raises it in the caller's thread, so the
    run stops instead of streaming on without alerts."""

    def __init__(self, evaluate: Evaluate, *, every_s: float,
                 on_progress: Callable[[str], None] | None = None) -> None:
        self._evaluate = evaluate
        self.every_s = every_s
        self._on_progress = on_progress
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._error: BaseException | None = None
        self.evaluations = 0
        self._thread = threading.Thread(target=self._run, name="rebalance-alerts", daemon=True)

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
                self._evaluate(dt.datetime.now(dt.timezone.utc))
            except DeliveryError as exc:
                if self._on_progress is not None:
                    self._on_progress(f"alerts: {exc}; retried at the next evaluation")
            except BaseException as exc:  # noqa: BLE001 - handed to the run's thread by check()
                self._error = exc
                return
            finally:
                self.evaluations += 1


def alert_loop(spark: SparkSession, cfg: Config, *,
               on_progress: Callable[[str], None] | None = None) -> AlertLoop:
    """The alerts step of `cfg` as an AlertLoop (not started), evaluated every `alerts.evaluate_every_s` at least."""
    return AlertLoop(lambda now: run_alerts(spark, cfg, run_ts=now, on_progress=on_progress),
                     every_s=cfg.alerts.evaluate_every_s, on_progress=on_progress)
