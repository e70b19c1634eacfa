"""Kafka records to the ingest's raw lines: each shipper's envelope mapped to line, instance and file; offsets lost
before they were read found; a wrong source setting stopped with one line (no broker needed)."""

from __future__ import annotations

import datetime as dt
import json
import socket

import pytest
from pyspark.sql import Row

from jobs.cli import main
from pipelines.bronze.envelopes import kafka_raw_lines, lost_offsets, with_envelope_fields
from pipelines.session.kafka_check import check_brokers
from pipelines.settings.config import ConfigError, load_config

T0 = dt.datetime(2026, 11, 20, 8, 0)
LINE = "[2026-11-20 08:00:01,000] INFO [GroupCoordinator 1]: Stabilized group g generation 3 with 2 members"


def _records(spark, values, *, key=None, topic="logs", partition=0):
    rows = [Row(key=key, value=v, topic=topic, partition=partition, offset=i, timestamp=T0)
            for i, v in enumerate(values)]
    return spark.createDataFrame(rows, "key string, value string, topic string, partition int, offset long, "
                                       "timestamp timestamp")


ENVELOPED = [
    ({"@metadata": {"beat": "filebeat"}, "agent": {"type": "filebeat"}, "message": LINE,
      "host": {"name": "node-7"}, "kubernetes": {"pod": {"name": "orders-0"}}, "log": {"file": {"path": "/l/c.log"}}},
     "filebeat", "orders-0", "c.log"),
    ({"agent": {"type": "filebeat"}, "message": LINE, "host": {"name": "vm-3"}, "container": {"name": "orders"},
      "log": {"file": {"path": "/var/log/gc.log.1"}}}, "filebeat", "orders", "gc.log.1"),
    ({"message": LINE, "host": "vm-4", "file": "/var/log/app/consumer.log", "source_type": "file"},
     "vector", "vm-4", "consumer.log"),
    ({"message": LINE, "source_type": "kubernetes_logs", "file": "/var/log/pods/a_b_c/app/0.log",
      "kubernetes": {"pod_name": "orders-1", "container_name": "app"}}, "vector", "orders-1", "0.log"),
    ({"log": LINE, "filepath": "/var/log/containers/x.log", "kubernetes": {"pod_name": "orders-2"}},
     "fluentbit", "orders-2", "x.log"),
    ({"@version": "1", "message": LINE, "host": "vm-5", "path": "/var/log/kafka/server.log"},
     "logstash", "vm-5", "server.log"),
    ({"@version": "1", "message": LINE, "host": {"name": "vm-6"}, "log": {"file": {"path": "/k/server.log.2"}}},
     "logstash", "vm-6", "server.log.2"),
]


def test_each_shippers_envelope_gives_line_instance_and_file(spark):
    records = _records(spark, [json.dumps(e) for e, *_ in ENVELOPED], key="ignored/other.log")
    got = with_envelope_fields(records).select("line", "shipper", "instance", "file_name", "envelope_problem")
    assert [tuple(r) for r in got.orderBy("offset").collect()] == [
        (LINE, shipper, instance, file, None) for _, shipper, instance, file in ENVELOPED]


def test_plain_lines_take_instance_and_file_from_the_key(spark):
    got = [with_envelope_fields(_records(spark, [LINE], key=k)).select("instance", "file_name").first()
           for k in ("broker-1/server.log", "broker-2", None)]
    assert [tuple(r) for r in got] == [("broker-1", "server.log"), ("broker-2", "logs"), ("logs-0", "logs")]


def test_a_json_log_line_of_no_shipper_stays_a_line_and_a_wrong_envelope_is_quarantined(spark):
    ecs_line = json.dumps({"@timestamp": "2026-11-20T08:00:01Z", "log.level": "INFO", "message": "hello"})
    no_message = json.dumps({"@version": "1", "host": "vm-5"})
    auto = with_envelope_fields(_records(spark, [ecs_line, no_message])).orderBy("offset").collect()
    assert [(r.line, r.envelope_problem) for r in auto] == [(ecs_line, None), (no_message, "unknown_envelope")]
    vector = json.dumps({"message": LINE, "host": "vm-4", "source_type": "file"})
    strict = with_envelope_fields(_records(spark, [vector, LINE]), envelope="filebeat").orderBy("offset").collect()
    assert [r.envelope_problem for r in strict] == ["unknown_envelope", "unknown_envelope"]


def test_lost_offsets_within_a_batch_and_since_the_last_one(spark):
    offsets = [("t", 0, o) for o in (7, 8, 12, 13)] + [("t", 1, o) for o in (0, 1)]
    records = spark.createDataFrame(offsets, "topic string, partition int, offset long")
    before = spark.createDataFrame([("t", 0, 3), ("t", 1, 0)], "topic string, partition int, last_offset long")
    gaps = lost_offsets(records, read_before=before).orderBy("partition", "first_lost").collect()
    assert [tuple(r) for r in gaps] == [("t", 0, 4, 6), ("t", 0, 9, 11)]


def test_raw_lines_number_each_file_of_the_batch_in_offset_order(spark):
    values = ["a1", "b1", "a2", "a3"]
    keys = ["i/a.log", "i/b.log", "i/a.log", "i/a.log"]
    rows = [Row(key=k, value=v, topic="t", partition=0, offset=10 + i, timestamp=T0)
            for i, (k, v) in enumerate(zip(keys, values, strict=True))]
    records = spark.createDataFrame(rows)
    before = spark.createDataFrame([], "topic string, partition int, last_offset long")
    raw = kafka_raw_lines(records, read_before=before).orderBy("kafka_offset").collect()
    assert [(r.value, r._metadata.file_path, r.scan_id) for r in raw] == [
        ("a1", "kafka:/t/0/i/a.log@10", 1), ("b1", "kafka:/t/0/i/b.log@11", 1), ("a2", "kafka:/t/0/i/a.log@10", 2),
        ("a3", "kafka:/t/0/i/a.log@10", 3)]


def test_a_kafka_source_without_topic_or_reachable_brokers_is_refused(tmp_path, capsys):
    with pytest.raises(ConfigError, match="no topic is set; pass --topic"):
        load_config(None, {"source": "kafka", "kafka": {"bootstrap_servers": "127.0.0.1:9092"}})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        cfg = load_config(None, {"source": "kafka", "kafka": {"bootstrap_servers": f"127.0.0.1:{port}",
                                                              "topics": "a,b"}})
        assert cfg.kafka.topics == ("a", "b")
        with pytest.raises(ConfigError, match="no Kafka bootstrap server could be reached"):
            check_brokers(cfg)
        code = main(["run", "--source", "kafka", "--bootstrap-servers", f"127.0.0.1:{port}", "--topic", "logs",
                     "--lakehouse", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "no Kafka bootstrap server could be reached" in err
