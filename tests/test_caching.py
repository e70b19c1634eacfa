"""Pinned frames: computed once, planned as stored rows, and released when asked."""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.caching import pin, unpin


def _stored_rdds(spark) -> int:
    return len(spark.sparkContext._jsc.sc().getRDDStorageInfo())


def test_a_pinned_frame_keeps_its_rows_drops_its_plan_and_is_released(spark):
    source = spark.range(1_000).withColumn("even", F.col("id") % 2 == 0)
    wide = source.withColumns({f"c{i}": F.col("id") * i for i in range(40)})
    before = _stored_rdds(spark)
    pinned = pin(wide)
    assert _stored_rdds(spark) == before + 1
    # The plan is the stored rows: no trace of the forty expressions behind them.
    assert "c39" in pinned.columns and "multiply" not in str(pinned._jdf.queryExecution().analyzed()).lower()
    assertDataFrameEqual(pinned.filter("even"), wide.filter("even"))
    unpin(pinned)
    assert _stored_rdds(spark) == before
    unpin(pinned)  # a second release is harmless
    assert _stored_rdds(spark) == before
