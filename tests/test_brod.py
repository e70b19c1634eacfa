"""brod's own wordings (pipelines/silver/wordings/client_brod.yml): each row takes a record written the way
brod_group_coordinator's log/4 prints it (a `Group member (..):` header line, the message on the next) through the
real bronze-to-silver parse, under Elixir's console layout; a brod process is told by its lines; its rejoin reasons
(Erlang terms printed with ~p) read as the client-path rules' signs."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines.gold.kinds import client_kinds
from pipelines.gold.timeline import reconstruct_group
from pipelines.settings.config import load_config
from pipelines.silver.templates import load_rows
from pipelines.storage import inputs
from tests.builders import client_line
from tests.conftest import silver_batch

HEADER = "Group member (payments,coor=#PID<0.912.0>,cb=#PID<0.911.0>,generation=12):"
# (template id, the message lines under the header (None: no header), fields the row must extract).
RECORDS = [
    ("o_rejoin", ["re-joining group, reason::rebalance_in_progress"], {"reason": ":rebalance_in_progress"}),
    ("o_rejoin_bare", None, {"reason": ":unknown_member_id"}),
    ("o_elected", ["elected=true"], {}),
    ("o_assignments", ["assignments received:", "  payments:", "    partition=0 begin_offset=undefined"], {}),
    ("o_join_failed", ["failed to join group", "reason: :not_coordinator"], {}),
    ("o_leaving_hb_timeout", ["Leaving group, reason: hb_timeout"], {}),
    ("o_leaving", ["Leaving group, reason: shutdown"], {"reason": "shutdown"}),
    ("o_coordinator_connected", ["connected to group coordinator kafka-2.kafka:9092"],
     {"coordinator": "kafka-2.kafka:9092"}),
]


@pytest.fixture(scope="module")
def typed(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("brod") / "payments-0"
    folder.mkdir()
    lines, heads = [], {}
    for second, (template_id, message, _) in enumerate(RECORDS):
        stamp = f"2026-11-20 10:00:{second:02d}.100 [info] "
        heads[len(lines) + 1] = template_id
        if message is None:
            lines.append(stamp + "re-joining group, reason::unknown_member_id")
        else:
            lines += [stamp + HEADER, *message]
    (folder / "consumer.log").write_text("\n".join(lines) + "\n")
    staged = silver_batch(inputs.read_files(spark, [folder / "consumer.log"]), load_config())
    try:
        rows = {r.line_no: r.asDict() for r in staged.parsed.filter(F.col("disposition") == "event").collect()}
    finally:
        staged.unpersist()
    return heads, rows


def test_every_row_of_the_file_has_a_record_here():
    assert sorted(t.id for t in load_rows("client_brod")) == sorted(r[0] for r in RECORDS)


def test_each_record_takes_its_row_group_and_generation(typed):
    heads, rows = typed
    assert sorted(rows) == sorted(heads)
    for line_no, template_id in heads.items():
        row = rows[line_no]
        fields = next(f for t, _, f in RECORDS if t == template_id)
        assert row["template_id"] == template_id, row
        assert {f: row[f] for f in fields} == fields, row
        if template_id != "o_rejoin_bare":
            assert (row["group_id"], row["generation"]) == ("payments", 12), row


def test_a_brod_process_is_told_by_its_lines():
    events = [{"instance": "ex-0", "template_id": "o_elected", "source_kind": "client"},
              {"instance": "java-0", "template_id": "c_joining", "source_kind": "client"}]
    assert client_kinds(events) == {"ex-0": "brod", "java-0": "java"}


@pytest.mark.parametrize(("reason", "cause", "rule"), [
    # the member's own connection to its coordinator closed (Elixir's and Erlang's prints of the same tuple)
    ("{:connection_down, {:shutdown, :tcp_closed}}", "coordinator_change", "client_coordinator_moved"),
    ("{connection_down,{shutdown,tcp_closed}}", "coordinator_change", "client_coordinator_moved"),
    # error code atoms of brod 3+ and the CamelCase ones of brod 2
    (":unknown_member_id", "session_timeout", "client_session_expired"),
    ("not_coordinator", "coordinator_change", "client_coordinator_moved"),
    (":GroupCoordinatorNotAvailable", "coordinator_change", "client_coordinator_moved"),
    # the application changed the member's topics (brod_group_coordinator:update_topics/2)
    ("topics", "metadata_change", "client_rejoin_reason"),
    (":topics", "metadata_change", "client_rejoin_reason"),
])
def test_a_brod_rejoin_reason_gives_the_cause(reason, cause, rule):
    events = [client_line(0, "client_joined", generation=7, template_id="o_elected"),
              client_line(600, "client_rejoin_requested", generation=7, reason=reason, template_id="o_rejoin"),
              client_line(601, "client_joined", generation=8, template_id="o_elected")]
    verdict = reconstruct_group("g", events)[-1]
    assert (verdict["cause"], verdict["cause_rule"]) == (cause, rule)


def test_a_rebalance_the_member_only_heard_of_names_no_cause_it_cannot_see():
    events = [client_line(0, "client_joined", generation=7, template_id="o_elected"),
              client_line(600, "client_rejoin_requested", generation=7, reason=":rebalance_in_progress",
                          template_id="o_rejoin"),
              client_line(601, "client_joined", generation=8, template_id="o_elected")]
    assert reconstruct_group("g", events)[-1]["cause_rule"] == "client_seen_rebalancing"


def test_a_member_that_left_for_want_of_heartbeat_answers_says_its_session_ran_out():
    events = [client_line(0, "client_joined", generation=7, template_id="o_elected"),
              client_line(600, "client_session_timeout", generation=7, template_id="o_leaving_hb_timeout"),
              client_line(605, "client_joined", generation=8, template_id="o_elected")]
    verdict = reconstruct_group("g", events)[-1]
    assert (verdict["cause"], verdict["cause_rule"]) == ("session_timeout", "client_session_expired")
