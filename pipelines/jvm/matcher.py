"""The project's JVM functions as Columns: `AnyLiteral` (does a text contain any of these literals, in one pass over
it) and `TemplateMatch` (the first template that matches a text, trying only those whose literal it holds)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark import SparkContext
from pyspark.sql import Column

MATCHER_CLASS = "rebalance.spark.AnyLiteral"

TEMPLATE_CLASS = "rebalance.spark.TemplateMatch"
# Joins the entries of one argument of TemplateMatch.column (one py4j call, not one per entry).
_ENTRY_SEP = "\u0000"

_loaded: dict[tuple[int, str], bool] = {}  # per JVM gateway and class: was the class found on the driver's classpath


def _class_loaded(sc: SparkContext, name: str = MATCHER_CLASS) -> bool:
    """True when this JVM can load the class `name` (a local session given the project's jar)."""
    key = (id(sc._gateway), name)
    if key not in _loaded:
        try:
            found: Any = sc._jvm
            for part in name.split("."):
                found = getattr(found, part)
            # py4j answers a JavaClass for a class it can load and a JavaPackage for any other name.
            _loaded[key] = type(found).__name__ == "JavaClass"
        except Exception:  # noqa: BLE001 - a cluster that forbids py4j (shared access mode) raises; use the fallback
            _loaded[key] = False
    return _loaded[key]


def _classic(text: Column, name: str) -> tuple[Any, Any] | None:
    """The JVM column behind `text` and the session's JVM view, when `name` can run on it (else None)."""
    jc = getattr(text, "_jc", None)
    sc = SparkContext._active_spark_context
    if jc is None or sc is None or not _class_loaded(sc, name):
        return None
    return jc, sc._jvm


def any_literal(text: Column, literals: Sequence[str]) -> Column | None:
    """True when `text` contains one of `literals` (null for a null text), as one JVM call per row; None when this
    session cannot run the matcher (a Spark Connect column, or a JVM without the project's jar)."""
    found = _classic(text, MATCHER_CLASS)
    if found is None:
        return None
    from pyspark.sql.classic.column import Column as ClassicColumn

    jc, jvm = found
    return ClassicColumn(jvm.rebalance.spark.AnyLiteral.column(_joined(literals), jc))


def _joined(entries: Sequence[str]) -> str:
    if any(_ENTRY_SEP in entry for entry in entries):
        raise ValueError("a literal or pattern holds U+0000, which joins the entries passed to the JVM")
    return _ENTRY_SEP.join(entries)


def template_match(text: Column, literals: Sequence[str], patterns: Sequence[str],
                   slot_groups: Sequence[Sequence[int]], search_mark: str) -> Column | None:
    """The first template (in order) whose regex matches `text`, as an array: its 1-based number as a string, then
    one value per field slot (template i's group `slot_groups[i][k]` for slot k; 0 means none, read as empty); null
    when none matches. Only templates whose literal `text` holds are tried (a match holds its literal). On a text
    that starts with `search_mark`, the match that starts earliest wins, then the first template, as one regex
    alternating every pattern would. None when this session cannot run it (Spark Connect, no project jar)."""
    found = _classic(text, TEMPLATE_CLASS)
    if found is None:
        return None
    from pyspark.sql.classic.column import Column as ClassicColumn

    jc, jvm = found
    groups = [",".join(str(g) for g in row) for row in slot_groups]
    return ClassicColumn(jvm.rebalance.spark.TemplateMatch.column(
        _joined(literals), _joined(patterns), _joined(groups), search_mark, jc))
