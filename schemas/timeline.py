"""The input of the per-group timeline (pipelines/gold/timeline.py): the silver_events columns the replay reads, and
the end and length of a GC pause (silver_gc_pauses `ended_at`, `duration_ms`) for the pauses it reads as events."""

from __future__ import annotations

from pyspark.sql.types import StringType, StructField, StructType

from schemas.tables import SILVER_EVENTS, SILVER_GC_PAUSES

_EVENT_COLUMNS = (
    "event_id", "event_ts", "event_type", "source_kind", "group_id", "member_id", "old_member_id", "generation",
    "reason", "client_reason", "member_count", "broker_id", "instance", "client_id", "group_instance_id",
    "client_host", "members", "source_file", "line_no",
    # What a member was told or saw, for verdicts from client lines alone (an UNKNOWN_MEMBER_ID answer, a
    # NOT_COORDINATOR error, a rejoin whose wording carries its reason).
    "error", "message",
    # A line-order time (a file that printed no time) makes a row's duration unknown.
    "ts_line_order",
    # A member's state transitions (Streams, librdkafka, KIP-848) show its side of a rebalance begin and end.
    "previous_state",
    # The protocol a group was converted to (4.x): a conversion to `consumer` is a consumer-protocol member's join.
    "group_protocol",
    # The partitions a member's line says it gave up or received (gold_partition_churn).
    "partitions",
)
# KIP-848 and KIP-1071 groups' epochs and a member's state; `epoch` is the topology epoch a streams group member
# brought (4.1+), named in the verdict of the rebalance it caused.
_EPOCH_COLUMNS = ("group_epoch", "target_epoch", "state", "topics", "epoch")

TIMELINE_INPUT = StructType([
    *[SILVER_EVENTS[name] for name in _EVENT_COLUMNS],
    StructField("pause_end_ts", SILVER_GC_PAUSES["ended_at"].dataType, True),
    StructField("pause_ms", SILVER_GC_PAUSES["duration_ms"].dataType, True),
    *[SILVER_EVENTS[name] for name in _EPOCH_COLUMNS],
    # The wording a line matched tells the group's type and each process's client (gold/kinds.py); null on the
    # GC pauses joined in.
    StructField("template_id", SILVER_EVENTS["template_id"].dataType, True),
    # A member's logged ConsumerConfig (silver_events.settings of a client_config event) as JSON: its own heartbeat
    # interval, session and poll timeouts replace fixed tolerances.
    StructField("settings_json", StringType(), True),
])
