"""The rows a replay produces: gold_rebalances rows (evidence as `evidence_json`), their incident ids, and the
gold_group_states intervals between state transitions."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from pipelines.gold.records import RebalanceRow
from pipelines.gold.replay_state import OpenRebalance, Transition, secs, stable_id, to_int


def rebalance_row(group_id: str, current: OpenRebalance, *, completed_at: pd.Timestamp | None,
                  outcome: str) -> RebalanceRow:
    """The gold_rebalances row of `current`, ended at `completed_at` (None while open) with `outcome`; `incident_id`
    is set later by `assign_incidents`, which also drops the `_linked_to` helper column."""
    start, verdict = current.start, current.verdict
    started = start["event_ts"]
    explanation, duration_known = verdict.explanation, not start.get("ts_line_order")
    if not duration_known:
        explanation += "; its lines print no time, so its times keep only their order and its duration is unknown"
    evidence = [{"event_id": start["event_id"], "explanation": explanation}] + current.evidence
    broker = to_int(start.get("broker_id"))
    return {
        "rebalance_id": current.rebalance_id, "group_id": group_id, "protocol": current.protocol,
        "coordinator": None if broker is None else str(broker),
        "generation_before": (current.generation_before if current.protocol == "consumer"
                              else to_int(start.get("generation"))),
        "generation_after": current.generation_after,
        "started_at": started, "completed_at": completed_at,
        "duration_ms": (None if completed_at is None or not duration_known
                        else int(secs(completed_at - started) * 1000)),
        "outcome": outcome, "members_before": current.members_before, "members_after": current.members_after,
        "members_joined": len(current.joined), "members_left": len(current.left),
        "trigger_member_id": verdict.trigger_member_id, "cause": verdict.cause, "cause_detail": verdict.detail,
        "cause_confidence": verdict.confidence, "evidence_json": json.dumps(evidence), "incident_id": None,
        "cause_rule": verdict.rule, "_linked_to": current.linked_to, "_trace": current.trace,
    }


def assign_incidents(rebalances: list[RebalanceRow], *, gap_s: float) -> None:
    """Set `incident_id` on each row in place: a rejoin joins the incident of the removal it returns from, a
    rebalance starting within `gap_s` of the previous one's end joins its incident, any other opens its own."""
    by_id: dict[str, RebalanceRow] = {}
    previous = None
    for row in sorted(rebalances, key=lambda r: r["started_at"]):
        linked = by_id.get(row.pop("_linked_to") or "")
        if linked is not None:
            row["incident_id"] = linked["incident_id"]
        elif previous is not None and secs(
            row["started_at"] - (previous["completed_at"] or previous["started_at"])
        ) <= gap_s:
            row["incident_id"] = previous["incident_id"]
        else:
            row["incident_id"] = row["rebalance_id"]
        by_id[row["rebalance_id"]] = row
        previous = row


def state_rows(group_id: str, transitions: list[Transition], rebalances: list[RebalanceRow]) -> list[dict[str, Any]]:
    """gold_group_states rows: one interval per transition, ended by the next one (the last stays open)."""
    states = []
    transitions = sorted(transitions, key=lambda t: t[0])
    # A state belongs to the coordinator and the protocol of its rebalance; states between rebalances to the last
    # ones known (a live conversion shows where the protocol changes).
    by_id = {r["rebalance_id"]: r for r in rebalances}
    coordinator = protocol = None
    for index, (ts, state, generation, rebalance_id, event_id) in enumerate(transitions):
        ended = transitions[index + 1][0] if index + 1 < len(transitions) else None
        rebalance = by_id.get(rebalance_id or "")
        if rebalance is not None:
            coordinator = rebalance["coordinator"] or coordinator
            protocol = rebalance["protocol"] or protocol
        states.append({
            "state_id": stable_id(group_id, event_id, state), "group_id": group_id, "state": state,
            "generation": generation, "coordinator": coordinator, "started_at": ts, "ended_at": ended,
            "duration_ms": None if ended is None else int(secs(ended - ts) * 1000),
            "rebalance_id": rebalance_id, "protocol": protocol,
        })
    return states
