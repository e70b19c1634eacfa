"""Rebalances the coordinator's log does not hold although its members' logs do: an hour of the broker's log never
shipped, a file lost, an excerpt that starts late. A classic-protocol member that logged `Successfully joined group
with generation N` proves generation N was made; when no broker line of the group made or named N, the rebalance is
rebuilt from the members' lines alone (client_only.py), marked as such and trusted less."""

from __future__ import annotations

import json
from collections.abc import Callable

from pipelines.gold.records import RebalanceRow, TimelineEvent
from pipelines.gold.replay_state import to_int
from pipelines.gold.rulebook import confidence

# A rebalance rebuilt from the members' lines where the coordinator's lines are missing is never trusted more than
# the rule book's cap: the broker's own reason, which would have decided it, is what is missing.
GAP_CONFIDENCE = confidence("coordinator_log_gap")


def broker_generations(broker_rows: list[RebalanceRow], events: list[TimelineEvent]) -> set[int]:
    """Generations the coordinator's lines account for: those its rebalances made, and the one after each
    `Preparing to rebalance ... with old generation N` (made by that rebalance, even if its end is missing)."""
    known = {g for g in (to_int(r.get("generation_after")) for r in broker_rows) if g is not None}
    for event in events:
        if event.get("source_kind") != "broker":
            continue
        generation = to_int(event.get("generation"))
        if generation is None:
            continue
        if event["event_type"] == "rebalance_started":
            known.add(generation + 1)
        else:
            known.add(generation)
    return known


def missing_from_broker(client_rows: list[RebalanceRow], known: set[int]) -> list[RebalanceRow]:
    """The client-only rebalances of generations the coordinator's lines never account for, marked as rebuilt."""
    out: list[RebalanceRow] = []
    for row in client_rows:
        generation = to_int(row.get("generation_after"))
        if generation is None or generation in known or row.get("protocol") != "classic":
            continue
        evidence = json.loads(row["evidence_json"])
        evidence.append({"event_id": evidence[0]["event_id"] if evidence else None,
                         "explanation": f"the coordinator's log holds no line of generation {generation}: rebuilt "
                                        "from the members' own lines"})
        # Incidents are assigned again among the group's other rebalances.
        trace = [*row.get("_trace", ()), ("coordinator_log_gap", True, f"generation {generation} is not in the "
                  f"coordinator's log: confidence capped at {GAP_CONFIDENCE:g}")]
        out.append({**row, "cause_confidence": min(row["cause_confidence"], GAP_CONFIDENCE),
                    "evidence_json": json.dumps(evidence), "incident_id": None, "_linked_to": None, "_trace": trace})
    return out


def fill_coordinator_gaps(broker_rows: list[RebalanceRow], events: list[TimelineEvent],
                          client_only: Callable[[list[TimelineEvent]], list[RebalanceRow]]) -> list[RebalanceRow]:
    """The rebalances to add to a group's broker-built ones: `client_only` rebuilds rows from the group's client
    events (in time order), of which those of generations the broker never accounts for are kept."""
    if not any(r.get("protocol") == "classic" for r in broker_rows):
        return []
    clients = [e for e in events if e.get("source_kind") == "client"]
    known = broker_generations(broker_rows, events)
    joined = {to_int(e.get("generation")) for e in clients if e["event_type"] in ("client_joined", "connect_joined")}
    # The client-only replay runs only for a group whose members joined a generation the broker never shows: with
    # a complete coordinator log (the common case) no group pays for a second replay.
    if not joined - known - {None}:
        return []
    return missing_from_broker(client_only(clients), known)
