"""Independent Spark actions run side by side, each in a thread that carries the caller's job properties.

A micro-batch appends to several Delta tables that do not depend on one another; one after the other, each waits
for the previous commit although most of a small commit is the driver's own bookkeeping (the table's log, the
snapshot, the checksum). Threads let those waits overlap. `pyspark.InheritableThread` keeps the stream's job group
and local properties on every thread (a stopped query still cancels what its threads started).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from pyspark import InheritableThread
from pyspark.sql import SparkSession

_T = TypeVar("_T")


def run_together(spark: SparkSession, tasks: Mapping[str, Callable[[], _T]]) -> dict[str, _T]:
    """Run every task of `tasks` at once and return their results by name, in the order of `tasks`.

    Every task runs to its end even when another fails; then the first failure (in the order of `tasks`) is
    raised, so a caller never goes on while a task it started is still writing."""
    results: dict[str, _T] = {}
    errors: dict[str, BaseException] = {}

    def call(name: str, task: Callable[[], _T]) -> None:
        try:
            results[name] = task()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the caller's thread
            errors[name] = exc

    threads = [InheritableThread(call, args=(name, task), session=spark) for name, task in tasks.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name in tasks:
        if name in errors:
            raise errors[name]
    return {name: results[name] for name in tasks}
