"""Files that Spark cannot read to their end: a gzip cut short (a copy that stopped, a disk that filled) or damaged.

Spark's text source raises on such a file, and because a streaming batch is retried with the same files, one cut
gzip would stop the stream on every restart. The local landing read therefore sets `ignoreCorruptFiles`, which makes
Spark keep the lines before the damage and drop the rest without a word. (Auto Loader keeps Spark's default: there the
batch fails and names the file.) This module restores the word: the driver checks
each gzip file of a batch, and a damaged one gets one more raw row after its last readable line, with `torn` set and
holding the decompressed text after the last complete line (the torn line). That row goes through
bronze and parsing like any other line, is counted in `lines_read`, and lands in silver_quarantine with the reason
`truncated_gzip`, so the accounting identity holds and the loss is visible."""

from __future__ import annotations

import datetime as dt
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import cast
from urllib.parse import quote, unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StructField, StructType

from pipelines.bronze.lines import MAX_LINE_CHARS

_CHUNK = 1 << 20
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class DamagedGzip:
    """A gzip file whose stream ends early or breaks: the text after its last complete line, and why."""

    path: str
    tail: str
    complete_lines: int
    problem: str


def local_path(uri: str) -> Path | None:
    """The local path of a `file:` URI or plain path (None for remote storage, which the driver cannot open)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path))
    return None


def check_gzip(path: Path) -> DamagedGzip | None:
    """Decompress a gzip file (every member) on the driver; None when it is whole, else what was readable."""
    lines, tail, problem, in_member = 0, b"", None, False
    decompressor = zlib.decompressobj(wbits=31)
    with path.open("rb") as f:
        while problem is None and (data := f.read(_CHUNK)):
            while data:
                if decompressor.eof:  # another member follows (`cat a.gz b.gz` is a valid gzip file)
                    decompressor = zlib.decompressobj(wbits=31)
                try:
                    out = decompressor.decompress(data)
                except zlib.error as e:
                    problem = f"the gzip data is damaged after {lines} complete lines ({e})"
                    break
                in_member = not decompressor.eof
                data = decompressor.unused_data if decompressor.eof else b""
                text = tail + out
                cut = text.rfind(b"\n")
                if cut >= 0:
                    lines += text.count(b"\n", 0, cut + 1)
                    text = text[cut + 1:]
                tail = text[-(4 * MAX_LINE_CHARS):]
    if problem is None and in_member:
        problem = f"the gzip stream stops after {lines} complete lines, before its end (the file was cut short)"
    if problem is None:
        return None
    last = tail.decode("utf-8", errors="replace")[:MAX_LINE_CHARS]
    return DamagedGzip(path=str(path), tail=last, complete_lines=lines, problem=problem)


def spark_file_uri(path: Path) -> str:
    """A local file as Spark's `_metadata.file_path` names it (Hadoop's `file:/a/b` form: ASCII characters outside
    a URI path's set percent-encoded, others kept), so a synthetic row joins the real rows of its file."""
    keep = set("/-._~!$&'()*+,;=:@")
    return "file:" + "".join(c if c.isalnum() or c in keep or ord(c) > 127 else quote(c) for c in str(path))


def damaged_gzips(paths: list[str]) -> list[DamagedGzip]:
    """The damaged gzip files among `paths` (URIs or local paths); other files and remote storage are skipped."""
    found = []
    for uri in paths:
        if not uri.endswith(".gz"):
            continue
        path = local_path(uri)
        if path is None or not path.is_file():
            continue
        damage = check_gzip(path)
        if damage is not None:
            found.append(DamagedGzip(path=uri, tail=damage.tail, complete_lines=damage.complete_lines,
                                     problem=damage.problem))
    return found


def with_torn_rows(spark: SparkSession, raw: DataFrame, damaged: list[DamagedGzip]) -> DataFrame:
    """`raw` (`value`, `_metadata`) with a `torn` column: false for every line Spark read, true for one added row
    per damaged gzip, placed after its last readable line (in a file split of its own, starting at the file's
    size)."""
    marked = raw.withColumn("torn", F.lit(False))
    if not damaged:
        return marked
    rows = []
    for d in damaged:
        path = local_path(d.path)
        assert path is not None  # damaged_gzips only reports local files
        stat = path.stat()
        meta = {"file_path": spark_file_uri(path), "file_name": path.name, "file_size": stat.st_size,
                "file_block_start": stat.st_size, "file_block_length": 0,
                "file_modification_time": _modified(stat.st_mtime_ns)}
        # Spark's `_metadata` column is a struct.
        rows.append((d.tail, {k: meta[k] for k in cast(StructType, raw.schema["_metadata"].dataType).names}, True))
    schema = StructType([*raw.schema.fields, StructField("torn", BooleanType(), False)])
    return marked.unionByName(spark.createDataFrame(rows, schema))


def _modified(mtime_ns: int) -> dt.datetime:
    # Spark reports the modification time in whole milliseconds; the same instant keeps the file's identity.
    return _EPOCH + dt.timedelta(milliseconds=mtime_ns // 1_000_000)
