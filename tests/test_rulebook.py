"""The rule book (pipelines/gold/rulebook.py, rules_data.py): one place for every cause rule, its windows and its
confidence; its generated page; the event names the replay reads; and traces that follow the book's order."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pipelines.gold.explain import explain, rule_steps
from pipelines.gold.machines import MOVES
from pipelines.gold.rulebook import DOCS, RULES, decide, docs_text, rule
from pipelines.gold.rules_data import CONFIGURED, WINDOWS
from pipelines.gold.timeline import Timeline
from pipelines.quality.rules import event_types
from pipelines.settings.config import Thresholds
from tests.builders import at, client_config, client_line, event, gc_pause

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "pipelines" / "gold"
# Modules that may hold the numbers: the book's data, and the rules' own module.
BOOK = {"rules_data.py", "rules_alternatives.py", "rulebook.py"}


def test_docs_page_is_generated_from_the_book():
    page = (ROOT / DOCS).read_text(encoding="utf-8")
    assert page == docs_text(), f"{DOCS} is stale: run `python -m pipelines.gold.rulebook --write`"


def test_every_window_names_a_fixed_window_or_a_configured_threshold():
    assert set(CONFIGURED) <= set(Thresholds.model_fields)
    for entry in RULES:
        for name in entry.windows:
            assert name in WINDOWS or name in CONFIGURED, (entry.id, name)
        assert 0 < entry.confidence <= 1, entry.id
        assert entry.question and entry.basis, entry.id


def test_a_verdict_is_made_only_by_the_book():
    for path in sorted((ROOT / "pipelines").rglob("*.py")):
        if path.name in BOOK:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        made = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "id", getattr(n.func, "attr", None)) == "Verdict"]
        assert not made, f"{path.relative_to(ROOT)} makes a Verdict at lines {made}: use rulebook.decide"


# A window or a confidence written as a number: `seconds=5`, `window_s=30`, `confidence=0.8`, `_S = 60.0`.
LITERAL = re.compile(r"(?:seconds|window_s|confidence|tolerance_s)\s*=\s*\d|_S\s*=\s*\d|Timedelta\(\s*\d")


def test_no_window_or_confidence_literal_outside_the_book():
    found = []
    for path in sorted(GOLD.glob("*.py")):
        if path.name in BOOK:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if LITERAL.search(code):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "windows and confidences belong in the rule book:\n" + "\n".join(found)


EVENT_NAME = re.compile(r"^(?:client|connect|streams|member|members|group|share|rebalance|static|target|assignment|"
                        r"subscription)_[a-z_]+$")
# Strings of that shape in gold that are not event types: causes' details, states, the replay's own markers.
NOT_EVENTS = {"assignment_config_change", "client_chain_s", "client_host", "client_id", "client_kind", "client_reason",
              "group_epoch", "group_id", "group_instance_id", "group_protocol", "group_type", "member_count",
              "member_id", "member_join", "member_leave", "member_rejoin", "members_after", "members_before",
              "members_joined", "members_left", "member_settings", "rebalance_id", "rebalance_ids",
              "subscription_change", "target_epoch",
              "group_id_not_null"}  # a quality rule's name


def test_every_event_name_gold_quality_and_alerts_read_is_a_wording_of_the_registry():
    known = set(event_types()) | {"gc_pause"} | NOT_EVENTS | {r.id for r in RULES} | set(MOVES)
    unknown = {}
    folders = [GOLD, ROOT / "pipelines" / "quality", ROOT / "pipelines" / "alerts"]
    for path in sorted(p for folder in folders for p in folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and EVENT_NAME.match(node.value)
                    and node.value not in known):
                unknown.setdefault(node.value, path.name)
    assert not unknown, f"names that no wording produces: {unknown}"


def test_a_rule_that_carries_its_cause_over_needs_one():
    with pytest.raises(ValueError, match="carries its cause over"):
        decide("rejoin_after_removal", "m", "x")
    with pytest.raises(ValueError, match="decides session_timeout"):
        decide("reason_heartbeat_expiration", "m", "x", cause="gc_pause")
    assert decide("rejoin_after_removal", "m", "x", cause="gc_pause").detail == "rejoin"


def gc_expiry_events() -> list[dict]:
    """A member expires while its JVM is paused 12 s by GC; its process's client log ties it to the GC log."""
    member = "c-1-00000000-0000-0000-0000-000000000001"
    return [
        client_line(-60, "client_joined", "c-1", "app-1", member_id=member, generation=1),
        event(-30, "rebalance_started", generation=0, reason=f"Adding new member {member} with group instance id None"),
        event(-29, "group_stabilized", generation=1, member_count=1),
        gc_pause(-2, 12000, "app-1"),
        event(0, "rebalance_started", generation=1, reason=f"removing member {member} on heartbeat expiration"),
        event(3, "group_emptied", generation=2),
    ]


def test_a_traced_replay_names_its_deciding_rule_and_follows_the_book():
    events = gc_expiry_events()
    timeline = Timeline("g", sorted(events, key=lambda e: e["event_ts"]), trace=True)
    expiry = [r for r in timeline.rebalances if r["cause"] == "gc_pause"]
    assert len(expiry) == 1, timeline.rebalances
    row = expiry[0]
    assert row["cause_rule"] == "expiry_during_gc_pause"
    trace = timeline.traces[row["rebalance_id"]]
    assert [r for r, applied, _ in trace if applied] == ["reason_heartbeat_expiration", "expiry_during_gc_pause"]
    orders = [rule(r).order for r, _, _ in trace]
    assert orders == sorted(orders)
    found = explain(timeline, row["rebalance_id"], thresholds=Thresholds(), configured=set())
    decided = [s for s in found["rules"] if s["status"] == "decided"]
    assert [s["rule"] for s in decided] == ["expiry_during_gc_pause"]
    assert {t["name"] for t in found["thresholds"]} == {"heartbeat_tolerance_s", "gc_pause_min_ms"}
    assert events[3]["event_type"] == "gc_pause" and events[3]["event_id"] in found["event_ids"]


def test_the_thresholds_listed_are_the_ones_used_a_logged_heartbeat_interval_included():
    """A member whose process logged its ConsumerConfig is judged by its own heartbeat interval, not by the
    configured tolerance: explain must list the one the rule used, and where it came from."""
    events = [client_config("app-1", -90, **{"heartbeat.interval.ms": "5000"}), *gc_expiry_events()]
    timeline = Timeline("g", sorted(events, key=lambda e: e["event_ts"]), trace=True)
    [row] = [r for r in timeline.rebalances if r["cause"] == "gc_pause"]
    found = explain(timeline, row["rebalance_id"], thresholds=Thresholds(), configured=set())
    tolerance = next(t for t in found["thresholds"] if t["name"] == "heartbeat_tolerance_s")
    assert tolerance["value"] == 5.0
    assert tolerance["source"].startswith("heartbeat.interval.ms=5000 from the ConsumerConfig app-1 logged")
    assert "heartbeat.interval.ms=5000" in timeline.traces[row["rebalance_id"]][-1][2]


def test_why_not_says_how_far_the_evidence_missed():
    events = gc_expiry_events()
    # The pause ends 8 s before the expiry: outside the default 3 s heartbeat tolerance.
    events[3] = dict(events[3], pause_end_ts=at(-8), pause_ms=2000.0, event_ts=at(-10))
    timeline = Timeline("g", sorted(events, key=lambda e: e["event_ts"]), trace=True)
    row = next(r for r in timeline.rebalances if r["cause"] == "session_timeout")
    assert row["cause_rule"] == "plain_session_expiry"
    steps = {s["rule"]: s for s in rule_steps(row, timeline.traces[row["rebalance_id"]])}
    assert steps["expiry_during_gc_pause"]["status"] == "not applied"
    assert "ended 8.0 s before" in steps["expiry_during_gc_pause"]["note"]
    assert steps["expiry_after_poll_timeout"]["status"] == "not applied"


def test_the_trace_is_off_unless_asked_for():
    timeline = Timeline("g", sorted(gc_expiry_events(), key=lambda e: e["event_ts"]))
    assert all(steps == [] for steps in timeline.traces.values())
    assert {r["cause_rule"] for r in timeline.rebalances} >= {"expiry_during_gc_pause"}


# Modules still over the bound, each with why (a ratchet: the list only shrinks; io.py was the last, split into
# lake.py, writes.py and inputs.py).
OVER_300: dict[str, str] = {}


def test_modules_and_gold_functions_stay_small():
    long_modules = {p.name for p in (ROOT / "pipelines").rglob("*.py")
                    if len(p.read_text(encoding="utf-8").splitlines()) > 300}
    assert long_modules == set(OVER_300), long_modules
    long_functions = []
    for path in sorted(GOLD.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None \
                    and node.end_lineno - node.lineno + 1 > 60:
                long_functions.append(f"{path.name}:{node.name}")
    assert not long_functions, long_functions


def _expiry(events: list[dict]) -> dict:
    timeline = Timeline("g", sorted(events, key=lambda e: e["event_ts"]))
    return next(r for r in timeline.rebalances if r["cause_rule"] == "plain_session_expiry")


def test_an_expiry_with_no_gc_log_read_keeps_the_gc_pause_open():
    # The expired member's process is not tied to any GC pause: the lines cannot rule a GC pause out, and say which
    # log would. The coordinator's log was read, so a coordinator move is ruled out.
    events = [e for e in gc_expiry_events() if e["event_type"] != "gc_pause"]
    alternatives = _expiry(events)["cause_alternatives"]
    assert [a["cause"] for a in alternatives] == ["gc_pause"]
    assert alternatives[0]["decided_by"].startswith("gc log: ") and alternatives[0]["confidence"] < 0.9


def test_an_expiry_whose_gc_log_was_read_has_no_alternative():
    events = gc_expiry_events()
    events[3] = dict(events[3], pause_end_ts=at(-8), pause_ms=2000.0, event_ts=at(-10))
    assert _expiry(events)["cause_alternatives"] is None


@pytest.mark.parametrize("client_log", [False, True], ids=["broker-only", "with-the-member-log"])
def test_a_leave_without_a_client_reason_leaves_a_poll_timeout_open_until_the_members_log_is_read(client_log):
    member = "c-1-00000000-0000-0000-0000-000000000001"
    events = [
        event(-30, "rebalance_started", generation=0, reason=f"Adding new member {member} with group instance id None"),
        event(-29, "group_stabilized", generation=1, member_count=1),
        event(0, "rebalance_started", generation=1, reason=f"removing member {member} on LeaveGroup"),
        event(3, "group_emptied", generation=2),
    ]
    if client_log:
        events.append(client_line(-29, "client_joined", "c-1", "app-1", member_id=member, generation=1))
    timeline = Timeline("g", sorted(events, key=lambda e: e["event_ts"]))
    leave = next(r for r in timeline.rebalances if r["cause_detail"] == "member_leave")
    assert leave["cause_rule"] == "reason_leave_group"
    if client_log:
        assert leave["cause_alternatives"] is None
    else:
        assert [(a["cause"], a["confidence"]) for a in leave["cause_alternatives"]] == [("poll_timeout", 0.35)]
        assert "consumer poll timeout has expired" in leave["cause_alternatives"][0]["decided_by"]
