"""Simulator logs parse with full coverage in every simulated Kafka version and client layout, the members'
`ConsumerConfig values:` records become client_config events with the settings the simulator used, and
gold_config_advice reports them."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from pyspark.sql import functions as F

from pipelines.gold.incidents import advice_from
from pipelines.settings.config import load_config
from pipelines.silver.outputs import accounting, to_events
from pipelines.storage import inputs
from schemas.tables import SILVER_EVENTS
from simulator import SimulationSummary, simulate
from simulator.model import HEARTBEAT_MS, REBALANCE_TIMEOUT_MS
from simulator.render import Wording
from tests.conftest import silver_batch

VERSIONS = ("2.4", "3.6", "4.1")  # the oldest and newest classic wordings (2.8's record differs only in defaults), 4.x
# 4.1 runs classic and KIP-848 consumer groups side by side: orders-processor classic (log4j), payments-ledger
# (logback) and shipping-events (log4j) consumer groups
GROUPS = {"2.4": 2, "3.6": 2, "4.1": 3}
CONSUMER_GROUPS = {"payments-ledger", "shipping-events"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SimulationSummary]:
    # the first group logs in Kafka's log4j layout, the second in logback's (session 10 s and 45 s)
    return {v: simulate(tmp_path_factory.mktemp(f"sim-{v}"), kafka_version=v, seed=7 + i, groups=GROUPS[v], hours=1.0,
                        group_protocol="mixed" if v == "4.1" else "classic")
            for i, v in enumerate(VERSIONS)}


@pytest.fixture(scope="module")
def staged(spark, runs):
    files = sorted(p for s in runs.values() for p in s.landing_dir.rglob("*") if p.is_file())
    batch = silver_batch(inputs.read_files(spark, files), load_config())
    yield batch
    batch.unpersist()


def _version(source_file):
    return F.regexp_extract(source_file, r"/sim-(\d\.\d)\d*/", 1)


def test_simulated_logs_parse_with_full_coverage(staged, runs):
    acct = accounting(staged.parsed, staged.files, batch_id=0, ingested_at=F.current_timestamp()).collect()
    quarantined = staged.parsed.filter(F.col("disposition") == "quarantine").select("source_file", "value").limit(5)
    assert [r.asDict() for r in quarantined.collect()] == []
    assert sum(r["lines_read"] for r in acct) == sum(s.lines for s in runs.values())
    assert all(r["lines_read"] == r["noise_lines"] + r["event_lines"] + r["gc_pause_lines"] + r["quarantined_lines"]
               + r["duplicate_lines"] for r in acct)
    assert {r["coverage"] for r in acct if r["coverage"] is not None} == {1.0}
    client_logs = [r for r in acct if "/consumer.log." in r["source_file"]]
    assert client_logs and all(r["event_lines"] > 0 for r in client_logs if r["lines_read"] > 300)


def test_client_config_events_carry_what_the_simulator_used(staged, runs):
    events = to_events(staged.parsed).withColumn("version", _version("source_file"))
    configs = events.filter(F.col("event_type") == "client_config").collect()
    # one record per JVM start (a classic client logs `Kafka version:` after it; a 4.1 KIP-848 client does not)
    starts = {v: sum(p.read_text().count("ConsumerConfig values: \n") for p in s.landing_dir.glob("*/consumer.log.*"))
              for v, s in runs.items()}
    assert {v: sum(1 for r in configs if r["version"] == v) for v in VERSIONS} == starts
    assert all(starts.values())
    # the client id of the LogContext prefix ([Consumer clientId=..., groupId=...]) in the same file
    prefixed = {
        (r["source_file"], r["group_id"], r["client_id"]) for r in events.filter(
            (F.col("source_kind") == "client") & (F.col("event_type") != "client_config")
        ).select("source_file", "group_id", "client_id").distinct().collect()
    }
    for run in runs.values():
        assert run.groups[:2] == ["orders-processor", "payments-ledger"]
    # a KIP-848 client leaves session.timeout.ms unset (the broker holds the session): its record shows the default
    session = {"orders-processor": "10000", "payments-ledger": "45000", "shipping-events": "45000"}
    strategy = {
        "2.4": "[class org.apache.kafka.clients.consumer.RangeAssignor]",
        "3.6": "[class org.apache.kafka.clients.consumer.RangeAssignor, "
               "class org.apache.kafka.clients.consumer.CooperativeStickyAssignor]",
    }
    strategy["4.1"] = strategy["3.6"]
    for r in configs:
        # a record with group.protocol (3.7+) is the template that reads it
        template = "c_config_protocol" if r["version"] == "4.1" else "c_config_static"
        assert r["template_id"] == template, r["template_id"]
        assert (r["source_file"], r["group_id"], r["client_id"]) in prefixed
        assert re.fullmatch(rf"consumer-{r['group_id']}-\d", r["client_id"])
        protocol = None if r["version"] != "4.1" else "consumer" if r["group_id"] in CONSUMER_GROUPS else "classic"
        assert r["group_instance_id"] is None and r["group_protocol"] == protocol, r["group_protocol"]
        assert r["logger"] in (None, "o.a.k.c.consumer.ConsumerConfig", "o.a.k.common.config.AbstractConfig")
        # the c_config_protocol template also keeps group.protocol and group.remote.assignor
        kip848 = {"group.protocol": protocol, "group.remote.assignor": "null"} if protocol else {}
        assert r["settings"] == {
            "session.timeout.ms": session[r["group_id"]], "heartbeat.interval.ms": str(HEARTBEAT_MS),
            "max.poll.interval.ms": str(REBALANCE_TIMEOUT_MS), "partition.assignment.strategy": strategy[r["version"]],
            "max.poll.records": "500", "enable.auto.commit": "false", "auto.commit.interval.ms": "5000",
            "auto.offset.reset": "earliest", "default.api.timeout.ms": "60000", "fetch.max.wait.ms": "500",
            "internal.leave.group.on.close": "true", "metadata.max.age.ms": "300000", "request.timeout.ms": "30000",
            **kip848,
        }
    # the head line and one line per setting (log4j's `(%c)` after the last one is a line of its own, noise)
    printed = {v: Wording(v).consumer_config(group_id="g", client_id="c", instance_id=None, session_ms=1,
                                             heartbeat_ms=1, max_poll_ms=1, brokers=3)[3].count("\n")
               for v in VERSIONS}
    assert all(r["record_lines"] == printed[r["version"]] for r in configs)


def _events(spark, rows):
    names = ["event_id", "event_ts", "event_type", "group_id", "instance", "client_id", "group_instance_id",
             "source_file", "line_no", "settings"]
    schema = ", ".join(f"{n} {SILVER_EVENTS[n].dataType.simpleString()}" for n in names)
    return spark.createDataFrame(rows, schema)


def test_config_advice_reports_what_the_members_configured(spark):
    t0 = dt.datetime(2026, 11, 20, 8)
    old = {"session.timeout.ms": "10000", "heartbeat.interval.ms": "3000"}
    new = {"session.timeout.ms": "45000", "heartbeat.interval.ms": "3000", "max.poll.interval.ms": "300000",
           "max.poll.records": "500"}
    events = _events(spark, [
        # a-0 restarted with a longer session: its latest record counts
        ("e1", t0, "client_config", "g", "a-0", "c-1", None, "f0", 1, old),
        ("e2", t0 + dt.timedelta(hours=1), "client_config", "g", "a-0", "c-1", None, "f1", 1, new),
        ("e3", t0, "client_config", "g", "a-1", "c-2", None, "f2", 1, new),
        ("e4", t0, "client_config", "g", "a-2", "c-3", "a-2", "f3", 1, old),
        ("e5", t0, "client_joining", "g", "a-2", "c-3", None, "f3", 2, None),
        ("e6", t0, "client_config", "h", "b-0", "c-9", None, "f4", 1, new),
    ])
    rebalances = spark.createDataFrame(
        [("r1", "g", t0, "gc_pause", "heartbeat_expiration", 3),
         ("r2", "g", t0, "poll_timeout", "leave_on_poll_timeout", 3),
         ("r3", "k", t0, "gc_pause", "heartbeat_expiration", 2)],
        "rebalance_id string, group_id string, started_at timestamp, cause string, cause_detail string, "
        "members_after int",
    )
    pauses = spark.createDataFrame([], "instance string, duration_ms double")
    sessions = spark.createDataFrame([], "group_id string, instance string")
    rows = advice_from(rebalances, pauses, sessions, events).select("group_id", "rule", "configured").collect()
    assert sorted((r["group_id"], r["rule"], r["configured"]) for r in rows) == [
        ("g", "gc_pause_vs_session_timeout",
         "session.timeout.ms=45000, heartbeat.interval.ms=3000 (2 of 3 members); "
         "session.timeout.ms=10000, heartbeat.interval.ms=3000 (1 of 3 members)"),
        ("g", "poll_timeout_vs_max_poll_interval",
         "max.poll.interval.ms=300000, max.poll.records=500 (2 of 3 members); not printed (1 of 3 members)"),
        # no member of k logged its configuration
        ("k", "gc_pause_vs_session_timeout", None),
    ]
    without = advice_from(rebalances, pauses, sessions).select("configured").collect()
    assert {r["configured"] for r in without} == {None}
