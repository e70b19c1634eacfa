"""The replay's typed records: the events it reads (one row of `schemas.timeline.TIMELINE_INPUT` each), the
evidence it cites and the rebalance rows it makes. Typed so that mypy checks every key the replay reads with `[]`:
a column the input does not carry is an error where it is read, not a None at run time.

tests/test_replay_parts.py holds `TimelineEvent` to the input schema and `RebalanceRow` to gold_rebalances.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pandas as pd
from typing_extensions import NotRequired


class TimelineEvent(TypedDict, total=False):
    """A log event of one group, or a GC pause of a process one of its members ran in (`source_kind` `gc`). Rows
    from Spark carry every column (None where the line had no such field); tests build only the keys they need."""

    event_id: str
    event_ts: pd.Timestamp
    event_type: str
    source_kind: str
    group_id: str | None
    member_id: str | None
    old_member_id: str | None
    generation: int | None
    reason: str | None
    client_reason: str | None
    member_count: int | None
    broker_id: int | None
    instance: str | None
    client_id: str | None
    group_instance_id: str | None
    client_host: str | None
    members: str | None
    source_file: str | None
    line_no: int | None
    error: str | None
    message: str | None
    ts_line_order: bool | None
    previous_state: str | None
    group_protocol: str | None
    partitions: str | None
    pause_end_ts: pd.Timestamp | None
    pause_ms: float | None
    group_epoch: int | None
    target_epoch: int | None
    state: str | None
    topics: str | None
    epoch: str | None
    template_id: str | None
    settings_json: str | None
    # Set by the client-only replay on the lines of one process's chain into a join: the member the chain belongs
    # to, whether the line shows a rebalance under way, whether the process never joined in this log, and whether
    # it is that process's first line (a new process).
    _member: str | None
    _rebalancing: bool
    _unjoined: bool
    _newcomer: bool


# The keys the replay adds to an input row (client_only.py); every other key is a column of TIMELINE_INPUT.
REPLAY_KEYS = frozenset({"_member", "_rebalancing", "_unjoined", "_newcomer"})


class Evidence(TypedDict):
    """One line a verdict rests on: its event id and what it shows (gold_rebalances.evidence)."""

    event_id: str
    explanation: str


class GcPause(TypedDict):
    """A stop-the-world pause of a member's process, read from its GC log: when it began and ended, and how long it
    lasted in milliseconds."""

    event_id: str
    event_ts: pd.Timestamp
    pause_end_ts: pd.Timestamp
    pause_ms: float


def gc_pause(event: TimelineEvent) -> GcPause | None:
    """The pause a GC row of the input is; None when the row lacks its end or its length (no pause to weigh)."""
    end, ms = event.get("pause_end_ts"), event.get("pause_ms")
    if end is None or ms is None or pd.isna(end) or pd.isna(ms):
        return None
    return GcPause(event_id=event["event_id"], event_ts=event["event_ts"], pause_end_ts=end, pause_ms=float(ms))


# One rule consulted for a rebalance: the rule book's id, whether it applied, and what it found (or why not).
Step = tuple[str, bool, str]


class RebalanceRow(TypedDict):
    """A gold_rebalances row as the replay makes it: the table's columns but `estate_incident_id` (the estate step
    sets it), the evidence as JSON text, and the replay's own helper keys, dropped before the row is stored."""

    rebalance_id: str
    group_id: str
    protocol: str
    coordinator: str | None
    generation_before: int | None
    generation_after: int | None
    started_at: pd.Timestamp
    completed_at: pd.Timestamp | None
    duration_ms: int | None
    outcome: str
    members_before: int | None
    members_after: int | None
    members_joined: int
    members_left: int
    trigger_member_id: str | None
    cause: str
    cause_detail: str | None
    cause_confidence: float
    evidence_json: str
    incident_id: str | None
    cause_rule: str
    # Set once the group's replay is over (timeline.Timeline._finish).
    group_type: NotRequired[str]
    cause_alternatives: NotRequired[list[dict[str, Any]] | None]
    # The rebalance whose cause this one carries on (a rejoin, a cooperative follow-up): assign_incidents reads it.
    _linked_to: NotRequired[str | None]
    # The rules consulted, kept while tracing (`rebalance explain`).
    _trace: NotRequired[list[Step]]
