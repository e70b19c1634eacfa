"""The alerts step of a run: evaluate the rules, MERGE new or changed alerts, deliver what each sink lacks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from pipelines.alerts.rules import all_alerts, next_stuck_at
from pipelines.alerts.sinks import Delivery, DeliveryError, append_jsonl, post_webhook, webhook_url
from pipelines.quality.rules import checks, scopes
from pipelines.quality.stage import input_violations
from pipelines.session.caching import CachedFrames
from pipelines.session.steps import as_step
from pipelines.settings.config import Config
from pipelines.state.seen import Seen, last_seen, remember, settings_key
from pipelines.storage import lake, writes
from pipelines.storage.commits import versions
from schemas.gold import GOLD_ALERT_DELIVERIES

STEP = "alerts"
# The tables the step writes.
OWN = ("gold_alerts", "gold_alert_deliveries")

NOTHING_TO_EVALUATE = ("alerts: no table changed since the last evaluation and no group reached the stuck threshold; "
                       "nothing to evaluate")

_CONTENT = ["rule", "severity", "group_id", "opened_at", "closed_at", "summary", "rebalance_ids", "incident_id"]


def _to_json(row: Row) -> dict[str, Any]:
    out = {}
    for key, value in row.asDict().items():
        if isinstance(value, dt.datetime):
            value = value.replace(tzinfo=dt.timezone.utc).isoformat().replace("+00:00", "Z")
        out[key] = value
    return out


def _found(quality: DataFrame, input_rules: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The input rules whose latest verdict found rows breaking them: only their rows are looked up (GX decides)."""
    row = quality.agg(F.max("run_ts")).first()
    assert row is not None  # an aggregate without grouping has exactly one row
    latest = row[0]
    rows = quality.filter((F.col("run_ts") == F.lit(latest)) & ~F.col("success") & F.col("error").isNull()).collect()
    return {(r.table_name, r.rule) for r in rows} & input_rules


def _key(cfg: Config) -> str:
    """What the alerts depend on besides the tables: the settings and the sinks."""
    return settings_key(alerts=cfg.alerts.model_dump(mode="json"), sinks=sorted(_sinks(cfg)))


def _unchanged(seen: Seen | None, key: str, tables: dict[str, int], run_ts: dt.datetime) -> bool:
    """Whether the last completed evaluation stands: same settings, same table versions, no group stuck since."""
    return seen is not None and seen.key == key and seen.versions == tables and not _clock_due(seen, run_ts)


def nothing_to_evaluate(cfg: Config, *, run_ts: dt.datetime) -> bool:
    """Whether `run_alerts` would evaluate nothing at `run_ts`, told from the tables' logs alone (no Spark): False
    also when a table's version cannot be read so (a catalog table)."""
    tables = lake.local_versions(cfg, _inputs())
    return tables is not None and _unchanged(last_seen(cfg, STEP), _key(cfg), tables, run_ts)


@as_step("alerts")
def run_alerts(spark: SparkSession, cfg: Config, *, run_ts: dt.datetime,
               on_progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Evaluate, store and deliver alerts; returns counts (`new_or_changed`, and deliveries per sink). When the
    tables are at the versions the last completed step left them, with the same settings and sinks, and no group
    reaches the stuck threshold before `run_ts`, every rule would give what it gave then: the step says so and
    reads nothing."""
    settings = cfg.alerts
    key = _key(cfg)
    inputs = _inputs()
    before = versions(spark, cfg, inputs)
    if _unchanged(last_seen(cfg, STEP), key, before, run_ts):
        if on_progress is not None:
            on_progress(NOTHING_TO_EVALUATE)
        return {"new_or_changed": 0}
    quality = lake.read_table(spark, cfg, "gold_quality_results")
    input_rules = {rule for rule, scope in scopes(checks()).items() if scope == "input"}
    counts = _store(spark, cfg, lambda: all_alerts(
        lake.read_table(spark, cfg, "gold_rebalances"), lake.read_table(spark, cfg, "gold_group_states"),
        lake.read_table(spark, cfg, "gold_member_sessions"), settings=settings, run_ts=run_ts,
        quality=quality, input_rules=input_rules,
        violations=input_violations(spark, cfg, rules=_found(quality, input_rules)),
        estate=lake.read_table(spark, cfg, "gold_estate_incidents"),
    ))
    counts.update(_deliver(spark, cfg, on_progress=on_progress))
    # Inputs as they were before the step read them (a concurrent writer makes the next run evaluate again), its own
    # outputs as it left them.
    after = {**before, **versions(spark, cfg, OWN)}
    clock = next_stuck_at(lake.read_table(spark, cfg, "gold_group_states"), settings=settings, run_ts=run_ts)
    remember(cfg, STEP, Seen(key, after, {"stuck_at": clock.isoformat() if clock else None}))
    return counts


def alerts_of_groups(spark: SparkSession, cfg: Config, tables: dict[str, DataFrame], *, run_ts: dt.datetime,
                     on_progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Evaluate the rules of single groups (storm, long rebalance, stuck, poll timeouts, GC expiries) on the rows a
    reconstruct batch just built for its groups (`tables`: gold_rebalances, gold_group_states and
    gold_member_sessions of whole groups), store what is new or changed and deliver what each sink lacks; returns
    counts as `run_alerts` does. The rules over the whole estate (quality, inconsistent input, estate incidents) are
    left to `run_alerts`, and so is the record of what was seen (this saw only some groups)."""
    counts = _store(spark, cfg, lambda: all_alerts(
        tables["gold_rebalances"], tables["gold_group_states"], tables["gold_member_sessions"],
        settings=cfg.alerts, run_ts=run_ts))
    counts.update(_deliver(spark, cfg, on_progress=on_progress))
    return counts


def _store(spark: SparkSession, cfg: Config, evaluate: Callable[[], DataFrame]) -> dict[str, int]:
    """MERGE the alerts `evaluate` gives that are new or differ from the stored ones; returns `new_or_changed`."""
    counts: dict[str, int] = {}
    with CachedFrames() as cached:
        alerts = cached(evaluate())
        stored = lake.read_table(spark, cfg, "gold_alerts")
        changed = alerts.join(stored.select("alert_id", *[F.col(c).alias(f"_{c}") for c in _CONTENT]), "alert_id",
                              "left")
        differs = F.lit(False)
        for c in _CONTENT:
            differs = differs | ~F.col(c).eqNullSafe(F.col(f"_{c}"))
        changed = cached(changed.filter(differs).select(alerts.columns))
        counts["new_or_changed"] = changed.count()
        if counts["new_or_changed"]:
            writes.merge(spark, changed, cfg, "gold_alerts", keys=["alert_id"], update=list(_CONTENT))
    return counts


def _inputs() -> set[str]:
    """Every table the rules read: gold tables, the quality verdicts, and the checked tables (inconsistent input)."""
    checked = {c.table for c in checks()}
    return {"gold_rebalances", "gold_group_states", "gold_member_sessions", "gold_quality_results", "silver_events",
            "gold_estate_incidents",
            *checked, *OWN}


def _clock_due(seen: Seen, run_ts: dt.datetime) -> bool:
    """True when the stuck rule may fire at `run_ts` on tables the record saw (a group reached its threshold)."""
    stuck_at = seen.detail.get("stuck_at")
    if not stuck_at:
        return False
    try:
        return dt.datetime.fromisoformat(stuck_at) <= run_ts.astimezone(dt.timezone.utc).replace(tzinfo=None)
    except (TypeError, ValueError):
        return True


def _sinks(cfg: Config) -> dict[str, Callable[[list[dict[str, Any]]], list[Delivery]]]:
    sinks: dict[str, Callable[[list[dict[str, Any]]], list[Delivery]]] = {
        "jsonl": lambda alerts: append_jsonl(cfg.alerts_jsonl, alerts)}
    url = webhook_url(cfg.alerts)
    if url:
        sinks["webhook"] = lambda alerts: post_webhook(url, alerts, settings=cfg.alerts)
    return sinks


def _deliver(spark: SparkSession, cfg: Config, *, on_progress: Callable[[str], None] | None) -> dict[str, int]:
    sinks = _sinks(cfg)
    stored = lake.read_table(spark, cfg, "gold_alerts").drop("delivered_to")
    log = lake.read_table(spark, cfg, "gold_alert_deliveries")
    counts: dict[str, int] = {}
    delivered: list[Delivery] = []
    failure: DeliveryError | None = None
    for sink, deliver in sinks.items():
        pending = stored.join(log.filter(F.col("sink") == sink).select("alert_id"), "alert_id", "left_anti")
        alerts = [_to_json(r) for r in pending.orderBy("opened_at", "alert_id").collect()]
        if not alerts:
            continue
        try:
            done = deliver(alerts)
        except DeliveryError as exc:
            done, failure = exc.delivered, exc
        delivered.extend(done)
        counts[f"delivered_{sink}"] = len(done)
    if delivered:
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        rows = spark.createDataFrame([(d.alert_id, d.sink, now, d.attempts) for d in delivered], GOLD_ALERT_DELIVERIES)
        writes.append(rows, cfg, "gold_alert_deliveries")
        sinks_by_alert = (
            lake.read_table(spark, cfg, "gold_alert_deliveries").groupBy("alert_id")
            .agg(F.array_sort(F.collect_set("sink")).alias("delivered_to"))
        )
        writes.merge(spark, sinks_by_alert, cfg, "gold_alerts", keys=["alert_id"], update=["delivered_to"],
                 update_when="NOT (t.delivered_to <=> s.delivered_to)", insert=False)
    if on_progress is not None and (delivered or failure):
        on_progress("alerts: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if failure is not None:
        raise failure
    return counts
