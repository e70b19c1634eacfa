"""Run the pipeline: the ingest stream (landing to bronze and silver), then the reconstruct stream (to gold); a
continuous run in one process runs the two as one stream (`pipelines.flow.one_stream`)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from pipelines.alerts.loop import Loops, alert_loop, batch_alerts
from pipelines.alerts.stage import run_alerts
from pipelines.flow.derived import derived_loop, refresh_derived
from pipelines.flow.found import Found, from_history
from pipelines.flow.idle import remember_complete_run
from pipelines.flow.ingest import make_ingest_batch
from pipelines.flow.landing_names import name_loop
from pipelines.flow.maintenance_clocks import compaction_due, maintain
from pipelines.flow.one_stream import OneStream, catch_up, continuous_queries, skip_rebuilt
from pipelines.flow.reconstruct import make_reconstruct_batch
from pipelines.flow.stopping import FINISH_S, StopRequest, end_requested, requested, wait_for
from pipelines.flow.streams import AVAILABLE_NOW, RECONSTRUCT_QUERY, start_stream
from pipelines.flow.unchanged import StreamCheck, landing_fingerprint
from pipelines.quality.stage import QualityReport, run_quality
from pipelines.quality.validate import import_gx_early
from pipelines.session.kafka_check import check_brokers
from pipelines.session.remote import is_connect
from pipelines.settings.config import Config, ConfigError
from pipelines.state.checkpoints import written_batches
from pipelines.state.errors import PipelineStateError
from pipelines.state.release import check_release
from pipelines.storage import commits, inputs, lake
from schemas.tables import TABLES

Trigger = Literal["available-now", "continuous"]
Stage = Literal["ingest", "reconstruct", "quality", "alerts"]
STAGES: tuple[Stage, ...] = ("ingest", "reconstruct", "quality", "alerts")
# The tables the two streams write (the quality and alerts steps run in this process and count their own rows).
STREAMED = [name for name in TABLES if name not in ("gold_quality_results", "gold_alerts", "gold_alert_deliveries")]
INGEST_QUERY = inputs.INGEST_QUERY


@dataclass
class RunSummary:
    """What a run wrote: rows appended (or upserted, for gold) per table, micro-batches per query, the verdicts of
    the quality step (when it ran), and what it found (`pipelines.flow.found`: rebalances, incidents, unread lines)."""

    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    batches: dict[str, int] = field(default_factory=dict)
    quality: QualityReport | None = None
    found: Found = field(default_factory=Found)
    # Wall seconds per step of the run (setup, ingest, reconstruct, quality, alerts), in the order they ran.
    seconds: dict[str, float] = field(default_factory=dict)
    # The signal that stopped the run before it was done (SIGINT, SIGTERM), if one did; and whether a micro-batch
    # was still under way when the run gave up waiting for it (the caller then ends the JVM: `gateway.halt`).
    stopped_by: str | None = None
    batch_under_way: bool = False

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Add the wall time of the enclosed block to `seconds[step]`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - start

    def record(self, query: str, counts: dict[str, int]) -> None:
        """Add one micro-batch's row counts."""
        self.batches[query] = self.batches.get(query, 0) + 1
        for name, count in counts.items():
            self.added[name] = self.added.get(name, 0) + count

    def add(self, counts: dict[str, int]) -> None:
        """Add rows written outside a micro-batch (the derived refresh)."""
        for name, count in counts.items():
            self.added[name] = self.added.get(name, 0) + count

    def record_from_server(self, queries: dict[str, StreamingQuery], added: dict[str, int]) -> None:
        """Count the streams' micro-batches from their progress and their rows from the commits
        (`commits.rows_added`), for a Spark Connect session, whose foreachBatch functions ran on the server."""
        for query, progress in queries.items():
            batches = {p.batchId for p in progress.recentProgress if p.numInputRows}
            if batches:
                self.batches[query] = self.batches.get(query, 0) + len(batches)
        for name, count in added.items():
            self.added[name] = self.added.get(name, 0) + count

    def line(self) -> str:
        if not self.batches:
            return "nothing new to process"
        return ", ".join(f"{name} +{count}" for name, count in self.added.items() if count)

    def stop_line(self) -> str:
        """What a run stopped by a signal did, and how to go on."""
        done = " and ".join(f"{count} {query}" for query, count in self.batches.items()) or "no"
        done += " micro-batch" if sum(self.batches.values()) == 1 else " micro-batches"
        left = (f"the one under way after {FINISH_S:.0f} s is read again by the next run" if self.batch_under_way
                else "none was under way")
        return (f"run stopped on {self.stopped_by} after {done}: every finished one is in the tables, "
                f"{left}; the same command resumes")

    def time_line(self) -> str:
        """Where the run's time went, step by step (`time: setup 16.6 s, ingest 28.3 s, ...`)."""
        return "time: " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in self.seconds.items())


def check_inputs(cfg: Config) -> None:
    """Fail early, with the fix, when the landing directory is missing (local runs) or the brokers cannot be
    reached (Kafka source)."""
    if cfg.source == "kafka":
        check_brokers(cfg)
        return
    if cfg.source_format == "text" and not cfg.landing.is_dir():
        raise ConfigError(
            f"landing directory {cfg.landing} does not exist; create it and put closed log files under "
            f"{cfg.landing}/<instance>/, or pass --landing DIR (try `rebalance simulate --out DIR` for sample logs)"
        )


def check_checkpoints(spark: SparkSession, cfg: Config) -> None:
    """Refuse to start a fresh ingest checkpoint over tables that already hold data (it would skip or redo work)."""
    checkpoint = inputs.checkpoint_dir(cfg, INGEST_QUERY)
    files = lake.table(cfg, "bronze_files")
    if written_batches(checkpoint) or not files.exists(spark):
        return
    if lake.read_table(spark, cfg, "bronze_files").limit(1).count():
        raise PipelineStateError(
            f"the ingest checkpoint {checkpoint} is missing but {cfg.lakehouse} already holds ingested files; "
            "a fresh checkpoint would not know what was ingested. Restore the checkpoint, or run "
            "`rebalance run --rebuild` to rebuild every table from the landing files"
        )


def run(
    spark: SparkSession,
    cfg: Config,
    *,
    trigger: Trigger = "available-now",
    rebuild: bool = False,
    stages: tuple[Stage, ...] = STAGES,
    run_ts: dt.datetime | None = None,
    on_progress: Callable[[str], None] | None = None,
    stop: StopRequest | None = None,
) -> RunSummary:
    """Process what is new in the landing directory and stop (`available-now`), or keep running (`continuous`).

    `stages` picks the steps to run (a scheduled job runs them as separate tasks, in this order). The quality step
    validates the tables and stores its verdicts; when a pipeline rule fails, the alerts step still runs (it raises
    the quality alert) and then the run raises QualityError naming the rules. Rows from inconsistent input that
    break an input rule are alerted once each and do not fail the run. The alerts step compares open
    rebalances with `run_ts` (default: now), so a stuck group alerts even when no line arrives. Continuous runs
    keep one stream going (each ingest batch rebuilds its groups; two streams through Spark Connect or for one
    stage), evaluate each rebuild's alerts in its batch and all of them on the wall clock (`run_continuously`), and
    refresh the derived tables every `derived_every_s`; quality comes from scheduled available-now runs.

    When `stop` is requested (a signal), the micro-batches under way finish, later ones and steps are not begun,
    and `stopped_by` names the signal; a local session's streams are then left held at their gate, for the caller
    to end the process (`gateway.halt`): a `query.stop()` would wait for the held batch for good. Pass `stop` only
    from a process that ends after the run (the command line does)."""
    summary = RunSummary()
    loop: Loops | None = None

    def stopped(queries: list[StreamingQuery]) -> RunSummary:
        assert stop is not None  # only called when requested(stop)
        summary.batch_under_way = not end_requested(stop, queries, loop, connect=is_connect(spark),
                                                    on_progress=on_progress)
        summary.stopped_by = stop.signal_name
        return summary

    if requested(stop):  # asked to stop while the session started: before anything is written or deleted
        return stopped([])
    with summary.timed("setup"):
        if "ingest" in stages:
            check_inputs(cfg)
        if rebuild:
            lake.reset(cfg)
        line_ids = check_release(cfg)
        lake.ensure_tables(spark, cfg)
        check_checkpoints(spark, cfg)
    # A continuous run evaluates the alerts of each reconstruct batch's groups in the batch, all of them on the clock,
    # and refreshes the derived tables on a clock of their own.
    alerts = alert_loop(spark, cfg, on_progress=on_progress) if trigger != "available-now" and "alerts" in stages \
        else None
    # Through Spark Connect the batches run in the server: what they find is read back from the commits instead.
    found = None if is_connect(spark) else summary.found
    # A requested stop holds a micro-batch at its entry (a local session's: a Connect server runs them elsewhere).
    gated = stop.guard if stop is not None and not is_connect(spark) else (lambda batch_fn: batch_fn)
    ingest_fn = make_ingest_batch(cfg, line_ids=line_ids, on_progress=on_progress, on_batch=summary.record,
                                  found=found)
    reconstruct_fn = skip_rebuilt(cfg, make_reconstruct_batch(
        cfg, on_progress=on_progress, on_batch=summary.record, found=found,
        # A continuous run's alerts of a batch's groups come from the batch itself.
        # (Not through Spark Connect: the batch runs in the server, the loop and its lock here.)
        on_hot=batch_alerts(spark, cfg, alerts, on_progress=on_progress)
        if alerts is not None and not is_connect(spark) else None))
    started = [s for s in ("ingest", "reconstruct") if s in stages]
    # A continuous run in one process ingests and rebuilds in one stream (not through Spark Connect: two there).
    one = OneStream(spark, cfg, ingest_fn, reconstruct_fn, gated=gated, stop=stop, on_progress=on_progress) \
        if trigger != "available-now" and started == ["ingest", "reconstruct"] and not is_connect(spark) else None
    derived = derived_loop(spark, cfg, on_rows=summary.add, poke=alerts, on_progress=on_progress, one_stream=one) \
        if trigger != "available-now" and "reconstruct" in stages else None
    names = name_loop(cfg, on_progress=on_progress) if trigger != "available-now" and "ingest" in stages \
        and not is_connect(spark) else None  # through Spark Connect the landing may be the server's alone
    loop = Loops(alerts, derived, names) or None
    if requested(stop):
        return stopped([])
    if trigger == "available-now":
        if "quality" in stages and started:
            import_gx_early()  # while the streams run, whose Python side mostly waits on the JVM
        before = commits.versions(spark, cfg, STREAMED) if is_connect(spark) and started else None
        finished: dict[str, StreamingQuery] = {}
        for stage in started:
            with summary.timed(stage):
                if stage == "ingest":
                    # A classic session's driver sees the landing and the checkpoint the stream uses.
                    landing = StreamCheck(cfg, INGEST_QUERY, None if is_connect(spark) else landing_fingerprint(cfg))
                    if landing.unchanged(on_progress):
                        continue
                    finished[INGEST_QUERY] = start_stream(inputs.read_source(spark, cfg), cfg, INGEST_QUERY,
                                                          gated(ingest_fn), AVAILABLE_NOW, on_progress=on_progress)
                    if (ended := wait_for(finished[INGEST_QUERY], stop)):
                        landing.all_read()
                else:
                    query, ended = catch_up(spark, cfg, RECONSTRUCT_QUERY, gated(reconstruct_fn), stop,
                                            on_progress=on_progress)
                    finished.update({RECONSTRUCT_QUERY: query} if query is not None else {})
                if not ended:
                    return stopped(list(finished.values()))
            if stage == "reconstruct" and not requested(stop):
                with summary.timed("derived"):
                    refreshed = refresh_derived(spark, cfg)
                if before is None:  # through Spark Connect the commits since `before` count them
                    summary.add(refreshed)
        if before is not None:
            summary.record_from_server(finished, commits.rows_added(spark, cfg, before))
            from_history(spark, cfg, before, summary.found)
        if "reconstruct" in started and not requested(stop) and compaction_due(cfg):  # never before its stream ends
            with summary.timed("maintenance"):
                maintain(spark, cfg, on_progress=on_progress, stopping=lambda: requested(stop))
        now = run_ts or dt.datetime.now(dt.timezone.utc)
        if requested(stop):
            return stopped([])
        if "quality" in stages:
            with summary.timed("quality"):
                summary.quality = run_quality(spark, cfg, run_ts=now, on_progress=on_progress)
            if summary.quality.validated:
                summary.added["gold_quality_results"] += len(summary.quality.results)
        if requested(stop):
            return stopped([])
        if "alerts" in stages:
            with summary.timed("alerts"):
                changed = run_alerts(spark, cfg, run_ts=now, on_progress=on_progress)["new_or_changed"]
            if changed:
                summary.record("alerts", {"gold_alerts": changed})
        if summary.quality is not None and (failed := summary.quality.error()) is not None:
            raise failed
        if stages == STAGES and not is_connect(spark):
            remember_complete_run(cfg)  # the next run with nothing new needs no Spark (`pipelines.flow.idle`)
    else:
        queries = continuous_queries(spark, cfg, started, ingest_fn, reconstruct_fn, gated, stop, one_stream=one,
                                     on_progress=on_progress)
        if requested(stop):
            return stopped(queries)
        run_continuously(queries, loop.start() if loop is not None and not requested(stop) else None, stop)
        if requested(stop):
            return stopped(queries)
    return summary


def run_continuously(queries: list[StreamingQuery], loop: Loops | None, stop: StopRequest | None = None) -> None:
    """Wait until one of `queries` stops (raising its error, if it failed), the alert loop fails or `stop` is
    requested; then stop them all and the loop, except on a requested stop (the caller ends the run:
    `stopping.end_requested`). The queries are watched themselves: the session's `awaitAnyTermination` returns at
    once when any earlier query of the session has ended (a notebook's or a test's available-now run)."""
    try:
        # awaitTermination returns True once its query has ended, and raises its error if it failed.
        while not requested(stop) and not any(query.awaitTermination(1) for query in queries):
            if not queries:
                time.sleep(1)  # alerts alone (no stream among the stages): only the clock drives them
            if loop is not None:
                loop.check()
    except BaseException:
        if not requested(stop):  # else a local stream may hold a batch at its gate: the caller ends the process
            _stop_all(queries, loop)
        raise
    if not requested(stop):
        _stop_all(queries, loop)


def _stop_all(queries: list[StreamingQuery], loop: Loops | None) -> None:
    for q in queries:
        q.stop()
    if loop is not None:
        loop.stop()
