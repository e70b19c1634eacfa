"""What a run committed, read back from the tables' Delta history.

Through Spark Connect the foreachBatch functions run on the server, so their row counts never reach this process;
the commits they made say the same from the outside."""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.settings.config import Config
from pipelines.storage import lake


def versions(spark: SparkSession, cfg: Config, names: Iterable[str]) -> dict[str, int]:
    """The latest Delta version of each named table."""
    return {name: lake.table_version(spark, cfg, name) for name in sorted(names)}


def rows_added(spark: SparkSession, cfg: Config, since: dict[str, int]) -> dict[str, int]:
    """Rows appended, inserted or updated by the commits after `since` (table -> version), per table."""
    now = versions(spark, cfg, list(since))
    added = {}
    for name, version in since.items():
        if now[name] == version:
            continue
        history = spark.sql(f"DESCRIBE HISTORY {lake.table(cfg, name).sql_name}").filter(F.col("version") > version)
        metrics = F.col("operationMetrics")
        # A MERGE's numOutputRows also counts the unchanged rows it copied into new files.
        merged = metrics["numTargetRowsInserted"].cast("long") + metrics["numTargetRowsUpdated"].cast("long")
        added_rows = F.when(F.col("operation") == "MERGE", merged).otherwise(metrics["numOutputRows"].cast("long"))
        row = history.agg(F.sum(added_rows)).first()
        assert row is not None  # an aggregate without grouping has exactly one row
        added[name] = int(row[0] or 0)
    return added
