"""GC pause lines: JDK 8 G1/Parallel/CMS records, JDK 9+ unified logging with any decorations, every collector."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.settings.config import load_config
from tests.conftest import parse_with

D8 = "2020-06-04T12:25:21.976+0000"  # a JDK 8 date stamp: the collection's start
TIMES = " [Times: user=0.01 sys=0.00, real=0.01 secs]"
LINES = [
    # JDK 8, -XX:+PrintGCDetails: a G1 record (first line, detail lines, Times) joined in bronze.
    f"{D8}: 0.763: [GC pause (G1 Evacuation Pause) (young), 0.0060932 secs]\n   [Parallel Time: 5.7 ms, GC Workers: 1]"
    f"\n{TIMES}",
    f"{D8}: 1.000: [GC pause (G1 Evacuation Pause) (mixed), 0.0586708 secs]",
    f"{D8}: 1.100: [GC pause (G1 Humongous Allocation) (young) (initial-mark), 0.0123000 secs]",
    f"{D8}: 1.200: [GC remark {D8}: 1.201: [Finalize Marking, 0.0001 secs] {D8}: 1.202: [GC ref-proc, 0.0002 secs], "
    "0.0123456 secs]",
    f"{D8}: 1.300: [GC cleanup 1000M->990M(4096M), 0.0012340 secs]",
    f"{D8}: 1.400: [GC (Allocation Failure) [PSYoungGen: 65536K->10720K(76288K)] 65536K->10744K(251392K), "
    f"0.0123000 secs]{TIMES}",
    f"{D8}: 1.500: [Full GC (Ergonomics) [PSYoungGen: 10720K->0K(76288K)] [ParOldGen: 163840K->170000K(175104K)] "
    f"174560K->170000K(251392K), [Metaspace: 20000K->20000K(1067008K)], 0.5000000 secs]{TIMES}",
    f"{D8}: 1.600: [GC (Allocation Failure) {D8}: 1.600: [ParNew: 1K->2K(3K), 0.0123 secs] 4K->5K(6K), "
    f"0.0130000 secs]{TIMES}",
    f"{D8}: 1.700: [GC (CMS Initial Mark) [1 CMS-initial-mark: 100K(200K)] 150K(300K), 0.0020000 secs]{TIMES}",
    f"{D8}: 1.800: [GC (CMS Final Remark) [YG occupancy: 100 K (200 K)]{D8}: 1.800: [Rescan (parallel) , 0.0010 secs]"
    f"[1 CMS-remark: 100K(200K)] 150K(300K), 0.0030000 secs]{TIMES}",
    f"{D8}: 1.900: Total time for which application threads were stopped: 0.0616049 seconds, Stopping threads took: "
    "0.0001381 seconds",
    f"{D8}: 2.000: Application time: 1.2345678 seconds",
    # -XX:+PrintAdaptiveSizePolicy splits the first line: the duration comes on a later line of the record.
    f"{D8}: 2.100: [GC pause (G1 Evacuation Pause) (young) 2.100: [G1Ergonomics (CSet Construction) start choosing "
    "CSet]\n 2.101: [G1Ergonomics (CSet Construction) add young regions to CSet]\n, 0.0058000 secs]\n" + TIMES,
    # JDK 9+ unified logging, decorations padded (`[info ]`), in any subset.
    "[2024-05-14T10:21:01.200+0000][info ][gc          ] GC(5) Pause Young (Concurrent Start) "
    "(G1 Humongous Allocation) 100M->80M(256M) 3.210ms",
    "[2024-05-14T10:21:02.000+0000][12345ms][4242][4250][info][gc] GC(6) Pause Young (Normal) (G1 Evacuation Pause) "
    "(Evacuation Failure) 250M->248M(256M) 45.000ms",
    "[1715682063000ms][info][gc] GC(7) Pause Full (G1 Compaction Pause) 250M->100M(256M) 800.500ms",
    "[2024-05-14T10:21:04.000+0000][gc] GC(8) Pause Young (Allocation Failure) 10M->2M(20M) 3.456ms",
    "[2024-05-14T10:21:05.000+0000][info][gc,phases] GC(9) Pause Mark Start 0.012ms",
    "[2024-05-14T10:21:05.100+0000][info][gc,phases] GC(10) Y: Pause Mark Start (Major) 0.010ms",
    "[2024-05-14T10:21:06.000+0000][info][gc] GC(11) Pause Init Mark (unload classes) 0.123ms",
    "[2024-05-14T10:21:06.500+0000][info][gc] GC(12) Pause Degenerated GC (Mark) 12M->3M(64M) 45.678ms",
    '[2024-05-14T10:21:07.000+0000][0.997s][info][safepoint] Safepoint "G1CollectForAllocation", Time since last: '
    "1000123456 ns, Reaching safepoint: 23456 ns, Cleanup: 1234 ns, At safepoint: 12345678 ns, Total: 12369134 ns",
    "[2024-05-14T10:21:08.000+0000][info][safepoint] Total time for which application threads were stopped: "
    "0.0012345 seconds, Stopping threads took: 0.0000123 seconds",
    "[2024-05-14T10:21:09.000+0000][info][gc,start] GC(13) Pause Young (Normal) (G1 Evacuation Pause)",
    "[12.345s][info][gc] GC(12) Pause Full (System.gc()) 100M->50M(256M) 123.456ms",
    "[2024-05-14T10:21:10.000+0000][info][gc] GC(14) Pause Verify Start 0.500ms",
]
COLUMNS = ["line_no", "disposition", "gc_end_ts", "gc_duration_ms", "gc_uptime_s", "collector", "pause_kind",
           "gc_cause", "quarantine_reason"]


def test_gc_shapes_become_pauses(spark):
    rows = [(f"g{i}", "file:/landing/orders-svc-0/gc.log", "orders-svc-0", "gc.log", dt.datetime(2024, 5, 14, 12),
             i, line, len(line), 0) for i, line in enumerate(LINES, start=1)]
    bronze = spark.createDataFrame(
        rows, "line_id string, source_file string, instance string, file_name string, file_modified_at timestamp, "
              "line_no long, value string, line_length long, batch_id long",
    ).withColumn("ingested_at", F.current_timestamp())
    actual = parse_with(bronze, load_config()).select(COLUMNS)

    start8 = dt.datetime(2020, 6, 4, 12, 25, 21, 976000)

    def jdk8(ms: float) -> dt.datetime:
        return start8 + dt.timedelta(milliseconds=ms)

    def at(second: int, ms: int = 0) -> dt.datetime:
        return dt.datetime(2024, 5, 14, 10, 21, second, ms * 1000)

    p = "gc_pause"
    expected = spark.createDataFrame([
        (1, p, jdk8(6.0932), 6.0932, 0.763, "G1", "Young", "G1 Evacuation Pause", None),
        (2, p, jdk8(58.6708), 58.6708, 1.0, "G1", "Mixed", "G1 Evacuation Pause", None),
        (3, p, jdk8(12.3), 12.3, 1.1, "G1", "Young", "G1 Humongous Allocation", None),
        (4, p, jdk8(12.3456), 12.3456, 1.2, "G1", "Remark", None, None),
        (5, p, jdk8(1.234), 1.234, 1.3, "G1", "Cleanup", None, None),
        (6, p, jdk8(12.3), 12.3, 1.4, "Parallel", "Young", "Allocation Failure", None),
        (7, p, jdk8(500.0), 500.0, 1.5, "Parallel", "Full", "Ergonomics", None),
        (8, p, jdk8(13.0), 13.0, 1.6, "CMS", "Young", "Allocation Failure", None),
        (9, p, jdk8(2.0), 2.0, 1.7, "CMS", "Initial Mark", "CMS Initial Mark", None),
        (10, p, jdk8(3.0), 3.0, 1.8, "CMS", "Remark", "CMS Final Remark", None),
        # Printed when the stop ends: the stamp is the end.
        (11, p, start8, 61.6049, 1.9, "safepoint", "Safepoint", None, None),
        (12, "noise", None, None, None, None, None, None, None),
        (13, p, jdk8(5.8), 5.8, 2.1, "G1", "Young", "G1 Evacuation Pause", None),
        (14, p, at(1, 200), 3.21, None, "G1", "Young", "G1 Humongous Allocation", None),
        (15, p, at(2), 45.0, 12.345, "G1", "Young", "G1 Evacuation Pause", None),
        (16, p, at(3), 800.5, None, "G1", "Full", "G1 Compaction Pause", None),
        (17, p, at(4), 3.456, None, "unknown", "Young", "Allocation Failure", None),
        (18, p, at(5), 0.012, None, "ZGC", "Mark Start", None, None),
        (19, p, at(5, 100), 0.01, None, "ZGC", "Mark Start", None, None),
        (20, p, at(6), 0.123, None, "Shenandoah", "Init Mark", "unload classes", None),
        (21, p, at(6, 500), 45.678, None, "Shenandoah", "Degenerated GC", "Mark", None),
        (22, p, at(7), 12.369134, 0.997, "safepoint", "Safepoint", "G1CollectForAllocation", None),
        (23, p, at(8), 1.2345, None, "safepoint", "Safepoint", None, None),
        (24, "noise", None, None, None, "unknown", None, None, None),
        # Uptime only: no wall-clock time to place the pause.
        (25, "quarantine", None, 123.456, 12.345, "unknown", "Full", "System.gc()", "no_timestamp"),
        (26, "quarantine", None, None, None, "unknown", None, None, "unknown_gc_line"),
    ], actual.schema)
    assertDataFrameEqual(actual, expected, rtol=1e-9)
