"""The replay's parts, each driven alone over one group's state with plain event values (no Spark, no Timeline):
the state is one value (`ReplayState`), and every part is an object handed that value, none a subclass of another."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pandas as pd
import pytest

from pipelines.gold.client_only import ClientOnlyReplay
from pipelines.gold.epochs import EpochReplay
from pipelines.gold.machines import (
    CLASSIC_MOVES,
    CLASSIC_TRANSITIONS,
    CLIENT_ONLY_MOVES,
    CONSUMER_MOVES,
    CONSUMER_TRANSITIONS,
    MOVES,
    Move,
)
from pipelines.gold.records import REPLAY_KEYS, RebalanceRow, TimelineEvent
from pipelines.gold.refine import CauseRefinement
from pipelines.gold.replay_state import ReplayState
from pipelines.gold.timeline import Timeline
from schemas.tables import TABLES
from schemas.timeline import TIMELINE_INPUT
from tests.builders import at, client_line, event, gc_pause

GOLD = Path(__file__).resolve().parents[1] / "pipelines" / "gold"
MEMBER = "c-1-00000000-0000-0000-0000-000000000001"


def test_the_refinement_alone_blames_an_expiry_on_the_gc_pause_that_covers_it():
    events = [client_line(-60, "client_joined", "c-1", "app-1", member_id=MEMBER, generation=1),
              gc_pause(-2, 12000, "app-1")]
    state = ReplayState("g", events, trace=True)
    verdict, evidence = CauseRefinement(state).expiry_verdict(MEMBER, at(0))
    assert (verdict.cause, verdict.rule) == ("gc_pause", "expiry_during_gc_pause")
    assert evidence[0]["event_id"] == events[1]["event_id"]
    assert [(rule, applied) for rule, applied, _ in state.steps] == [("expiry_during_gc_pause", True)]


def test_the_refinement_alone_falls_through_to_a_plain_expiry_and_says_why_each_rule_did_not_apply():
    events = [client_line(-60, "client_joined", "c-1", "app-1", member_id=MEMBER, generation=1),
              gc_pause(-200, 12000, "app-1")]
    state = ReplayState("g", events, trace=True)
    verdict, evidence = CauseRefinement(state).expiry_verdict(MEMBER, at(0))
    assert (verdict.cause, verdict.rule, evidence) == ("session_timeout", "plain_session_expiry", [])
    assert [(rule, applied) for rule, applied, _ in state.steps] == [
        ("expiry_during_gc_pause", False), ("expiry_after_poll_timeout", False),
        ("expiry_after_coordinator_move", False), ("expiry_while_coordinator_unreachable", False),
        ("plain_session_expiry", True)]
    assert all(note for _, _, note in state.steps)


def test_the_refinement_alone_blames_an_expiry_on_a_poll_timeout_only_outside_a_stall_of_the_whole_process():
    """The coordinator expires a member; its client logs MAXPOLL just before. Alone, that is the poll loop (KIP-848
    librdkafka stops heartbeating after it); with its own clock's SESSTMOUT in the same instant, the process was
    frozen and its session ran out with it."""
    def verdict(*lines):
        events = [client_line(-60, "client_joined", "c-1", "app-1", member_id=MEMBER, generation=1), *lines]
        return CauseRefinement(ReplayState("g", events)).expiry_verdict(MEMBER, at(0))[0].rule

    maxpoll = client_line(-1, "client_poll_timeout", "c-1", "app-1")
    assert verdict(maxpoll) == "expiry_after_poll_timeout"
    assert verdict(maxpoll, client_line(-0.99, "client_session_timeout", "c-1", "app-1")) == "plain_session_expiry"


def test_the_epoch_machine_alone_makes_one_rebalance_per_bump_and_walks_its_states():
    joining = event(0, "member_joining", member_id="A")
    bump = event(0.01, "group_epoch_bumped", group_epoch=1)
    target = event(0.05, "target_assignment_computed", target_epoch=1)
    state = ReplayState("g", [joining, bump, target])
    state.join("A", joining)
    state.pending.append(joining)
    EpochReplay(state, CauseRefinement(state)).bump(bump)
    [row] = state.rebalances
    assert (row["protocol"], row["generation_before"], row["generation_after"], row["cause"], row["cause_detail"],
            row["trigger_member_id"]) == ("consumer", 0, 1, "membership_change", "member_join", "A")
    assert [t[1] for t in state.transitions] == ["Assigning", "Reconciling", "Stable"]


def test_the_client_only_machine_alone_rebuilds_a_generation_from_the_members_joins():
    lines = [client_line(0, "client_joining", "c-1", "app-1"),
             client_line(0, "client_joining", "c-2", "app-2"),
             client_line(1, "client_joined", "c-1", "app-1", member_id="m1", generation=4),
             client_line(1.2, "client_joined", "c-2", "app-2", member_id="m2", generation=4),
             client_line(1.5, "client_synced", "c-1", "app-1", generation=4),
             client_line(1.6, "client_synced", "c-2", "app-2", generation=4)]
    state = ReplayState("g", lines)
    ClientOnlyReplay(state).replay(lines)
    [row] = state.rebalances
    assert (row["generation_after"], row["members_after"], row["outcome"], row["cause_rule"]) == (
        4, 2, "stabilized", "client_seen_rebalancing")
    assert (row["started_at"], row["completed_at"]) == (at(0), at(1.6))
    assert set(state.sessions) == {"m1", "m2"}
    assert [(t[0], t[1]) for t in state.transitions] == [
        (at(0), "PreparingRebalance"), (at(1.2), "CompletingRebalance"), (at(1.6), "Stable")]


def test_no_class_of_gold_is_a_subclass_of_another_project_class():
    """The replay's parts hold the state; they do not inherit it (the chain of four classes this replaced could be
    read and tested only as a whole)."""
    project_classes: set[str] = set()
    bases: dict[str, list[str]] = {}
    for path in GOLD.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                project_classes.add(node.name)
                bases[f"{path.name}:{node.name}"] = [b.id for b in node.bases if isinstance(b, ast.Name)]
    inheriting = {name: [b for b in found if b in project_classes] for name, found in bases.items()}
    assert {name: found for name, found in inheriting.items() if found} == {}
    assert "timeline.py:Timeline" in bases


def test_the_typed_event_has_the_timeline_inputs_columns_and_their_types():
    """`TimelineEvent` is what mypy checks the replay's reads against; it must say what the input really carries."""
    hints = typing.get_type_hints(TimelineEvent)
    columns = {f.name: f.dataType.simpleString() for f in TIMELINE_INPUT.fields}
    assert set(hints) - REPLAY_KEYS == set(columns)
    python = {"string": str, "int": int, "bigint": int, "double": float, "boolean": bool, "timestamp": pd.Timestamp}
    wrong = {name: hints[name] for name, spark_type in columns.items()
             if hints[name] not in (python[spark_type], python[spark_type] | None)}
    assert wrong == {}


def test_every_move_leads_to_a_state_its_protocols_machine_can_enter():
    """The replay records states only through the move tables; each move's state must be one its protocol's legal
    transitions lead into, and the names mypy checks must be the tables' own."""
    assert set(MOVES) == set(typing.get_args(Move))
    assert len(MOVES) == len(CLASSIC_MOVES) + len(CONSUMER_MOVES) + len(CLIENT_ONLY_MOVES)
    for moves, transitions in ((CLASSIC_MOVES, CLASSIC_TRANSITIONS), (CLIENT_ONLY_MOVES, CLASSIC_TRANSITIONS),
                               (CONSUMER_MOVES, CONSUMER_TRANSITIONS)):
        entered = {after for _, after in transitions}
        assert {move: state for move, state in moves.items() if state not in entered} == {}


def test_a_state_no_move_names_cannot_be_recorded():
    state = ReplayState("g", [])
    with pytest.raises(KeyError):
        state.transition(at(0), "Stable", 1, None, event(0, "group_stabilized"))  # type: ignore[arg-type]
    assert state.transitions == []


def test_the_typed_rebalance_row_is_a_gold_rebalances_row():
    """`RebalanceRow` holds what the replay writes to gold_rebalances: the table's columns (the evidence as JSON text,
    the estate incident set later by the estate step) and the replay's two helper keys."""
    columns = set(TABLES["gold_rebalances"].fieldNames()) - {"evidence", "estate_incident_id"}
    assert set(typing.get_type_hints(RebalanceRow)) == columns | {"evidence_json", "_linked_to", "_trace"}
    started = event(0, "rebalance_started", generation=0, reason="Adding new member m1 with group instance id None")
    [row] = Timeline("g", [started, event(3, "group_stabilized", generation=1, member_count=1)]).rebalances
    assert set(row) == columns | {"evidence_json"}


def test_a_groups_input_rows_reach_the_replay_in_time_order_with_every_null_as_none():
    """`timeline_records` gives the same Python values as the frame's cells would as objects (`astype(object)`):
    pandas Timestamps, floats, ints, strings; and None for every kind of null (NaN, NaT, None, pd.NA); rows in the
    order of time, file, line and id."""
    from pipelines.gold.rebalances import timeline_records

    ts = pd.to_datetime(["2024-05-14 10:00:02", "2024-05-14 10:00:01", "2024-05-14 10:00:01"])
    pdf = pd.DataFrame({
        "event_ts": ts, "source_file": ["b", "b", "a"], "line_no": [3, 2, 9], "event_id": ["e3", "e2", "e1"],
        "generation": [4.0, float("nan"), 5.0], "pause_end_ts": pd.to_datetime([None, "2024-05-14 10:00:05", None]),
        "group_id": ["g", None, "g"], "member_epoch": pd.array([7, None, 8], dtype="Int64"),
    })
    records = timeline_records(pdf)
    assert [r["event_id"] for r in records] == ["e1", "e2", "e3"]
    reference = pdf.iloc[[2, 1, 0]].astype(object).where(pdf.iloc[[2, 1, 0]].notna(), None).to_dict("records")
    assert records == reference
    assert [[type(v) for v in r.values()] for r in records] == [[type(v) for v in r.values()] for r in reference]
    assert records[1]["generation"] is None and records[1]["group_id"] is None
    assert records[0]["pause_end_ts"] is None and records[1]["member_epoch"] is None
    assert isinstance(records[0]["event_ts"], pd.Timestamp) and records[0]["line_no"] == 9
