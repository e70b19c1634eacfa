"""Silver to gold, the hot path: each ingest batch's files name the groups they touched; those groups are rebuilt
from all their events and GC pauses, and every HOT gold table is made equal to the rebuild in one MERGE per table,
side by side. The derived tables follow on their own clock (`pipelines.flow.derived`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.flow.found import FOUND_COLUMNS, Found, changed_rows
from pipelines.gold.build import ESTATE_OWNED, hot_tables
from pipelines.gold.placement import bare_lines, client_line, gold_events, own_group, place_in_processes, process_groups
from pipelines.gold.rebalances import orphan_lines, route_orphans, rules_from
from pipelines.session.caching import PinnedFrames, pin, unpin
from pipelines.session.steps import step
from pipelines.session.together import run_together
from pipelines.settings.config import Config
from pipelines.state import pending
from pipelines.storage import delta_sql, lake, writes
from schemas.tables import REGISTRY

# What a continuous run does with the rows a reconstruct batch just built and committed (its alerts).
OnHot = Callable[[dict[str, DataFrame]], None]
# The columns of silver_events that the placement (`process_groups`) and `touched_groups` read.
PLACEMENT_COLUMNS = ("event_id", "event_ts", "event_type", "source_kind", "group_id", "instance", "source_file",
                     "batch_id")
GOLD_KEYS = {name: list(table.keys) for name, table in REGISTRY.items() if table.layer == "gold"}


def touched_groups(files: DataFrame, events: DataFrame, processes: DataFrame | None = None) -> DataFrame:
    """The groups a batch of files (silver_accounting rows) can change: those with events in the files (a
    group-less client line counts for its process's group, `process_groups`, given as `processes` or computed), those
    with members in the instance folders of the files that typed an event or a GC pause (their GC logs), those a
    group-less client warning of those folders is placed in by time (`route_orphans`), and the own group of each
    process whose placement the files can change."""
    placed = place_in_processes(events, processes)
    new_files = files.select("source_file").distinct()
    new_events = placed.join(new_files, "source_file")
    in_files = new_events.select("group_id")
    # Only files that typed an event or a GC pause: gold is built from silver_events and silver_gc_pauses alone, so
    # a file of application lines cannot change a group (and touching every group of its folder replays each over
    # its whole history: an hour of a 300-group estate's logs cost 39 s of replay for nothing).
    typed = files.filter((F.col("event_lines") > 0) | (F.col("gc_pause_lines") > 0))
    clients = placed.filter(F.col("source_kind") == "client").join(typed.select("instance").distinct(), "instance")
    members = clients.select("group_id")
    # Every earlier warning of those folders, not only the new ones: a folder that names a group for the first time
    # takes them out of the groups they were placed in by time...
    earlier = route_orphans(orphan_lines(events.join(clients.select("instance").distinct(), "instance")), events)
    # ... and a process that named no group before these files had its own group, which can end with any new client
    # line of its own (one naming a group, or a group-less one near a coordinator's earlier line) or a new
    # coordinator line near its group-less lines: it is rebuilt, to nothing when a named group or the coordinator's
    # view replaces it.
    client = client_line()
    bare = bare_lines(events)
    own_lines = events.join(new_files, "source_file").filter(client).select("instance")
    near = route_orphans(bare, new_events).select("instance")
    # "Before" by ingest batch, not "in another file": silver_events may already hold later batches' files (a
    # reconstruct stream behind its ingest stream), whose names must not hide an own group these files end.
    first = files.agg(F.min("batch_id").alias("_first"))
    named_before = (events.filter(client & F.col("group_id").isNotNull()).crossJoin(F.broadcast(first))
                    .filter(F.col("batch_id") < F.col("_first")))
    own = (bare.select("instance").distinct()
           .join(own_lines.unionByName(near).distinct(), "instance")
           .join(named_before.select("instance").distinct(), "instance", "left_anti")
           .select(own_group("instance").alias("group_id")))
    return (in_files.unionByName(members).unionByName(earlier.select("group_id")).unionByName(own)
            .filter(F.col("group_id").isNotNull()).distinct())


def merger(spark: SparkSession, cfg: Config, name: str, df: DataFrame, *, scope: str, groups: list[str],
           found: Found | None, keep: tuple[str, ...] = (), step_name: str = "reconstruct") -> Callable[[], int]:
    """The MERGE of one gold table's rebuilt rows over `scope`, as a task for `run_together`; returns the rows.
    With `found`, the rows of a reported table that the MERGE adds or changes are recorded there first. Its jobs are
    the step `<step_name>: merge <table>` (`pipelines.session.steps`)."""
    def merge() -> int:
        with step(spark, f"{step_name}: merge {name}"):
            return merge_rows()

    def merge_rows() -> int:
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


def rebuild_hot(spark: SparkSession, cfg: Config, names: list[str], silver: DataFrame, *, batch_id: int,
                found: Found | None = None, on_hot: OnHot | None = None,
                processes: DataFrame | None = None) -> dict[str, int]:
    """Rebuild the HOT gold tables for the groups `names` from `silver` (silver_events) and MERGE them in, then
    record the groups for the derived refresh (`pipelines.state.pending`) and hand the rebuilt rows to `on_hot` (the
    alerts of a continuous run); returns rows per table. With `found`, the rebalances and incidents added or changed
    are recorded there; `processes` is `process_groups(silver)` when the caller has it."""
    if not names:
        return {}
    in_groups = f"t.group_id IN ({', '.join(delta_sql.string_literal(n) for n in names)})"
    # The groups' lines, their processes' group-less lines and the group-less warnings the build places by time.
    events = gold_events(silver, names, processes)
    pauses = lake.read_table(spark, cfg, "silver_gc_pauses")
    # Pinned, not persisted: the frames read several times (the replay and three timeline tables) then stand for
    # their rows alone, so the MERGEs below do not each analyse the whole build's plan again.
    with PinnedFrames() as pinned:
        with step(spark, "reconstruct: replay"):
            tables = hot_tables(events, pauses, rules_from(cfg.thresholds), persist=pinned)
        # The tables do not depend on one another: their MERGEs run side by side (`run_together`). The rebalances'
        # estate incident ids are the derived refresh's, so their MERGE leaves them as stored.
        counts = run_together(spark, {name: merger(spark, cfg, name, df, scope=in_groups, groups=names, found=found,
                                                   keep=(ESTATE_OWNED,) if name == "gold_rebalances" else ())
                                      for name, df in tables.items()})
        # Only once every hot commit is in: a refresh running beside the stream reads the record after the rows it
        # stands for (a batch stopped before this line is run again by its stream, which records the groups then).
        pending.mark(cfg, names, batch_id=batch_id)
        if on_hot is not None:
            with step(spark, "reconstruct: alerts"):
                on_hot(tables)
    return counts


def make_reconstruct_batch(
    cfg: Config,
    *,
    on_progress: Callable[[str], None] | None = None,
    on_batch: Callable[[str, dict[str, int]], None] | None = None,
    found: Found | None = None,
    on_hot: OnHot | None = None,
) -> Callable[[DataFrame, int], None]:
    """The foreachBatch function of the reconstruct stream (silver_accounting rows of new ingest batches in); with
    `found`, what each batch adds or changes is recorded there; `on_hot` gets each batch's rebuilt hot rows."""

    def reconstruct_batch(batch_df: DataFrame, batch_id: int) -> None:
        with step(batch_df.sparkSession, "reconstruct"):
            reconstruct_body(batch_df, batch_id)

    def reconstruct_body(batch_df: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        spark = batch_df.sparkSession
        # One snapshot of silver_events for the whole batch: with an ingest stream committing beside this one, a
        # second read could hold a process the placement below has not seen.
        events = lake.read_table(spark, cfg, "silver_events",
                                 version=lake.table_version(spark, cfg, "silver_events"))
        # The placement of group-less lines (a row per instance folder) is read by both steps: computed once. Both
        # read silver_events many times over (the time windows of `route_orphans`, the named and bare lines of each
        # process): from one pinned read of the few columns they use, not a scan of the table each time.
        # The pinned columns are released once the groups are known; the placement stays pinned for the rebuild.
        processes = None
        try:
            with PinnedFrames() as pinned:
                with step(spark, "reconstruct: placement"):
                    lines = pinned(events.select(*PLACEMENT_COLUMNS))
                    processes = pin(process_groups(lines))
                with step(spark, "reconstruct: touched groups"):
                    names = sorted(r.group_id for r in touched_groups(batch_df, lines, processes).collect())
            counts = rebuild_hot(spark, cfg, names, events, batch_id=batch_id, found=found, on_hot=on_hot,
                                 processes=processes)
        finally:
            if processes is not None:
                unpin(processes)
        if on_batch is not None:
            on_batch("reconstruct", counts)
        if on_progress is not None and counts:
            on_progress(
                f"reconstruct batch {batch_id}: {counts['gold_rebalances']} rebalances, "
                f"{counts['gold_incidents']} incidents rebuilt in {time.monotonic() - started:.1f} s"
            )

    return reconstruct_batch
