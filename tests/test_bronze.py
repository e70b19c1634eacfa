"""Bronze: exact line positions, duplicate files, and the per-file accounting identity."""

from __future__ import annotations

import gzip

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.bronze.lines import kept_lines, with_line_ids
from pipelines.bronze.repeats import EarlierIngest
from pipelines.settings.config import load_config
from pipelines.silver.outputs import accounting
from pipelines.storage import inputs
from tests.conftest import silver_batch

BROKER = (
    "[2026-11-20 08:00:0{n},000] INFO [GroupCoordinator 1]: Stabilized group g{n} generation {n} "
    "(__consumer_offsets-1) with 1 members (kafka.coordinator.group.GroupCoordinator)"
)
NOISE = "[2026-11-20 08:00:00,000] INFO [Log partition=t-0] Rolled new log segment (kafka.log.LocalLog)"


def _stage(spark, paths):
    raw = inputs.read_files(spark, paths)
    return silver_batch(raw, load_config())


def test_line_numbers_duplicates_and_accounting(spark, tmp_path):
    broker = tmp_path / "broker-1"
    broker.mkdir()
    lines = [NOISE, BROKER.format(n=1), NOISE, NOISE, BROKER.format(n=2), NOISE]
    (broker / "server.log.1").write_text("\n".join(lines) + "\n")
    (broker / "server.log.1.copy").write_text("\n".join(lines) + "\n")  # the same file landed twice
    with gzip.open(broker / "server.log.2.gz", "wt") as f:
        f.write("\n".join([NOISE, BROKER.format(n=3)]))  # no final newline
    (broker / "empty.log").write_text("")
    (broker / "junk.bin").write_bytes(
        b"\x00\xff\xfe GroupCoordinator \x80\x81\n\x1b[31m" + bytes(range(14, 256)) + b"\n"
    )
    staged = _stage(spark, sorted(broker.iterdir()))
    try:
        bronze = staged.bronze.select(F.element_at(F.split("source_file", "/"), -1).alias("file"), "line_no")
        expected = spark.createDataFrame(
            [("server.log.1", 2), ("server.log.1", 5), ("server.log.2.gz", 2), ("junk.bin", 1)], bronze.schema
        )
        assertDataFrameEqual(bronze, expected)

        files = staged.files.select(
            F.element_at(F.split("source_file", "/"), -1).alias("file"),
            "lines_read",
            F.element_at(F.split("duplicate_of", "/"), -1).alias("duplicate_of"),
        )
        assertDataFrameEqual(
            files,
            spark.createDataFrame(
                [("server.log.1", 6, None), ("server.log.1.copy", 6, "server.log.1"), ("server.log.2.gz", 2, None),
                 ("junk.bin", 2, None)],
                files.schema,
            ),
        )
        acct = accounting(staged.parsed, staged.files, batch_id=0, ingested_at=F.current_timestamp())
        totals = acct.select(
            F.element_at(F.split("source_file", "/"), -1).alias("file"), "lines_read", "noise_lines", "event_lines",
            "gc_pause_lines", "quarantined_lines", "duplicate_lines",
        )
        assertDataFrameEqual(
            totals,
            spark.createDataFrame(
                [("server.log.1", 6, 4, 2, 0, 0, 0), ("server.log.1.copy", 6, 0, 0, 0, 0, 6),
                 ("server.log.2.gz", 2, 1, 1, 0, 0, 0), ("junk.bin", 2, 1, 0, 0, 1, 0)],
                totals.schema,
            ),
        )
        broken = acct.filter(
            F.col("lines_read") != F.col("noise_lines") + F.col("event_lines") + F.col("gc_pause_lines")
            + F.col("quarantined_lines") + F.col("duplicate_lines")
        )
        assert broken.count() == 0
    finally:
        staged.unpersist()


def test_a_utf16_file_as_powershell_writes_it_is_read_line_for_line(spark, tmp_path):
    """PowerShell's `>` saves a redirected log as UTF-16LE with a BOM and CRLF ends. Read as UTF-8 each ASCII
    character has a NUL beside it and the line reader ends each line twice (at the CR, then at the LF after its
    NUL): its lines are still typed, at the line numbers of the file, and counted once each."""
    broker = tmp_path / "broker-1"
    broker.mkdir()
    lines = [NOISE, BROKER.format(n=1), NOISE, BROKER.format(n=2)]
    (broker / "kafka_logs.txt").write_bytes("\r\n".join(lines + [""]).encode("utf-16"))  # BOM, little-endian here
    staged = _stage(spark, [broker / "kafka_logs.txt"])
    try:
        events = staged.parsed.where("event_type IS NOT NULL").select("line_no", "event_type", "group_id")
        assert sorted(tuple(r) for r in events.collect()) == [(2, "group_stabilized", "g1"),
                                                               (4, "group_stabilized", "g2")]
        assert [r["lines_read"] for r in staged.files.collect()] == [4]
    finally:
        staged.unpersist()


def test_line_ids_are_stable_across_reads(spark, tmp_path):
    broker = tmp_path / "broker-1"
    broker.mkdir()
    (broker / "a.log").write_text("\n".join([NOISE, BROKER.format(n=1), BROKER.format(n=2)]) + "\n")
    first = _stage(spark, [broker / "a.log"])
    second = _stage(spark, [broker / "a.log"])
    try:
        assertDataFrameEqual(first.bronze.select("line_id", "line_no"), second.bronze.select("line_id", "line_no"))
    finally:
        first.unpersist()
        second.unpersist()


def test_repeated_text_gets_an_id_per_repeat_and_later_batches_count_on(spark):
    schema = "instance string, file_name string, source_file string, line_no int, file_fingerprint string, value string"
    rows = [("gc-1", "gc.log", "/l/a/gc-1/gc.log", 1, "fa", "[0.005s][info][gc] Using G1"),
            ("gc-1", "gc.log", "/l/a/gc-1/gc.log", 9, "fa", "[0.005s][info][gc] Using G1"),
            ("gc-2", "gc.log", "/l/a/gc-2/gc.log", 1, "fb", "[0.005s][info][gc] Using G1")]
    first = with_line_ids(spark.createDataFrame(rows, schema)).orderBy("instance", "line_no").collect()
    # The same text in one file, and in another instance's file, gets ids of its own; the first is its content hash.
    assert len({r.line_id for r in first}) == 3
    assert first[0].line_id == first[0].content_hash and first[1].line_id != first[1].content_hash
    # A later batch's file of the same instance and name repeats the text (the JVM restarted): it counts on.
    later = spark.createDataFrame([("gc-1", "gc.log", "/l/b/gc-1/gc.log", 1, "fc", "[0.005s][info][gc] Using G1")],
                                  schema)
    earlier = spark.createDataFrame([(r.content_hash,) for r in first], "content_hash string")
    (again,) = with_line_ids(later, earlier_contents=earlier).collect()
    assert again.content_hash == first[0].content_hash and again.line_id not in {r.line_id for r in first}
    # Lakehouses begun before the content scheme keep the ids their release made: file fingerprint and line number.
    (old,) = with_line_ids(later, scheme="position").collect()
    expected = spark.sql("SELECT substring(sha2('fc|1', 256), 1, 24) AS id").first()
    assert expected is not None and old.line_id == expected.id


def test_a_batch_reads_earlier_records_only_of_the_files_it_continues(spark):
    files_schema = "instance string, file_name string, batch_id long"
    lines_schema = "instance string, file_name string, content_hash string, batch_id long"
    earlier = EarlierIngest(
        files=spark.createDataFrame([("gc-1", "gc.log", 0), ("broker-1", "server.log.2026-11-20-08", 0),
                                     (None, "orphan.log", 0)], files_schema),
        lines=spark.createDataFrame([("gc-1", "gc.log", "h1", 0), ("gc-1", "gc.log", "h2", 0),
                                     ("broker-1", "server.log.2026-11-20-08", "h3", 0),
                                     ("gc-1", "gc.log", None, 0), (None, "orphan.log", "h4", 0)], lines_schema))
    # Rotated logs under new names continue nothing: the earlier records are not read at all.
    rotated = spark.createDataFrame([("broker-1", "server.log.2026-11-20-09", 1), ("gc-2", "gc.log", 1)], files_schema)
    assert earlier.contents_for(rotated) is None
    # A file that continues one of an instance and name (a GC log restarted): that file's hashes, and only those.
    continued = spark.createDataFrame([("gc-1", "gc.log", 1), ("broker-1", "server.log.2026-11-20-09", 1),
                                       (None, "orphan.log", 1)], files_schema)
    contents = earlier.contents_for(continued)
    assert contents is not None
    assert sorted(r.content_hash for r in contents.collect()) == ["h1", "h2", "h4"]


def test_a_splits_kept_lines_are_exploded_without_carrying_the_whole_array_along(spark):
    """Each exploded kept line must leave its split's array behind: a row that carried it (an expression over the
    array beside the explode is evaluated above it) would copy the whole array once per line, memory quadratic in a
    split's kept lines; 4 M simulated lines ran the ingest out of a 4 GB heap that way."""
    keys = ", ".join(f"'x' AS {k}" for k in ("source_file", "instance", "file_name", "kafka_topic"))
    kept = ("array(named_struct('scan_id', 1L, 'value', 'v', 'line_length', 1L, 'candidate', true, "
            "'continuation', false, 'may_head', false, 'may_continue_wrap', false, 'leaves_open', false, "
            "'torn', false, 'torn_reason', CAST(NULL AS STRING), 'kafka_offset', CAST(NULL AS BIGINT)))")
    splits = spark.sql(f"SELECT {keys}, 0L AS block_start, 0 AS kafka_partition, "
                       f"TIMESTAMP '2026-11-20 09:00:00' AS file_modified_at, {kept} AS kept")
    plan = kept_lines(splits)._jdf.queryExecution().optimizedPlan()

    def nodes(node):
        yield node
        children = node.children()
        for i in range(children.size()):
            yield from nodes(children.apply(i))

    generates = [n for n in nodes(plan) if n.nodeName() == "Generate"]
    outputs = [[n.output().apply(i).name() for i in range(n.output().size())] for n in generates]
    assert len(outputs) == 1 and "kept" not in outputs[0], outputs
    assert [r.scan_id for r in kept_lines(splits).collect()] == [1]
