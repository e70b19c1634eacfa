"""The ingest batches whose groups a one-stream micro-batch already rebuilt, kept beside the checkpoints.

A continuous run in one process ingests and rebuilds in the same micro-batch (`pipelines.flow.one_stream`), so the
reconstruct stream's checkpoint does not move while it runs. Each such batch records its ingest batch id here once
its hot commits are in (`mark`); the reconstruct stream, when it next runs, leaves the recorded batches out of its
input (`skip`) and the run then forgets them (`forget`). The record is only ever a saving: a batch missing from it is
rebuilt again, which the gold tables' MERGEs make harmless; a batch is recorded only after its rows are committed,
so nothing recorded is ever missing from gold. The ids of one continuous run are consecutive, so the record is a
short list of ranges in one file, rewritten whole and renamed into place.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.settings.config import Config

FILE = "one-stream-rebuilt.json"

Ranges = tuple[tuple[int, int], ...]


def _path(cfg: Config) -> Path:
    return cfg.checkpoint_root / FILE


def recorded(cfg: Config) -> Ranges:
    """The recorded ingest batch ids, as sorted inclusive ranges; none when the record is missing or unreadable (an
    unreadable record only costs a rebuild of what it named)."""
    try:
        loaded = json.loads(_path(cfg).read_text(encoding="utf-8"))
        return tuple(sorted((int(lo), int(hi)) for lo, hi in loaded["ranges"]))
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def _write(cfg: Config, ranges: Ranges) -> None:
    path = _path(cfg)
    if not ranges:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps({"ranges": [list(r) for r in ranges]}) + "\n", encoding="utf-8")
    partial.replace(path)


def merged(ranges: Ranges) -> Ranges:
    """`ranges` sorted, with overlapping and adjacent ones joined."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def mark(cfg: Config, batch_id: int) -> None:
    """Record that ingest batch `batch_id`'s groups are rebuilt and committed."""
    _write(cfg, merged((*recorded(cfg), (batch_id, batch_id))))


def is_recorded(ranges: Ranges, batch_id: int) -> bool:
    """Whether `batch_id` is in `ranges`."""
    return any(lo <= batch_id <= hi for lo, hi in ranges)


def skip(ranges: Ranges, batch_id: Column) -> Column:
    """A condition that holds for the rows whose ingest `batch_id` is not in `ranges` (the rows still to rebuild)."""
    condition = F.lit(True)
    for lo, hi in ranges:
        condition = condition & ~batch_id.between(lo, hi)
    return condition


def forget(cfg: Config, ranges: Ranges) -> None:
    """Remove `ranges` from the record (what the reconstruct stream has now passed), keeping anything recorded since."""
    left: list[tuple[int, int]] = []
    for lo, hi in recorded(cfg):
        cuts = [(a, b) for a, b in ranges if a <= hi and b >= lo]
        start = lo
        for a, b in sorted(cuts):
            if a > start:
                left.append((start, a - 1))
            start = max(start, b + 1)
        if start <= hi:
            left.append((start, hi))
    _write(cfg, merged(tuple(left)))
