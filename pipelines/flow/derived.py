"""The derived gold tables, refreshed on their own clock from what the hot path committed.

The reconstruct stream commits the HOT tables of the groups each micro-batch touched (`pipelines.flow.reconstruct`)
and records those groups (`pipelines.state.pending`). The DERIVED tables (config advice and hourly stats of those
groups, then group health and estate incidents, which compare every group with all the others) are rebuilt here
from the stored hot rows: at the end of an available-now run's reconstruct step, and every `derived_every_s` in a
continuous run. The record of each refresh (`pipelines.state.seen`, step "derived") holds the versions of the hot
tables it reflects; `freshness` reads it back.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.alerts.loop import AlertLoop
from pipelines.flow import maintenance_clocks
from pipelines.flow.one_stream import OneStream
from pipelines.flow.reconstruct import GOLD_KEYS, merger
from pipelines.gold.aggregates import health_from
from pipelines.gold.build import ESTATE_OWNED, HOT, per_group_derived
from pipelines.gold.estate_frames import canonical, estate_rows, params_from, rows_frame
from pipelines.gold.placement import gold_events, place_in_processes, process_groups
from pipelines.session.steps import as_step, step
from pipelines.session.together import run_together
from pipelines.settings.config import Config
from pipelines.state import pending
from pipelines.state.seen import Seen, last_seen, remember
from pipelines.storage import commits, delta_sql, lake, maintenance, writes
from schemas.tables import TABLES

STEP = "derived"


@as_step("derived")
def refresh_derived(spark: SparkSession, cfg: Config) -> dict[str, int]:
    """Rebuild the derived tables for the groups the hot path recorded since the last refresh, then forget those
    records; returns rows per table written ({} when no group was waiting). A record that cannot be read makes the
    refresh cover every group, and so does a lakehouse whose derived tables were never refreshed on their own (one
    written before they were: their rows may follow older rules)."""
    if not pending.pending(cfg) and not _never_refreshed(spark, cfg):
        return {}
    # Taken before the records are read: a hot commit whose record this refresh reads is at or below them, one made
    # later is newer than what the record of this refresh says it reflects.
    versions = commits.versions(spark, cfg, HOT)
    read = pending.pending(cfg)
    if last_seen(cfg, STEP) is None:
        read = pending.Pending(read.files, read.groups, unreadable=1)
    silver = lake.read_table(spark, cfg, "silver_events")
    pauses = lake.read_table(spark, cfg, "silver_gc_pauses")
    gold = {name: lake.read_table(spark, cfg, name) for name in HOT}
    if read.unreadable:
        scope, names = "true", None
    else:
        names = sorted(read.groups)
        scope = f"t.group_id IN ({', '.join(delta_sql.string_literal(n) for n in names)})"

    def mine(df: DataFrame) -> DataFrame:
        return df if names is None else df.filter(F.col("group_id").isin(names))

    # The same events a reconstruct batch builds from (`gold_events`); the estate rules read every group's, placed
    # as the batch build places them (left lazy: a quiet estate's rules read no silver at all).
    processes = process_groups(silver)
    events = gold_events(silver, names, processes)
    tables = per_group_derived(mine(gold["gold_rebalances"]), mine(gold["gold_member_sessions"]),
                               mine(gold["gold_whatif"]), events, pauses)

    def health() -> int:
        rows = health_from(gold["gold_rebalances"], gold["gold_group_states"])
        writes.replace_keys(spark, rows, cfg, "gold_group_health", keys=GOLD_KEYS["gold_group_health"], scope="true")
        return 0  # not counted: a count would read every group's rebalances once more

    def estate() -> int:
        return write_estate(spark, cfg, estate_rows(gold["gold_rebalances"], gold["gold_member_sessions"],
                                                    gold["gold_group_states"],
                                                    place_in_processes(silver, processes), pauses,
                                                    params_from(cfg.thresholds)))

    # None of them reads what another writes (the estate step writes gold_rebalances.estate_incident_id, which
    # health does not read): side by side.
    counts = run_together(spark, {
        **{name: merger(spark, cfg, name, df, scope=scope, groups=names or [], found=None, step_name="derived")
           for name, df in tables.items()},
        "gold_group_health": health, "gold_estate_incidents": estate})
    counts.pop("gold_group_health")
    pending.clear(read)
    remember(cfg, STEP, Seen("", versions, {"groups": len(names) if names is not None else "all"}))
    return counts


def nothing_pending(cfg: Config) -> bool:
    """Whether `refresh_derived` would refresh nothing, told without Spark: no group recorded as waiting, and a
    refresh recorded before (without one, whether the hot tables hold rows takes a query)."""
    return not pending.pending(cfg) and last_seen(cfg, STEP) is not None


def _never_refreshed(spark: SparkSession, cfg: Config) -> bool:
    """True when no refresh has been recorded yet and the hot tables hold rows to derive from (an empty lakehouse
    records its first refresh with its first rows)."""
    if last_seen(cfg, STEP) is not None:
        return False
    return lake.read_table(spark, cfg, "gold_rebalances").limit(1).count() > 0 \
        or lake.read_table(spark, cfg, "gold_group_states").limit(1).count() > 0


def write_estate(spark: SparkSession, cfg: Config, rows: list[dict[str, Any]]) -> int:
    """Make gold_estate_incidents `rows` and gold_rebalances.estate_incident_id what they say, writing nothing when
    both already are (the usual batch: a few rows compared in Python instead of two MERGEs); returns the rows."""
    stored = lake.read_table(spark, cfg, "gold_estate_incidents")
    if canonical(rows) != canonical([r.asDict(recursive=True) for r in stored.select(*[
            F.unix_micros(c).alias(c) if c in ("started_at", "ended_at") else F.col(c) for c in stored.columns])
            .collect()]):
        writes.replace_keys(spark, rows_frame(spark, rows), cfg, "gold_estate_incidents",
                            keys=GOLD_KEYS["gold_estate_incidents"], scope="true")
    wanted = {rid: row["estate_incident_id"] for row in rows for rid in row["rebalance_ids"]}
    held = {r.rebalance_id: r[ESTATE_OWNED] for r in lake.read_table(spark, cfg, "gold_rebalances")
            .filter(F.col(ESTATE_OWNED).isNotNull()).select("rebalance_id", ESTATE_OWNED).collect()}
    changed = [(rid, wanted.get(rid)) for rid in sorted(set(wanted) | set(held)) if wanted.get(rid) != held.get(rid)]
    if changed:
        schema = f"rebalance_id string, {ESTATE_OWNED} string"
        writes.merge(spark, spark.createDataFrame(changed, schema), cfg, "gold_rebalances", keys=["rebalance_id"],
                     update=[ESTATE_OWNED], insert=False)
    return len(rows)


def derived_loop(spark: SparkSession, cfg: Config, *, on_rows: Callable[[dict[str, int]], None],
                 poke: AlertLoop | None, on_progress: Callable[[str], None] | None = None,
                 one_stream: OneStream | None = None) -> AlertLoop:
    """The derived refresh of a continuous run as a loop (not started): every `derived_every_s`, the groups the hot
    path rebuilt since the last refresh. The rows written go to `on_rows`; `poke` (the alerts) is poked after a
    refresh that wrote rows, for the estate incidents. When the lakehouse's last compaction is `compact_every_s` old,
    the turn first compacts the tables that hold `compact_min_files` files or more; when its last vacuum is
    `vacuum_every_s` old, such a turn also deletes, beside the stream, the files that compactions and MERGEs replaced
    once they are older than each table's retention (both clocks are kept beside the checkpoints, so a run restarted
    more often keeps them: `pipelines.flow.maintenance_clocks`). In a one-stream run the turn first moves the
    reconstruct checkpoint (`OneStream.advance`) when it is due or a compaction follows, and holds the stream between
    two batches until the compaction is done: the compaction replaces the files of versions the checkpoint must have
    passed."""
    def refresh(now: dt.datetime) -> None:
        compact = maintenance_clocks.compaction_due(cfg, now)
        vacuum = compact and maintenance_clocks.vacuum_due(cfg, now)
        move = one_stream is not None and (compact or one_stream.due())
        with one_stream.between_batches() if one_stream is not None and move else contextlib.nullcontext(True) as free:
            if not free:  # a stop was requested while the stream's batch went on: the run is ending
                return
            if one_stream is not None and move:
                one_stream.advance()
            if compact:  # each clock moves first: work that kills the process is not begun at every restart
                maintenance_clocks.done(cfg, maintenance_clocks.COMPACT_RECORD, now)
                with step(spark, "compact"):
                    maintenance.compact(spark, cfg, min_files=cfg.compact_min_files, on_progress=on_progress,
                                        stopping=lambda: loop.stopping)
        if vacuum and not loop.stopping:  # beside the stream: VACUUM LITE deletes only files the log says were replaced
            maintenance_clocks.done(cfg, maintenance_clocks.VACUUM_RECORD, now)
            with step(spark, "vacuum"):
                maintenance.vacuum(spark, cfg, list(TABLES), on_progress=on_progress, stopping=lambda: loop.stopping)
        started = time.monotonic()
        try:
            counts = refresh_derived(spark, cfg)
        except Exception as exc:
            # The estate step MERGEs gold_rebalances beside the stream's own MERGEs: a refresh that keeps losing that
            # race keeps its records and tries again at the next one, instead of stopping the run.
            if not writes.is_commit_conflict(exc):
                raise
            if on_progress is not None:
                on_progress("derived tables: the refresh lost a commit race with the stream; tried again at the next")
            return
        on_rows(counts)
        if counts and poke is not None:
            poke.poke()
        if counts and on_progress is not None:
            # Its duration: the refresh shares the cores with the streams, so a refresh that grows slows the hot path.
            on_progress("derived tables refreshed: " + ", ".join(f"{name} {rows}" for name, rows in counts.items())
                        + f" ({time.monotonic() - started:.1f} s)")
    loop = AlertLoop(refresh, every_s=cfg.derived_every_s, on_progress=on_progress, name="rebalance-derived")
    return loop


def freshness(spark: SparkSession, cfg: Config) -> dict[str, Any]:
    """How far the derived tables are behind the hot path: the hot versions the last refresh reflects, the current
    ones, and the groups waiting for a refresh."""
    seen = last_seen(cfg, STEP)
    waiting = pending.pending(cfg)
    return {"reflects": seen.versions if seen is not None else None,
            "current": commits.versions(spark, cfg, HOT),
            "groups_waiting": "all" if waiting.unreadable else len(waiting.groups)}
