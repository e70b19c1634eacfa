"""The estate rules (pipelines/gold/estate.py) on hand-made rebalances: each root kind found with its groups, its
root and its unaffected groups; nothing tied without a reason; the same rows whatever the input order."""

from __future__ import annotations

import random

import pandas as pd

from pipelines.gold.estate import EstateFacts, EstateParams, find_estate_incidents
from pipelines.gold.estate_model import SparedFacts
from pipelines.gold.estate_rules import ESTATE_BY_ID, ESTATE_RULES

T0 = pd.Timestamp("2026-11-20 08:00:00")
PARAMS = EstateParams()


def _r(rid: str, group: str, at_s: float, cause: str, detail: str | None = None, *, coordinator: str | None = "1",
       members_before: int | None = 3, folder: str | None = None, duration_s: float = 4.0) -> dict:
    started = T0 + pd.Timedelta(seconds=at_s)
    return {"rebalance_id": rid, "group_id": group, "started_at": started,
            "completed_at": started + pd.Timedelta(seconds=duration_s), "duration_ms": duration_s * 1000,
            "coordinator": coordinator, "cause": cause, "cause_detail": detail, "members_before": members_before,
            "trigger_member_id": f"m-{rid}", "trigger_instance": folder, "start_event_id": f"e-{rid}"}


def _find(rows: list[dict], facts: EstateFacts | None = None) -> list[dict]:
    return find_estate_incidents(rows, facts or EstateFacts(), PARAMS)


def test_a_stalled_coordinator_expiring_members_of_three_groups_at_once_is_one_coordinator_event():
    rows = [_r(f"r{i}", f"g{i}", 60 + i * 0.3, "session_timeout", "heartbeat_expiration", folder=f"app-{i}")
            for i in range(3)]
    rows += [_r("rejoin0", "g0", 70, "session_timeout", "rejoin", folder="app-0"),
             _r("later-leave", "g1", 75, "membership_change", "member_leave", folder="app-1")]
    facts = EstateFacts(broker_folders={"1": "broker-1"},
                        broker_pauses=[{"pause_id": "p1", "instance": "broker-1", "duration_ms": 55_000.0,
                                        "started_at": T0 + pd.Timedelta(seconds=5),
                                        "ended_at": T0 + pd.Timedelta(seconds=60)}],
                        coordinated=[{"group_id": g, "coordinator": "1", "started_at": T0, "ended_at": None}
                                     for g in ("g0", "g1", "g2", "quiet")])
    [found] = _find(rows, facts)
    assert (found["root_kind"], found["cause_rule"], found["root_instance"]) == (
        "coordinator_event", "estate_coordinator_stall", "broker-1")
    assert found["groups"] == ["g0", "g1", "g2"] and "rejoin0" in found["rebalance_ids"]
    assert "later-leave" not in found["rebalance_ids"]  # a member leaving afterwards is not the stall's
    assert found["groups_unaffected"] == ["quiet"]
    assert any(e["event_id"] == "p1" for e in found["evidence"])  # the broker's own pause is named
    assert found["unavailable_group_ms"] == 16_000


def test_each_group_a_stall_spared_says_why_from_its_own_rows():
    rows = [_r(f"r{i}", f"g{i}", 60 + i * 0.3, "session_timeout", "heartbeat_expiration", folder=f"app-{i}")
            for i in range(2)]
    at = T0 + pd.Timedelta(seconds=60)
    asked: list[set[str]] = []

    def spared(groups: set[str]) -> SparedFacts:
        asked.append(groups)
        return SparedFacts(
            states={"idle": [{"state": "Empty", "started_at": T0, "ended_at": None, "protocol": "classic"}],
                    "patient": [{"state": "Stable", "started_at": T0, "ended_at": None, "protocol": "classic"}],
                    "brief": [{"state": "Stable", "started_at": T0, "ended_at": None, "protocol": "classic"}],
                    "kip848": [{"state": "Stable", "started_at": T0, "ended_at": None, "protocol": "consumer"}]},
            sessions={g: [{"member_id": f"{g}-m{k}", "group_instance_id": "i0" if k == 0 and g == "patient" else None,
                           "instance": f"{g}-{k}", "joined_at": T0, "left_at": None} for k in range(2)]
                      for g in ("patient", "brief", "kip848")} | {
                "gone": [{"member_id": "x", "group_instance_id": None, "instance": "gone-0", "joined_at": T0,
                          "left_at": at - pd.Timedelta(seconds=30)}]},
            session_timeouts={("patient", "patient-0"): 90_000, ("", "patient-1"): 60_000,
                              ("other-group", "patient-1"): 1_000, ("brief", "brief-0"): 10_000})

    facts = EstateFacts(broker_folders={"1": "broker-1"},
                        broker_pauses=[{"pause_id": "p1", "instance": "broker-1", "duration_ms": 55_000.0,
                                        "started_at": at - pd.Timedelta(seconds=55), "ended_at": at}],
                        coordinated=[{"group_id": g, "coordinator": "1", "started_at": T0, "ended_at": None}
                                     for g in ("g0", "g1", "idle", "patient", "brief", "kip848", "gone")],
                        spared=spared)
    [found] = _find(rows, facts)
    assert asked == [{"idle", "patient", "brief", "kip848", "gone"}]  # one read, for the spared groups alone
    why = {w["group_id"]: w["why"] for w in found["groups_unaffected_why"]}
    assert sorted(why) == found["groups_unaffected"]
    assert why["idle"] == "no member to lose: the group was Empty at the time"
    assert why["gone"] == "no member of it was seen active at the time"
    # patient-1's process also runs a consumer of another group: that group's setting is not patient's.
    assert why["patient"] == ("2 members (1 static) with a session timeout of 60 s (session.timeout.ms as its "
                              "clients logged it) longer than the coordinator's 55.0 s pause")
    assert why["brief"] == ("2 members with a session timeout of 10 s (session.timeout.ms as its clients logged it): "
                            "no session expired, their heartbeats reached the coordinator in time")
    assert "group.consumer.session.timeout.ms" in why["kip848"] and "45 s" in why["kip848"]


def test_a_group_a_move_spared_that_rebalanced_for_its_own_reason_says_so():
    unload, rows = _move_of_partitions_7_and_9()
    steady = SparedFacts(sessions={"steady": [{"member_id": "s1", "group_instance_id": None, "instance": "steady-1",
                                               "joined_at": T0, "left_at": None}]})
    facts = EstateFacts(broker_folders={"2": "broker-2"}, lifecycle=unload,
                        group_partitions={"g7": 7, "g9": 9, "g9b": 9, "steady": 7}, spared=lambda groups: steady)
    [found] = _find(rows, facts)
    assert found["groups_unaffected_why"] == [
        {"group_id": "g9b", "why": "rebalanced at 08:00:20 for a reason of its own (member_join), not the incident's"},
        {"group_id": "steady", "why": "1 member reached the new coordinator within its session timeout of 45 s "
                                      "(session.timeout.ms not logged, the client default)"}]
    from pipelines.gold.explain import estate_lines

    assert "    steady: 1 member reached the new coordinator" in "\n".join(estate_lines(found))


def test_one_process_hosting_members_of_two_groups_is_a_shared_process():
    rows = [_r("a", "orders", 100, "gc_pause", "heartbeat_expiration", coordinator="1", folder="billing-svc"),
            _r("b", "payments", 112, "gc_pause", "heartbeat_expiration", coordinator="2", folder="billing-svc")]
    [found] = _find(rows)
    assert (found["root_kind"], found["root_instance"], found["groups"]) == (
        "shared_process", "billing-svc", ["orders", "payments"])


def _move_of_partitions_7_and_9() -> tuple[list[dict], list[dict]]:
    """Broker 2 unloads __consumer_offsets partitions 7 and 9; two of their groups rebalance after (g7 blamed on the
    move, g9 unknown), a third (g9b) on a member joining."""
    unload = [{"event_id": f"u{p}", "event_ts": T0 + pd.Timedelta(seconds=10 + p / 10), "event_type": "group_unloaded",
               "group_id": None, "offsets_partition": p, "instance": "broker-2", "broker": "2"} for p in (7, 9)]
    rows = [_r("a", "g7", 25, "coordinator_change", "coordinator_failover", coordinator="3", folder="x"),
            _r("b", "g9", 31, "unknown", None, coordinator="3", folder="y"),
            _r("deploy", "g9b", 20, "membership_change", "member_join", coordinator="3", folder="z")]
    return unload, rows


def test_groups_rebalancing_after_their_broker_unloaded_them_are_a_coordinator_move():
    unload, rows = _move_of_partitions_7_and_9()
    facts = EstateFacts(broker_folders={"2": "broker-2"}, lifecycle=unload,
                        group_partitions={"g7": 7, "g9": 9, "g9b": 9, "elsewhere": 4})
    [found] = _find(rows, facts)
    assert (found["cause_rule"], found["root_instance"], found["groups"], found["groups_unaffected"]) == (
        "estate_coordinator_moved", "broker-2", ["g7", "g9"], ["g9b"])


def test_restarts_walking_through_three_groups_are_a_deploy_wave():
    rows = []
    for i, group in enumerate(("a", "b", "c", "d")):
        rows.append(_r(f"{group}-leave", group, i * 90, "membership_change", "member_leave", folder=f"{group}-1"))
        rows.append(_r(f"{group}-join", group, i * 90 + 20, "membership_change", "member_join", folder=f"{group}-2"))
    [found] = _find(rows)
    assert (found["root_kind"], found["groups"], len(found["rebalance_ids"])) == ("deploy_wave", ["a", "b", "c", "d"],
                                                                                  8)
    # Three services restarting in overlapping windows happen by chance in a busy estate: no wave.
    assert _find([r for r in rows if r["group_id"] != "d"]) == []


def test_nothing_is_tied_without_a_reason():
    two_coincide = [_r("a", "g1", 0, "membership_change", "member_join", coordinator="1"),
                    _r("b", "g2", 3, "poll_timeout", "leave_on_poll_timeout", coordinator="2", folder="other")]
    starts = [_r(f"s{i}", f"new{i}", i, "membership_change", "member_join", members_before=0) for i in range(10)]
    pasted = [_r(f"p{i}", f"pasted{i}", 0.001 * i, "session_timeout", "heartbeat_expiration") for i in range(4)]
    apart = [_r(f"x{i}", f"h{i}", 1000 + 400 * i, "session_timeout", "heartbeat_expiration") for i in range(4)]
    facts = EstateFacts(line_order_groups={f"pasted{i}" for i in range(4)})
    assert _find(two_coincide + starts + pasted + apart, facts) == []


def test_four_groups_within_seconds_with_nothing_shared_are_said_to_be_a_burst():
    rows = [_r("a", "g1", 0, "membership_change", "member_join", coordinator="1", folder="f1"),
            _r("b", "g2", 2, "poll_timeout", "leave_on_poll_timeout", coordinator="2", folder="f2"),
            _r("c", "g3", 4, "metadata_change", None, coordinator="3", folder="f3"),
            _r("d", "g4", 4.5, "unknown", None, coordinator="3", folder="f4")]
    # A trickle (a group every 4 s, as steps of a script) is no burst, however long it goes on.
    trickle = [_r(f"t{i}", f"tr{i}", 100 + 4 * i, "membership_change", "member_join", coordinator=str(i),
                  folder=f"x{i}") for i in range(10)]
    [found] = _find(rows + trickle)
    assert (found["root_kind"], found["root_instance"], found["groups"]) == ("correlated_burst", None,
                                                                              ["g1", "g2", "g3", "g4"])
    assert _find(rows[:3]) == []  # three by chance: not "many"


def test_processes_in_their_own_groups_are_never_tied_into_an_estate_incident():
    # Four consumers whose logs name no group, each in its own group: likely one real group's members, whose one
    # rebalance shows in each of them at once; a burst across four groups would be invented.
    own = [_r(c, f"(group of pod-{i})", i, "poll_timeout", "leave_on_poll_timeout", coordinator=None, folder=f"pod-{i}")
           for i, c in enumerate("abcd")]
    assert _find(own) == []


def test_the_rows_do_not_depend_on_the_input_order():
    rows = [_r(f"r{i}", f"g{i % 5}", i * 0.5, "session_timeout", "heartbeat_expiration", coordinator=str(i % 2),
               folder=f"app-{i % 3}") for i in range(30)]
    first = _find(rows)
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    assert first and _find(shuffled) == first
    ids = [r for f in first for r in f["rebalance_ids"]]
    assert len(ids) == len(set(ids))  # a rebalance belongs to one estate incident at most


def test_every_rule_names_a_root_kind_of_the_contract():
    assert {r.root_kind for r in ESTATE_RULES} == {"coordinator_event", "shared_process", "deploy_wave",
                                                   "correlated_burst"}
    assert set(ESTATE_BY_ID) == {r.id for r in ESTATE_RULES}


def test_explain_names_the_estate_incident_and_its_rule():
    from pipelines.gold.explain import estate_lines

    [found] = _find([_r("a", "orders", 100, "gc_pause", "heartbeat_expiration", folder="billing-svc"),
                     _r("b", "payments", 105, "session_timeout", "heartbeat_expiration", folder="billing-svc")])
    text = "\n".join(estate_lines(found))
    assert found["estate_incident_id"] in text and "estate_shared_process" in text
    assert "billing-svc" in text and estate_lines(None) == []


def test_two_moves_of_one_partition_each_rebalancing_one_group_are_no_estate_incident():
    moves = [{"event_id": f"u{k}", "event_ts": T0 + pd.Timedelta(seconds=at), "event_type": "coordinator_resigned",
              "group_id": None, "offsets_partition": 7, "instance": f"broker-{b}", "broker": str(b)}
             for k, (at, b) in enumerate(((0, 1), (60, 2)))]
    rows = [_r("a", "g7a", 5, "coordinator_change", "coordinator_failover", coordinator="2", folder="x"),
            _r("b", "g7b", 67, "coordinator_change", "coordinator_failover", coordinator="1", folder="y")]
    facts = EstateFacts(lifecycle=moves, group_partitions={"g7a": 7, "g7b": 7})
    assert _find(rows, facts) == []  # each rebalance goes to the latest move of its partition before it


def test_two_brokers_each_letting_go_of_one_partition_seconds_apart_are_two_roots_not_one_incident():
    def move(at: float, old: int, new: int, partition: int) -> list[dict]:
        return [{"event_id": f"{kind}-{partition}", "event_ts": T0 + pd.Timedelta(seconds=at + k / 10),
                 "event_type": kind, "group_id": None, "offsets_partition": partition, "instance": f"broker-{b}",
                 "broker": str(b)}
                for k, (kind, b) in enumerate((("coordinator_resigned", old), ("group_unloaded", old),
                                               ("coordinator_elected", new), ("group_loaded", new)))]

    lifecycle = move(0, 2, 3, 4) + move(17, 1, 2, 3)
    rows = [_r("a", "g4", 10, "coordinator_change", "coordinator_failover", coordinator="3", folder="x"),
            _r("b", "g3", 28, "coordinator_change", "coordinator_failover", coordinator="2", folder="y")]
    facts = EstateFacts(broker_folders={"1": "broker-1", "2": "broker-2", "3": "broker-3"}, lifecycle=lifecycle,
                        group_partitions={"g4": 4, "g3": 3})
    assert _find(rows, facts) == []
    # the same two rebalances after one broker letting go of both partitions are one incident, rooted there
    one_root = move(0, 2, 3, 4) + move(1, 2, 1, 3)
    [found] = _find(rows, EstateFacts(broker_folders={"1": "broker-1", "2": "broker-2", "3": "broker-3"},
                                      lifecycle=one_root, group_partitions={"g4": 4, "g3": 3}))
    assert (found["root_instance"], found["groups"]) == ("broker-2", ["g3", "g4"])


def test_expiries_on_one_coordinator_that_the_members_own_processes_explain_are_no_stall():
    # a crash in one group and a GC pause of a member's JVM in another, half a second apart on the same broker: the
    # paused member's expiry is its own JVM's, so one unexplained expiry is left and nothing ties two groups
    rows = [_r("crash", "g1", 60, "session_timeout", "heartbeat_expiration", folder="app-1"),
            _r("paused", "g2", 60.5, "gc_pause", "heartbeat_expiration", folder="app-2")]
    assert _find(rows) == []
    # the same two expiries with neither explained by its own process are a stall
    rows[1] = _r("paused", "g2", 60.5, "session_timeout", "heartbeat_expiration", folder="app-2")
    [found] = _find(rows)
    assert (found["cause_rule"], found["groups"]) == ("estate_coordinator_stall", ["g1", "g2"])
