"""The batch path: every landing file at once, no streaming, no Delta, no incremental state.

It runs the same transforms as the streams and is the oracle the streaming tables are compared with: whatever the
order and grouping in which files arrive, the streaming run must end with exactly these rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.bronze.lines import LineIds
from pipelines.gold.build import build_gold
from pipelines.gold.placement import gold_events
from pipelines.gold.rebalances import rules_from
from pipelines.session.caching import CachedFrames
from pipelines.settings.config import Config
from pipelines.settings.sources import resolve_sources
from pipelines.silver.build import build_silver
from pipelines.silver.outputs import to_events, to_gc_pauses
from pipelines.silver.privacy import hash_salt
from pipelines.storage import inputs, lake


@contextmanager
def batch_tables(spark: SparkSession, cfg: Config, *, line_ids: LineIds = "content") -> Iterator[dict[str, DataFrame]]:
    """Silver events and GC pauses and every gold table, computed in one batch over all landing files with line ids
    of the scheme `line_ids`; the frames the build caches are released when the block ends (a session that builds
    many oracles keeps none of them)."""
    raw = inputs.read_files(spark, inputs.landing_files(cfg))
    staged = build_silver(raw, resolve_sources(cfg), existing_files=lake.empty(spark, "bronze_files"), batch_id=0,
                          now=F.current_timestamp(), hash_salt=hash_salt(cfg), line_ids=line_ids)
    try:
        with CachedFrames() as cached:
            events = to_events(staged.parsed)
            pauses = to_gc_pauses(staged.parsed)
            tables = build_gold(gold_events(events), pauses, rules_from(cfg.thresholds), persist=cached)
            yield {"silver_events": events, "silver_gc_pauses": pauses, **tables}
    finally:
        staged.unpersist()
