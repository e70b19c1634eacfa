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

from pyspark.sql import DataFrame

# The DataFrame methods a recorded transform may call (each returns a new frame), besides `columns` and `transform`.
STEPS = frozenset({"select", "withColumn", "withColumns", "drop"})
RECIPES_KEPT = 16  # recipes kept per process, least recently used dropped first (tests build many schemas)

Step = tuple[str, tuple[Any, ...], dict[str, Any]]


class UnrecordableStepError(TypeError):
    """A recorded transform used a DataFrame method whose result could not be repeated on another frame."""


class _Recording:
    """Stands in for a DataFrame while a transform runs: each step is done on the real frame and noted."""

    def __init__(self, df: DataFrame, steps: list[Step]) -> None:
        self._df, self._steps, self._at = df, steps, len(steps)

    @property
    def columns(self) -> list[str]:
        return self._df.columns

    def transform(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return func(self, *args, **kwargs)

    def __getattr__(self, name: str) -> Callable[..., _Recording]:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in STEPS:
            raise UnrecordableStepError(
                f"a recorded transform may call only {', '.join(sorted(STEPS))}, `columns` and `transform` on its "
                f"frame; it called `{name}`")
        method = getattr(self._df, name)

        def step(*args: Any, **kwargs: Any) -> _Recording:
            # The steps are repeated in a line: a step on an earlier frame (two branches) would repeat wrongly.
            if self._at != len(self._steps):
                raise UnrecordableStepError(f"a recorded transform must take each step on the frame of its last "
                                            f"one; `{name}` was taken on an earlier frame")
            # Copied: a dict or list the transform changes later must not change what is repeated.
            self._steps.append((name, tuple(_copied(a) for a in args), {k: _copied(v) for k, v in kwargs.items()}))
            return _Recording(method(*args, **kwargs), self._steps)

        return step


def _copied(value: Any) -> Any:
    return dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value


def _owner(df: DataFrame) -> object:
    """What the frame's Column objects belong to: a classic session's JVM (each foreachBatch call hands the batch
    function a new Python session over the same JVM, and classic Columns are JVM objects of no session), or a
    Spark Connect session."""
    if type(df).__module__.startswith("pyspark.sql.classic"):
        from pyspark import SparkContext

        return SparkContext._active_spark_context or df.sparkSession
    return df.sparkSession


_recipes: OrderedDict[Hashable, tuple[object, list[Step]]] = OrderedDict()
_lock = threading.Lock()


def recorded(df: DataFrame, transform: Callable[[DataFrame], DataFrame], *, key: Hashable) -> DataFrame:
    """`transform(df)`, built once per `key`, frame schema and JVM (or Connect session) and repeated from its noted
    steps after that.

    `key` must hold everything the transform's columns depend on besides the frame's schema (its settings);
    the transform may read `columns` and call the methods of STEPS and `transform` only (else UnrecordableStepError)."""
    owner = _owner(df)
    full_key = (key, df.schema.simpleString(), type(df).__module__)
    with _lock:
        found = _recipes.get(full_key)
        if found is not None:
            _recipes.move_to_end(full_key)
    # A session stopped and started anew (a new JVM for a classic one) builds anew: its old columns are not its own.
    if found is not None and found[0] is owner:
        out = df
        for name, args, kwargs in found[1]:
            out = getattr(out, name)(*args, **kwargs)
        return out
    steps: list[Step] = []
    result: Any = transform(cast(DataFrame, _Recording(df, steps)))
    if not isinstance(result, _Recording):
        raise UnrecordableStepError("a recorded transform must return the frame it was given, after its steps")
    with _lock:
        _recipes[full_key] = (owner, steps)
        _recipes.move_to_end(full_key)
        while len(_recipes) > RECIPES_KEPT:
            _recipes.popitem(last=False)
    return result._df
