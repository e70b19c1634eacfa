"""What the pipeline reads in: the landing directory's closed files or the Kafka topics as a stream, the same files
as a batch, and where each streaming query keeps its checkpoint."""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
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
    file under the landing directory is read, at any depth, except names starting with `.` or `_` (files being copied
    in; below the landing's own entries an `_` name holding `=` is read: `landing_files` lists exactly what Spark
    reads); a file's instance is the folder it sits in.
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


def absolute(path: Path) -> Path:
    """The path made absolute as the landing stream names a file: through a linked folder, not resolved (`..` is
    resolved, since it means the parent of a link's target)."""
    return path.resolve() if ".." in path.parts else Path(os.path.abspath(path))


def read_files(spark: SparkSession, paths: list[Path]) -> DataFrame:
    """A batch read of the lines of the given files, with the same columns the landing stream has, and a torn-line
    row for each damaged gzip file (as the ingest batch adds)."""
    resolved = [absolute(p) for p in paths]
    raw = spark.read.format("text").option("ignoreCorruptFiles", "true").load([str(p) for p in resolved])
    return with_torn_rows(spark, raw.select("value", "_metadata"), damaged_gzips([p.as_uri() for p in resolved]))


@dataclass(frozen=True)
class LandingListing:
    """The landing as the stream lists it: the files it reads, and the entries it can never read because their
    names are not UTF-8 (the JVM gets them mangled and its listing leaves them out), both sorted."""

    files: list[Path]
    unnamed: list[Path]


def landing_files(cfg: Config) -> list[Path]:
    """Every file under the landing directory that the landing stream reads, named as the stream names it (below the
    resolved landing directory, through any linked folder), sorted. A folder that cannot be listed raises, as it
    fails the stream's listing."""
    return list_landing(cfg).files


def list_landing(cfg: Config) -> LandingListing:
    """The landing's files the stream reads and the entries it cannot name (`LandingListing`)."""
    return listing_of(cfg.landing)


def listing_of(landing: Path) -> LandingListing:
    """`list_landing` of a landing folder given by its path (the benchmark's datasets)."""
    files: list[Path] = []
    unnamed: list[Path] = []
    # Hadoop's local file system follows a linked folder like any other and names its files through the link, so
    # a folder linked twice is listed under both names. Only a link back to a folder above is not followed (Spark
    # would follow it until the system refuses the path). A stack of folders to list, not recursion: a landing
    # nested deeper than Python's recursion limit is still listed.
    folders: list[tuple[Path, frozenset[tuple[int, int]], bool]] = [(landing.resolve(), frozenset(), True)]
    while folders:
        folder, above, top = folders.pop()
        info = os.stat(folder)
        above = above | {(info.st_dev, info.st_ino)}
        with os.scandir(folder) as entries:
            for entry in entries:
                kind, real = _kind(entry)
                if kind is None or not _listed(entry.name, top=top, folder=kind == "folder"):
                    continue
                if not nameable(entry.name):
                    unnamed.append(Path(entry.path))
                elif kind == "file":
                    files.append(Path(entry.path))
                elif real not in above:
                    folders.append((Path(entry.path), above, False))
    return LandingListing(sorted(files), sorted(unnamed))


def _kind(entry: os.DirEntry[str]) -> tuple[str | None, tuple[int, int]]:
    """Whether an entry is a folder or a file through any link, with the real folder's id; None for what is neither
    or cannot be followed (a dangling link, a link to itself, one through a file), which Hadoop's listing passes
    over."""
    try:
        info = entry.stat()  # through a link
    except OSError:
        return None, (0, 0)
    kind = "folder" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else None
    return kind, (info.st_dev, info.st_ino)


def nameable(path: str | Path) -> bool:
    """Whether the JVM can name a file or folder: a name whose bytes are not UTF-8 reaches it mangled, and its
    listing leaves the entry out."""
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _listed(name: str, *, top: bool, folder: bool) -> bool:
    """Whether the landing stream reads an entry of this name (a folder: reads below it). The landing's own entries
    are globbed as `[!._]*` (`read_landing`), and a folder among them is listed whatever its name; every other entry
    passes Spark's listing filter (`_spark_skips`), and a file also its test of a data file (`_data_file`). Checked
    against a real stream in tests/test_pipeline.py."""
    if top and name.startswith((".", "_")):
        return False
    if folder:
        return top or not _spark_skips(name)
    return not _spark_skips(name) and _data_file(name)


def _spark_skips(name: str) -> bool:
    """Spark's file listing filter: `_` names without `=`, `.` names and files being copied (`._COPYING_`) are left
    out, except names starting with `_metadata` or `_common_metadata`."""
    excluded = (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")
    return excluded and not name.startswith(("_metadata", "_common_metadata"))


def _data_file(name: str) -> bool:
    """Spark's test of a listed file as data: not a `_` name without `=`, not a `.` name."""
    return not ((name.startswith("_") and "=" not in name) or name.startswith("."))


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

