"""Partition churn (pipelines/gold/churn.py) over plain event dicts, as the replay hands them: no Spark.

The lab corpora check the same rows against real clients' lines (tests/test_kafka_lab.py); these pin the rules one by
one: eager and cooperative moves, counts-only clients, losses without a list, restarts, and attribution.
"""

from __future__ import annotations

from pipelines.gold.churn import Starts, attribute, churn_rows, partition_list
from tests.builders import at, client_line, rebalance


def line(seconds: float, event_type: str, instance: str = "c1", client_id: str | None = "consumer-g-1",
         **fields: object) -> dict[str, object]:
    """A line of the member process c1 (client consumer-g-1) unless a test names another."""
    return client_line(seconds, event_type, client_id, instance, **fields)


def test_a_logged_list_in_any_of_the_clients_layouts():
    assert partition_list("[t-0, t-1]") == ["t-0", "t-1"]
    assert partition_list("t-0, t-1") == ["t-0", "t-1"]  # 3.x prints no brackets
    assert partition_list("[]") == []
    assert partition_list(None) is None
    assert partition_list("6 partition(s)") is None


def test_an_eager_member_revokes_everything_and_keeps_what_it_gets_back():
    events = [
        line(1, "client_partitions_assigned", partitions="[t-0, t-1, t-2, t-3]"),
        line(20, "client_partitions_revoked", partitions="[t-0, t-1, t-2, t-3]"),
        line(21, "client_partitions_assigned", partitions="[t-2, t-3]"),
    ]
    rows = churn_rows("g", events, [rebalance("r1", 0, 1.5), rebalance("r2", 19.5, 20.8)])
    first, second = sorted(rows, key=lambda r: r["first_event_at"])
    assert (first["rebalance_id"], first["assigned"], first["owned_before"], first["owned_after"]) == ("r1", 4, 0, 4)
    assert second["rebalance_id"] == "r2"
    assert (second["revoked"], second["assigned"], second["lost"]) == (4, 2, 0)
    assert (second["owned_before"], second["owned_after"], second["kept"]) == (4, 2, 2)
    assert second["revoked_partitions"] == ["t-0", "t-1", "t-2", "t-3"]
    assert second["assigned_partitions"] == ["t-2", "t-3"]


def test_a_cooperative_member_gives_up_only_what_moves():
    events = [
        line(1, "client_partitions_assigned", partitions="[t-0, t-1, t-2, t-10]"),
        # The consumer protocol prints its own line and the listener's: one move.
        line(20, "client_partitions_revoked", partitions="[t-10]"),
        line(20.1, "client_partitions_revoked", partitions="t-10"),
        line(20.2, "client_partitions_assigned", partitions="[]"),
    ]
    rows = sorted(churn_rows("g", events, [rebalance("r1", 0, 1.5), rebalance("r2", 19.5, 20.1)]),
                  key=lambda r: r["first_event_at"])
    assert (rows[1]["revoked"], rows[1]["assigned"], rows[1]["kept"], rows[1]["owned_after"]) == (1, 0, 3, 3)
    assert rows[1]["revoked_partitions"] == ["t-10"]


def test_a_client_that_prints_counts_only_gets_counts_and_no_lists():
    msg = 'Group "g": delegating {} of {} partition(s) to application on queue rd_kafka_cgrp_new: new assignment'
    events = [
        line(1, "client_partitions_assigned", client_id="rdkafka", message=msg.format("assign", 6)),
        line(20, "client_partitions_revoked", client_id="rdkafka", message=msg.format("revoke", 6)),
        line(20.05, "client_partitions_revoked", client_id="rdkafka",
             message='Group "g": revoking all 6 partition(s) (terminating)'),
        line(20.5, "client_partitions_assigned", client_id="rdkafka", message=msg.format("assign", 3)),
    ]
    rows = sorted(churn_rows("g", events, [rebalance("r1", 0, 1.5), rebalance("r2", 19.9, 20.4)]),
                  key=lambda r: r["first_event_at"])
    second = rows[1]
    assert (second["revoked"], second["assigned"], second["owned_before"], second["owned_after"]) == (6, 3, 6, 3)
    assert second["kept"] is None and second["revoked_partitions"] is None


def test_partitions_given_away_as_lost_are_all_the_member_owned():
    events = [
        line(1, "client_partitions_assigned", partitions="[t-0, t-1]"),
        line(40, "client_partitions_lost", message="Giving away all assigned partitions as lost since generation "
             "has been reset,indicating that consumer is no longer part of the group"),
        line(41, "client_partitions_assigned", partitions="[t-0]"),
    ]
    rows = sorted(churn_rows("g", events, [rebalance("r1", 0, 1.5), rebalance("r2", 38, 40.8)]),
                  key=lambda r: r["first_event_at"])
    assert (rows[1]["lost"], rows[1]["lost_partitions"], rows[1]["owned_after"]) == (2, ["t-0", "t-1"], 1)


def test_a_static_members_restart_without_a_rebalance_belongs_to_none():
    events = [
        line(1, "client_partitions_assigned", partitions="[t-0, t-1]"),
        line(30, "client_partitions_revoked", partitions="[t-0, t-1]"),
        line(30.1, "client_generation_reset", reason="consumer pro-actively leaving the group"),
        line(34, "client_subscribed", topics="t"),
        line(35, "client_partitions_assigned", partitions="[t-0, t-1]"),
    ]
    rows = sorted(churn_rows("g", events, [rebalance("r1", 0, 1.5)]), key=lambda r: r["first_event_at"])
    assert [(r["rebalance_id"], r["revoked"], r["assigned"], r["owned_before"]) for r in rows] == [
        ("r1", 0, 2, 0), (None, 2, 0, 2), (None, 0, 2, 0)]


def test_a_member_that_goes_silently_belongs_to_the_rebalance_its_session_expiry_causes():
    events = [
        line(1, "client_partitions_assigned", partitions="[t-0]"),
        line(30, "client_partitions_revoked", partitions="[t-0]"),
    ]
    sessions = [{"member_id": "m-1", "instance": "c1"}, {"member_id": "m-2", "instance": "c2"}]
    rebalances = [rebalance("r1", 0, 1.5), rebalance("other", 50, 51, trigger_member_id="m-2"),
                  rebalance("expiry", 75, 76, trigger_member_id="m-1")]
    rows = sorted(churn_rows("g", events, rebalances, sessions), key=lambda r: r["first_event_at"])
    assert rows[1]["rebalance_id"] == "expiry"


def test_partitions_lost_or_given_away_after_a_failed_commit_are_exposed_to_duplicates():
    events = [
        line(1, "client_partitions_assigned", partitions="[t-0, t-1, t-2]"),
        line(30, "client_commit_failed", partitions="t-1", reason="The coordinator is not aware of this member."),
        line(30.1, "client_partitions_revoked", partitions="[t-0, t-1, t-2]"),
        line(30.3, "client_partitions_assigned", partitions="[t-0]"),
        line(60, "client_partitions_lost", partitions="[t-0]"),
        line(61, "client_partitions_assigned", partitions="[t-2]"),
        line(90, "client_partitions_revoked", partitions="[t-2]"),
        line(90.2, "client_partitions_assigned", partitions="[t-2]"),
    ]
    rebalances = [rebalance("r1", 0, 1.5), rebalance("r2", 29.9, 30.2), rebalance("r3", 59, 60.9),
                  rebalance("r4", 89.9, 90.1)]
    rows = {r["rebalance_id"]: r for r in churn_rows("g", events, rebalances)}
    assert (rows["r2"]["reprocessing_risk"], rows["r2"]["commit_failures"], rows["r2"]["exposed_partitions"]) == (
        "commit_failed", 1, ["t-1"])
    assert (rows["r3"]["reprocessing_risk"], rows["r3"]["exposed"], rows["r3"]["exposed_partitions"]) == (
        "partitions_lost", 1, ["t-0"])
    assert (rows["r4"]["reprocessing_risk"], rows["r4"]["exposed"]) == ("none", 0)
    assert rows["r1"]["reprocessing_risk"] == "none"


def test_librdkafka_delivers_a_lost_assignment_as_a_revocation_counted_once_as_the_loss():
    msg = 'Group "g": delegating {} of {} partition(s) to application on queue rd_kafka_cgrp_new: {}'
    events = [
        line(1, "client_partitions_assigned", client_id="rdkafka", message=msg.format("assign", 3, "new assignment")),
        line(30, "client_partitions_lost", client_id="rdkafka", message='Group "g": current assignment of 3 '
             "partition(s) lost: max.poll.interval.ms exceeded: revoking assignment and rejoining"),
        line(30, "client_partitions_revoked", client_id="rdkafka",
             message=msg.format("revoke", 3, "max.poll.interval.ms exceeded")),
        line(36, "client_partitions_assigned", client_id="rdkafka", message=msg.format("assign", 3, "new assignment")),
    ]
    rows = sorted(churn_rows("g", events, [rebalance("r1", 0, 1.5), rebalance("r2", 29, 35.5)]),
                  key=lambda r: r["first_event_at"])
    assert (rows[1]["revoked"], rows[1]["lost"], rows[1]["assigned"]) == (0, 3, 3)
    assert (rows[1]["reprocessing_risk"], rows[1]["exposed"]) == ("partitions_lost", 3)


def test_attribution_searches_the_rebalances_in_start_order_whatever_order_they_come_in():
    # Given out of order, with two starting at the same instant: the first of those given wins, as a scan would pick.
    rows = [rebalance("late", 100, 110), rebalance("tie-a", 50, 60), rebalance("early", 0, 5),
            rebalance("tie-b", 50, 70), rebalance("gone", 400, 410, trigger_member_id="m-1")]
    starts = Starts.of(rows)
    assert starts.last_started(at(-1)) is None
    assert starts.last_started(at(55))["rebalance_id"] == "tie-a"
    assert [r["rebalance_id"] for r in starts.starting_after(at(10), 90)] == ["tie-a", "tie-b", "late"]
    assert attribute(at(58), True, starts) == "tie-a"        # assigned while it is under way
    assert attribute(at(64), True, starts) == "tie-a"        # assigned within TAIL_S of its end
    assert attribute(at(80), True, starts) is None           # assigned long after any rebalance ended
    assert attribute(at(97), False, starts) == "late"        # a loss just before one starts (LEAD_S)
    # A departure with no rebalance near: the one its own member id triggered, unless it came back first.
    assert attribute(at(200), False, starts, instance="c1", instance_of={"m-1": "c1"}) == "gone"
    assert attribute(at(200), False, starts, instance="c1", instance_of={"m-1": "c1"}, until=at(300)) is None
    assert attribute(at(200), False, starts, instance="c2", instance_of={"m-1": "c1"}) is None
