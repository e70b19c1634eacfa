"""`AnyLiteral` (AnyLiteral.java) as a Column: does a text contain any of these literals, in one pass over it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark import SparkContext
from pyspark.sql import Column

MATCHER_CLASS = "rebalance.spark.AnyLiteral"

_loaded: dict[int, bool] = {}  # per JVM gateway: was the class found on the driver's classpath


def _matcher_loaded(sc: SparkContext) -> bool:
    """True when this JVM can load the matcher (a local session given the project's jar)."""
    key = id(sc._gateway)
    if key not in _loaded:
        try:
            found: Any = sc._jvm
            for part in MATCHER_CLASS.split("."):
                found = getattr(found, part)
            # py4j answers a JavaClass for a class it can load and a JavaPackage for any other name.
            _loaded[key] = type(found).__name__ == "JavaClass"
        except Exception:  # noqa: BLE001 - a cluster that forbids py4j (shared access mode) raises; use the fallback
            _loaded[key] = False
    return _loaded[key]


def any_literal(text: Column, literals: Sequence[str]) -> Column | None:
    """True when `text` contains one of `literals` (null for a null text), as one JVM call per row; None when this
    session cannot run the matcher (a Spark Connect column, or a JVM without the project's jar)."""
    jc = getattr(text, "_jc", None)
    sc = SparkContext._active_spark_context
    if jc is None or sc is None or not _matcher_loaded(sc):
        return None
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm: Any = sc._jvm
    gateway: Any = sc._gateway
    array = gateway.new_array(jvm.java.lang.String, len(literals))
    for i, literal in enumerate(literals):
        array[i] = literal
    return ClassicColumn(jvm.rebalance.spark.AnyLiteral.column(array, jc))
