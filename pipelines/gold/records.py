"""The replay's typed records: the events it reads (one row of `schemas.timeline.TIMELINE_INPUT` each) and the
evidence it cites. Typed so that mypy checks every key the replay reads: a column the input does not carry is an
error where it is read, not a None at run time.

tests/test_replay_parts.py holds `TimelineEvent` to the input schema, column for column.
"""

from __future__ import annotations

from typing import TypedDict

import pandas as pd


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
