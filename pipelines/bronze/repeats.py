"""What earlier batches ingested of the files a batch continues.

The `content` scheme's line ids count the repeats of a text per instance and file name across batches
(`pipelines.bronze.lines.with_line_ids`), so a batch needs the content hashes of the earlier records of its own
(instance, file name) pairs, and of no others. A batch of landed files usually continues no file at all (rotated
logs get new names), so the pairs come first from bronze_files (one row per file) and the records are read only when
some pair was ingested before, instead of a scan of every earlier bronze record each batch. A Kafka topic's "files"
keep their names from batch to batch: those batches read the records of their pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

_PAIR = ("instance", "file_name")


@dataclass(frozen=True)
class EarlierIngest:
    """The bronze_files and bronze_log_lines rows of the batches before the one being built."""

    files: DataFrame
    lines: DataFrame

    def contents_for(self, files: DataFrame) -> DataFrame | None:
        """`content_hash` of the earlier records of the (instance, file name) pairs of `files` (bronze_files rows of
        the batch), or None when no earlier batch ingested a file of the same instance and name."""
        here = files.select(*_PAIR).distinct()
        before = self.files.select(*_PAIR).distinct()
        pairs = before.join(here, _same_pair(before, here), "left_semi").collect()
        if not pairs:
            return None
        wanted = F.broadcast(files.sparkSession.createDataFrame(pairs, "instance string, file_name string"))
        hashed = self.lines.filter(F.col("content_hash").isNotNull())
        return hashed.join(wanted, _same_pair(hashed, wanted), "left_semi").select("content_hash")


def _same_pair(left: DataFrame, right: DataFrame) -> Column:
    """Null-safe equality of the two frames' instance and file name (an instance may be unknown)."""
    instance = left["instance"].eqNullSafe(right["instance"])
    return instance & left["file_name"].eqNullSafe(right["file_name"])
