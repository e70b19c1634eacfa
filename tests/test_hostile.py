"""Hostile input never stops parsing, and every line stays accounted for: invalid UTF-8, binary junk, a 5 MB line,
ANSI colours, CRLF, no final newline, an empty file, gzip, gzip files cut short, stack traces and multi-line records,
and seeded random garbage (a property-style check of the accounting identity). One staged batch serves every test of
the module."""

from __future__ import annotations

import gzip
import random

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.bronze.damaged import check_gzip, spark_file_uri
from pipelines.settings.config import load_config
from pipelines.silver.outputs import accounting, to_quarantine
from pipelines.storage import inputs
from tests.conftest import silver_batch

TS = "[2024-05-14 10:21:07,482]"
BROKER = (f"{TS} INFO [GroupCoordinator 1]: Stabilized group orders generation 7 (__consumer_offsets-3) with 2 "
          "members (kafka.coordinator.group.GroupCoordinator)")
PREFIX = "[Consumer clientId=consumer-orders-1, groupId=orders] "
CLIENT = "10:21:08.100 [main] INFO  o.a.k.c.c.i.ConsumerCoordinator - " + PREFIX
FRAGMENTS = [
    BROKER, CLIENT + "(Re-)joining group", CLIENT + "Revoke previously assigned partitions orders-0",
    "\tat org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.poll(ConsumerCoordinator.java:1)",
    "Caused by: java.lang.IllegalStateException: GroupCoordinator went away", "\t... 12 more",
    "\tAssigned partitions: x",
    "[2024-05-14T10:21:01.135+0000][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 2M->1M(4M) 1.5ms",
    "   [Eden: 1.0K(2.0K)->0.0B(2.0K)]", "Pause Young", "[GC (", "{\"message\":\"" + PREFIX + "(Re-)joining group",
    "kafka1    | ", "\x1b[31m", "\u0001\u0002", "\ufffd\ufffd", "[Consumer clientId=", " group", "oordinator",
    "Member x in group y has failed, removing it from the group", "ERROR", "WARN", "", " ", "\\n", "日本語のログ",
]


CUT_GZIP_LINES = 3_000


def _rotated_line(i: int) -> str:
    return BROKER.replace("10:21:07", f"12:{i // 60 % 60:02d}:{i % 60:02d}")


def _garbage(rng: random.Random) -> str:
    parts = [rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.3:
        junk = "".join(chr(rng.randint(1, 0x2FFF)) for _ in range(rng.randint(1, 40)))
        parts.insert(rng.randint(0, len(parts)), junk)
    if rng.random() < 0.2 and parts:
        parts[0] = parts[0][: rng.randint(0, len(parts[0]))]
    return "".join(parts).replace("\n", " ").replace("\r", " ")


@pytest.fixture(scope="module")
def staged(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    broker, client = root / "broker-1", root / "orders-svc-0"
    broker.mkdir()
    client.mkdir()
    stack = [
        f"{TS} ERROR [GroupMetadataManager brokerId=1] Error loading offsets from __consumer_offsets-5 "
        "(kafka.coordinator.group.GroupMetadataManager)",
        "java.lang.IllegalStateException: boom",
        "\tat kafka.coordinator.group.GroupMetadataManager.loadGroupsAndOffsets(GroupMetadataManager.scala:600)",
        "\t... 12 more",
    ]
    # CRLF endings, colours, a stack trace under an ERROR line, no final newline.
    (broker / "server.log.2024-05-14-10").write_bytes(
        "\r\n".join([BROKER, "\x1b[32m" + BROKER.replace("07,482", "09,000") + "\x1b[0m", *stack, BROKER]).encode()
    )
    with gzip.open(broker / "server.log.2024-05-14-11.gz", "wt") as f:
        f.write("\n".join([BROKER.replace("10:21", "11:21"),
                           "[2024-05-14 11:22:00,000] INFO Rolled segment (kafka.log.Log)"]))
    # Gzip files cut short: one in the middle of its data (a copy that stopped), one inside its header.
    rotated = "\n".join(_rotated_line(i) for i in range(CUT_GZIP_LINES))
    whole = gzip.compress((rotated + "\n").encode())
    (broker / "server.log.2024-05-14-12.gz").write_bytes(whole[: len(whole) // 2])
    (broker / "server.log.2024-05-14-13.gz").write_bytes(whole[:15])
    commit = ("org.apache.kafka.clients.consumer.CommitFailedException: Commit cannot be completed since the group has "
              "already rebalanced and assigned the partitions to another member. This means that the time between "
              "subsequent calls to poll() was longer than the configured max.poll.interval.ms.")
    updating = [
        CLIENT + "Updating assignment with", "\tAssigned partitions:                       orders-0, orders-1",
        "\tCurrent owned partitions:                  orders-0",
        "\tAdded partitions (assigned - owned):       orders-1",
        "\tRevoked partitions (owned - assigned):     ", "",
    ]
    client_lines = [
        *updating,
        "10:21:09.000 [main] WARN  com.example.Listener - could not commit", commit,
        "\tat org.apache.kafka.clients.consumer.KafkaConsumer.commitSync(KafkaConsumer.java:1094)",
        # 5 MB on one line: kept truncated to 64K characters, with its true length.
        CLIENT.replace("08.100", "10.000") + "Attempt to heartbeat " + "x" * 5_000_000,
    ]
    (client / "consumer.log.2024-05-14").write_text("\n".join(client_lines) + "\n", encoding="utf-8")
    (client / "bad-utf8.log").write_bytes(
        b"10:21:11.000 [main] INFO  o.a.k.c.c.i.ConsumerCoordinator - GroupCoordinator \xff\xfe\xc3\x28 rebalance\n"
    )
    (client / "empty.log").write_bytes(b"")
    rng = random.Random(20261122)
    (client / "junk.bin").write_bytes(bytes(rng.randrange(256) for _ in range(20_000)))
    for n in range(4):
        lines = [_garbage(rng) for _ in range(rng.randint(30, 80))]
        (client / f"garbage-{n}.log").write_text("\n".join(lines), encoding="utf-8")
    raw = inputs.read_files(spark, sorted(p for d in (broker, client) for p in d.iterdir()))
    batch = silver_batch(raw, load_config())
    yield batch
    batch.unpersist()


def _name(column: str):
    return F.element_at(F.split(column, "/"), -1)


def test_every_line_is_accounted_for_exactly(staged):
    acct = accounting(staged.parsed, staged.files, batch_id=0, ingested_at=F.current_timestamp())
    parts = F.col("noise_lines") + F.col("event_lines") + F.col("gc_pause_lines") + F.col("quarantined_lines") \
        + F.col("duplicate_lines")
    assert acct.filter((F.col("lines_read") != parts) | (F.col("noise_lines") < 0)).count() == 0
    # A record holds its lines once: no line is in two records and no record holds more lines than its file has.
    records = staged.parsed.groupBy("source_file").agg(
        F.count(F.lit(1)).alias("records"), F.countDistinct("line_no").alias("starts"),
        F.sum("record_lines").alias("held"), F.max(F.col("line_no") + F.col("record_lines") - 1).alias("last"),
    ).join(staged.files.select("source_file", "lines_read"), "source_file")
    bad = records.filter((F.col("records") != F.col("starts")) | (F.col("held") > F.col("lines_read"))
                         | (F.col("last") > F.col("lines_read")))
    assert bad.count() == 0
    assert staged.parsed.filter(~F.col("disposition").isin("event", "gc_pause", "quarantine", "noise")).count() == 0
    assert staged.parsed.filter((F.col("disposition") == "event")
                                & (F.col("event_ts").isNull() | F.col("template_id").isNull())).count() == 0
    # The empty file has no line, so no row; every other file is counted.
    names = {r[0] for r in staged.files.select(_name("source_file")).collect()}
    assert "empty.log" not in names and {"junk.bin", "bad-utf8.log", "server.log.2024-05-14-11.gz"} <= names


def test_hostile_lines_get_a_disposition_and_multi_line_records_are_joined(staged):
    known = ("server.log.2024-05-14-10", "server.log.2024-05-14-11.gz", "consumer.log.2024-05-14", "bad-utf8.log")
    actual = staged.parsed.select(
        _name("source_file").alias("file"), "line_no", "record_lines", "disposition", "event_type", "quarantine_reason",
        "partitions", F.length("value") <= 65_536 + 1_000,
    ).filter(F.col("file").isin(*known))
    expected = actual.sparkSession.createDataFrame([
        ("server.log.2024-05-14-10", 1, 1, "event", "group_stabilized", None, None, True),
        ("server.log.2024-05-14-10", 2, 1, "event", "group_stabilized", None, None, True),
        ("server.log.2024-05-14-10", 3, 4, "event", "coordinator_load_failed", None, None, True),
        ("server.log.2024-05-14-10", 7, 1, "event", "group_stabilized", None, None, True),
        ("server.log.2024-05-14-11.gz", 1, 1, "event", "group_stabilized", None, None, True),
        ("consumer.log.2024-05-14", 1, 5, "event", "client_assignment_updated", None, "orders-0, orders-1", True),
        ("consumer.log.2024-05-14", 7, 3, "event", "client_commit_failed", None, None, True),
        ("consumer.log.2024-05-14", 10, 1, "quarantine", None, "line_too_long", None, True),
        ("bad-utf8.log", 1, 1, "quarantine", None, "invalid_utf8", None, True),
    ], actual.schema)
    assertDataFrameEqual(actual, expected)


def test_a_gzip_cut_short_keeps_its_readable_lines_and_quarantines_the_torn_one(staged):
    files = {r.name: r.lines_read for r in staged.files.select(_name("source_file").alias("name"), "lines_read")
             .filter(F.col("name").endswith(".gz")).collect()}
    torn = staged.parsed.filter(F.col("quarantine_reason") == "truncated_gzip").select(
        _name("source_file").alias("name"), "line_no", "value").collect()
    assert sorted((r.name, r.line_no) for r in torn) == [
        ("server.log.2024-05-14-12.gz", files["server.log.2024-05-14-12.gz"]),
        ("server.log.2024-05-14-13.gz", 1),  # cut inside the header: no readable line, still counted and quarantined
    ]
    readable = files["server.log.2024-05-14-12.gz"] - 1
    assert 0 < readable < CUT_GZIP_LINES
    events = staged.parsed.filter((_name("source_file") == "server.log.2024-05-14-12.gz")
                                  & (F.col("disposition") == "event")).count()
    assert events == readable  # every line before the cut is an event; none after it is invented
    # The quarantined text is the start of the torn line (the next line of the file), without the internal marker.
    raw = to_quarantine(staged.parsed).filter("reason = 'truncated_gzip' AND line_no > 1").first().raw
    assert _rotated_line(readable).startswith(raw)


def test_gzip_check_reads_every_member_and_names_the_damage(tmp_path):
    first, second = gzip.compress(b"a\nb\n"), gzip.compress(b"c\nd")
    whole = tmp_path / "two-members.gz"
    whole.write_bytes(first + second)  # `cat a.gz b.gz`: a valid gzip file
    assert check_gzip(whole) is None
    cut = tmp_path / "cut.gz"
    cut.write_bytes(first + second[:-4])  # the second member lost its trailer
    damage = check_gzip(cut)
    assert (damage.complete_lines, damage.tail) == (3, "d") and "cut short" in damage.problem
    spaced = tmp_path / "a b%c.gz"
    assert spark_file_uri(spaced) == "file:" + str(tmp_path) + "/a%20b%25c.gz"
