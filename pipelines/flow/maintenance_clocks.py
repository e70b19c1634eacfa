"""The lakehouse's maintenance clocks: when it was last compacted and vacuumed, kept beside the checkpoints, and the
maintenance an available-now run does after its reconstruct step when one of them is due.

Every run appends a file to each bronze and silver table and rewrites files of the gold tables it MERGEs into (one
run over an hour of a small estate's logs added 18 data files and 68 log files), so a job scheduled every 15
minutes leaves thousands of small files a month, and the scans every later run makes (the placement reads all of
silver_events) read more files than rows. A continuous run compacts and vacuums on its derived clock
(`pipelines.flow.derived`); an available-now run does the same after its reconstruct step, when the last compaction is
`compact_every_s` old and the last vacuum `vacuum_every_s` old. The times are records (`pipelines.state.seen`), so
a run every few minutes keeps the clocks of the runs before it; a run of either kind moves them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from pyspark.sql import SparkSession

from pipelines.flow.streams import RECONSTRUCT_QUERY
from pipelines.flow.unchanged import StreamCheck, table_fingerprint
from pipelines.session.steps import step
from pipelines.settings.config import Config
from pipelines.state.seen import Seen, last_seen, remember
from pipelines.storage import maintenance
from schemas.tables import TABLES

COMPACT_RECORD = "compact"
VACUUM_RECORD = "vacuum"


def due(cfg: Config, record: str, every_s: float, now: dt.datetime) -> bool:
    """Whether the maintenance `record` names (COMPACT_RECORD, VACUUM_RECORD) was last done `every_s` before `now`
    or longer ago, or never (or its record cannot be read)."""
    seen = last_seen(cfg, record)
    try:
        last = dt.datetime.fromisoformat(str(seen.detail["at"])) if seen is not None else None
        # A little early rather than a whole period late: runs scheduled every `every_s` each start a few seconds
        # sooner after the last stamp than that, and would otherwise compact every other time.
        return last is None or (now - last).total_seconds() >= every_s - min(60.0, every_s / 10)
    except (KeyError, TypeError, ValueError):  # a record another hand left, or a time without its zone
        return True


def done(cfg: Config, record: str, now: dt.datetime) -> None:
    """Record that the maintenance `record` names was done at `now`."""
    remember(cfg, record, Seen("", {}, {"at": now.isoformat()}))


def vacuum_due(cfg: Config, now: dt.datetime) -> bool:
    """Whether the lakehouse's last vacuum is `vacuum_every_s` old (or it was never vacuumed); a vacuum is done at a
    compaction only."""
    return cfg.vacuum_every_s is not None and due(cfg, VACUUM_RECORD, cfg.vacuum_every_s, now)


def compaction_due(cfg: Config, now: dt.datetime | None = None) -> bool:
    """Whether the lakehouse's last compaction is `compact_every_s` before `now` (default: the wall clock) or longer
    ago (a vacuum comes only with a compaction). A lakehouse with no compaction on record has its clock started
    instead: a new lakehouse holds few files, and the first compaction comes `compact_every_s` later."""
    if cfg.compact_every_s is None:
        return False
    now = now or dt.datetime.now(dt.timezone.utc)
    if last_seen(cfg, COMPACT_RECORD) is None:
        done(cfg, COMPACT_RECORD, now)
        return False
    return due(cfg, COMPACT_RECORD, cfg.compact_every_s, now)


def maintain(spark: SparkSession, cfg: Config, *, on_progress: Callable[[str], None] | None = None,
             stopping: Callable[[], bool] = lambda: False) -> None:
    """The maintenance of an available-now run whose reconstruct stream has just read all it had (call it when
    `compaction_due`): compact the tables holding `compact_min_files` files or more, then vacuum every table when
    the last vacuum is `vacuum_every_s` old. Each clock moves before its work begins, so work that kills the process
    is not begun again by every later run; a stopping run (`stopping()`) begins no further table and leaves the rest
    to the next compaction or vacuum. The reconstruct stream's record moves past the commits, which change no row
    (else the next run with nothing new would start it)."""
    now = dt.datetime.now(dt.timezone.utc)
    source = StreamCheck(cfg, RECONSTRUCT_QUERY, table_fingerprint(cfg, "silver_accounting"))
    done(cfg, COMPACT_RECORD, now)
    with step(spark, "compact"):
        maintenance.compact(spark, cfg, min_files=cfg.compact_min_files, on_progress=on_progress, stopping=stopping)
    if vacuum_due(cfg, now) and not stopping():
        done(cfg, VACUUM_RECORD, now)
        with step(spark, "vacuum"):
            maintenance.vacuum(spark, cfg, list(TABLES), on_progress=on_progress, stopping=stopping)
    source.moved_without_change("silver_accounting", table_fingerprint(cfg, "silver_accounting"))
