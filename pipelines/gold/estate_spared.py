"""Why a group in an estate incident's blast radius did not rebalance: what its own rows say of it at the incident's
start (its state, its members then, their session timeout and where that number comes from, a rebalance of its own
that no rule tied to the incident), in the order docs/causes.md gives. Pure Python; pipelines/gold/estate_frames.py
reads the rows."""

from __future__ import annotations

import pandas as pd

from pipelines.gold.estate_model import Row, SparedFacts, secs
from pipelines.gold.estate_rules import estate_window

# Group states with no member to lose (classic and KIP-848 spellings).
_MEMBERLESS = {"empty", "dead"}
# Protocols whose session timeout is the broker's (KIP-848 consumer groups, KIP-1071 streams groups).
_BROKER_TIMEOUT = {"consumer": "group.consumer.session.timeout.ms", "streams": "group.streams.session.timeout.ms"}


def _during(row: Row, at: pd.Timestamp, start: str, end: str) -> bool:
    began, ended = row.get(start), row.get(end)
    return (began is None or pd.isna(began) or began <= at) and (ended is None or pd.isna(ended) or ended >= at)


def _timeout(group: str, members: list[Row], protocol: str | None, facts: SparedFacts,
             default_ms: int) -> tuple[float, str]:
    """The shortest session timeout of `members` in seconds, with where it comes from."""
    if protocol in _BROKER_TIMEOUT:
        return default_ms / 1000, f"the broker's {_BROKER_TIMEOUT[protocol]}, default"
    known = facts.session_timeouts
    logged = [known.get((group, m["instance"]), known.get(("", m["instance"]))) for m in members if m.get("instance")]
    values = [t for t in logged if t is not None]
    if values:
        clients = "its client" if len(members) == 1 else "its clients"
        return min(values) / 1000, f"session.timeout.ms as {clients} logged it"
    return default_ms / 1000, "session.timeout.ms not logged, the client default"


def why_spared(group: str, at: pd.Timestamp, rule: str, facts: SparedFacts, own: list[Row], *, since: pd.Timestamp,
               until: pd.Timestamp, pause_s: float | None, default_session_timeout_ms: int) -> str:
    """One sentence: why `group`, in the blast radius of an incident of `rule` whose first rebalance began `at` (its
    root event `since`, its last rebalance ended `until`), did not rebalance with the others. `own` are its
    rebalances no rule tied to the incident; `pause_s` the root broker's GC pause."""
    for r in own:
        if -estate_window("estate_instant_s") <= secs(r["started_at"] - since) and r["started_at"] <= until:
            reason = r.get("cause_detail") or r.get("cause") or "unknown"
            return f"rebalanced at {r['started_at']:%H:%M:%S} for a reason of its own ({reason}), not the incident's"
    state = next((s for s in reversed(facts.states.get(group, [])) if _during(s, at, "started_at", "ended_at")), None)
    if state is not None and str(state["state"]).lower() in _MEMBERLESS:
        return f"no member to lose: the group was {state['state']} at the time"
    members = [m for m in facts.sessions.get(group, []) if _during(m, at, "joined_at", "left_at")]
    if not members:
        return "no member of it was seen active at the time"
    timeout_s, source = _timeout(group, members, state.get("protocol") if state else None, facts,
                                 default_session_timeout_ms)
    who = f"{len(members)} member{'s' if len(members) != 1 else ''}"
    static = sum(1 for m in members if m.get("group_instance_id"))
    if static:
        who += f" ({static} static)"
    limit = f"session timeout of {timeout_s:g} s ({source})"
    if rule == "estate_coordinator_moved":
        return f"{who} reached the new coordinator within {'its' if len(members) == 1 else 'their'} {limit}"
    if pause_s is not None and timeout_s > pause_s:
        return f"{who} with a {limit} longer than the coordinator's {pause_s:.1f} s pause"
    if len(members) == 1:
        return f"{who} with a {limit}: its session did not expire, its heartbeats reached the coordinator in time"
    return f"{who} with a {limit}: no session expired, their heartbeats reached the coordinator in time"
