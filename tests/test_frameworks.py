"""Frameworks' own rebalance lines (pipelines/silver/wordings/client_callbacks.yml): Karafka, KafkaFlow, Streamiz and
Spring for Apache Kafka's container, each in its exact wording (read in the framework's source) and in the envelope
its default logger prints, through the real bronze-to-silver parse, with the fields each row must extract."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.bronze.prefilter import PREFILTER_LITERALS
from pipelines.silver.templates import load_rows
from tests.conftest import parse_file_lines

RUBY = "I, [2025-02-01T10:00:00.123456 #4242]  INFO -- : "
RUBY_ERROR = "E, [2025-02-01T10:05:00.000000 #4242] ERROR -- : "
BOOT = "2021-01-01 10:00:00.123  INFO 1 --- [ntainer#0-0-C-1] o.s.k.l.KafkaMessageListenerContainer    : "
BOOT_ERROR = "2021-01-01 10:00:00.123 ERROR 1 --- [ntainer#0-0-C-1] o.s.k.l.KafkaMessageListenerContainer    : "
FLOW = '{"GroupId":"orders","ConsumerName":"orders-consumer","Topics":[{"Topic":"t","PartitionsCount":2,' \
       '"Partitions":[0,1]}]}'
MAXPOLL = "Local: Maximum application poll interval (max.poll.interval.ms) exceeded"

# (template id, the line as the framework's default logger prints it, fields the row must extract).
LINES = [
    ("cb_karafka_revoked", RUBY + "[3c2b9d1e7a10] Group example_app rebalance: events-[0,1,2] revoked",
     {"group_id": "example_app"}),
    ("cb_karafka_assigned", RUBY + "[3c2b9d1e7a10] Group example_app rebalance: No partitions assigned",
     {"group_id": "example_app"}),
    ("cb_karafka_subscribing", RUBY + "[7a1b2c3d4e5f] Group example_app/0f1e2d3c4b5a subscribing to topics: events, "
     "visits", {"group_id": "example_app", "topics": "events, visits"}),
    ("cb_karafka_maxpoll", RUBY_ERROR + f"Data polling error occurred: {MAXPOLL} (max_poll_exceeded) "
     "[consumer_group: example_app, subscription_group: 0f1e2d3c4b5a]", {}),
    ("cb_karafka_unknown_member", RUBY_ERROR + "Data polling error occurred: Broker: Unknown member "
     "(unknown_member_id)", {"reason": "Broker: Unknown member"}),
    ("cb_karafka_illegal_generation", RUBY_ERROR + "Data polling error occurred: Broker: Specified group generation "
     "id is not valid (illegal_generation)", {"reason": "Broker: Specified group generation id is not valid"}),
    ("cb_karafka_rebalance_callback", RUBY_ERROR + "Rebalance callback error occurred: undefined method `call'",
     {"reason": "undefined method `call'"}),
    ("cb_kafkaflow_assigned", f"KafkaFlow: Partitions assigned | Data: {FLOW}", {"group_id": "orders"}),
    ("cb_kafkaflow_revoked", f"warn: KafkaFlow[0]\n      Partitions revoked | Data: {FLOW}", {"group_id": "orders"}),
    ("cb_kafkaflow_maxpoll", 'KafkaFlow: Max Poll Interval Exceeded | Data: {"ConsumerName":"orders-consumer"}', {}),
    ("cb_kafkaflow_fatal", "KafkaFlow: Kafka Consumer fatal error occurred. Recreating consumer in 5 seconds | "
     'Exception: {"Message":"Local: Fatal error"}', {}),
    ("cb_kafkaflow_commit_left", "KafkaFlow: Failed to commit offset: consumer has left the group | Data: "
     '{"ErrorMessage":"Broker: Unknown member"}', {}),
    ("cb_streamiz_thread_state", "info: Streamiz.Kafka.Net.Processors.StreamThread[0]\n      stream-thread["
     "orders-app-1b2c-stream-thread-0] State transition from PARTITIONS_ASSIGNED to RUNNING",
     {"client_id": "orders-app-1b2c-stream-thread-0", "previous_state": "PARTITIONS_ASSIGNED", "state": "RUNNING"}),
    ("cb_streamiz_application_state", "info: Streamiz.Kafka.Net.KafkaStream[0]\n      stream-application[orders-app] "
     "State transition from RUNNING to REBALANCING", {"group_id": "orders-app", "state": "REBALANCING"}),
    ("cb_streamiz_fenced", "warn: Streamiz.Kafka.Net.Processors.StreamThread[0]\n      stream-thread[orders-app-1b2c-"
     "stream-thread-0] Detected that the thread is being fenced. This implies that this thread missed a rebalance "
     "and dropped out of the consumer group. Will close out all assigned tasks and rejoin the consumer group",
     {"client_id": "orders-app-1b2c-stream-thread-0"}),
    ("cb_streamiz_assigned", "info: Streamiz.Kafka.Net.Kafka.Internal.StreamsRebalanceListener[0]\n      Partition "
     "assignment took 00:00:00.0123456 ms.\n\tCurrently assigned active tasks: 0-0,0-1", {}),
    ("cb_streamiz_revoked", "info: Streamiz.Kafka.Net.Kafka.Internal.StreamsRebalanceListener[0]\n      Partition "
     "revocation took 00:00:00.0045678 ms\n\tCurrent suspended active tasks: orders-0,orders-1", {}),
    ("cb_streamiz_lost", "info: Streamiz.Kafka.Net.Kafka.Internal.StreamsRebalanceListener[0]\n      Partitions lost "
     "took 00:00:00.0011111 ms", {}),
    ("cb_spring_stopped", BOOT + "orders-group: Consumer stopped", {"group_id": "orders-group"}),
    ("cb_spring_fenced", BOOT_ERROR + "'group.instance.id' has been fenced", {}),
    ("cb_spring_fatal", BOOT_ERROR + "Fatal consumer exception; stopping container", {}),
    ("cb_spring_enforced", BOOT + "Enforced rebalance requested for container: orders-listener-0", {}),
    ("cb_spring_commit_lost", BOOT.replace(" INFO", " WARN") + "These offsets could not be committed; partition(s) "
     "lost during rebalance: orders-1", {"partitions": "orders-1"}),
    ("cb_spring_revoked_2_0", BOOT + "partitions revoked: [orders-0, orders-1]",
     {"partitions": "[orders-0, orders-1]"}),
    ("cb_spring_assigned_2_0", BOOT + "partitions assigned: [orders-0]", {"partitions": "[orders-0]"}),
    ("cb_spring_revoked_1_x", BOOT + "partitions revoked:[orders-0, orders-1]", {"partitions": "[orders-0, orders-1]"}),
    ("cb_spring_assigned_1_x", BOOT + "partitions assigned:[orders-0]", {"partitions": "[orders-0]"}),
]


@pytest.fixture(scope="module")
def parsed(spark):
    return parse_file_lines(spark, [line for _, line, _ in LINES], instance="svc-0", file_name="app.log",
                            modified=dt.datetime(2025, 2, 1, 12))


def test_every_new_framework_row_has_a_line_here():
    framework = ("cb_karafka_", "cb_kafkaflow_", "cb_streamiz_", "cb_spring_stopped", "cb_spring_fenced",
                 "cb_spring_fatal", "cb_spring_enforced", "cb_spring_commit_lost", "cb_spring_revoked_",
                 "cb_spring_assigned_")
    rows = {t.id for t in load_rows("client_callbacks") if t.id.startswith(framework)}
    assert rows == {tid for tid, *_ in LINES}


@pytest.mark.parametrize("index", range(len(LINES)), ids=[row[0] for row in LINES])
def test_each_framework_line_takes_its_row_and_fields(parsed, index):
    template_id, _, fields = LINES[index]
    event = {t.id: t.event for t in load_rows("client_callbacks")}[template_id]
    row = parsed[index + 1]
    assert (row["template_id"], row["event_type"]) == (template_id, event), row
    assert {f: row[f] for f in fields} == fields


def test_each_framework_line_passes_the_bronze_prefilter():
    assert [tid for tid, line, _ in LINES if not any(literal in line for literal in PREFILTER_LITERALS)] == []
