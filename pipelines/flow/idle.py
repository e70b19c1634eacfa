"""A scheduled run with nothing new, told before Spark starts.

Every step of an available-now run already finds out from files whether it has anything to do: each stream from
its source's fingerprint and its checkpoint (`pipelines.flow.unchanged`), the derived refresh from the groups
recorded as waiting, the quality and alerts steps from the table versions they last saw. Only setup (the tables
exist with their declared schemas, the checkpoints fit them) asked Spark, so a run with nothing new still paid for a
JVM and a session (about 3 s of a 4.5 s re-run).

The end of a complete run (every step, nothing stopped or failed) now records every table's version. A later run
whose tables are all at those versions needs no setup: a table dropped, or changed in schema after the record, has
another version (or none), and a column this code declares since changes the record's key. When, besides, every
step's own check says it has nothing to do, the run ends there, saying what each step would have said, writing
nothing, and Spark is never started. Any doubt (no record, another release or lakehouse, a catalog table, Spark
Connect, Databricks, Kafka or Auto Loader, a landing file added, a group waiting, an alert due on the clock, a
quality rule failing) leaves the run to start Spark as before. What only a session start would show (a missing
Java, jars that cannot be fetched) shows at the next run with something to do.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass

from pipelines.alerts.stage import NOTHING_TO_EVALUATE, nothing_to_evaluate
from pipelines.flow.derived import nothing_pending
from pipelines.flow.landing_names import landing_listable
from pipelines.flow.streams import RECONSTRUCT_QUERY
from pipelines.flow.unchanged import StreamCheck, landing_fingerprint, table_fingerprint
from pipelines.quality.stage import QualityReport, unchanged_report
from pipelines.session.remote import REMOTE_ENV
from pipelines.session.spark import on_databricks
from pipelines.session.versions import check_spark
from pipelines.settings.config import Config
from pipelines.state import rebuilt
from pipelines.state.release import refuse_incompatible
from pipelines.state.seen import Seen, last_seen, remember, settings_key
from pipelines.storage import inputs, lake
from schemas.tables import TABLES

STEP = "run"


@dataclass(frozen=True)
class IdleRun:
    """A run that found nothing to do: what each step said, and the quality verdicts that stand."""

    said: tuple[str, ...]
    quality: QualityReport


def _key(cfg: Config) -> str:
    """The lakehouse and the tables this code declares (a column declared since is added by setup)."""
    return settings_key(lakehouse=str(cfg.lakehouse.resolve()),
                        tables={name: schema.simpleString() for name, schema in TABLES.items()})


def remember_complete_run(cfg: Config) -> None:
    """Record the tables as a complete available-now run left them (call it after its last step succeeded)."""
    if (versions := lake.local_versions(cfg, TABLES)) is not None:
        remember(cfg, STEP, Seen(_key(cfg), versions))


def local_session_expected(remote: str | None) -> bool:
    """Whether `get_spark` would start a local session (no Spark Connect server, not inside Databricks), whose
    driver sees the files every check reads."""
    return not remote and REMOTE_ENV not in os.environ and not on_databricks()


def idle_run(cfg: Config, *, run_ts: dt.datetime) -> IdleRun | None:
    """The run of every step of `cfg` with nothing to do, told without Spark; None when any step may have work.
    Only for available-now runs of every step on a local session (`local_session_expected`). Raises what setup
    would raise on a lakehouse it was last right about: an unsupported pyspark, checkpoints of another release."""
    if cfg.uses_catalog or not landing_listable(cfg):
        return None
    seen = last_seen(cfg, STEP)
    if seen is None or seen.key != _key(cfg) or seen.versions != lake.local_versions(cfg, TABLES):
        return None
    check_spark()
    refuse_incompatible(cfg)
    said: list[str] = []
    checks: list[Callable[[], bool]] = [
        lambda: not rebuilt.recorded(cfg) and StreamCheck(
            cfg, RECONSTRUCT_QUERY, table_fingerprint(cfg, "silver_accounting")).unchanged(said.append),
        lambda: nothing_pending(cfg),
        lambda: nothing_to_evaluate(cfg, run_ts=run_ts),
    ]
    if not all(check() for check in checks):
        return None
    quality = unchanged_report(cfg)
    if quality is None or quality.error() is not None:
        return None
    # The landing last: listing it is the costliest check (0.1 s for a 30-day landing of 6,619 files).
    ingest: list[str] = []
    if not StreamCheck(cfg, inputs.INGEST_QUERY, landing_fingerprint(cfg)).unchanged(ingest.append):
        return None
    return IdleRun(tuple(ingest + said + [quality.line(), NOTHING_TO_EVALUATE]), quality)
