"""Which group a client line that names no group goes to (pipelines/gold/placement.py), in one batch and when the
lines that decide it arrive in later files."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from pipelines.flow.run import run
from pipelines.gold.placement import place_in_processes
from pipelines.storage import lake
from tests.conftest import make_config
from tests.test_survival import _each_key_once, _same_as_oracle

EVENTS = ("event_id string, source_file string, instance string, source_kind string, group_id string, "
          "event_type string, event_ts timestamp")
T = dt.datetime(2026, 11, 20, 10, 0, 0)


def test_a_bare_line_goes_to_the_group_its_process_names_or_to_the_process_own_group(spark):
    events = spark.createDataFrame([
        # one group named: the bare line is that group's
        ("a1", "one/app.log", "one", "client", "orders", "member_joined", T),
        ("a2", "one/app.log", "one", "client", None, "client_partitions_assigned", T),
        # a consumer's settings with `group.id = null` (an assign()-only or restore consumer) are not the group's
        ("a3", "one/app.log", "one", "client", None, "client_config", T),
        # two groups named (a Connect worker): no way to tell
        ("b1", "two/app.log", "two", "client", "connect-cluster", "member_joined", T),
        ("b2", "two/app.log", "two", "client", "connect-sink", "member_joined", T),
        ("b3", "two/app.log", "two", "client", None, "client_partitions_assigned", T),
        # none named, no coordinator line near: the process's own group
        ("c1", "none/app.log", "none", "client", None, "client_poll_timeout", T),
        ("c2", "none/app.log", "none", "client", None, "client_partitions_assigned", T),
        # none named, but a coordinator logged near its warning: the build places the warning by time instead
        ("d1", "near/app.log", "near", "client", None, "client_poll_timeout", T + dt.timedelta(hours=2)),
        ("d2", "b1/server.log", "b1", "broker", "search", "member_left", T + dt.timedelta(hours=2, seconds=1)),
        # a broker's line naming no group is never a client's
        ("e1", "b1/server.log", "b1", "broker", None, "coordinator_loaded", T),
        # a process whose only group-less line is such settings has no line to place
        ("f1", "cfg/app.log", "cfg", "client", None, "client_config", T),
    ], EVENTS)
    placed = {r.event_id: r.group_id for r in place_in_processes(events).collect()}
    assert placed == {"a1": "orders", "a2": "orders", "a3": None, "b1": "connect-cluster", "b2": "connect-sink",
                      "b3": None, "c1": "(group of none)", "c2": "(group of none)", "d1": None, "d2": "search",
                      "e1": None, "f1": None}


MAXPOLL = ("%4|1763632800.000|MAXPOLL|rdkafka#consumer-1| [thrd:main]: Application maximum poll interval (300000ms) "
           "exceeded by 226ms (adjust max.poll.interval.ms for long-running message processing): leaving group\n")
JOINED = ("2025-11-20 10:00:40,000 INFO [Consumer clientId=consumer-orders-1, groupId=orders] Successfully joined "
          "group with generation Generation{generationId=7, memberId='consumer-orders-1-5d1c', protocol='range'} "
          "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)\n")


def test_a_process_own_group_gives_its_lines_up_when_a_later_file_names_the_group(spark, workspace):
    """A consumer whose log names no group (librdkafka at its default level) rebalances in its own group; once a
    later file of the same process names the group, its lines are that group's, and the stream's tables equal the
    batch oracle's after each step."""
    cfg = make_config(workspace)
    folder = cfg.landing / "orders-0"
    folder.mkdir(parents=True)
    (folder / "consumer.log").write_text(MAXPOLL, encoding="utf-8")
    run(spark, cfg)
    rebalances = lake.read_table(spark, cfg, "gold_rebalances")
    assert [(r.group_id, r.cause) for r in rebalances.collect()] == [("(group of orders-0)", "poll_timeout")]
    _same_as_oracle(spark, cfg)
    (folder / "consumer-2.log").write_text(JOINED, encoding="utf-8")
    run(spark, cfg)
    groups = {r.group_id for r in lake.read_table(spark, cfg, "gold_rebalances").select("group_id").collect()}
    assert groups == {"orders"}
    assert lake.read_table(spark, cfg, "gold_group_states").filter(F.col("group_id").startswith("(")).count() == 0
    _same_as_oracle(spark, cfg)
    _each_key_once(spark, cfg)
