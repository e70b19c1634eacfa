"""Why a rebalance got its cause, from a traced replay of its group: every rule of the rule book that bears on it, in
the book's order, with whether it applied and why not, the rule that decided, the lines it rests on, and the
thresholds used with where they came from. Pure Python over a `Timeline(..., trace=True)`; `rebalance explain`
(jobs/explain.py) feeds it and prints it."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from pipelines.gold.records import RebalanceRow
from pipelines.gold.rulebook import RULES, Rule, rule
from pipelines.gold.rules_data import CONFIGURED, WINDOWS
from pipelines.gold.timeline import Timeline
from pipelines.settings.config import Thresholds

# The paths of the rule book each protocol's replay walks.
_PATHS = {"broker": ("broker", "any"), "epoch": ("epoch", "any"), "client": ("client", "any")}
# What the members' logged settings say, where the rules or the what-if read them.
_SETTINGS = ("session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms", "group.instance.id")


def path_of(row: RebalanceRow, trace: list[tuple[str, bool, str]]) -> str:
    """Which of the replay's paths decided `row`: the path of the first base rule in its trace."""
    for rule_id, _, _ in trace:
        entry = rule(rule_id)
        if entry.kind == "base":
            return entry.path
    return "epoch" if row.get("protocol") == "consumer" else "broker"


def rule_steps(row: RebalanceRow, trace: list[tuple[str, bool, str]]) -> list[dict[str, Any]]:
    """Every rule of the rebalance's path in the book's order: `decided`, `applied` (then changed by a later rule),
    `not applied` (with why), or `not consulted` (with why it did not arise)."""
    path = path_of(row, trace)
    consulted = {rule_id: (applied, note) for rule_id, applied, note in trace}
    decided = row.get("cause_rule")
    first_base = next((rule(r) for r, _, _ in trace if rule(r).kind == "base"), None)
    steps = []
    for entry in RULES:
        if entry.path not in _PATHS[path]:
            continue
        if entry.id in consulted:
            applied, note = consulted[entry.id]
            status = "decided" if entry.id == decided else ("applied" if applied else "not applied")
        else:
            status, note = "not consulted", _why_not_consulted(entry, first_base, decided)
        steps.append({"rule": entry.id, "kind": entry.kind, "status": status, "question": entry.question,
                      "note": note})
    return steps


def _why_not_consulted(entry: Rule, first_base: Rule | None, decided: str | None) -> str:
    if entry.kind == "base" and first_base is not None and entry.order < first_base.order:
        return "its line is not there"
    if entry.kind == "base":
        return f"{first_base.id if first_base else 'an earlier rule'} decided first"
    if decided is not None and decided in {r.id for r in RULES} and entry.order > rule(decided).order:
        return f"{decided} decided before it"
    return "the verdict before it does not raise this question"


def threshold_rows(steps: list[dict[str, Any]], thresholds: Thresholds, configured: set[str], *,
                   logged_heartbeat: tuple[int, str] | None = None) -> list[dict[str, Any]]:
    """The windows and thresholds of the rules consulted: value, unit and where it came from. `logged_heartbeat`:
    the trigger member's logged `heartbeat.interval.ms` and the folder that logged it, which the expiry rules use
    instead of `heartbeat_tolerance_s`."""
    names: dict[str, None] = {}
    for step in steps:
        if step["status"] != "not consulted":
            for name in rule(step["rule"]).windows:
                names.setdefault(name)
    rows = []
    for name in names:
        if name == "heartbeat_tolerance_s" and logged_heartbeat is not None:
            ms, instance = logged_heartbeat
            rows.append({"name": name, "value": ms / 1000, "source": f"heartbeat.interval.ms={ms} from the "
                         f"ConsumerConfig {instance} logged (it replaces thresholds.heartbeat_tolerance_s)"})
        elif name in CONFIGURED:
            value = getattr(thresholds, name)
            source = ("the configuration (thresholds." + name + ")" if name in configured
                      else "the default (thresholds." + name + " is not set)")
            rows.append({"name": name, "value": value, "source": source})
        else:
            rows.append({"name": name, "value": WINDOWS[name][0], "source": "the rule book (fixed)"})
    return rows


def member_settings(timeline: Timeline, member: str | None) -> list[dict[str, Any]]:
    """The trigger member's own settings as its process logged them (ConsumerConfig), else the client defaults."""
    instance = timeline.ctx.instance_of(member)
    logged = timeline.ctx.settings.get(instance or "", {})
    defaults: dict[str, str | None] = {"session.timeout.ms": str(timeline.rules.default_session_timeout_ms),
                "heartbeat.interval.ms": "3000", "max.poll.interval.ms": "300000", "group.instance.id": None}
    rows: list[dict[str, Any]] = []
    for name in _SETTINGS:
        if name in logged:
            rows.append({"name": name, "value": logged[name],
                         "source": f"the ConsumerConfig {instance} logged"})
        elif defaults[name] is not None:
            source = ("thresholds.default_session_timeout_ms" if name == "session.timeout.ms"
                      else "the client's default")
            rows.append({"name": name, "value": defaults[name],
                         "source": f"{source} (its process logged no ConsumerConfig)"})
    return rows


def evidence_event_ids(row: RebalanceRow) -> list[str]:
    """The ids of the events the rebalance's evidence names (an implied start's id is its member event's)."""
    evidence = row.get("evidence_json") or json.dumps(row.get("evidence") or [])
    ids = [e.get("event_id") for e in json.loads(evidence)]
    return list(dict.fromkeys(str(i).removesuffix(":implied") for i in ids if i))


def states_around(timeline: Timeline, row: RebalanceRow, *, around: int = 3) -> list[dict[str, Any]]:
    """The group's state intervals from a few before the rebalance's first to a few after its last."""
    states = sorted(timeline.states, key=lambda s: s["started_at"])
    mine = [i for i, s in enumerate(states) if s.get("rebalance_id") == row["rebalance_id"]]
    if not mine:
        started = row["started_at"]
        mine = [max((i for i, s in enumerate(states) if s["started_at"] <= started), default=0)]
    lo, hi = max(0, mine[0] - around), min(len(states), mine[-1] + around + 1)
    return [dict(s, this=s.get("rebalance_id") == row["rebalance_id"]) for s in states[lo:hi]]


def explain(timeline: Timeline, rebalance_id: str, *, thresholds: Thresholds,
            configured: set[str]) -> dict[str, Any]:
    """Everything `rebalance explain` prints for one rebalance of a traced replay (KeyError when it has none)."""
    row = next((r for r in timeline.rebalances if r["rebalance_id"] == rebalance_id), None)
    if row is None:
        raise KeyError(rebalance_id)
    trace = timeline.traces.get(rebalance_id, [])
    steps = rule_steps(row, trace)
    decided = row.get("cause_rule")
    return {
        "rebalance": {k: v for k, v in row.items() if not k.startswith("_") and k != "evidence_json"},
        "evidence": json.loads(row.get("evidence_json") or "[]"),
        "cause_rule": decided,
        "decided_by": {"rule": decided, "question": rule(decided).question if decided else None,
                       "basis": rule(decided).basis if decided else None},
        "path": path_of(row, trace),
        "rules": steps,
        "states": states_around(timeline, row),
        "thresholds": threshold_rows(steps, thresholds, configured, logged_heartbeat=_logged_heartbeat(timeline, row)),
        "member_settings": member_settings(timeline, row.get("trigger_member_id")),
        "event_ids": evidence_event_ids(row),
    }


def _logged_heartbeat(timeline: Timeline, row: RebalanceRow) -> tuple[int, str] | None:
    """The trigger member's logged `heartbeat.interval.ms` and its process folder, None when it logged none."""
    instance = timeline.ctx.instance_of(row["trigger_member_id"])
    ms = timeline.ctx.logged_heartbeat_ms(instance)
    return None if ms is None or instance is None else (ms, instance)


def _at(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return f"{pd.Timestamp(value):%Y-%m-%d %H:%M:%S.%f}"[:-3] + "Z"


def _span(ms: Any) -> str:
    if ms is None or ms != ms:
        return "duration unknown"
    seconds = float(ms) / 1000
    return f"{seconds:.1f} s" if seconds < 120 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def estate_lines(estate: dict[str, Any] | None) -> list[str]:
    """What `rebalance explain` says of the estate incident a rebalance belongs to (nothing outside any)."""
    if not estate:
        return []
    from pipelines.gold.estate_rules import ESTATE_BY_ID

    rule_entry = ESTATE_BY_ID.get(estate["cause_rule"])
    out = ["", f"part of estate incident {estate['estate_incident_id']}: {estate['summary']}",
           f"  tied by rule {estate['cause_rule']}: {rule_entry.question if rule_entry else '?'}"]
    if estate.get("groups_unaffected"):
        out.append(f"  in its blast radius but not rebalanced: {', '.join(estate['groups_unaffected'])}")
        out += [f"    {w['group_id']}: {w['why']}" for w in (estate.get("groups_unaffected_why") or [])]
    out += [f"  {e['explanation']}" for e in (estate.get("evidence") or [])[:8]]
    return out


def render_text(found: dict[str, Any], lines: list[dict[str, Any]]) -> str:
    """`found` (from `explain`) and the raw `lines` it rests on as the text `rebalance explain` prints."""
    r = found["rebalance"]
    out = [f"rebalance {r['rebalance_id']} of group {r['group_id']} ({r.get('group_type') or 'consumer'}, "
           f"{r['protocol']} protocol{', coordinator ' + str(r['coordinator']) if r.get('coordinator') else ''})",
           f"  generation {r.get('generation_before')} -> {r.get('generation_after')}, started {_at(r['started_at'])}, "
           f"{r['outcome']} at {_at(r.get('completed_at'))} ({_span(r.get('duration_ms'))})",
           f"  members {r.get('members_before')} -> {r.get('members_after')} ({r.get('members_joined')} joined, "
           f"{r.get('members_left')} left); trigger {r.get('trigger_member_id') or 'unknown'}; "
           f"incident {r.get('incident_id')}",
           "",
           f"cause: {r['cause']}{' / ' + r['cause_detail'] if r.get('cause_detail') else ''}, confidence "
           f"{r['cause_confidence']:.2f}",
           f"decided by rule {found['cause_rule']}: {found['decided_by']['question']}",
           f"  basis: {found['decided_by']['basis']}"]
    alternatives = found["rebalance"].get("cause_alternatives") or []
    if alternatives:
        out.append("not ruled out by the lines read (land the log named to decide):")
        out += [f"  {a['cause']} ({a['confidence']:.2f}): {a['decided_by']}" for a in alternatives]
    out += estate_lines(found.get("estate_incident"))
    out += ["", "group states around it:"]
    for s in found["states"]:
        mark = "  <- this rebalance" if s["this"] else ""
        out.append(f"  {_at(s['started_at'])}  {s['state']:<20} generation {s.get('generation')}{mark}")
    out += ["", f"rules consulted, in the rule book's order ({found['path']} path; docs/causes.md lists them all):"]
    for step in found["rules"]:
        if step["status"] != "not consulted":
            status = step["status"].upper() if step["status"] == "decided" else step["status"]
            out.append(f"  {status:<12} {step['rule']}: {step['note']}")
    skipped = [s for s in found["rules"] if s["status"] == "not consulted"]
    unasked = [s["rule"] for s in skipped if s["kind"] != "base" and s["note"].endswith("does not raise this question")]
    absent = sum(1 for s in skipped if s["note"] == "its line is not there")
    later = [s["rule"] for s in skipped if s["kind"] != "base" and s["note"].endswith("decided before it")]
    out.append(f"  not consulted: {absent} base rules before the first that applied (the lines they read are not "
               f"there) and {sum(1 for s in skipped if s['kind'] == 'base') - absent} after it; after the deciding "
               f"rule: {', '.join(later) or 'none'}; whose question this verdict does not raise: "
               f"{', '.join(unasked) or 'none'}")
    out += ["", "the lines it rests on:"]
    for line in lines:
        out.append(f"  {line['source_file']}:{line['line_no']}  {line['text']}")
    if not lines:
        out.append("  (none found in the landed lines)")
    out += ["", "thresholds used:"]
    for t in found["thresholds"]:
        out.append(f"  {t['name']} = {t['value']:g}  from {t['source']}")
    for s in found["member_settings"]:
        out.append(f"  {s['name']} = {s['value']}  from {s['source']}")
    return "\n".join(out)
