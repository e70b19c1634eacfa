"""What a session keeps or skips from one batch to the next: pinned frames, compiled code, file listings."""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines import io
from pipelines.caching import pin, unpin
from tests.conftest import silver_batch


def _stored_rdds(spark) -> int:
    return len(spark.sparkContext._jsc.sc().getRDDStorageInfo())


def test_a_pinned_frame_keeps_its_rows_drops_its_plan_and_is_released(spark):
    source = spark.range(1_000).withColumn("even", F.col("id") % 2 == 0)
    wide = source.withColumns({f"c{i}": F.col("id") * i for i in range(40)})
    before = _stored_rdds(spark)
    pinned = pin(wide)
    assert _stored_rdds(spark) == before + 1
    # The plan is the stored rows: no trace of the forty expressions behind them.
    assert "c39" in pinned.columns and "multiply" not in str(pinned._jdf.queryExecution().analyzed()).lower()
    assertDataFrameEqual(pinned.filter("even"), wide.filter("even"))
    unpin(pinned)
    assert _stored_rdds(spark) == before
    unpin(pinned)  # a second release is harmless
    assert _stored_rdds(spark) == before


def _compiled_classes(spark) -> int:
    return spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount()


def test_a_second_batch_reuses_the_code_the_first_compiled(spark, tmp_path):
    # One silver build generates about 124 classes; with Spark's default cache of 100 sources each batch evicted the
    # classes of the one before and compiled them all again (102-124 per repeat, measured).
    broker, consumer = tmp_path / "broker-1", tmp_path / "app-0"
    broker.mkdir()
    consumer.mkdir()
    (broker / "server.log").write_text(
        "[2026-11-20 08:00:01,000] INFO [GroupCoordinator 1]: Preparing to rebalance group g in state "
        "PreparingRebalance with old generation 3 (__consumer_offsets-1) (reason: Adding new member c-1) "
        "(kafka.coordinator.group.GroupCoordinator)\n"
        "[2026-11-20 08:00:02,000] INFO [Log partition=t-0] Rolled new log segment (kafka.log.LocalLog)\n")
    (consumer / "gc.log").write_text(
        "[2026-11-20T08:00:00.500+0000][info][gc] GC(7) Pause Young (Normal) (G1 Evacuation Pause) "
        "24M->4M(256M) 812.345ms\n")
    raw = io.read_files(spark, sorted(p for d in (broker, consumer) for p in d.iterdir()))
    silver_batch(raw).unpersist()
    before = _compiled_classes(spark)
    again = silver_batch(raw)
    assert again.parsed.filter("disposition = 'gc_pause'").count() == 1
    again.unpersist()
    assert _compiled_classes(spark) - before <= 10


def test_a_local_session_lists_many_files_without_a_spark_job(spark, tmp_path):
    # A restarted stream lists every file of its last batch again; as a Spark job (one task per file, Spark's way
    # above 32 paths) that took 22 s after a batch of 6,671 files.
    paths = []
    for i in range(40):
        path = tmp_path / f"server.log.{i}"
        path.write_text(f"line {i}\n")
        paths.append(str(path))
    context = spark.sparkContext
    context.setJobGroup("listing-test", "list 40 files")
    try:
        lines = spark.read.text(paths)
        assert list(context.statusTracker().getJobIdsForGroup("listing-test")) == []
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert lines.count() == 40
