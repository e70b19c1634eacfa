"""Kafka topics as the source, against a real KRaft broker on 127.0.0.1: a simulated estate shipped as plain lines and
in the JSON envelopes of Filebeat, Vector, Fluent Bit and Logstash gives the gold tables the landing files give; a
restart reads only what is new; offsets deleted before they were read are one counted, quarantined record."""

from __future__ import annotations

import datetime as dt
import json
import random
import time
from pathlib import Path

import pytest
import yaml
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.flow.run import run
from pipelines.storage import lake
from tests.conftest import make_config, run_cli_killed_after
from tests.kafka_broker import Broker
from tests.test_engines import TYPICAL, assert_engines_agree, every_table

pytestmark = pytest.mark.kafka_source

ENVELOPES = ("plain", "filebeat", "vector", "fluentbit", "logstash")
RUN_TS = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
# The gold tables a run derives from the lines; line ids come from what a line says and where it was written, not
# from how it was read, so every column (ids and evidence included) must equal the files run's.
GOLD_OUTPUTS = ("gold_rebalances", "gold_group_states", "gold_member_sessions", "gold_incidents",
                "gold_config_advice", "gold_group_health", "gold_rebalance_stats_hourly", "gold_partition_churn",
                "gold_whatif", "gold_estate_incidents")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    server = Broker(tmp_path_factory.mktemp("kafka-broker"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def estate(tmp_path_factory):
    from simulator import simulate

    return simulate(tmp_path_factory.mktemp("kafka-estate"), seed=5, groups=1, hours=0.5, kafka_version="3.6")


@pytest.fixture(scope="module")
def files_run(spark, estate, tmp_path_factory):
    """The landing-files run of the estate: the oracle of the Kafka runs."""
    cfg = make_config(tmp_path_factory.mktemp("kafka-oracle"), landing=estate.landing_dir)
    run(spark, cfg, run_ts=RUN_TS)
    return cfg


def _create_topics(bootstrap: str, *names: str, partitions: int = 2) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result(timeout=30)


def envelope(kind: str, line: str, *, instance: str, file: str, n: int) -> str:
    """`line` as the shipper `kind` would write it to Kafka (the fields each one's documentation names)."""
    path = f"/var/log/kafka-apps/{instance}/{file}"
    ts = "2026-11-20T08:00:00.000Z"
    if kind == "filebeat":
        return json.dumps({"@timestamp": ts, "@metadata": {"beat": "filebeat", "type": "_doc", "version": "8.15.0"},
                           "message": line, "log": {"offset": n, "file": {"path": path}}, "host": {"name": instance},
                           "agent": {"type": "filebeat"}, "input": {"type": "filestream"}, "ecs": {"version": "8.0.0"}})
    if kind == "vector":
        return json.dumps({"message": line, "host": instance, "file": path, "source_type": "file", "timestamp": ts})
    if kind == "fluentbit":
        return json.dumps({"@timestamp": ts, "log": line, "filepath": path,
                           "kubernetes": {"pod_name": instance, "namespace_name": "apps", "container_name": "app"}})
    if kind == "logstash":  # ECS compatibility on (host.name, log.file.path) and off (host, path), by turns
        if n % 2:
            return json.dumps({"@version": "1", "@timestamp": ts, "message": line, "host": {"name": instance},
                               "log": {"file": {"path": path}}, "event": {"original": line}})
        return json.dumps({"@version": "1", "@timestamp": ts, "message": line, "host": instance, "path": path})
    return line


def _lines(file: Path) -> list[str]:
    text = file.read_text(encoding="utf-8")
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def produce_estate(bootstrap: str, landing: Path, *, prefix: str, only: set[str] | None = None) -> int:
    """Every file of the landing directory, instance by instance, each instance through one envelope (in turn),
    to the topic `<prefix>-<envelope>`, keyed `<instance>/<file>` so that one file keeps its order; the records."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    sent = 0
    for i, folder in enumerate(sorted(p for p in landing.iterdir() if p.is_dir())):
        kind = ENVELOPES[i % len(ENVELOPES)]
        for file in sorted(folder.iterdir()):
            if only is not None and f"{folder.name}/{file.name}" not in only:
                continue
            for n, line in enumerate(_lines(file)):
                value = envelope(kind, line, instance=folder.name, file=file.name, n=n)
                producer.produce(f"{prefix}-{kind}", key=f"{folder.name}/{file.name}", value=value.encode())
                producer.poll(0)
                sent += 1
    assert producer.flush(60) == 0
    return sent


def kafka_config(root: Path, bootstrap: str, topics: list[str]):
    return make_config(root, source="kafka", kafka={"bootstrap_servers": bootstrap, "topics": topics})


def assert_same_gold(spark, expected_cfg, actual_cfg) -> None:
    for name in GOLD_OUTPUTS:
        assertDataFrameEqual(lake.read_table(spark, actual_cfg, name), lake.read_table(spark, expected_cfg, name))


def assert_accounting_adds_up(spark, cfg) -> None:
    acct = lake.read_table(spark, cfg, "silver_accounting")
    assert acct.filter(
        F.col("lines_read") != F.col("noise_lines") + F.col("event_lines") + F.col("gc_pause_lines")
        + F.col("quarantined_lines") + F.col("duplicate_lines")
    ).count() == 0


def test_every_envelope_gives_the_gold_tables_of_the_files(spark, broker, estate, files_run, tmp_path, capsys):
    topics = [f"estate-{k}" for k in ENVELOPES]
    _create_topics(broker.bootstrap, *topics)
    sent = produce_estate(broker.bootstrap, estate.landing_dir, prefix="estate")
    assert sent == estate.lines

    files_cfg = files_run
    kafka_cfg = kafka_config(tmp_path / "kafka", broker.bootstrap, topics)
    run(spark, kafka_cfg, run_ts=RUN_TS)

    assert lake.read_table(spark, kafka_cfg, "gold_rebalances").count() > 20
    assert_same_gold(spark, files_cfg, kafka_cfg)
    # The same events from the same instances (a member's GC log joins it as with files), every line accounted for
    # per topic partition, and each bronze line knows its topic, partition and offset.
    events = ["event_type", "event_ts", "group_id", "member_id", "generation", "instance", "template_id"]
    assertDataFrameEqual(lake.read_table(spark, kafka_cfg, "silver_events").select(events),
                         lake.read_table(spark, files_cfg, "silver_events").select(events))
    pauses = ["instance", "started_at", "duration_ms"]
    assertDataFrameEqual(lake.read_table(spark, kafka_cfg, "silver_gc_pauses").select(pauses),
                         lake.read_table(spark, files_cfg, "silver_gc_pauses").select(pauses))
    assert_accounting_adds_up(spark, kafka_cfg)
    files = lake.read_table(spark, kafka_cfg, "bronze_files")
    per_partition = {(r.kafka_topic, r.kafka_partition): r.n for r in files.groupBy("kafka_topic", "kafka_partition")
                     .agg(F.sum("lines_read").alias("n")).collect()}
    assert sum(per_partition.values()) == sent
    assert {t for t, _ in per_partition} == set(topics)
    assert lake.read_table(spark, kafka_cfg, "bronze_log_lines").filter(
        F.col("kafka_topic").isNull() | F.col("kafka_partition").isNull() | F.col("kafka_offset").isNull()).count() == 0
    # A lakehouse written through the Kafka source reads alike through `rebalance sql`'s two engines.
    assert_engines_agree(capsys, kafka_cfg.lakehouse, TYPICAL + every_table(kafka_cfg.lakehouse))


def test_a_restart_reads_only_what_is_new(spark, broker, estate, files_run, tmp_path):
    topics = [f"restart-{k}" for k in ENVELOPES]
    _create_topics(broker.bootstrap, *topics)
    every = sorted(f"{p.parent.name}/{p.name}" for p in estate.landing_dir.glob("*/*"))
    first = set(every[::2])
    cfg = kafka_config(tmp_path / "kafka", broker.bootstrap, topics)
    sent = produce_estate(broker.bootstrap, estate.landing_dir, prefix="restart", only=first)
    run(spark, cfg, run_ts=RUN_TS)
    sent += produce_estate(broker.bootstrap, estate.landing_dir, prefix="restart", only=set(every) - first)
    second = run(spark, cfg, run_ts=RUN_TS)
    assert second.batches["ingest"] == 1
    assert run(spark, cfg, run_ts=RUN_TS).batches == {}

    files_cfg = files_run
    files = lake.read_table(spark, cfg, "bronze_files")
    assert files.agg(F.sum("lines_read")).first()[0] == sent == estate.lines
    ids = lake.read_table(spark, cfg, "silver_events").select("event_id")
    assert ids.count() == ids.distinct().count() == lake.read_table(spark, files_cfg, "silver_events").count()
    assert_same_gold(spark, files_cfg, cfg)


def test_offsets_lost_to_retention_are_one_counted_record(spark, broker, tmp_path):
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    _create_topics(broker.bootstrap, "gappy", partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    line = ("[2026-11-20 08:00:{:02d},000] INFO [GroupCoordinator 1]: Stabilized group g generation {} "
            "(__consumer_offsets-1) with 1 members (kafka.coordinator.group.GroupCoordinator)")

    def send(first: int, count: int) -> None:
        for i in range(first, first + count):
            producer.produce("gappy", key="broker-1/server.log", value=line.format(i, i).encode())
        assert producer.flush(30) == 0

    cfg = kafka_config(tmp_path, broker.bootstrap, ["gappy"])
    send(0, 10)
    run(spark, cfg, run_ts=RUN_TS)
    send(10, 10)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.delete_records([TopicPartition("gappy", 0, 15)]).values():
        future.result(timeout=30)
    run(spark, cfg, run_ts=RUN_TS)

    lost = lake.read_table(spark, cfg, "silver_quarantine").filter(F.col("reason") == "kafka_offsets_lost")
    assert [r.raw for r in lost.collect()] == [
        "kafka topic gappy partition 0: offsets 10..14 (5 records) were deleted before they were read (retention); "
        "they are lost"]
    assert lake.read_table(spark, cfg, "silver_events").count() == 15
    assert_accounting_adds_up(spark, cfg)
    assert lake.read_table(spark, cfg, "bronze_files").agg(F.sum("lines_read")).first()[0] == 16


# The slow tier: about nine minutes of fresh driver processes on two cores. The default tier keeps the file source's
# kill loop (tests/test_survival.py) and this source's restart above, which resumes from the same offsets.
@pytest.mark.slow
def test_driver_killed_while_reading_a_topic_loses_and_doubles_nothing(spark, broker, estate, files_run, tmp_path):
    """`kill -9` of `rebalance run --source kafka` (the Python driver and its JVM) at random moments while records
    keep arriving, then a clean run: every record is read once and the tables are the landing-files run's."""
    topics = [f"killed-{k}" for k in ENVELOPES]
    _create_topics(broker.bootstrap, *topics)
    cfg = kafka_config(tmp_path / "kafka", broker.bootstrap, topics)
    conf = tmp_path / "kill.yml"
    conf.write_text(yaml.safe_dump({
        "landing": str(cfg.landing), "lakehouse": str(cfg.lakehouse), "source": "kafka",
        # Small micro-batches, so that a kill falls between the commits of one run as well as inside one.
        "kafka": {"bootstrap_servers": broker.bootstrap, "topics": topics, "max_offsets_per_trigger": 3000},
        "spark": {"master": "local[2]", "shuffle_partitions": 2, "driver_memory": "1g"},
    }), encoding="utf-8")
    every = sorted(f"{p.parent.name}/{p.name}" for p in estate.landing_dir.glob("*/*"))
    pending = [set(every[i::3]) for i in range(3)]
    rng = random.Random(20261126)
    sent, killed, completed, cycle = 0, 0, 0, 0
    span = 0.0  # how long a whole run over one part of the records takes on this machine
    commits_dir, killed_after_commit = cfg.checkpoint_root / "ingest" / "commits", 0
    while (killed < 3 or pending) and cycle < 8:
        cycle += 1
        if pending:  # records keep arriving between (and during) the runs
            sent += produce_estate(broker.bootstrap, estate.landing_dir, prefix="killed", only=pending.pop())
        if not span:
            # The first run ends on its own: the kills then fall inside a run's own span (from its first commits
            # to its last), whatever this machine's speed, rather than after a run that already ended.
            started = time.monotonic()
            assert not run_cli_killed_after(conf, 900), "a run over a third of the records took over 15 minutes"
            span, completed = time.monotonic() - started, completed + 1
            continue
        before = len(list(commits_dir.glob("[0-9]*")))
        if run_cli_killed_after(conf, rng.uniform(0.3, 0.9) * span):
            killed += 1
            # A kill that came after the killed run's own commits, not only during its start-up.
            killed_after_commit += len(list(commits_dir.glob("[0-9]*"))) > before
        else:
            completed += 1
    # Some kills fell after work was committed, not only during start-up: the clean run continues from there.
    committed = [p.name for p in commits_dir.glob("[0-9]*")]
    run(spark, cfg, run_ts=RUN_TS)
    print(f"kill -9 on the Kafka source: {killed} kills, {completed} runs completed, {cycle} cycles, "
          f"{killed_after_commit} kills after the killed run's own commits, {len(committed)} micro-batches committed "
          "before the clean run")
    assert killed >= 3 and killed_after_commit and sent == estate.lines
    assert lake.read_table(spark, cfg, "bronze_files").agg(F.sum("lines_read")).first()[0] == sent
    offsets = lake.read_table(spark, cfg, "bronze_log_lines").groupBy("kafka_topic", "kafka_partition", "kafka_offset")
    assert offsets.count().filter("count > 1").count() == 0
    ids = lake.read_table(spark, cfg, "silver_events").select("event_id")
    assert ids.count() == ids.distinct().count() == lake.read_table(spark, files_run, "silver_events").count()
    assert_accounting_adds_up(spark, cfg)
    assert_same_gold(spark, files_run, cfg)
