"""What a run found: the rebalances and incidents it added or changed, and the input it could not read, gathered by
the micro-batches from the rows they commit (no re-read of whole tables), and said in a few lines at its end."""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.report.text import duration, incident_line
from pipelines.settings.config import Config
from pipelines.storage import lake

# The columns of a changed rebalance or incident the summary speaks of (a change elsewhere is not news).
REBALANCE_COLUMNS = ["rebalance_id", "group_id", "cause", "started_at", "duration_ms", "incident_id"]
INCIDENT_COLUMNS = ["incident_id", "group_id", "started_at", "ended_at", "rebalances", "unavailable_ms", "root_cause"]
FOUND_COLUMNS = {"gold_rebalances": REBALANCE_COLUMNS, "gold_incidents": INCIDENT_COLUMNS}


def changed_rows(rebuilt: DataFrame, stored: DataFrame, columns: list[str]) -> list[dict[str, Any]]:
    """The rows of `rebuilt` that `stored` does not hold as they are (new, or changed in `columns`)."""
    # Compared here, not with a Spark EXCEPT: a few columns of one batch's groups, and no shuffle to plan and run.
    held = {tuple(r) for r in stored.select(*columns).collect()}
    return [r.asDict() for r in rebuilt.select(*columns).collect() if tuple(r) not in held]


@dataclass
class Found:
    """The rebalances and incidents a run added or changed (by id, the last version wins), the lines it could not
    read by kind (`quarantined:<reason>`, `duplicate_lines`, `late_events`), and its first ingest batch."""

    rebalances: dict[str, dict[str, Any]] = field(default_factory=dict)
    incidents: dict[str, dict[str, Any]] = field(default_factory=dict)
    unread: dict[str, int] = field(default_factory=dict)
    first_batch: int | None = None
    # The merges of one batch run side by side (`run_together`), each adding its table's rows.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        # Spark Connect pickles a foreachBatch function with what it refers to (the run's summary holds this), and a
        # lock cannot be pickled: the copy gets a lock of its own.
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def add_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Record the changed rows of `gold_rebalances` or `gold_incidents`."""
        target, key = (self.rebalances, "rebalance_id") if name == "gold_rebalances" else (self.incidents,
                                                                                           "incident_id")
        with self._lock:
            target.update({r[key]: r for r in rows})

    def add_ingest(self, batch_id: int, quarantine: DataFrame, accounting: DataFrame) -> int:
        """Count one ingest batch's unread lines from the frames it writes; returns its late events."""
        reasons = {r["reason"]: r["count"] for r in quarantine.groupBy("reason").count().collect()}
        totals = accounting.agg(*[F.sum(k).alias(k) for k in ACCOUNTED]).first()
        assert totals is not None  # an aggregate without grouping has exactly one row
        kinds = {f"quarantined:{reason}": n for reason, n in reasons.items()}
        kinds |= {k: int(totals[k] or 0) for k in ACCOUNTED}
        with self._lock:
            self.first_batch = batch_id if self.first_batch is None else min(self.first_batch, batch_id)
            for kind, n in kinds.items():
                if n:
                    self.unread[kind] = self.unread.get(kind, 0) + n
        return int(totals["late_events"] or 0)


def from_history(spark: SparkSession, cfg: Config, before: dict[str, int], found: Found) -> None:
    """Fill `found` from the commits made after the versions `before` (table -> version): through Spark Connect the
    micro-batches run on the server, so what they saw never reaches this process."""
    for name, columns in FOUND_COLUMNS.items():
        if name in before and lake.table_version(spark, cfg, name) != before[name]:
            found.add_rows(name, changed_rows(lake.read_table(spark, cfg, name),
                                              lake.read_table(spark, cfg, name, version=before[name]), columns))
    version = before.get("silver_quarantine")
    if version is not None and lake.table_version(spark, cfg, "silver_quarantine") != version:
        old = lake.read_table(spark, cfg, "silver_quarantine", version=version).select("line_id")
        new = lake.read_table(spark, cfg, "silver_quarantine").join(old, "line_id", "left_anti")
        for r in new.groupBy("reason").agg(F.count(F.lit(1)).alias("n"), F.min("batch_id").alias("first")).collect():
            found.unread[f"quarantined:{r['reason']}"] = r["n"]
            found.first_batch = r["first"] if found.first_batch is None else min(found.first_batch, r["first"])


def by_group_and_cause(rebalances: list[dict[str, Any]]) -> list[list[Any]]:
    """Rows of the summary table: group, cause, rebalances, time without consuming, longest, first start; by group,
    then the most frequent cause first."""
    cells: defaultdict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rebalances:
        cells[(r["group_id"], r["cause"])].append(r)
    rows = []
    for (group, cause), rs in cells.items():
        lengths = [r["duration_ms"] for r in rs if r["duration_ms"] is not None]
        rows.append([group, cause, len(rs), duration(sum(lengths)) if lengths else "-",
                     duration(max(lengths)) if lengths else "-",
                     f"{min(r['started_at'] for r in rs):%Y-%m-%d %H:%M:%S}"])
    return sorted(rows, key=lambda r: (r[0], -r[2], r[1]))


SUMMARY_COLUMNS = ["group", "cause", "rebalances", "without consuming", "longest", "first (UTC)"]

UNREAD_QUERIES = {
    "duplicate_lines": ("lines of files landed twice (counted once)",
                        "SELECT source_file, duplicate_of FROM bronze_files WHERE duplicate_of IS NOT NULL"),
    "late_events": ("events later than the allowed lateness (their groups were rebuilt)",
                    "SELECT source_file, late_events FROM silver_accounting WHERE late_events > 0"),
    "own_layout_missed_lines": ("lines that their source's own pattern (sources[].pattern) did not match, read by "
                                "the built-in layouts instead",
                                "SELECT source_file, own_layout_missed_lines, own_layout_miss_sample "
                                "FROM silver_accounting WHERE own_layout_missed_lines > 0"),
}
# The silver_accounting counts of lines a run read otherwise than as events of their own layout.
ACCOUNTED = tuple(k for k in UNREAD_QUERIES)


def unread_lines(found: Found, *, sql: str) -> list[str]:
    """One line per kind of input the run could not read as events, with the command that lists it (`sql`: the
    command that opens the lakehouse, `rebalance sql --lakehouse DIR`)."""
    since = f" AND batch_id >= {found.first_batch}" if found.first_batch is not None else ""
    out = []
    for kind, n in sorted(found.unread.items()):
        if kind.startswith("quarantined:"):
            reason = kind.removeprefix("quarantined:")
            what = f"quarantined as {reason}"
            query = (f"SELECT source_file, line_no, raw FROM silver_quarantine WHERE reason = '{reason}'{since} "
                     "ORDER BY source_file, line_no")
        else:
            what, query = UNREAD_QUERIES[kind]
            query += since
        out.append(f"{n} {what}: {sql} \"{query}\"")
    return out


def findings(found: Found) -> list[str]:
    """The sentence over the summary table: groups that rebalanced, by cause, the time lost, the worst incident."""
    rebalances = list(found.rebalances.values())
    if not rebalances:
        return ["No new or changed rebalances in this run."]
    causes: defaultdict[str, int] = defaultdict(int)
    for r in rebalances:
        causes[r["cause"]] += 1
    lost = sum(r["duration_ms"] or 0 for r in rebalances)
    groups = len({r["group_id"] for r in rebalances})
    by_cause = ", ".join(f"{cause} {n}" for cause, n in sorted(causes.items(), key=lambda c: (-c[1], c[0])))
    out = [f"This run added or changed {len(rebalances)} rebalance{'s' if len(rebalances) != 1 else ''} in "
           f"{groups} group{'s' if groups != 1 else ''} ({by_cause}); {duration(lost)} without consuming in all."]
    worst = max(found.incidents.values(), key=lambda i: (i["unavailable_ms"] or 0, i["incident_id"]), default=None)
    if worst is not None:
        out.append(f"Worst incident: {incident_line(worst)}, from {worst['started_at']:%Y-%m-%d %H:%M:%S} UTC.")
    return out
