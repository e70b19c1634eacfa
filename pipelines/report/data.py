"""Collect what the report shows from the gold tables: the same Spark SQL queries answered by Spark (remote sessions,
Unity Catalog) or by the fast engine on the local default (pipelines.storage.fastsql: no JVM), giving the same rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pipelines.storage.delta_sql import string_literal
from pipelines.storage.fastsql import FastLakehouse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.settings.config import Config

MAX_GROUPS = 30
MAX_ROWS = 200

Rows = list[dict[str, Any]]


class Tables(Protocol):
    """Where the report's queries run: how a table is named in SQL, whether it exists, and the rows of a query."""

    def ref(self, name: str) -> str:
        """The table in the SQL text of this engine."""

    def has(self, name: str) -> bool:
        """True when the table exists."""

    def rows(self, sql: str) -> Rows:
        """Every row of a Spark SQL query as a dict of column to value."""


class SparkTables:
    """The tables of `cfg` through a Spark session (paths as delta.`path`, or Unity Catalog names)."""

    def __init__(self, spark: SparkSession, cfg: Config) -> None:
        self.spark, self.cfg = spark, cfg

    def ref(self, name: str) -> str:
        """The table's SQL name: delta.`path` or catalog.schema.name."""
        from pipelines.storage import lake

        return lake.table(self.cfg, name).sql_name

    def has(self, name: str) -> bool:
        """True when the table exists."""
        from pipelines.storage import lake

        return lake.table(self.cfg, name).exists(self.spark)

    def rows(self, sql: str) -> Rows:
        """Every row, as `Row.asDict(recursive=True)`."""
        return [r.asDict(recursive=True) for r in self.spark.sql(sql).collect()]


class FastTables:
    """The tables of a local lakehouse through the fast engine."""

    def __init__(self, lakehouse: FastLakehouse) -> None:
        self.lakehouse = lakehouse

    def ref(self, name: str) -> str:
        """The table's view name."""
        return f"`{name}`"

    def has(self, name: str) -> bool:
        """True when the lakehouse holds the table."""
        return name in self.lakehouse.tables

    def rows(self, sql: str) -> Rows:
        """Every row, shaped as PySpark's `Row.asDict(recursive=True)`."""
        return self.lakehouse.rows(sql)


def _in(values: list[str]) -> str:
    return f"group_id IN ({', '.join(string_literal(v) for v in values)})" if values else "FALSE"


def _incident_details(t: Tables, rebalances: str) -> dict[str, Rows]:
    """For the incidents the report shows: each rebalance's partition churn and reprocessing risk, and the what-if
    verdicts that change something."""
    in_incidents = f"(SELECT rebalance_id, incident_id FROM {rebalances} r WHERE incident_id IS NOT NULL) i"
    details: dict[str, Rows] = {"churn": [], "whatif": []}
    # Tables added after 0.5.0 are missing in a lakehouse no run of this release has written yet.
    if t.has("gold_partition_churn"):
        details["churn"] = t.rows(
            "SELECT i.incident_id, c.rebalance_id, c.member, c.revoked, c.assigned, c.lost, c.kept, "
            "c.reprocessing_risk, c.exposed_partitions, c.first_event_at "
            f"FROM {t.ref('gold_partition_churn')} c JOIN {in_incidents} ON c.rebalance_id = i.rebalance_id "
            f"ORDER BY c.first_event_at, c.member LIMIT {MAX_ROWS * 5}")
    if t.has("gold_whatif"):
        details["whatif"] = t.rows(
            "SELECT i.incident_id, w.rebalance_id, w.change, w.verdict, w.saved_ms, w.delay_ms, w.detail, w.started_at "
            f"FROM {t.ref('gold_whatif')} w JOIN {in_incidents} ON w.rebalance_id = i.rebalance_id "
            f"WHERE w.verdict != 'unchanged' ORDER BY w.started_at, w.change LIMIT {MAX_ROWS * 5}")
    return details


def _estate_incidents(t: Tables, groups: list[str] | None) -> Rows:
    if not t.has("gold_estate_incidents"):
        return []
    # Every column: a table written before groups_unaffected_why existed (and not run since) still reads.
    rows = t.rows(f"SELECT * FROM {t.ref('gold_estate_incidents')} ORDER BY started_at DESC, estate_incident_id "
                  f"LIMIT {MAX_ROWS}")
    return rows if groups is None else [r for r in rows if set(r["groups"] or ()) & set(groups)]


def collect_from(t: Tables, *, group_types: tuple[str, ...] = ()) -> dict[str, Rows]:
    """Rows for each section of the report, bounded so that the page stays light; with `group_types`, only groups
    of those types (`consumer`, `streams`, `connect`, `share`). A share group is listed with its membership changes
    (no rebalance ever)."""
    rebalances = t.ref("gold_rebalances")
    if group_types:
        kinds = ", ".join(string_literal(k) for k in group_types)
        rebalances = f"(SELECT * FROM {rebalances} WHERE coalesce(group_type, 'consumer') IN ({kinds}))"
    lost = t.rows(
        "SELECT group_id, count(1) AS rebalances, sum(duration_ms) AS unavailable_ms, "
        "max_by(cause, started_at) AS last_cause, coalesce(max(group_type), 'consumer') AS group_type "
        f"FROM {rebalances} r GROUP BY group_id ORDER BY unavailable_ms DESC, group_id LIMIT {MAX_GROUPS}")
    sessions = t.ref("gold_member_sessions")
    share: Rows = [] if group_types and "share" not in group_types else t.rows(
        # Share groups (KIP-932) have no rebalances; their members' comings and goings are what the report shows.
        "SELECT group_id, CAST(0 AS BIGINT) AS rebalances, CAST(0 AS BIGINT) AS unavailable_ms, "
        "CAST(NULL AS STRING) AS last_cause, 'share' AS group_type, "
        "count(joined_at) + count(left_at) AS membership_changes "
        f"FROM {sessions} WHERE group_type = 'share' GROUP BY group_id "
        f"ORDER BY membership_changes DESC, group_id LIMIT {MAX_GROUPS}")
    groups = [r["group_id"] for r in lost]
    share_groups = [r["group_id"] for r in share]
    in_scope = _in(groups + share_groups) if group_types else "TRUE"
    return {
        "groups": lost + share,
        "states": t.rows("SELECT group_id, state, generation, protocol, started_at, ended_at "
                         f"FROM {t.ref('gold_group_states')} WHERE {_in(groups)} "
                         "ORDER BY started_at, group_id, generation, state"),
        "memberships": t.rows(f"SELECT group_id, member_id, joined_at, left_at, end_reason FROM {sessions} "
                              f"WHERE {_in(share_groups)} ORDER BY joined_at, group_id, member_id "
                              f"LIMIT {MAX_ROWS * 5}"),
        "rebalances": t.rows("SELECT rebalance_id, group_id, started_at, completed_at, duration_ms, cause, "
                             "cause_detail, generation_after, trigger_member_id, incident_id "
                             f"FROM {rebalances} r WHERE {_in(groups)} ORDER BY started_at, rebalance_id"),
        "hourly": t.rows(f"SELECT hour, cause, sum(rebalances) AS rebalances FROM "
                         f"{t.ref('gold_rebalance_stats_hourly')} WHERE {in_scope} GROUP BY hour, cause "
                         "ORDER BY hour, cause"),
        "incidents": t.rows(f"SELECT * FROM {t.ref('gold_incidents')} WHERE {in_scope} "
                            f"ORDER BY unavailable_ms DESC, incident_id LIMIT {MAX_ROWS}"),
        "evidence": t.rows("SELECT incident_id, rebalance_id, started_at, cause, cause_detail, evidence, "
                           "cause_rule, cause_alternatives "
                           f"FROM {rebalances} r WHERE incident_id IS NOT NULL ORDER BY started_at, rebalance_id "
                           f"LIMIT {MAX_ROWS * 5}"),
        **_incident_details(t, rebalances),
        # Estate incidents (one cause that rebalanced several groups at once), the latest first; missing in a
        # lakehouse no run of 0.7.0 or later has written. With `group_types`, those touching a group in scope.
        "estate": _estate_incidents(t, groups + share_groups if group_types else None),
        # Each group's advice, the one whose what-if avoids the most rebalances first.
        "advice": t.rows(f"SELECT * FROM {t.ref('gold_config_advice')} WHERE {in_scope} "
                         "ORDER BY group_id, avoided_rebalances DESC NULLS LAST, rule"),
        "alerts": t.rows(f"SELECT * FROM {t.ref('gold_alerts')} WHERE {in_scope} "
                         f"ORDER BY opened_at DESC, alert_id LIMIT {MAX_ROWS}"),
    }


def collect(spark: SparkSession, cfg: Config, *, group_types: tuple[str, ...] = ()) -> dict[str, Rows]:
    """The report's rows answered by Spark (see collect_from)."""
    return collect_from(SparkTables(spark, cfg), group_types=group_types)


def collect_fast(cfg: Config, *, group_types: tuple[str, ...] = ()) -> dict[str, Rows]:
    """The report's rows of a local lakehouse answered by the fast engine, without Spark (see collect_from)."""
    lakehouse = FastLakehouse(cfg.lakehouse)
    try:
        return collect_from(FastTables(lakehouse), group_types=group_types)
    finally:
        lakehouse.close()
