"""What the pipeline reads in: the landing directory's closed files or the Kafka topics as a stream, the same files
as a batch, and where each streaming query keeps its checkpoint."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamReader

from pipelines.bronze.damaged import damaged_gzips, with_torn_rows
from pipelines.settings.config import Config

# The streaming query that reads the landing directory (its checkpoint folder has this name).
INGEST_QUERY = "ingest"


def checkpoint_dir(cfg: Config, query: str) -> Path:
    """The checkpoint folder of one streaming query."""
    return cfg.checkpoint_root / query


def read_landing(spark: SparkSession, cfg: Config) -> DataFrame:
    """Stream the lines of closed files under `<landing>/<instance>/<file>` with their file metadata.

    Locally this is Spark's text file source; on Databricks, Auto Loader (`source_format: cloudFiles`). Locally every
    file under the landing directory is read, at any depth, unless a name on its path below the landing directory
    starts with `.` or `_` (files being copied in; `landing_files` gives Spark's exact rule); a file's instance is the
    folder it sits in.
    """
    reader: DataStreamReader = spark.readStream
    if cfg.source_format == "cloudFiles":
        reader = reader.format("cloudFiles").option("cloudFiles.format", "text").option(
            "cloudFiles.maxFilesPerTrigger", str(cfg.max_files_per_trigger)
        )
        pattern = str(cfg.landing) + "/*/*"
    else:
        # A damaged gzip would fail every retry of its batch; Spark keeps its readable lines and the ingest batch
        # quarantines the rest (pipelines/bronze/damaged.py).
        reader = reader.format("text").option("maxFilesPerTrigger", str(cfg.max_files_per_trigger)) \
            .option("ignoreCorruptFiles", "true").option("recursiveFileLookup", "true")
        # The landing's own entries, listed by the source: a glob that names every file (`*/*`) makes each listing
        # (one at stream creation, one per batch) a Spark job of one task per landed file, which cost 33 s per run
        # on a 30-day landing of 6,671 files.
        pattern = str(cfg.landing.resolve()) + "/[!._]*"
    return reader.load(pattern).select("value", "_metadata")


def read_kafka(spark: SparkSession, cfg: Config) -> DataFrame:
    """Stream the records of the configured Kafka topics (`key`, `value` as strings, `topic`, `partition`, `offset`,
    `timestamp`); offsets live in the ingest checkpoint, so each record is read once.

    Offsets that retention deleted before they were read do not stop the stream (`failOnDataLoss` false): the ingest
    batch finds the gap and quarantines one record that counts it (pipelines/bronze/envelopes.py)."""
    k = cfg.kafka
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", k.bootstrap_servers or "")
        .option("subscribe", ",".join(k.topics))
        .option("startingOffsets", k.starting_offsets)
        .option("failOnDataLoss", "false")
    )
    if k.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(k.max_offsets_per_trigger))
    for key, value in k.options.items():
        reader = reader.option(key, value)
    return reader.load().select(
        F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"),
        "topic", "partition", "offset", "timestamp",
    )


def read_source(spark: SparkSession, cfg: Config) -> DataFrame:
    """The ingest stream of the configured source: landing files or Kafka topics."""
    return read_kafka(spark, cfg) if cfg.source == "kafka" else read_landing(spark, cfg)


def read_files(spark: SparkSession, paths: list[Path]) -> DataFrame:
    """A batch read of the lines of the given files, with the same columns the landing stream has, and a torn-line
    row for each damaged gzip file (as the ingest batch adds)."""
    # Absolute, not resolved: a file in a linked folder keeps the name the landing stream gives it.
    resolved = [Path(os.path.abspath(p)) for p in paths]
    raw = spark.read.format("text").option("ignoreCorruptFiles", "true").load([str(p) for p in resolved])
    return with_torn_rows(spark, raw.select("value", "_metadata"), damaged_gzips([p.as_uri() for p in resolved]))


def landing_files(cfg: Config) -> list[Path]:
    """Every file under the landing directory that the landing stream reads, named as the stream names it (below the
    resolved landing directory, linked folders followed and not resolved), sorted. `_listed` says which names."""
    landing = cfg.landing.resolve()
    found: list[Path] = []
    folders_seen: set[tuple[int, int]] = set()
    # Hadoop's local file system lists a linked folder like any other: followed, each real folder once.
    for folder, dirs, files in os.walk(landing, followlinks=True):
        info = os.stat(folder)
        if (info.st_dev, info.st_ino) in folders_seen:
            dirs[:] = []
            continue
        folders_seen.add((info.st_dev, info.st_ino))
        top = folder == str(landing)
        dirs[:] = [d for d in dirs if _listed(d, top=top, folder=True)]
        # A dangling link is no file to read.
        found += [path for name in files if _listed(name, top=top, folder=False)
                  and os.path.isfile(path := Path(folder, name))]
    return sorted(found)


def _listed(name: str, *, top: bool, folder: bool) -> bool:
    """Whether the landing stream reads below an entry of this name. The landing's own entries are globbed as
    `[!._]*` (`read_landing`); below them Spark's file listing leaves out names starting with `.`, and with `_` unless
    they hold `=` (or, for a folder, start with `_metadata` or `_common_metadata`), and names ending `._COPYING_`
    (a file still being copied, at any depth). Checked against a real stream in tests/test_pipeline.py."""
    if name.startswith(".") or (top and name.startswith("_")):
        return False
    if folder and top:
        return True
    hidden = name.startswith("_") and "=" not in name
    if folder and name.startswith(("_metadata", "_common_metadata")):
        hidden = False
    return not hidden and not name.endswith("._COPYING_")


def landing_batch_files(cfg: Config, batch_id: int) -> list[str] | None:
    """The files the local landing stream planned for one micro-batch, from its checkpoint's file-source log (one
    JSON line per file after a version line; every tenth batch is compacted into `<id>.compact` with all earlier
    entries). None when the log cannot tell (Auto Loader keeps its own state)."""
    log = checkpoint_dir(cfg, INGEST_QUERY) / "sources" / "0"
    # A compact file holds every file the stream ever read (it grows with the landing's history): only the lines
    # that name this batch are decoded.
    mark = re.compile(rf'"batchId"\s*:\s*{batch_id}(?!\d)')
    for name in (str(batch_id), f"{batch_id}.compact"):
        file = log / name
        if file.is_file():
            with file.open(encoding="utf-8") as lines:
                next(lines, None)  # the log's version line
                entries = [json.loads(line) for line in lines if mark.search(line)]
            return [e["path"] for e in entries if e.get("batchId") == batch_id]
    return None

