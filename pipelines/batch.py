"""The batch path: every landing file at once, no streaming, no Delta, no incremental state.

It runs the same transforms as the streams and is the oracle the streaming tables are compared with: whatever the
order and grouping in which files arrive, the streaming run must end with exactly these rows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import io
from pipelines.config import Config
from pipelines.gold.incidents import advice_from, incidents_from
from pipelines.gold.rebalances import rebuild_rebalances, rebuild_sessions, rebuild_states, rules_from, timeline_input
from pipelines.silver.build import build_silver
from pipelines.silver.outputs import to_events, to_gc_pauses
from pipelines.silver.privacy import hash_salt
from pipelines.sources import resolve_sources


def build_batch(spark: SparkSession, cfg: Config) -> dict[str, DataFrame]:
    """Silver events and GC pauses and every gold table, computed in one batch over all landing files."""
    raw = io.read_files(spark, io.landing_files(cfg))
    staged = build_silver(raw, resolve_sources(cfg), existing_files=io.empty(spark, "bronze_files"), batch_id=0,
                          now=F.current_timestamp(), hash_salt=hash_salt(cfg))
    events = to_events(staged.parsed)
    pauses = to_gc_pauses(staged.parsed)
    rules = rules_from(cfg.thresholds)
    inputs = timeline_input(events, pauses, min_pause_ms=rules.gc_pause_min_ms).persist()
    rebalances = rebuild_rebalances(inputs, rules).persist()
    sessions = rebuild_sessions(inputs, rules).persist()
    return {
        "silver_events": events,
        "silver_gc_pauses": pauses,
        "gold_rebalances": rebalances,
        "gold_group_states": rebuild_states(inputs, rules),
        "gold_member_sessions": sessions,
        "gold_incidents": incidents_from(rebalances),
        "gold_config_advice": advice_from(rebalances, pauses, sessions, events),
    }
