"""Incidents (chains of related rebalances) and configuration advice, aggregated from gold rows with Spark SQL."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.gold.spoken import spoken_duration
from schemas.gold import GOLD_CONFIG_ADVICE, GOLD_INCIDENTS


def incidents_from(rebalances: DataFrame) -> DataFrame:
    """gold_incidents: one row per `incident_id` of gold_rebalances, with its root cause (the first rebalance's)."""
    agg = rebalances.groupBy("incident_id", "group_id").agg(
        F.min("started_at").alias("started_at"),
        F.max("completed_at").alias("ended_at"),
        F.count(F.lit(1)).alias("rebalances"),
        F.sum("duration_ms").alias("unavailable_ms"),
        F.min_by("cause", "started_at").alias("root_cause"),
        F.min_by("cause_detail", "started_at").alias("root_cause_detail"),
        F.array_sort(F.array_distinct(F.collect_list("cause"))).alias("causes"),
        F.array_sort(F.collect_list("rebalance_id")).alias("rebalance_ids"),
    )
    span_ms = F.coalesce(F.col("ended_at").cast("double") - F.col("started_at").cast("double"), F.lit(0.0)) * 1000
    summary = F.format_string(
        "%d %s of %s in %s, %s without consuming; root cause %s",
        F.col("rebalances"), F.when(F.col("rebalances") == 1, "rebalance").otherwise("rebalances"), F.col("group_id"),
        spoken_duration(span_ms), spoken_duration(F.coalesce(F.col("unavailable_ms"), F.lit(0))), F.col("root_cause"),
    )
    return agg.withColumn("summary", summary).select([f.name for f in GOLD_INCIDENTS.fields])


# The settings each advice rule weighs, as the members' client_config events print them.
RULE_SETTINGS = {
    "gc_pause_vs_session_timeout": ("session.timeout.ms", "heartbeat.interval.ms"),
    "poll_timeout_vs_max_poll_interval": ("max.poll.interval.ms", "max.poll.records"),
    "restart_storms": ("group.instance.id", "partition.assignment.strategy", "group.protocol"),
    "session_expiries": ("session.timeout.ms", "heartbeat.interval.ms"),
}


def configured_from(events: DataFrame) -> DataFrame:
    """(`group_id`, `rule`, `configured`): per group and advice rule, the settings the members use, from the latest
    client_config event of each member (process folder): `session.timeout.ms=45000, heartbeat.interval.ms=3000
    (3 of 3 members)`, one part per distinct combination, the most common first. Groups whose members never logged
    their configuration have no row."""
    configs = events.filter((F.col("event_type") == "client_config") & F.col("group_id").isNotNull())
    member = F.coalesce("instance", "client_id")
    latest = configs.groupBy("group_id", member.alias("member")).agg(
        F.max_by(F.struct("settings", "group_instance_id"), F.struct("event_ts", "source_file", "line_no", "event_id"))
        .alias("c")
    )
    # The assignor list without its `class ` prefixes and package (`[RangeAssignor, CooperativeStickyAssignor]`).
    strategy = F.regexp_replace(F.col("c.settings")["partition.assignment.strategy"],
                                r"(?:class )?org\.apache\.kafka\.clients\.consumer\.", "")

    def value(key: str) -> Column:
        if key == "group.instance.id":
            # One id per static member: whether it is set is what the group shares.
            return F.when(F.col("c.group_instance_id").isNull(), F.lit("null")).otherwise(F.lit("<set>"))
        if key == "partition.assignment.strategy":
            return strategy
        return F.col("c.settings")[key]

    def text(keys: tuple[str, ...]) -> Column:
        return F.concat_ws(", ", *[F.when(value(k).isNotNull(), F.concat(F.lit(f"{k}="), value(k))) for k in keys])

    per_rule = latest.select(
        "group_id",
        F.explode(F.array(*[F.struct(F.lit(rule).alias("rule"), text(keys).alias("text"))
                            for rule, keys in RULE_SETTINGS.items()])).alias("r"),
    ).select("group_id", "r.rule", "r.text")
    counted = per_rule.groupBy("group_id", "rule", "text").agg(F.count(F.lit(1)).alias("n"))
    combos = counted.groupBy("group_id", "rule").agg(
        F.sum("n").alias("total"), F.array_sort(F.collect_list(F.struct((-F.col("n")).alias("k"), "text", "n")))
        .alias("parts"),
    )
    configured = F.array_join(F.transform("parts", lambda p: F.format_string(
        "%s (%d of %d members)", F.when(p["text"] != "", p["text"]).otherwise(F.lit("not printed")), p["n"],
        F.col("total"))), "; ")
    return combos.select("group_id", "rule", configured.alias("configured"))


# The setting whose what-if (gold_whatif `change`) measures each advice rule's benefit: the first one it weighs.
RULE_CHANGES = {rule: keys[0] for rule, keys in RULE_SETTINGS.items()}


def with_benefit(advice: DataFrame, whatif: DataFrame) -> DataFrame:
    """`advice` with the measured benefit of its rule's change: the gold_whatif change of that setting, the
    rebalances it avoids and the rebalancing time it saves (null when the what-if weighed none)."""
    setting = F.element_at(F.split("change", "="), 1)
    per_change = whatif.groupBy("group_id", "change").agg(
        F.sum((F.col("verdict") == "avoided").cast("long")).alias("avoided_rebalances"),
        F.sum(F.when(F.col("verdict") == "avoided", F.col("saved_ms"))).alias("saved_ms"),
    ).withColumn("setting", setting)
    rules = F.create_map(*[F.lit(x) for pair in RULE_CHANGES.items() for x in pair])
    keyed = advice.drop("whatif_change", "avoided_rebalances", "saved_ms").withColumn(
        "setting", F.element_at(rules, F.col("rule")))
    joined = keyed.join(per_change.withColumnRenamed("change", "whatif_change"), ["group_id", "setting"], "left")
    return joined.select([f.name for f in GOLD_CONFIG_ADVICE.fields])


def _observed_per_group(rebalances: DataFrame, pauses: DataFrame, sessions: DataFrame) -> DataFrame:
    """Per group: rebalances by cause, restarts, its largest size, the ids by cause and its members' longest pause."""
    per_group = rebalances.groupBy("group_id").agg(
        F.sum((F.col("cause") == "gc_pause").cast("int")).alias("gc"),
        F.sum((F.col("cause") == "poll_timeout").cast("int")).alias("poll"),
        F.sum((F.col("cause") == "session_timeout").cast("int")).alias("session"),
        F.sum(F.col("cause_detail").isin("member_join", "member_leave").cast("int")).alias("restarts"),
        F.max("members_after").alias("max_members"),
        # In time order whatever the order of the rows (a replay's output, or the stored table's files).
        F.array_sort(F.collect_list(F.struct("started_at", "rebalance_id", "cause"))).alias("_ids"),
    )
    longest_pause = (
        pauses.join(sessions.select("group_id", "instance").distinct(), "instance")
        .groupBy("group_id").agg(F.max("duration_ms").alias("longest_pause_ms"))
    )
    return per_group.join(longest_pause, "group_id", "left")


def advice_from(rebalances: DataFrame, pauses: DataFrame, sessions: DataFrame,
                events: DataFrame | None = None) -> DataFrame:
    """gold_config_advice: per group, what was observed against what the members use, and what to change.

    Rules: GC pauses that expired members (raise session.timeout.ms above the longest pause or fix the heap);
    poll timeouts (raise max.poll.interval.ms above the longest processing time plus a margin, or lower
    max.poll.records); restart storms of membership changes (static membership, KIP-345); session expiries without
    GC evidence (heartbeat.interval.ms at a third of session.timeout.ms, check the network and the process).
    `configured` comes from the members' client_config events in `events` (silver_events rows; null without them).
    """
    rows = _observed_per_group(rebalances, pauses, sessions)

    def ids(cause: str) -> Column:
        return F.transform(F.filter("_ids", lambda x: x["cause"] == cause), lambda x: x["rebalance_id"])

    candidates = [
        (F.col("gc") > 0, "gc_pause_vs_session_timeout",
         F.format_string("%d session expiries explained by GC pauses; longest pause %.1f s", "gc",
                         F.coalesce(F.col("longest_pause_ms"), F.lit(0.0)) / 1000),
         "raise session.timeout.ms above the longest GC pause plus a margin, or shorten the pauses (heap size, "
         "collector); keep heartbeat.interval.ms at a third of session.timeout.ms", "high", ids("gc_pause")),
        (F.col("poll") > 0, "poll_timeout_vs_max_poll_interval",
         F.format_string("%d members left because poll() was not called within max.poll.interval.ms", "poll"),
         "raise max.poll.interval.ms above the longest batch processing time plus a margin, or lower "
         "max.poll.records", "high", ids("poll_timeout")),
        (F.col("restarts") >= 6, "restart_storms",
         F.format_string("%d rebalances from members joining or leaving", "restarts"),
         "use static membership (group.instance.id, KIP-345) so restarts within session.timeout.ms do not "
         "rebalance; consider the cooperative-sticky assignor (KIP-429) or the consumer protocol (KIP-848)",
         "medium", ids("membership_change")),
        (F.col("session") >= 2, "session_expiries",
         F.format_string("%d session expiries without GC evidence", "session"),
         "check the process and the network between consumers and brokers; keep heartbeat.interval.ms at a third "
         "of session.timeout.ms", "medium", ids("session_timeout")),
    ]
    advice = None
    for condition, rule, observed, text, severity, evidence in candidates:
        part = rows.filter(condition).select(
            "group_id", F.lit(rule).alias("rule"), observed.alias("observed"), F.lit(text).alias("advice"),
            F.lit(severity).alias("severity"), evidence.alias("evidence_rebalance_ids"),
        )
        advice = part if advice is None else advice.unionByName(part)
    assert advice is not None  # `candidates` is a non-empty literal list
    if events is None:
        advice = advice.withColumn("configured", F.lit(None).cast("string"))
    else:
        advice = advice.join(configured_from(events), ["group_id", "rule"], "left")
    for name, dtype in (("whatif_change", "string"), ("avoided_rebalances", "long"), ("saved_ms", "long")):
        advice = advice.withColumn(name, F.lit(None).cast(dtype))
    return advice.select([f.name for f in GOLD_CONFIG_ADVICE.fields])
