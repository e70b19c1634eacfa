"""Estate incidents: rebalances of different groups tied by one root event (a coordinator that stalled or moved, one
process hosting members of several groups, a rolling deploy across groups, or else a burst with no shared evidence).

Pure Python over the estate's rebalances and a few facts read beside them (`EstateFacts`); the rules and their
order are pipelines/gold/estate_rules.py. pipelines/gold/estate_frames.py gathers the inputs with Spark and makes
the gold_estate_incidents rows a DataFrame.
"""

from __future__ import annotations

import hashlib

import pandas as pd

from pipelines.gold.estate_finders import (
    coordinator_moved,
    coordinator_stall,
    correlated_burst,
    deploy_wave,
    shared_process,
)
from pipelines.gold.estate_model import (
    LIFECYCLE_EVENTS,
    EstateFacts,
    EstateParams,
    Finder,
    Found,
    Row,
    SparedFacts,
    at_text,
    eligible,
    end_of,
    groups_of,
    secs,
)
from pipelines.gold.estate_rules import ESTATE_BY_ID
from pipelines.gold.estate_spared import why_spared

__all__ = ["LIFECYCLE_EVENTS", "EstateFacts", "EstateParams", "find_estate_incidents", "incident_row"]

_WEAK = ("estate_deploy_wave", "estate_correlated_burst")
FINDERS: tuple[tuple[str, Finder], ...] = (
    ("estate_shared_process", shared_process), ("estate_coordinator_stall", coordinator_stall),
    ("estate_coordinator_moved", coordinator_moved), ("estate_deploy_wave", deploy_wave),
    ("estate_correlated_burst", correlated_burst),
)


def find_estate_incidents(rebalances: list[Row], facts: EstateFacts, params: EstateParams) -> list[Row]:
    """gold_estate_incidents rows (evidence as a list of {event_id, explanation}): each rule of ESTATE_RULES in turn
    over the eligible rebalances no earlier finding took; a finding left with too few groups once those are gone is
    dropped."""
    pool = [r for r in rebalances if eligible(r, facts)]
    kept: list[Found] = []
    for rule_id, finder in FINDERS:
        least = params.burst_min_groups if rule_id in _WEAK else params.min_groups
        taken: set[str] = set()
        for f in sorted(finder(pool, facts, params), key=lambda f: min((r["started_at"], r["rebalance_id"])
                                                                         for r in f.rebalances)):
            f.rebalances = [r for r in f.rebalances if r["rebalance_id"] not in taken]
            if len(groups_of(f.rebalances)) >= least:
                kept.append(f)
                taken |= {r["rebalance_id"] for r in f.rebalances}
        pool = [r for r in pool if r["rebalance_id"] not in taken]
    spared_groups = set().union(*(f.unaffected for f in kept))
    spared = facts.spared(spared_groups) if spared_groups else SparedFacts()
    return [incident_row(f, _whys(f, [r for r in rebalances if r["group_id"] not in facts.line_order_groups], spared,
                                  params)) for f in kept]


def _whys(f: Found, rebalances: list[Row], spared: SparedFacts, params: EstateParams) -> list[Row]:
    """Why each group `f` spared did not rebalance with the others (`rebalances`: those whose times are times)."""
    at = min(r["started_at"] for r in f.rebalances)
    since = min(at, f.root_at) if f.root_at is not None else at
    ids = {r["rebalance_id"] for r in f.rebalances}
    own = sorted((r for r in rebalances if r["rebalance_id"] not in ids), key=lambda r: (r["started_at"],
                                                                                          r["rebalance_id"]))
    return [{"group_id": g, "why": why_spared(g, at, f.rule, spared, [r for r in own if r["group_id"] == g],
                                              since=since,
                                              until=max(end_of(r) for r in f.rebalances), pause_s=f.pause_s,
                                              default_session_timeout_ms=params.default_session_timeout_ms)}
            for g in sorted(f.unaffected)]


def incident_row(f: Found, whys: list[Row] | None = None) -> Row:
    """The gold_estate_incidents row of one finding (with why each group it spared did not rebalance)."""
    rows = sorted(f.rebalances, key=lambda r: (r["started_at"], r["rebalance_id"]))
    kind = ESTATE_BY_ID[f.rule].root_kind
    key = "|".join([kind, f.root_instance or "", rows[0]["rebalance_id"]])
    started, ended = rows[0]["started_at"], max(end_of(r) for r in rows)
    groups = sorted(groups_of(rows))
    unavailable = int(sum(float(r["duration_ms"]) for r in rows
                          if r.get("duration_ms") is not None and not pd.isna(r["duration_ms"])))
    where = f" at {f.root_instance}" if f.root_instance else ""
    summary = (f"{kind.replace('_', ' ')}{where}: {len(groups)} groups rebalanced {len(rows)} times from "
               f"{at_text(started)} UTC within {secs(ended - started):.0f} s, {unavailable / 1000:.0f} group-seconds "
               f"without consuming ({', '.join(groups[:5])}{', ...' if len(groups) > 5 else ''})")
    return {
        "estate_incident_id": hashlib.sha256(key.encode()).hexdigest()[:24], "root_kind": kind,
        "root_instance": f.root_instance, "started_at": started, "ended_at": ended, "groups": groups,
        "groups_unaffected": sorted(f.unaffected), "groups_unaffected_why": whys or [],
        "rebalance_ids": [r["rebalance_id"] for r in rows],
        "unavailable_group_ms": unavailable, "cause_rule": f.rule, "evidence": f.evidence, "summary": summary,
    }
