"""Alert rules as DataFrame transforms over gold tables. Every alert id is derived from what it is about, so the
same condition never makes two alerts, however often the pipeline runs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.gold.spoken import spoken_duration
from pipelines.gold.state_order import state_time_order
from pipelines.settings.config import AlertSettings
from schemas.gold import GOLD_ALERTS


def _alert_id(*parts: Column | str) -> Column:
    return F.substring(F.sha2(F.concat_ws("|", *parts), 256), 1, 24)


def _shape(df: DataFrame) -> DataFrame:
    return df.withColumn("delivered_to", F.array().cast("array<string>")).select([f.name for f in GOLD_ALERTS.fields])


def storm_alerts(rebalances: DataFrame, *, settings: AlertSettings) -> DataFrame:
    """At least `storm_rebalances` rebalances of one group starting within `storm_window_min`: one alert per
    incident, opened at the first rebalance of the first such window. Kafka Streams' probing rebalances (planned:
    warm-up replicas catching up, KIP-441) count apart from the others: they make a storm only among themselves."""
    r = rebalances.select("group_id", "rebalance_id", "started_at", "completed_at", "incident_id", "cause",
                          "duration_ms", (F.coalesce(F.col("cause_detail"), F.lit("")) == "probing_rebalance")
                          .alias("planned"))
    a, b = r.alias("a"), r.alias("b")
    window = F.expr(f"INTERVAL {int(settings.storm_window_min * 60)} SECONDS")
    pairs = a.join(b, (F.col("a.group_id") == F.col("b.group_id")) & (F.col("a.planned") == F.col("b.planned"))
                   & (F.col("b.started_at") >= F.col("a.started_at"))
                   & (F.col("b.started_at") <= F.col("a.started_at") + window))
    windows = pairs.groupBy("a.group_id", "a.incident_id", "a.started_at").agg(F.count(F.lit(1)).alias("n"))
    first = Window.partitionBy("incident_id").orderBy("started_at")
    storms = (
        windows.filter(F.col("n") >= settings.storm_rebalances)
        .withColumn("_r", F.row_number().over(first)).filter("_r = 1")
        .select("incident_id", F.col("started_at").alias("opened_at"))
    )
    members = r.drop("planned").join(storms, "incident_id").filter(F.col("started_at") >= F.col("opened_at"))
    grouped = members.groupBy("incident_id", "group_id", "opened_at").agg(
        F.count(F.lit(1)).alias("n"),
        F.max("completed_at").alias("closed_at"),
        F.max(F.col("completed_at").isNull().cast("int")).alias("still_open"),
        F.array_sort(F.collect_list("rebalance_id")).alias("rebalance_ids"),
        F.array_join(F.array_sort(F.array_distinct(F.collect_list("cause"))), ", ").alias("causes"),
        F.sum("duration_ms").alias("unavailable_ms"),
    )
    summary = F.format_string(
        "Rebalance storm: %s rebalanced %d times from %s UTC (causes: %s), %.0f s without consuming",
        "group_id", "n", F.date_format("opened_at", "yyyy-MM-dd HH:mm"), "causes",
        F.coalesce(F.col("unavailable_ms"), F.lit(0)) / 1000.0,
    )
    return _shape(grouped.select(
        _alert_id(F.lit("storm"), "incident_id").alias("alert_id"), F.lit("storm").alias("rule"),
        F.lit("critical").alias("severity"), "group_id", "opened_at",
        F.when(F.col("still_open") == 0, F.col("closed_at")).alias("closed_at"), summary.alias("summary"),
        "rebalance_ids", "incident_id",
    ))


def long_rebalance_alerts(rebalances: DataFrame, *, settings: AlertSettings) -> DataFrame:
    """A rebalance that kept its group from consuming for longer than `long_rebalance_s`."""
    long = rebalances.filter(F.col("duration_ms") >= settings.long_rebalance_s * 1000)
    summary = F.format_string("%s could not consume for %s while rebalancing at %s UTC (cause: %s)",
                              "group_id", spoken_duration(F.col("duration_ms")),
                              F.date_format("started_at", "yyyy-MM-dd HH:mm:ss"), "cause")
    return _shape(long.select(
        _alert_id(F.lit("long_rebalance"), "rebalance_id").alias("alert_id"), F.lit("long_rebalance").alias("rule"),
        F.lit("warning").alias("severity"), "group_id", F.col("started_at").alias("opened_at"),
        F.col("completed_at").alias("closed_at"), summary.alias("summary"),
        F.array("rebalance_id").alias("rebalance_ids"), "incident_id",
    ))


def stuck_alerts(states: DataFrame, *, settings: AlertSettings, run_ts: dt.datetime) -> DataFrame:
    """A group whose latest state is PreparingRebalance or CompletingRebalance for longer than `stuck_after_min`
    at `run_ts` (the wall clock of the run): fires even when no new log line arrives."""
    stuck = _rebalancing_now(states, settings=settings).filter(F.col("_stuck_at") <= _timestamp(run_ts))
    # A classic group consumes nothing while it rebalances; a KIP-848 consumer group keeps the partitions its members
    # hold, and only the moving ones wait.
    consumer = F.col("state").isin("Assigning", "Reconciling")
    summary = F.format_string("%s is stuck in %s since %s UTC (%s %s): %s",
                              "group_id", "state", F.date_format("started_at", "yyyy-MM-dd HH:mm:ss"),
                              F.when(consumer, F.lit("group epoch")).otherwise(F.lit("generation")),
                              F.coalesce(F.col("generation").cast("string"), F.lit("?")),
                              F.when(consumer, F.lit("the partitions that move wait for their new owner"))
                              .otherwise(F.lit("it consumes nothing")))
    return _shape(stuck.select(
        _alert_id(F.lit("stuck"), "state_id").alias("alert_id"), F.lit("stuck").alias("rule"),
        F.lit("critical").alias("severity"), "group_id", F.col("started_at").alias("opened_at"),
        F.lit(None).cast("timestamp").alias("closed_at"), summary.alias("summary"),
        F.when(F.col("rebalance_id").isNotNull(), F.array("rebalance_id")).alias("rebalance_ids"),
        F.lit(None).cast("string").alias("incident_id"),
    ))


def _timestamp(ts: dt.datetime) -> Column:
    return F.lit(ts.astimezone(dt.timezone.utc).replace(tzinfo=None)).cast("timestamp")


def _rebalancing_now(states: DataFrame, *, settings: AlertSettings) -> DataFrame:
    """Each group whose latest state is a rebalancing one, with `_stuck_at`: when it becomes stuck."""
    latest = Window.partitionBy("group_id").orderBy(*state_time_order(newest_first=True))
    return (
        states.withColumn("_n", F.row_number().over(latest)).filter("_n = 1")
        .filter(F.col("state").isin("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"))
        .withColumn("_stuck_at",
                    F.col("started_at") + F.expr(f"INTERVAL {int(settings.stuck_after_min * 60)} SECONDS"))
    )


def next_stuck_at(states: DataFrame, *, settings: AlertSettings, run_ts: dt.datetime) -> dt.datetime | None:
    """The first moment after `run_ts` at which the stuck rule would fire on these states (naive UTC), or None: until
    then, and while the tables stay as they are, every rule gives what it gave at `run_ts`."""
    row = (_rebalancing_now(states, settings=settings).filter(F.col("_stuck_at") > _timestamp(run_ts))
           .agg(F.min("_stuck_at")).first())
    assert row is not None  # an aggregate without grouping has exactly one row
    found: dt.datetime | None = row[0]
    return found


def poll_timeout_alerts(rebalances: DataFrame, sessions: DataFrame, *, settings: AlertSettings) -> DataFrame:
    """At least `poll_timeouts_per_hour` poll-timeout leaves of one consumer process within an hour."""
    leaves = rebalances.filter((F.col("cause") == "poll_timeout") & (F.col("cause_detail") != "rejoin")).join(
        sessions.select("group_id", F.col("member_id").alias("trigger_member_id"), "instance"),
        ["group_id", "trigger_member_id"], "left",
    ).withColumn("process", F.coalesce("instance", "trigger_member_id"))
    a, b = leaves.alias("a"), leaves.alias("b")
    pairs = a.join(b, (F.col("a.group_id") == F.col("b.group_id")) & (F.col("a.process") == F.col("b.process"))
                   & (F.col("b.started_at") >= F.col("a.started_at"))
                   & (F.col("b.started_at") <= F.col("a.started_at") + F.expr("INTERVAL 1 HOUR")))
    windows = pairs.groupBy("a.group_id", "a.process", "a.started_at", "a.incident_id").agg(
        F.count(F.lit(1)).alias("n"), F.array_sort(F.collect_list("b.rebalance_id")).alias("rebalance_ids"))
    qualifying = windows.filter(F.col("n") >= settings.poll_timeouts_per_hour)
    # Overlapping windows are one alert: a new alert only starts an hour after the previous one opened.
    order = Window.partitionBy("group_id", "process").orderBy("started_at")
    qualifying = qualifying.withColumn("_prev", F.lag("started_at").over(order)).filter(
        F.col("_prev").isNull() | (F.col("started_at") > F.col("_prev") + F.expr("INTERVAL 1 HOUR")))
    summary = F.format_string("%s: consumer process %s exceeded max.poll.interval.ms %d times within an hour "
                              "from %s UTC",
                              "group_id", "process", "n", F.date_format("started_at", "yyyy-MM-dd HH:mm"))
    return _shape(qualifying.select(
        _alert_id(F.lit("poll_timeouts"), "group_id", "process", F.col("started_at").cast("string")).alias("alert_id"),
        F.lit("repeated_poll_timeouts").alias("rule"), F.lit("warning").alias("severity"), "group_id",
        F.col("started_at").alias("opened_at"), F.lit(None).cast("timestamp").alias("closed_at"),
        summary.alias("summary"), "rebalance_ids", "incident_id",
    ))


def gc_expiry_alerts(rebalances: DataFrame) -> DataFrame:
    """A member expired because its JVM was stopped by a GC pause."""
    gc = rebalances.filter((F.col("cause") == "gc_pause") & (F.col("cause_detail") != "rejoin"))
    summary = F.format_string("%s lost member %s at %s UTC to a GC pause of its JVM", "group_id",
                              F.coalesce("trigger_member_id", F.lit("?")),
                              F.date_format("started_at", "yyyy-MM-dd HH:mm:ss"))
    return _shape(gc.select(
        _alert_id(F.lit("gc_expiry"), "rebalance_id").alias("alert_id"), F.lit("gc_expiry").alias("rule"),
        F.lit("warning").alias("severity"), "group_id", F.col("started_at").alias("opened_at"),
        F.col("completed_at").alias("closed_at"), summary.alias("summary"),
        F.array("rebalance_id").alias("rebalance_ids"), "incident_id",
    ))


def quality_alerts(results: DataFrame, *, input_rules: Collection[tuple[str, str]] = ()) -> DataFrame:
    """A data-quality rule that failed (gold_quality_results): one alert per rule and run of consecutive failed
    checks, opened at the first of them and closed by the next check that passes. `group_id` is `*`: the alert is
    about a table, not one group. Rows found by an `input_rules` (table, rule) are not its failures (input_alerts
    reports them), unless the rule could not be checked."""
    is_input = F.lit(False)
    for table, rule in input_rules:
        is_input = is_input | ((F.col("table_name") == table) & (F.col("rule") == rule))
    results = results.withColumn("success", F.col("success") | (is_input & F.col("error").isNull()))
    order = Window.partitionBy("table_name", "rule").orderBy("run_ts")
    first_failure = ~F.col("success") & F.coalesce(F.lag("success").over(order), F.lit(True))
    streaks = results.withColumn("_start", F.when(first_failure, F.col("run_ts"))).withColumn(
        "opened_at", F.last("_start", ignorenulls=True).over(order.rowsBetween(Window.unboundedPreceding, 0)))
    failed = streaks.filter(~F.col("success")).groupBy("table_name", "rule", "opened_at").agg(
        F.max("run_ts").alias("last_failed"), F.max_by("unexpected_count", "run_ts").alias("unexpected_count"),
        F.max_by("checked_rows", "run_ts").alias("checked_rows"), F.max_by("samples", "run_ts").alias("samples"),
        F.max_by("error", "run_ts").alias("error"))
    passed = results.filter(F.col("success")).select("table_name", "rule", F.col("run_ts").alias("passed_at"))
    closed = failed.join(passed, ["table_name", "rule"], "left").groupBy(*failed.columns).agg(
        F.min(F.when(F.col("passed_at") > F.col("last_failed"), F.col("passed_at"))).alias("closed_at"))
    name = F.concat_ws(".", "table_name", "rule")
    what = F.when(F.col("error").isNotNull(), F.concat(F.lit("could not be checked: "), F.col("error"))).otherwise(
        F.format_string("%d of %d rows break it", F.coalesce("unexpected_count", F.lit(0)),
                        F.coalesce("checked_rows", F.lit(0))))
    example = F.when(F.col("samples").isNotNull(),
                     F.concat(F.lit(" (e.g. "), F.substring(F.split("samples", "; ").getItem(0), 1, 160), F.lit(")")))
    summary = F.concat(F.lit("Data quality rule "), name, F.lit(" failed since "),
                       F.date_format("opened_at", "yyyy-MM-dd HH:mm"), F.lit(" UTC: "), what,
                       F.coalesce(example, F.lit("")), F.lit("; see gold_quality_results"))
    return _shape(closed.select(
        _alert_id(F.lit("quality"), "table_name", "rule", F.col("opened_at").cast("string")).alias("alert_id"),
        F.lit("quality").alias("rule"), F.lit("critical").alias("severity"), F.lit("*").alias("group_id"),
        "opened_at", "closed_at", summary.alias("summary"), F.lit(None).cast("array<string>").alias("rebalance_ids"),
        F.lit(None).cast("string").alias("incident_id"),
    ))


def input_alerts(violations: DataFrame) -> DataFrame:
    """One alert per row that breaks an input rule (pipelines/quality/findings.py `violations`), about its group and
    opened and closed at the row's time: the id comes from the rule and the row's key, so a row is reported once."""
    summary = F.concat(
        F.lit("Inconsistent input: "), F.concat_ws(".", "table_name", "rule"), F.lit(" is broken for group "),
        F.coalesce("group_id", F.lit("?")), F.lit(" at "), F.date_format("at", "yyyy-MM-dd HH:mm:ss"),
        F.lit(" UTC ("), F.col("row_key"), F.lit(", "), F.col("detail"),
        F.lit("): a log line may be missing or out of order; reported once, the run goes on"),
    )
    return _shape(violations.select(
        _alert_id(F.lit("inconsistent_input"), "table_name", "rule", "row_key").alias("alert_id"),
        F.lit("inconsistent_input").alias("rule"), F.lit("warning").alias("severity"),
        F.coalesce("group_id", F.lit("*")).alias("group_id"), F.col("at").alias("opened_at"),
        F.col("at").alias("closed_at"), summary.alias("summary"),
        F.when(F.col("rebalance_id").isNotNull(), F.array("rebalance_id")).alias("rebalance_ids"), "incident_id",
    ))


def estate_alerts(estate: DataFrame, rebalances: DataFrame, *, settings: AlertSettings) -> DataFrame:
    """An estate incident with a shared root (not a mere burst) whose first `estate_groups` groups all started
    rebalancing within `estate_window_s`: one alert per estate incident, naming its root. `group_id` is `*`: the
    alert is about several groups, which its summary names."""
    firsts = rebalances.filter(F.col("estate_incident_id").isNotNull()).groupBy("estate_incident_id", "group_id").agg(
        F.min("started_at").alias("first_at"))
    order = Window.partitionBy("estate_incident_id").orderBy("first_at", "group_id")
    nth = F.lead("first_at", settings.estate_groups - 1).over(order)
    reached = firsts.withColumn("_nth", nth).filter(
        F.col("_nth").isNotNull()
        & (F.col("_nth").cast("double") - F.col("first_at").cast("double") <= settings.estate_window_s)
    ).select("estate_incident_id").distinct()
    shared = estate.filter(F.col("root_kind") != "correlated_burst").join(reached, "estate_incident_id")
    summary = F.concat(F.lit("Estate incident: "), F.col("summary"), F.lit("; tied by "), F.col("cause_rule"))
    return _shape(shared.select(
        _alert_id(F.lit("estate_incident"), "estate_incident_id").alias("alert_id"),
        F.lit("estate_incident").alias("rule"), F.lit("critical").alias("severity"), F.lit("*").alias("group_id"),
        F.col("started_at").alias("opened_at"), F.col("ended_at").alias("closed_at"), summary.alias("summary"),
        "rebalance_ids", F.lit(None).cast("string").alias("incident_id"),
    ))


def all_alerts(rebalances: DataFrame, states: DataFrame, sessions: DataFrame, *, settings: AlertSettings,
               run_ts: dt.datetime, quality: DataFrame | None = None,
               input_rules: Collection[tuple[str, str]] = (), violations: DataFrame | None = None,
               estate: DataFrame | None = None) -> DataFrame:
    """Every rule's alerts, one row per alert id (`quality`: gold_quality_results, for the quality rule, whose
    `input_rules` are reported by `violations` instead, rows breaking them, for the inconsistent_input rule;
    `estate`: gold_estate_incidents, for the estate_incident rule)."""
    parts = [
        storm_alerts(rebalances, settings=settings),
        long_rebalance_alerts(rebalances, settings=settings),
        stuck_alerts(states, settings=settings, run_ts=run_ts),
        poll_timeout_alerts(rebalances, sessions, settings=settings),
        gc_expiry_alerts(rebalances),
    ]
    if quality is not None:
        parts.append(quality_alerts(quality, input_rules=input_rules))
    if violations is not None:
        parts.append(input_alerts(violations))
    if estate is not None:
        parts.append(estate_alerts(estate, rebalances, settings=settings))
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
