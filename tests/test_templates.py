from __future__ import annotations

import re

import pytest
import yaml
from pydantic import ValidationError

from pipelines.silver.templates import (
    COMPONENTS,
    SEARCH_MARK,
    YAML_LOADER,
    Template,
    build_alternation,
    compile_template,
    load_rows,
    load_templates,
)
from tests.conftest import SHARED


def test_every_template_compiles_with_a_prefilter_literal():
    templates = load_templates()
    assert len(templates) > 50
    for t in templates:
        re.compile(t.pattern)
        assert len(t.literal) >= 5, t.template.id


def test_the_alternation_counts_its_groups_as_the_regex_does():
    # build_alternation numbers the groups from the fields alone (compiling the regex costs a parsing process 0.5 s):
    # a field pattern or an unescaped piece that captured would shift every later template's fields.
    alternation = build_alternation(load_templates())
    assert re.compile(alternation.pattern).groups == alternation.group_count
    assert re.compile(alternation.searching).groups == alternation.group_count
    for template in load_templates():
        assert re.compile(template.pattern).groups == len(template.groups), template.template.id


def test_the_wordings_read_the_same_with_either_yaml_loader():
    from importlib import resources

    for component in COMPONENTS:
        text = resources.files("pipelines.silver.wordings").joinpath(f"{component}.yml").read_text(encoding="utf-8")
        assert yaml.load(text, Loader=YAML_LOADER) == yaml.load(text, Loader=yaml.SafeLoader), component


def test_alternation_finds_the_first_matching_template_and_its_fields():
    alternation = build_alternation(load_templates())
    body = "Stabilized group orders-app generation 42 (__consumer_offsets-17) with 3 members"
    match = re.match(alternation.pattern, body)
    assert match
    matched = [tid for tid, g in zip(alternation.template_ids, alternation.wrap_groups, strict=True) if match.group(g)]
    assert matched[0] == "b_stable_members"
    groups = alternation.field_groups["b_stable_members"]
    assert match.group(groups["group_id"]) == "orders-app"
    assert match.group(groups["generation"]) == "42"
    assert match.group(groups["member_count"]) == "3"


def test_a_period_right_after_a_field_ends_the_field():
    fenced = compile_template(Template(id="t", kind="broker", event="e", versions="3.8-4.0",
                                       text="Member {member_id} fenced from the group because {reason}."))
    match = re.match(fenced.pattern, "Member m-1 fenced from the group because the member session expired..")
    assert match and match.group(fenced.groups["reason"]) == "the member session expired."
    joined = compile_template(Template(id="t", kind="client", event="e", versions="1.0-4.0", text="(Re-)joining group"))
    assert re.match(joined.pattern, "(Re-)joining group.\n\tat a.b.C.d(C.java:1)")


@pytest.mark.parametrize("versions", ["4.x", "2.1-", "3.0-2.8", "2.1 - 4.0"])
def test_versions_must_be_ranges_of_releases(versions):
    with pytest.raises(ValidationError, match="versions"):
        Template(id="t", kind="broker", event="e", versions=versions, text="Stabilized group {group_id}")


def test_component_files_hold_every_row_once_in_match_order():
    rows = [t for component in COMPONENTS for t in load_rows(component)]
    assert [t.template.id for t in load_templates()] == [t.id for t in rows]
    brokers = ("broker_classic", "broker_new", "broker_groups_4x")
    assert {t.kind for b in brokers for t in load_rows(b)} == {"broker"}
    clients = ("client_classic", "client_kip848", "client_librdkafka", "client_streams", "client_connect",
               "client_kafka_python", "client_aiokafka", "client_kafkajs", "client_kafka_go", "client_sarama",
               "client_sarama_cluster", "client_franz_go", "client_ruby_kafka", "client_brod")
    assert {t.kind for c in clients for t in load_rows(c)} == {"client"}


CATALOG = SHARED / "kafka-logs" / "templates.tsv"
# Rows that are not catalog wordings: lines with no group information, wordings seen in real logs after the
# catalog's snapshot (see their comments), and rows that merge catalog rows into one field.
NOT_IN_CATALOG = {
    "b_removed_offsets", "b_starting_up", "b_startup_complete", "b_shutting_down", "b_shutdown_complete",
    "b_rebalance_reaper", "n_epoch_bumped_hash", "n_unload_never_loaded", "c_rejoin_since", "c_commit_failed_exception",
    "c_commit_failed_kicked_out", "c_autocommit_async_failed", "c_partition_commit_failed", "c_cluster_id",
    "c_connection_failed", "c_offset_reset", "c_offset_set", "c_found_no_offset", "c_disconnect_node",
    "c_node_disconnected", "c_cancelled_in_flight",
    # NetworkClient's cancelled group requests (its DEBUG/INFO line, checked against apache/kafka's source).
    "c_cancelled_group_request",
    "c_coordinator_connection_failed", "c_coordinator_request_timeout",
    "k_interrupt_reconciliation", "k_hb_fatal",
    "k_hb_unreleased_instance", "k_leave_completed", "k_commit_without_epoch",
    # AbstractConfig.logAll's `ConsumerConfig values:` record (3.9.2 and 4.1.2 lab logs), not a group wording.
    "c_config_protocol", "c_config_static", "c_config",
    # Checked against apache/kafka's source directly: the catalog keeps DEBUG 0.9-0.11 heartbeat lines and the
    # 3.9 share consumer out, and no pause-flag or `Rebalance failed.` row.
    "c_hb_rebalancing_0_9", "c_hb_generation_0_9", "c_hb_unknown_member_0_9", "c_hb_coordinator_0_9",
    "c_hb_rebalancing_0_10", "c_hb_generation_0_10", "c_hb_unknown_member_0_10", "c_hb_coordinator_0_10",
    "c_pause_flag_revoked", "c_pause_flag_lost", "c_rebalance_failed_2_7",
    "k_share_poll_timeout", "k_share_non_member_fatal", "k_share_leave_completed", "k_share_leave_timeout",
    # The 4.2.2 lab's share consumers (lab/WORDINGS.md, Kafka 4.2): newer than the catalog's snapshot.
    "k_share_subscribed", "k_release_callback_done", "k_release_callback_failed",
    # The poll-timeout warning by its first sentence only (the advice after it is reworded across releases and
    # pastes); the catalog holds the whole text.
    "c_poll_timeout_reworded", "k_poll_timeout_reworded", "c_poll_timeout_2_1_reworded",
    # `Updating assignment with` whose partition lines were cut or laid out otherwise; the catalog holds the record.
    "c_updating_assignment_cut",
    # Read in GroupMetadataManager.java at the 4.0.0 release commit, newer than the catalog's 4.0 snapshot.
    "n_dynamic_left_4_0", "n_static_left_classic_4_0",
    # 3.7.0's AsyncKafkaConsumer, seen in a public excerpt of its logs; outside the catalog's rows.
    "k_hb_error_3_7",
    # Checked against AbstractCoordinator directly (DEBUG lines the catalog does not keep), and the exception classes
    # a wrapper prints as a line of their own (the catalog keeps their messages, not the `class: message` line).
    "c_debug_join_response", "c_debug_heartbeat_send", "c_not_coordinator_exception",
    "c_coordinator_not_available_exception",
}
# Components the catalog covers (broker and Java consumer); librdkafka, Streams and Connect rows were checked
# against their own sources (see each file's header).
CATALOGUED = ("broker_classic", "broker_new", "client_classic", "client_kip848")


def _catalog_regexes() -> list[re.Pattern[str]]:
    placeholder = re.compile(r"\$\{[^}]*\}(?:\.\w+)?|\$\w+(?:\.\w+)?|\{\}|%s|%d")
    out = []
    for row in CATALOG.read_text(encoding="utf-8").splitlines()[1:]:
        cols = row.split("\t")
        if cols[2] not in ("INFO", "WARN", "ERROR", "DEBUG", "EXCEPTION"):
            continue
        text = cols[5].replace("\\n", "\n").replace("\\t", "\t").rstrip()
        pieces = placeholder.split(text)
        out.append(re.compile("^" + ".*?".join(re.escape(p) for p in pieces) + r"\.?\s*$", re.S))
    return out


@pytest.mark.skipif(not CATALOG.is_file(), reason="the shared catalog is absent")
def test_every_row_renders_a_wording_of_the_catalog():
    catalog = _catalog_regexes()
    orphans = []
    catalogued = {t.id for component in CATALOGUED for t in load_rows(component)}
    for t in load_templates():
        if t.template.id in NOT_IN_CATALOG or t.template.id not in catalogued:
            continue
        sample = re.sub(r"\{(\w+)\}", lambda m: "" if m.group(1).startswith("_") else "v", t.template.text)
        if not any(c.match(sample) for c in catalog):
            orphans.append(t.template.id)
    assert orphans == []


# Component -> the fewest rows it holds (Sarama prints few group lines of its own).
NEW_COMPONENTS = {"client_librdkafka": 10, "client_streams": 10, "client_connect": 10, "client_kafka_python": 10,
                  "client_aiokafka": 10, "client_kafkajs": 10, "client_kafka_go": 10, "client_sarama": 5,
                  "client_franz_go": 10, "client_ruby_kafka": 10, "client_callbacks": 10,
                  "client_errors": 20, "client_debug": 20,
                  "client_sarama_cluster": 2, "client_brod": 5}


@pytest.mark.parametrize("component", NEW_COMPONENTS)
def test_each_new_component_is_loaded_and_compiles(component):
    rows = load_rows(component)
    assert len(rows) >= NEW_COMPONENTS[component]
    assert component in COMPONENTS
    assert COMPONENTS.index(component) > COMPONENTS.index("client_kip848")
    for row in rows:
        compiled = compile_template(row)
        re.compile(compiled.pattern)
        assert len(compiled.literal) >= 5, row.id


# Message bodies from tests/data/real-excerpts (after the layout and the Kafka prefix), the template the
# alternation picks for each, and some of its fields.
REAL_BODIES = [
    ("Application maximum poll interval (300000ms) exceeded by 226ms (adjust max.poll.interval.ms for long-running "
     "message processing): leaving group", "r_maxpoll", {}),
    ("Consumer group session timed out (in join-state steady) after 10263 ms without a successful response from the "
     "group coordinator (broker 2, last error was Local: Broker transport failure): revoking assignment and rejoining "
     "group", "r_session_timeout", {"state": "steady", "reason": "Local: Broker transport failure"}),
    ('Group "eta-calculator-kafka-consumer-rebalancer" heartbeat error response in state up (join-state steady, 3 '
     "partition(s) assigned): Broker: Group rebalance in progress", "r_heartbeat_error",
     {"group_id": "eta-calculator-kafka-consumer-rebalancer", "reason": "Broker: Group rebalance in progress"}),
    ('Group "CONSUMER-0.redacted" heartbeat error response in state up (join state started, 3 partition(s) '
     "assigned): Broker: Group rebalance in progress", "r_heartbeat_error_0_9", {"group_id": "CONSUMER-0.redacted"}),
    # What applications print in their rebalance listeners (wordings/client_callbacks.yml).
    ("my-app-group-id: partitions revoked: [topic.name-41, topic.name-40]", "cb_spring_revoked",
     {"group_name": "my-app-group-id", "partitions": "[topic.name-41, topic.name-40]"}),
    ("% COOPERATIVE rebalance: 5 partition(s) revoked: [stam[0]@unset stam[2]@unset]", "cb_go_revoked", {}),
    ("RebalanceCb: Local: Assign partitions: BB[1], CC[1], ", "cb_cpp_assign", {}),
    ("Revoked partitions: TopicName [0]", "cb_dotnet_revoked", {"partitions": "TopicName [0]"}),
    ('Pre rebalance Revoke([TopicPartitionListElem { topic: "t", partition: 8 }])', "cb_rust_pre_revoke", {}),
    ("GroupCoordinator: Broker changed state UP -> DOWN", "r_coordinator_conn_down", {}),
    ('GroupCoordinator: Broker nodename changed from "" to "172.200.0.224:9092"', "r_coordinator_nodename",
     {"coordinator": "172.200.0.224:9092"}),
    ("OffsetCommit for 1 partition(s): cgrp auto commit timer: returned: Broker: Not coordinator",
     "r_commit_returned_error", {"reason": "Broker: Not coordinator"}),
    ("OffsetCommit for 1 partition(s) in join-state steady: manual: returned: Success", "r_commit_returned_ok", {}),
    ('Heartbeat for group "my_consumer_unique_id" generation id 22', "r_heartbeat",
     {"group_id": "my_consumer_unique_id", "generation": "22"}),
    ('Group "myGroup" changed state init -> query-coord (v1, join-state init)', "r_state_0_9_3",
     {"previous_state": "init", "state": "query-coord"}),
    ('Group "SameGroup" changed join state wait-join -> wait-metadata (v1, state up)', "r_join_state_0_9_3",
     {"previous_state": "wait-join", "state": "wait-metadata"}),
    ('Group "test-group" changed join state wait-metadata -> init (state up)', "r_join_state",
     {"previous_state": "wait-metadata", "state": "init"}),
    ('Group "g1" changed join state assigned -> wait-rebalance_cb', "r_join_state_0_9_0",
     {"state": "wait-rebalance_cb"}),
    ('Group "myGroup" coordinator is 10.1.1.22:9092 id 3', "r_coordinator_is", {"coordinator": "10.1.1.22:9092"}),
    ('Group "my_consumer_unique_id": leave (in state up)', "r_leave", {"state": "up"}),
    ('Group "test-group" initiating rebalance (NONE) in state up (join-state wait-metadata) with 0 assigned '
     "partition(s): Metadata for subscribed topic(s) has changed", "r_initiating_rebalance",
     {"reason": "Metadata for subscribed topic(s) has changed"}),
    ('Group "consumer_group_name" is rebalancing (EAGER) in state up (join-state steady) with 1 assigned '
     "partition(s): rebalance in progress", "r_is_rebalancing", {"reason": "rebalance in progress"}),
    ('Group "CONSUMER-0.redacted" is rebalancing in state up (join-state started) with assignment: group is '
     "rebalancing", "r_is_rebalancing_1_0", {"reason": "group is rebalancing"}),
    ('Group "CONSUMER-0.redacted": delegating revoke of 3 partition(s) to application rebalance callback on queue '
     "rd_kafka_cgrp_new: group is rebalancing", "r_delegating_revoke_0_9", {"reason": "group is rebalancing"}),
    ("JoinGroup response: GenerationId 1, Protocol range, LeaderId rdkafka-a3bd (me), my MemberId rdkafka-a3bd, "
     "member metadata count 1: (no error)", "r_joingroup_response",
     {"generation": "1", "member_id": "rdkafka-a3bd", "protocol": "range"}),
    ("JoinGroup response: GenerationId -1, Protocol , LeaderId , my MemberId rdkafka-6ebc, member metadata count 0: "
     "Broker: Group member needs a valid member ID", "r_joingroup_response_error",
     {"reason": "Broker: Group member needs a valid member ID"}),
    ('Joining group "test_proxcon_0001" with 1 subscribed topic(s) and member id ""', "r_joining",
     {"group_id": "test_proxcon_0001", "member_id": ""}),
    ('Group "group": synchronization failed: Broker: Group rebalance in progress: rejoining', "r_sync_failed",
     {"reason": "Broker: Group rebalance in progress"}),
    ("Heartbeat failed: REBALANCE_IN_PROGRESS: group is rebalancing", "r_heartbeat_failed_0_11",
     {"error": "REBALANCE_IN_PROGRESS", "reason": "group is rebalancing"}),
    ("Timed out HeartbeatRequest in flight (after 31946ms, timeout #0)", "r_heartbeat_timed_out", {}),
    ('Group "new_cons_gp": Rejoining group without an assignment: Metadata for subscribed topic(s) has changed',
     "r_rejoining", {"reason": "Metadata for subscribed topic(s) has changed"}),
    ('Group "RATE-0755.DZ": subscribe to new subscription of 1 topics (join state init)', "r_subscribe_0_9", {}),
    ("stream-thread [wordcount-application-6f260d17-7347-4e80-94ad-786753f4d683-StreamThread-1] State transition "
     "from RUNNING to PARTITIONS_REVOKED", "s_thread_state",
     {"client_id": "wordcount-application-6f260d17-7347-4e80-94ad-786753f4d683-StreamThread-1",
      "previous_state": "RUNNING", "state": "PARTITIONS_REVOKED"}),
    ("stream-client [restproxy-otp-verification-c51bd44a-6b3d-4602-ae0c-cc4cdcc75bf4]State transition from RUNNING "
     "to REBALANCING", "s_client_state_1_0", {"state": "REBALANCING"}),
    ("stream-client [q-030e833a-12f2-43b6-a31c-1d8afb59e9a6] State transition from REBALANCING to RUNNING",
     "s_client_state", {"client_id": "q-030e833a-12f2-43b6-a31c-1d8afb59e9a6", "state": "RUNNING"}),
    ("stream-thread [app-StreamThread-2] Detected that the thread is being fenced. This implies that this thread "
     "missed a rebalance and dropped out of the consumer group. Will close out all assigned tasks and rejoin the "
     "consumer group.", "s_fenced", {"client_id": "app-StreamThread-2"}),
    ("Decided on assignment: {030e833a=[activeTasks: ([0_0])]} with no followup probing rebalance.", "s_decided", {}),
    ("Current config state offset -1 does not match group assignment 1. Forcing rebalance.", "w_config_forcing", {}),
    ("Joined group at generation 4 with protocol version 2 and got assignment: Assignment{error=0, offset=7} with "
     "rebalance delay: 0", "w_joined", {"generation": "4"}),
    ("Rebalance started", "w_rebalance_started", {}),
    ("Connector http-sink config removed", "w_connector_removed", {}),
    ("The pause flag in partitions [topic-1, topic-0] will be removed due to revocation.", "c_pause_flag_revoked",
     {"partitions": "topic-1, topic-0"}),
    ("Attempt to heart beat failed since the group is rebalancing, try to re-join group.", "c_hb_rebalancing_0_9", {}),
]


@pytest.mark.parametrize(("body", "template_id", "fields"), REAL_BODIES)
def test_real_bodies_take_their_template_and_fields(body, template_id, fields):
    alternation = build_alternation(load_templates())
    match = re.match(alternation.pattern, body)
    assert match, body
    matched = [tid for tid, g in zip(alternation.template_ids, alternation.wrap_groups, strict=True) if match.group(g)]
    assert matched[0] == template_id
    groups = alternation.field_groups[template_id]
    assert {f: match.group(groups[f]) for f in fields} == fields


def test_a_paste_that_dropped_the_streams_prefix_is_found_in_the_line():
    alternation = build_alternation(load_templates())
    line = (SEARCH_MARK + "2022-08-31T12:03:29.197+09:00 ..... Requested to schedule probing rebalance for "
            "1661915609131 ms.")
    match = re.match(alternation.searching, line)
    assert match
    matched = [tid for tid, g in zip(alternation.template_ids, alternation.wrap_groups, strict=True) if match.group(g)]
    assert matched[0] == "s_probing_scheduled_bare"
