"""Ingest and reconstruct in one micro-batch, for a continuous run in one process.

With two streams a landed file waits twice: for the ingest batch under way, then for the reconstruct batch under way
when its silver rows arrive, and on a busy machine both streams are always mid-batch. One stream rebuilds the groups
of each ingest batch right after that batch's silver commits, so a file's rebalances are in gold at the end of the
batch that read it. The batches rebuilt here are recorded (`pipelines.state.rebuilt`) and the reconstruct stream
skips them when it runs: at the start of a continuous run (`catch_up`), where it rebuilds whatever an ingest-only run
or a stopped run left behind, and between two batches on the derived tables' turn (`OneStream.advance`), so its
checkpoint keeps up with the table. A Databricks job that runs ingest and reconstruct as separate tasks, and a run
through Spark Connect, keep the two streams.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from pipelines.flow.stopping import StopRequest, requested, wait_for
from pipelines.flow.streams import AVAILABLE_NOW, CONTINUOUS_INTERVAL, RECONSTRUCT_QUERY, BatchFn, start_stream
from pipelines.flow.unchanged import StreamCheck, table_fingerprint
from pipelines.session.remote import is_connect
from pipelines.session.steps import step
from pipelines.settings.config import Config
from pipelines.state import rebuilt
from pipelines.storage import inputs, lake

# How often a one-stream run moves the reconstruct stream's checkpoint up to the present (`OneStream.advance`, on
# the derived tables' turn), and always just before that turn compacts the tables. A checkpoint left behind would
# name Delta versions whose files a compaction replaced (and a VACUUM may then remove) or whose log the tables'
# retention (30 days) dropped, and the next run's catch-up could not read them.
ADVANCE_EVERY_S = 900.0


def _ranges_text(ranges: rebuilt.Ranges) -> str:
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)


class OneStream:
    """The foreachBatch function of a one-stream run (`batch`: ingest a batch of landed lines, then rebuild its
    groups) and the move of the reconstruct stream's checkpoint past what it rebuilt (`advance`). One lock keeps
    them apart: a move, and a compaction that follows it (`between_batches`), never run while a batch is under way.

    `gated` is the run's stop gate (`StopRequest.guard`), applied inside the lock: a batch still waiting for a move
    has not begun, and one that gets the lock after a stop was requested waits at the gate without writing. Once
    `stop` is requested no move starts."""

    def __init__(self, spark: SparkSession, cfg: Config, ingest_batch: BatchFn, reconstruct_batch: BatchFn, *,
                 gated: Callable[[BatchFn], BatchFn] = lambda fn: fn, stop: StopRequest | None = None,
                 on_progress: Callable[[str], None] | None = None) -> None:
        self.spark, self.cfg, self.stop, self.on_progress = spark, cfg, stop, on_progress
        self.ingest_batch, self.reconstruct_batch = ingest_batch, reconstruct_batch
        self.lock = threading.Lock()
        self.advanced = time.monotonic()
        self._gated_body = gated(self._body)

    def batch(self, batch_df: DataFrame, batch_id: int) -> None:
        """Ingest `batch_df`, then rebuild the groups of its files and record the batch (behind the stop gate)."""
        with self.lock:
            self._gated_body(batch_df, batch_id)

    def _body(self, batch_df: DataFrame, batch_id: int) -> None:
        # The rebuild reads the batch's own silver_accounting rows back from the table: a batch replayed after its
        # commits (a run stopped before the checkpoint recorded it) stages its files as repeats of themselves, while
        # the table holds what its first attempt committed. The batch is recorded once its groups are in gold.
        self.ingest_batch(batch_df, batch_id)
        with step(batch_df.sparkSession, "reconstruct: batch files"):
            accounting = lake.read_table(batch_df.sparkSession, self.cfg, "silver_accounting") \
                .filter(F.col("batch_id") == batch_id)
        self.reconstruct_batch(accounting, batch_id)
        rebuilt.mark(self.cfg, batch_id)

    def due(self) -> bool:
        """Whether `ADVANCE_EVERY_S` has passed since the last move."""
        return time.monotonic() - self.advanced >= ADVANCE_EVERY_S

    @contextlib.contextmanager
    def between_batches(self) -> Iterator[bool]:
        """Hold the stream between two batches for the block; yields False, holding nothing, when a stop was
        requested before the batch under way let go (a batch held at the stop gate keeps the lock for good)."""
        while not self.lock.acquire(timeout=0.5):
            if requested(self.stop):
                yield False
                return
        try:
            yield True
        finally:
            self.lock.release()

    def advance(self) -> None:
        """Run the reconstruct stream over what it has not passed, all of it recorded (so it rebuilds nothing), and
        forget the record; nothing to do while the record is empty or once a stop was requested. Call it inside
        `between_batches`."""
        passed = rebuilt.recorded(self.cfg)
        if passed and not requested(self.stop):
            started = time.monotonic()
            query, _ = catch_up(self.spark, self.cfg, RECONSTRUCT_QUERY, self.reconstruct_batch, None)
            if query is not None:  # always, with batches recorded
                query.awaitTermination()  # raises the catch-up's own failure, if it failed
            if self.on_progress is not None:
                self.on_progress(f"reconstruct stream moved past one-stream batches {_ranges_text(passed)} "
                                 f"({time.monotonic() - started:.1f} s)")
        self.advanced = time.monotonic()


def skip_rebuilt(cfg: Config, reconstruct_batch: BatchFn) -> BatchFn:
    """`reconstruct_batch` leaving out the silver_accounting rows of ingest batches a one-stream batch rebuilt."""

    def reconstruct_what_is_left(batch_df: DataFrame, batch_id: int) -> None:
        done = rebuilt.recorded(cfg)
        reconstruct_batch(batch_df.filter(rebuilt.skip(done, F.col("batch_id"))) if done else batch_df, batch_id)

    return reconstruct_what_is_left


def catch_up(spark: SparkSession, cfg: Config, name: str, batch_fn: BatchFn, stop: StopRequest | None, *,
             on_progress: Callable[[str], None] | None = None) -> tuple[StreamingQuery | None, bool]:
    """Run the reconstruct stream `name` (its foreachBatch function `batch_fn`, wrapped in `skip_rebuilt`) over
    everything new in silver_accounting and wait; once it has ended, forget the one-stream batches it has passed.
    Returns the query and whether it ended (False: a stop was requested first); no query when silver_accounting
    holds nothing the stream has not read (`pipelines.flow.unchanged`)."""
    passed = rebuilt.recorded(cfg)
    # A classic session's driver sees the table and the checkpoint the stream uses.
    source = StreamCheck(cfg, name, None if passed or is_connect(spark)
                         else table_fingerprint(cfg, "silver_accounting"))
    if source.unchanged(on_progress):
        return None, True
    query = start_stream(lake.read_table_stream(spark, cfg, "silver_accounting"), cfg, name, batch_fn,
                         AVAILABLE_NOW, on_progress=on_progress)
    ended = wait_for(query, stop)
    if ended:
        source.all_read()
        if passed:
            rebuilt.forget(cfg, passed)
    return query, ended


def continuous_queries(spark: SparkSession, cfg: Config, stages: Sequence[str], ingest_batch: BatchFn,
                       reconstruct_batch: BatchFn, gated: Callable[[BatchFn], BatchFn], stop: StopRequest | None, *,
                       one_stream: OneStream | None = None, trigger: str = CONTINUOUS_INTERVAL,
                       on_progress: Callable[[str], None] | None = None) -> list[StreamingQuery]:
    """Start the streams of a continuous run of `stages` ("ingest", "reconstruct" or both), with a processing-time
    `trigger`, and return them.

    Both stages with `one_stream`: the reconstruct stream first catches up (`catch_up`), then one stream ingests and
    rebuilds (`one_stream.batch`, made with the same gate). Otherwise each stage has its stream. `gated` holds a
    micro-batch at its entry once a stop is requested (a one-stream batch is held or run whole); a stop requested
    during the catch-up returns its query alone."""
    if one_stream is not None and list(stages) == ["ingest", "reconstruct"]:
        query, ended = catch_up(spark, cfg, RECONSTRUCT_QUERY, gated(reconstruct_batch), stop, on_progress=on_progress)
        if not ended:
            return [query] if query is not None else []
        batch_fns: dict[str, BatchFn] = {inputs.INGEST_QUERY: one_stream.batch}  # behind the gate it was made with
        if on_progress is not None:
            on_progress("continuous run: the reconstruct stream has caught up; from here each ingest batch rebuilds "
                        "its own groups (one stream)")
    else:
        batch_fns = {name: gated(fn) for name, fn in ((inputs.INGEST_QUERY, ingest_batch),
                                                      (RECONSTRUCT_QUERY, reconstruct_batch)) if name in stages}
    return [start_stream(inputs.read_source(spark, cfg) if name == inputs.INGEST_QUERY
                         else lake.read_table_stream(spark, cfg, "silver_accounting"),
                         cfg, name, fn, trigger, on_progress=on_progress)
            for name, fn in batch_fns.items()]
