"""Durations as people read them, in Spark (the same words as `pipelines.report.text.duration`): the one-line
summaries of gold_incidents and gold_alerts say `3 min 2 s`, not `182 s`."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def spoken_duration(ms: Column) -> Column:
    """`850 ms`, `48.5 s`, `3 min 2 s`, `3 min`, `2 h 5 min`, `2 h`; `-` when null."""
    whole = F.round(ms / 1000.0).cast("long")
    minutes, seconds, hours = F.floor(whole / 60), whole % 60, F.floor(whole / 3600)
    in_hour = F.floor(whole % 3600 / 60)
    return (
        F.when(ms.isNull(), F.lit("-"))
        .when(ms < 1000, F.format_string("%.0f ms", ms.cast("double")))
        .when(ms / 1000.0 < 59.95, F.format_string("%.1f s", ms / 1000.0))
        .when(whole < 3600, F.when(seconds == 0, F.format_string("%d min", minutes))
              .otherwise(F.format_string("%d min %d s", minutes, seconds)))
        .when(in_hour == 0, F.format_string("%d h", hours))
        .otherwise(F.format_string("%d h %d min", hours, in_hour))
    )
