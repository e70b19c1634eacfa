"""A frame transform built once per process and repeated on every later frame of the same schema.

Building the parse (`pipelines.silver.build.parse_records`) costs the driver hundreds of Column objects and some 6,000
calls into the JVM per micro-batch, though its columns depend only on the sources and the frame's schema. Here the
transform runs once, on the first frame, through a stand-in that does each step (select, withColumn(s), drop) on the
real frame and notes it; a later frame of the same schema gets the same steps with the same Column objects, which are
unresolved expressions and so hold for any frame with those column names. Spark still analyses each step; only the
building is saved.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, cast

from pyspark.sql import DataFrame, SparkSession

# The DataFrame methods a recorded transform may call (each returns a new frame), besides `columns` and `transform`.
STEPS = frozenset({"select", "withColumn", "withColumns", "drop"})
RECIPES_KEPT = 16  # recipes kept per process, least recently used dropped first (tests build many schemas)

Step = tuple[str, tuple[Any, ...], dict[str, Any]]


class UnrecordableStepError(TypeError):
    """A recorded transform used a DataFrame method whose result could not be repeated on another frame."""


class _Recording:
    """Stands in for a DataFrame while a transform runs: each step is done on the real frame and noted."""

    def __init__(self, df: DataFrame, steps: list[Step]) -> None:
        self._df, self._steps = df, steps

    @property
    def columns(self) -> list[str]:
        return self._df.columns

    def transform(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return func(self, *args, **kwargs)

    def __getattr__(self, name: str) -> Callable[..., _Recording]:
        if name not in STEPS:
            raise UnrecordableStepError(
                f"a recorded transform may call only {', '.join(sorted(STEPS))}, `columns` and `transform` on its "
                f"frame; it called `{name}`")
        method = getattr(self._df, name)

        def step(*args: Any, **kwargs: Any) -> _Recording:
            self._steps.append((name, args, kwargs))
            return _Recording(method(*args, **kwargs), self._steps)

        return step


_recipes: OrderedDict[Hashable, tuple[SparkSession, list[Step]]] = OrderedDict()
_lock = threading.Lock()


def recorded(df: DataFrame, transform: Callable[[DataFrame], DataFrame], *, key: Hashable) -> DataFrame:
    """`transform(df)`, built once per `key`, frame schema and session and repeated from its noted steps after that.

    `key` must hold everything the transform's columns depend on besides the frame's schema (its settings);
    the transform may read `columns` and call the methods of STEPS and `transform` only (else UnrecordableStepError)."""
    session = df.sparkSession
    full_key = (key, df.schema.simpleString(), type(df).__module__)
    with _lock:
        found = _recipes.get(full_key)
        if found is not None:
            _recipes.move_to_end(full_key)
    # A session stopped and started anew (a new JVM for a classic one) builds anew: its old columns are not its own.
    if found is not None and found[0] is session:
        out = df
        for name, args, kwargs in found[1]:
            out = getattr(out, name)(*args, **kwargs)
        return out
    steps: list[Step] = []
    result: Any = transform(cast(DataFrame, _Recording(df, steps)))
    if not isinstance(result, _Recording):
        raise UnrecordableStepError("a recorded transform must return the frame it was given, after its steps")
    with _lock:
        _recipes[full_key] = (session, steps)
        _recipes.move_to_end(full_key)
        while len(_recipes) > RECIPES_KEPT:
            _recipes.popitem(last=False)
    return result._df
