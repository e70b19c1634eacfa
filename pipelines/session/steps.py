"""Name the step a Spark job belongs to, so a micro-batch's time can be split by what the pipeline was doing.

A small micro-batch costs its number of Spark jobs, not its rows (issue #52), and the stream's own job description
says only which batch a job served. `step` adds the pipeline's step (`reconstruct: placement`,
`reconstruct: merge gold_rebalances`, ...) as the local property `STEP_PROPERTY` of the thread that starts the jobs;
threads started with `pyspark.InheritableThread` (`pipelines.session.together`) carry it. Spark's event log records
it with every job, and `python -m bench.jobs` splits each batch by it. Through Spark Connect there is no local
property to set: the step is not recorded there.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Concatenate, ParamSpec, TypeVar

from pyspark.sql import SparkSession

from pipelines.session.remote import is_connect

STEP_PROPERTY = "rebalance.step"
_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextlib.contextmanager
def step(spark: SparkSession, name: str) -> Iterator[None]:
    """Jobs started by this thread inside the block are recorded as step `name`; the step before it comes back at
    the end of the block."""
    if is_connect(spark):
        yield
        return
    context = spark.sparkContext
    before = context.getLocalProperty(STEP_PROPERTY)
    context.setLocalProperty(STEP_PROPERTY, name)
    try:
        yield
    finally:
        # A property set to None is removed.
        context.setLocalProperty(STEP_PROPERTY, before)  # type: ignore[arg-type]


def as_step(name: str) -> Callable[[Callable[Concatenate[SparkSession, _P], _R]],
                                   Callable[Concatenate[SparkSession, _P], _R]]:
    """A function whose first argument is the session, its jobs recorded as step `name` wherever it is called."""
    def wrap(fn: Callable[Concatenate[SparkSession, _P], _R]) -> Callable[Concatenate[SparkSession, _P], _R]:
        @functools.wraps(fn)
        def in_step(spark: SparkSession, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            with step(spark, name):
                return fn(spark, *args, **kwargs)
        return in_step
    return wrap
