"""Silver to gold: each ingest batch's files name the groups they touched; those groups are rebuilt from all their
events and GC pauses, and every gold table is made equal to the rebuild in one MERGE per table (the per-group
tables' MERGEs side by side)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.flow.found import FOUND_COLUMNS, Found, changed_rows
from pipelines.gold.aggregates import health_from
from pipelines.gold.build import ESTATE_OWNED, build_gold
from pipelines.gold.estate_frames import canonical, estate_rows, params_from, rows_frame
from pipelines.gold.rebalances import orphan_lines, route_orphans, rules_from
from pipelines.session.caching import PinnedFrames, pin, unpin
from pipelines.session.together import run_together
from pipelines.settings.config import Config
from pipelines.storage import delta_sql, lake, writes
from schemas.tables import REGISTRY

GOLD_KEYS = {name: list(table.keys) for name, table in REGISTRY.items() if table.layer == "gold"}


def touched_groups(files: DataFrame, events: DataFrame) -> DataFrame:
    """Groups with events in the given files (silver_accounting rows), with members in the instance folders of those
    files that typed an event or a GC pause (their GC logs), or near a group-less client warning of the files
    (`route_orphans`)."""
    new_events = events.join(files.select("source_file").distinct(), "source_file")
    in_files = new_events.select("group_id")
    # Only files that typed an event or a GC pause: gold is built from silver_events and silver_gc_pauses alone, so
    # a file of application lines cannot change a group (and touching every group of its folder replays each over
    # its whole history: an hour of a 300-group estate's logs cost 39 s of replay for nothing).
    typed = files.filter((F.col("event_lines") > 0) | (F.col("gc_pause_lines") > 0))
    members = (
        events.filter(F.col("source_kind") == "client")
        .join(typed.select("instance").distinct(), "instance")
        .select("group_id")
    )
    orphans = route_orphans(orphan_lines(new_events), events).select("group_id")
    return in_files.unionByName(members).unionByName(orphans).filter(F.col("group_id").isNotNull()).distinct()


def _merger(spark: SparkSession, cfg: Config, name: str, df: DataFrame, *, scope: str, groups: list[str],
            found: Found | None, keep: tuple[str, ...] = ()) -> Callable[[], int]:
    """The MERGE of one gold table's rebuilt rows over `scope`, as a task for `run_together`; returns the rows.
    With `found`, the rows of a reported table that the MERGE adds or changes are recorded there first."""
    def merge() -> int:
        # Pinned: the MERGE reads its source several times, and each read would plan the whole build again.
        rows = pin(df)
        try:
            count = rows.count()
            if found is not None and name in FOUND_COLUMNS:
                stored = lake.read_table(spark, cfg, name).filter(F.col("group_id").isin(groups))
                found.add_rows(name, changed_rows(rows, stored, FOUND_COLUMNS[name]))
            writes.replace_keys(spark, rows, cfg, name, keys=GOLD_KEYS[name], scope=scope, keep=keep)
            return count
        finally:
            unpin(rows)
    return merge


def rebuild_gold(spark: SparkSession, cfg: Config, groups: DataFrame, found: Found | None = None) -> dict[str, int]:
    """Rebuild every gold table for `groups` (one column `group_id`) and MERGE it in; returns rows per table. With
    `found`, the rebalances and incidents added or changed are recorded there."""
    names = sorted(r.group_id for r in groups.collect())
    if not names:
        return {}
    in_groups = f"t.group_id IN ({', '.join(delta_sql.string_literal(n) for n in names)})"
    silver = lake.read_table(spark, cfg, "silver_events")
    # The group-less warnings go along: the build places them near the groups' own lines (route_orphans).
    events = silver.join(F.broadcast(groups), "group_id").unionByName(orphan_lines(silver))
    pauses = lake.read_table(spark, cfg, "silver_gc_pauses")
    # Pinned, not persisted: the frames read several times (the replay and three timeline tables) then stand for
    # their rows alone, so the eight MERGEs below do not each analyse the whole build's plan again.
    with PinnedFrames() as pinned:
        tables = build_gold(events, pauses, rules_from(cfg.thresholds), persist=pinned, whole_estate=False)
        # The per-group tables do not depend on one another: their MERGEs run side by side (`run_together`). The
        # rebalances' estate incident ids are the estate step's below, so their MERGE leaves them as stored.
        counts = run_together(spark, {name: _merger(spark, cfg, name, df, scope=in_groups, groups=names,
                                                    found=found,
                                                    keep=(ESTATE_OWNED,) if name == "gold_rebalances" else ())
                                      for name, df in tables.items()})
    # Health and the estate incidents compare every group with all the others, so they are rebuilt whole.
    gold = {name: lake.read_table(spark, cfg, name)
            for name in ("gold_rebalances", "gold_group_states", "gold_member_sessions")}
    health = health_from(gold["gold_rebalances"], gold["gold_group_states"])
    writes.replace_keys(spark, health, cfg, "gold_group_health", keys=GOLD_KEYS["gold_group_health"], scope="true")
    estate = estate_rows(gold["gold_rebalances"], gold["gold_member_sessions"], gold["gold_group_states"], silver,
                         pauses, params_from(cfg.thresholds))
    counts["gold_estate_incidents"] = write_estate(spark, cfg, estate)
    return counts


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


def make_reconstruct_batch(
    cfg: Config,
    *,
    on_progress: Callable[[str], None] | None = None,
    on_batch: Callable[[str, dict[str, int]], None] | None = None,
    found: Found | None = None,
) -> Callable[[DataFrame, int], None]:
    """The foreachBatch function of the reconstruct stream (silver_accounting rows of new ingest batches in); with
    `found`, what each batch adds or changes is recorded there."""

    def reconstruct_batch(batch_df: DataFrame, batch_id: int) -> None:
        spark = batch_df.sparkSession
        events = lake.read_table(spark, cfg, "silver_events")
        groups = touched_groups(batch_df, events)
        counts = rebuild_gold(spark, cfg, groups, found)
        if on_batch is not None:
            on_batch("reconstruct", counts)
        if on_progress is not None and counts:
            on_progress(
                f"reconstruct batch {batch_id}: {counts['gold_rebalances']} rebalances, "
                f"{counts['gold_incidents']} incidents rebuilt"
            )

    return reconstruct_batch
