"""Which group a client line that names no group belongs to, decided once for every reader of silver_events.

An instance folder is one process (the landing layout of the design). Many client lines name no group: Java
clients before 1.1 printed no `groupId=` prefix, Spring Kafka 1.x prints `partitions assigned: [...]` bare, Kafka
Streams' stream-thread lines name the thread, librdkafka at its default level prints MAXPOLL and SESSTMOUT without
the group, KafkaJS and Sarama lines often carry none. So:
- when the other client lines of the process name one and the same group, the bare lines are that group's;
- when they name none, and no coordinator logged near any of them (the window of `route_orphans`), the bare lines
  form the process's own group, `(group of <instance>)`: it stands in for the coordinator's view a team without
  broker logs lacks (a managed Kafka gives none), so its process's rebalances and their causes still show;
- a process whose lines name several groups (a Connect worker, an application with two consumers), or none while a
  coordinator logged near them, leaves them group-less; the build places its warnings by time (`route_orphans`),
  and a second, invented view of a rebalance the coordinator's log already shows is not made.

A consumer's configuration record with `group.id = null` (an assign()-only consumer, Kafka Streams' restore
consumer) is never placed: its settings are not the group's members' settings.

Every build reads silver_events through `gold_events`, so the batch build, a reconstruct batch, the derived refresh
and `rebalance explain` place the same lines in the same groups. The decision needs all of the process's lines, so
it is made over the whole silver_events table before any group is selected; a caller that places twice computes
`process_groups` once (a row per instance folder) and hands it to both.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.gold.rebalances import orphan_lines, route_orphans

_ONLY = "_process_group"
OWN_GROUP_PREFIX = "(group of "


def client_line() -> Column:
    """A client line with an instance folder."""
    return (F.col("source_kind") == "client") & F.col("instance").isNotNull()


def _placeable() -> Column:
    """A client line the placement may give a group: it names none and is not a group-less consumer's settings."""
    return client_line() & F.col("group_id").isNull() & (F.col("event_type") != "client_config")


def is_own_group(group_id: str) -> bool:
    """Whether `group_id` is a process's own group (`own_group`), not a group a line names."""
    return group_id.startswith(OWN_GROUP_PREFIX)


def own_group(instance: Column | str) -> Column:
    """The group a process's bare client lines form when none of its lines names one."""
    return F.concat(F.lit(OWN_GROUP_PREFIX), F.col(instance) if isinstance(instance, str) else instance, F.lit(")"))


def bare_lines(events: DataFrame) -> DataFrame:
    """The client lines of `events` that name no group, with an instance folder and a time."""
    return events.filter(_placeable() & F.col("event_ts").isNotNull())


def process_groups(events: DataFrame) -> DataFrame:
    """(instance, group_id) of every instance folder with client lines: the one group they name, the process's own
    group when they name none and no coordinator logged near its bare lines, null otherwise."""
    client = events.filter(client_line())
    named = client.groupBy("instance").agg(F.countDistinct("group_id").alias("_groups"),
                                           F.min("group_id").alias("_only"))
    near = route_orphans(bare_lines(events), events).select("instance").distinct().withColumn("_near", F.lit(True))
    groups = named.join(near, "instance", "left")
    group = (F.when(F.col("_groups") == 1, F.col("_only"))
             .when((F.col("_groups") == 0) & F.col("_near").isNull(), own_group("instance")))
    return groups.select("instance", group.alias("group_id"))


def place_in_processes(events: DataFrame, processes: DataFrame | None = None) -> DataFrame:
    """`events` with each group-less client line given its process's group (`processes`: `process_groups` of
    `events`, computed here when not given)."""
    only = (process_groups(events) if processes is None else processes).withColumnRenamed("group_id", _ONLY)
    placed = events.join(F.broadcast(only), "instance", "left")
    group = F.when(_placeable(), F.col(_ONLY)).otherwise(F.col("group_id"))
    return placed.withColumn("group_id", group).select(events.columns)


def gold_events(silver: DataFrame, groups: list[str] | None = None, processes: DataFrame | None = None) -> DataFrame:
    """The events a build of `groups` (None: every group) reads from silver_events: each group's own lines, the
    group-less client lines its processes place in it (`process_groups`), and the group-less client warnings of
    other processes (`orphan_lines`, which the build places by time); `processes` as for `place_in_processes`."""
    placed = place_in_processes(silver, processes)
    if groups is None:
        return placed
    return placed.filter(F.col("group_id").isin(groups)).unionByName(orphan_lines(placed))
