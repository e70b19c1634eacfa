"""The Spark measurements: the read-and-count baseline, the floor of any ingest in this design, the parse stage alone,
and the whole pipeline."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from bench import timeline
from pipelines.flow.ingest import make_ingest_batch
from pipelines.flow.run import INGEST_QUERY, run
from pipelines.flow.streams import AVAILABLE_NOW, start_stream
from pipelines.settings.config import Config, load_config
from pipelines.storage import inputs, lake

Say = Callable[[str], None]


@dataclass
class Timing:
    """Wall-clock seconds of one measured step, the lines it covered, and what else it reported."""

    seconds: float
    lines: int
    detail: dict[str, object] = field(default_factory=dict)

    @property
    def lines_per_s(self) -> float:
        """Throughput in input lines per second."""
        return self.lines / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, object]:
        """Seconds, lines, lines per second and the details, for the JSON results."""
        return {"seconds": round(self.seconds, 3), "lines": self.lines, "lines_per_s": round(self.lines_per_s),
                **self.detail}


def bench_config(landing: Path, lakehouse: Path, conf: Path | None = None) -> Config:
    """The configuration of one measured run: the given (or default) configuration with its own directories."""
    return load_config(conf, {"landing": str(landing), "lakehouse": str(lakehouse)})


def count_lines(spark: SparkSession, files: tuple[Path, ...], *, runs: int = 2) -> Timing:
    """`spark.read.text(files).count()` run `runs` times; the last (warm) run is the one reported."""
    paths = [str(p.resolve()) for p in files]
    seconds: list[float] = []
    count = 0
    for _ in range(runs):
        start = time.perf_counter()
        count = spark.read.text(paths).count()
        seconds.append(time.perf_counter() - start)
    return Timing(seconds[-1], count, {"runs_s": [round(s, 3) for s in seconds]})


def _prepare(spark: SparkSession, cfg: Config) -> float:
    # A deployment's tables exist before its runs, so creating them stays outside the measured time.
    start = time.perf_counter()
    lake.ensure_tables(spark, cfg)
    return time.perf_counter() - start


def _run_to_end(start_query: Callable[[], StreamingQuery]) -> float:
    """Start an `availableNow` query, wait until it has processed everything, and return the seconds it took."""
    start = time.perf_counter()
    handle = start_query()
    try:
        handle.awaitTermination()
    finally:
        handle.stop()
    return time.perf_counter() - start


def ingest_only(spark: SparkSession, cfg: Config, *, lines: int) -> Timing:
    """Landing to bronze and silver: the ingest query of `pipelines.flow.run.run` alone, `availableNow`,
    fresh tables."""
    created = _prepare(spark, cfg)
    batches: list[dict[str, int]] = []
    stream = inputs.read_landing(spark, cfg)
    batch_fn = make_ingest_batch(cfg, on_batch=lambda _q, counts: batches.append(counts))
    start_ms = int(time.time() * 1000)
    seconds = _run_to_end(lambda: start_stream(stream, cfg, f"bench-{INGEST_QUERY}", batch_fn, AVAILABLE_NOW,
                                               checkpoint=inputs.checkpoint_dir(cfg, INGEST_QUERY)))
    events = sum(b.get("silver_events", 0) for b in batches)
    return Timing(seconds, lines, {"batches": len(batches), "silver_events": events,
                                   "table_creation_s": round(created, 3),
                                   "timeline": timeline.steps(cfg.lakehouse, start_ms=start_ms,
                                                              end_ms=int(time.time() * 1000))})


FLOOR_TABLES = 5  # the ingest batch appends to five tables besides bronze_files: bronze and four silver tables


def ingest_floor(spark: SparkSession, cfg: Config, *, lines: int) -> Timing:
    """What any ingest of this design pays before it parses anything: the same landing stream (`availableNow`), one
    read of every line (a line count per file, as the accounting needs) and, per micro-batch, that small result
    appended to FLOOR_TABLES Delta tables with txnAppId/txnVersion, as the ingest's idempotent appends are."""
    tables = [cfg.lakehouse / "_floor" / f"table_{i}" for i in range(FLOOR_TABLES)]
    for path in tables:
        spark.createDataFrame([], "batch_id long, source_file string, lines long").write.format("delta") \
            .mode("overwrite").save(str(path))

    def floor_batch(batch_df, batch_id: int) -> None:
        per_file = batch_df.groupBy(F.col("_metadata.file_path").alias("source_file")).agg(
            F.count(F.lit(1)).alias("lines")).select(F.lit(batch_id).cast("long").alias("batch_id"), "*")
        rows = spark.createDataFrame(per_file.collect(), per_file.schema)
        for path in tables:
            rows.write.format("delta").mode("append").option("txnAppId", "bench.floor") \
                .option("txnVersion", batch_id).save(str(path))

    stream = inputs.read_landing(spark, cfg)
    seconds = _run_to_end(lambda: start_stream(stream, cfg, "bench-floor", floor_batch, AVAILABLE_NOW,
                                               checkpoint=cfg.lakehouse / "_floor" / "_checkpoint"))
    total = spark.read.format("delta").load(str(tables[0])).agg(F.sum("lines")).first()
    assert total is not None  # an aggregate without grouping has exactly one row
    counted = total[0] or 0
    return Timing(seconds, lines, {"lines_counted": int(counted), "tables": FLOOR_TABLES})


def whole_pipeline(spark: SparkSession, cfg: Config, *, lines: int, say: Say | None = None) -> Timing:
    """Landing to every gold table with `pipelines.flow.run.run` (`availableNow`) on fresh tables."""
    created = _prepare(spark, cfg)
    start_ms, start = int(time.time() * 1000), time.perf_counter()
    summary = run(spark, cfg, on_progress=say)
    seconds = time.perf_counter() - start
    return Timing(seconds, lines, {"batches": dict(summary.batches), "silver_events": summary.added["silver_events"],
                                   "gold_rebalances": summary.added["gold_rebalances"],
                                   "table_creation_s": round(created, 3),
                                   "timeline": timeline.steps(cfg.lakehouse, start_ms=start_ms,
                                                              end_ms=int(time.time() * 1000))})
