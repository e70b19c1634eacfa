"""Frames cached for the span of one block of work and always released when it ends.

A long-lived driver (a scheduled job of many batches, a test session, a notebook) keeps every persisted plan until
somebody unpersists it; a stage that forgets, or raises between `persist` and `unpersist`, leaks executor memory
and driver-side plans for the rest of the session.
"""

from __future__ import annotations

from types import TracebackType

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from pipelines.session.remote import is_connect


class CachedFrames:
    """Persist frames and remember them; `release` (or leaving the `with` block, also on error) unpersists them in
    the reverse order they were cached. Call the instance on a frame to persist it: it returns the same frame, so
    it fits wherever a `persist` callback is expected."""

    def __init__(self, level: StorageLevel = StorageLevel.MEMORY_AND_DISK) -> None:
        self._level = level
        self._frames: list[DataFrame] = []

    def _hold(self, df: DataFrame) -> DataFrame:
        return df.persist(self._level)

    def _drop(self, df: DataFrame) -> None:
        df.unpersist()

    def __call__(self, df: DataFrame) -> DataFrame:
        self._frames.append(self._hold(df))
        return self._frames[-1]

    def release(self) -> None:
        """Release every frame held so far, newest first, and forget them."""
        while self._frames:
            self._drop(self._frames.pop())

    def __enter__(self) -> CachedFrames:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


class PinnedFrames(CachedFrames):
    """CachedFrames that pin (`pin`) instead of persisting: calling the instance returns the pinned frame, and later
    queries over it analyse only its stored rows, not the plan that made them."""

    def _hold(self, df: DataFrame) -> DataFrame:
        return pin(df, self._level)

    def _drop(self, df: DataFrame) -> None:
        unpin(df)


def pin(df: DataFrame, level: StorageLevel = StorageLevel.MEMORY_AND_DISK) -> DataFrame:
    """`df` computed now and held by the executors, returned as a frame whose plan is only those rows (a local
    checkpoint); release it with `unpin`.

    A persisted frame keeps its whole plan: every later query over it analyses that plan again before the cache
    stands in for it. The parse's plan has hundreds of expressions, and a micro-batch runs a dozen queries over
    it (counts, appends, accounting), so keeping the rows without the plan is what makes a small batch cheap.
    A Spark Connect client persists and counts instead: its checkpoint command nests the whole plan in one message,
    and a gold build's plan is deeper than the protocol decodes."""
    if is_connect(df.sparkSession):
        df = df.persist(level)
        df.count()
        return df
    return df.localCheckpoint(eager=True, storageLevel=level)


def unpin(df: DataFrame) -> None:
    """Release the rows `pin` holds for `df` now, rather than whenever the driver's garbage collector finds the
    frame unused. A second release does nothing."""
    if is_connect(df.sparkSession):
        df.unpersist()
        return
    plan = df._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":  # a pinned frame's plan is its stored rows
        plan.rdd().unpersist(False)
