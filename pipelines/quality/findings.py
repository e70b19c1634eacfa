"""What input rules judge, and the rows that break them.

An input rule judges only rows that are final: a row newer than the newest event minus
`thresholds.allowed_lateness_s` can still gain a neighbour from a file that arrives late (within the allowed
lateness), which may make its transition legal after all. The rows of an input rule that break it are findings:
each is named by its table, rule and key, and is alerted once (pipelines/alerts/rules.py, `input_alerts`).
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.quality.rules import Rule, TableCheck


def judged_until(newest_event: dt.datetime | None, *, allowed_lateness_s: float) -> dt.datetime | None:
    """The newest row time an input rule judges as final (None when there is no event yet)."""
    return None if newest_event is None else newest_event - dt.timedelta(seconds=allowed_lateness_s)


def filter_final(frame: DataFrame, *, time_column: str, until: dt.datetime | None) -> DataFrame:
    """The rows of `frame` whose `time_column` is at most `until` (no rows when `until` is None)."""
    if until is None:
        return frame.filter(F.lit(False))
    return frame.filter(F.col(time_column) <= F.lit(until).cast("timestamp"))


def breaks(rule: Rule) -> Column:
    """True where a row breaks a row-level rule (GX leaves nulls out of in_set, between and is_true checks)."""
    column = F.col(rule.columns[0])
    if rule.kind == "not_null":
        return column.isNull()
    if rule.kind == "is_true":
        return column.isNotNull() & ~column
    if rule.kind == "in_set":
        return column.isNotNull() & ~column.isin(*rule.values)
    if rule.kind == "between":
        low = column < rule.low if rule.low is not None else F.lit(False)
        high = column > rule.high if rule.high is not None else F.lit(False)
        return column.isNotNull() & (low | high)
    raise ValueError(f"rule {rule.name}: {rule.kind!r} is not judged row by row")


def _pairs(columns: tuple[str, ...]) -> Column:
    return F.concat_ws(", ", *[F.concat(F.lit(f"{c}="), F.coalesce(F.col(c).cast("string"), F.lit("null")))
                               for c in columns])


def violations(frame: DataFrame, *, check: TableCheck, rule: Rule) -> DataFrame:
    """The final rows of `frame` (a checked table with its derived columns, filtered by `filter_final`) that break
    `rule`: table_name, rule, row_key (`key=value, ...`), group_id, at, rebalance_id, incident_id, detail."""
    def optional(name: str) -> Column:
        return F.col(name) if name in frame.columns else F.lit(None).cast("string")

    detail = tuple(c for c in rule.shown if c not in ("group_id", check.time_column)) + rule.columns
    return frame.filter(breaks(rule)).select(
        F.lit(check.table).alias("table_name"), F.lit(rule.name).alias("rule"), _pairs(check.key).alias("row_key"),
        optional("group_id").alias("group_id"), F.col(str(check.time_column)).alias("at"),
        optional("rebalance_id").alias("rebalance_id"), optional("incident_id").alias("incident_id"),
        _pairs(detail).alias("detail"),
    )
