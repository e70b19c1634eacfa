"""What a session keeps or skips from one batch to the next: pinned frames, compiled code, file listings."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.bronze.damaged import spark_file_uri
from pipelines.flow.batch import batch_tables
from pipelines.flow.ingest import landed_mb
from pipelines.flow.run import run
from pipelines.session.caching import pin, unpin
from pipelines.session.spark import compiled_code
from pipelines.storage import inputs, lake
from tests.conftest import DATA, SPARK_SETTINGS, land, make_config, silver_batch


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
    # One silver build generates about 150 classes; with Spark's default cache of 100 sources each batch evicted the
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
    raw = inputs.read_files(spark, sorted(p for d in (broker, consumer) for p in d.iterdir()))
    # A batch's own time is a literal Spark writes into the code of the stages that stamp it (4 classes a batch,
    # measured): one time for both builds keeps that apart from what the cache decides.
    stamp = F.lit(datetime(2026, 11, 20, 8, 5))
    with compiled_code(spark, True):  # the session interprets small work; a large ingest batch is compiled
        first = _compiled_classes(spark)
        silver_batch(raw, now=stamp).unpersist()
        before = _compiled_classes(spark)
        again = silver_batch(raw, now=stamp)
        assert again.parsed.filter("disposition = 'gc_pause'").count() == 1
        again.unpersist()
    compiled_first, compiled_again = before - first, _compiled_classes(spark) - before
    assert compiled_first > 100  # the first build did compile its code
    # A repeat still compiles a few stages the first plan numbered differently (4 of 151 run alone; with each
    # build's own time, 6 alone and 12 after other tests); an evicting cache compiles nearly all of them again.
    assert compiled_again <= compiled_first // 10, (compiled_first, compiled_again)


def test_a_compiled_silver_build_fits_the_jvm_method_limit(spark, tmp_path):
    # A generated method over 64 KB does not fail a batch: Spark logs the compile error with a long trace and runs
    # that stage without generated code. So the build runs here with no way back, and a method too big fails it.
    broker, consumer = tmp_path / "broker-1", tmp_path / "app-0"
    broker.mkdir()
    consumer.mkdir()
    (broker / "server.log").write_text(
        "[2026-11-20 08:00:01,000] INFO [GroupCoordinator 1]: Preparing to rebalance group g in state "
        "PreparingRebalance with old generation 3 (__consumer_offsets-1) (reason: Adding new member c-1) "
        "(kafka.coordinator.group.GroupCoordinator)\n")
    (consumer / "app.log").write_text(
        "2026-11-20 08:00:00,900 INFO [Consumer clientId=c-1, groupId=g] (Re-)joining group "
        "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)\n"
        "[2026-11-20T08:00:00.500+0000][info][gc] GC(7) Pause Young (Normal) (G1 Evacuation Pause) "
        "24M->4M(256M) 812.345ms\n")
    raw = inputs.read_files(spark, sorted(p for d in (broker, consumer) for p in d.iterdir()))
    with compiled_code(spark, True):  # it sets the factory mode back when it ends
        spark.conf.set("spark.sql.codegen.fallback", "false")
        spark.conf.set("spark.sql.codegen.factoryMode", "CODEGEN_ONLY")
        try:
            batch = silver_batch(raw)
            dispositions = sorted(r.disposition for r in batch.parsed.select("disposition").collect())
            batch.unpersist()
        finally:
            spark.conf.unset("spark.sql.codegen.fallback")
    assert dispositions == ["event", "event", "gc_pause"]


def test_an_ingest_batch_compiles_its_code_only_from_the_configured_size(spark, tmp_path):
    # Interpreted, the small batches of a scheduled run skip compiling; a batch of many megabytes is compiled. Both
    # make the same rows: the oracle that checks the compiled run interprets.
    compiled, small = (make_config(tmp_path / name, spark={**SPARK_SETTINGS, "compiled_from_mb": mb})
                       for name, mb in (("compiled", 0), ("small", 256)))
    added = {}
    for cfg in (compiled, small):
        land(DATA / "landing" / "part1", cfg.landing)
        before = _compiled_classes(spark)
        run(spark, cfg, stages=("ingest",))
        added[cfg is compiled] = _compiled_classes(spark) - before
    # A few generators have no interpreted form (2 classes here); the compiled batch generated 165.
    assert added[False] <= 5 and added[True] > 50, added
    # The size the switch weighs: the batch's files as the stream plans them (file URIs); a vanished file adds 0.
    landed = sorted(p for p in compiled.landing.rglob("*") if p.is_file())
    assert landed_mb([spark_file_uri(p) for p in landed] + [spark_file_uri(tmp_path / "gone.log")]) == sum(
        p.stat().st_size for p in landed) / 1_000_000 > 0
    with batch_tables(spark, compiled) as oracle:
        for name in ("silver_events", "silver_gc_pauses"):
            columns = [c for c in oracle[name].columns if c not in ("batch_id", "ingested_at")]
            assertDataFrameEqual(lake.read_table(spark, compiled, name).select(columns), oracle[name].select(columns))


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


def test_the_files_of_a_batch_come_from_its_own_log_entry_or_the_compacted_one(tmp_path):
    cfg = make_config(tmp_path)
    log = inputs.checkpoint_dir(cfg, inputs.INGEST_QUERY) / "sources" / "0"
    log.mkdir(parents=True)
    entry = '{{"path":"file:///landing/b-{n}/server.log","timestamp":1,"batchId":{n}}}'
    (log / "9.compact").write_text("v1\n" + "\n".join(entry.format(n=n) for n in (1, 8, 9, 19, 9)) + "\n")
    (log / "10").write_text("v1\n" + entry.format(n=10) + "\n")
    assert inputs.landing_batch_files(cfg, 9) == ["file:///landing/b-9/server.log"] * 2
    assert inputs.landing_batch_files(cfg, 10) == ["file:///landing/b-10/server.log"]
    assert inputs.landing_batch_files(cfg, 11) is None


def test_a_local_session_takes_memory_in_pages_g1_allocates_as_ordinary_objects(spark):
    # Spark's own page size here would be 64 MB: every small sort or aggregation took one, each a "humongous"
    # allocation that started a concurrent marking of the heap.
    jvm = spark._jvm
    page = jvm.org.apache.spark.SparkEnv.get().memoryManager().pageSizeBytes()
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    region = int(bean.getVMOption("G1HeapRegionSize").getValue())
    assert bean.getVMOption("UseG1GC").getValue() == "true"
    # An object of half a region or more is humongous; a page is a long[] with a 16-byte header.
    assert 0 < page + 16 < region // 2, (page, region)
