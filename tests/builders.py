"""The replay's inputs written the same way in every test: log events, GC pauses, a client's logged settings and
stored rebalances, each placed at a number of seconds after one instant (T0), as plain dicts the pure-Python gold
code reads (no Spark).

An event carries every column of `silver_events` the replay reads, so a test names only what matters to it; each
gets a fresh `event_id` and `line_no` in the order it is built.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pandas as pd

T0 = pd.Timestamp("2026-11-20 08:00:00")
_numbers = itertools.count(1)


def at(seconds: float) -> pd.Timestamp:
    """The instant `seconds` after T0 (negative: before it)."""
    return T0 + pd.Timedelta(seconds=seconds)


def seconds_of(ts: pd.Timestamp) -> float:
    """Seconds from T0 to `ts`, to the millisecond: the inverse of `at`."""
    return round((ts - T0).total_seconds(), 3)


def event(seconds: float, event_type: str, **fields: Any) -> dict[str, Any]:
    """A coordinator's line about group `g` on broker 1; `fields` override any column."""
    n = next(_numbers)
    row: dict[str, Any] = {
        "event_id": f"e{n}", "event_ts": at(seconds), "event_type": event_type, "source_kind": "broker",
        "group_id": "g", "member_id": None, "generation": None, "reason": None, "client_reason": None,
        "member_count": None, "broker_id": 1, "source_file": "f", "line_no": n,
    }
    row.update(fields)
    return row


def client_line(seconds: float, event_type: str, client_id: str | None = "consumer-1", instance: str = "app-0",
                **fields: Any) -> dict[str, Any]:
    """A line of client `client_id` about group `g`, from the process whose logs are in folder `instance`."""
    base: dict[str, Any] = {"source_kind": "client", "broker_id": None, "instance": instance, "client_id": client_id}
    return event(seconds, event_type, **{**base, **fields})


def gc_pause(seconds: float, ms: float, instance: str = "app-0", **fields: Any) -> dict[str, Any]:
    """A stop-the-world pause of `ms` milliseconds that starts at `seconds`, from the GC log in folder `instance`."""
    base: dict[str, Any] = {"source_kind": "gc", "broker_id": None, "group_id": None, "instance": instance,
                            "pause_ms": float(ms), "pause_end_ts": at(seconds + ms / 1000)}
    return event(seconds, "gc_pause", **{**base, **fields})


def client_config(instance: str, seconds: float = 0, **settings: str) -> dict[str, Any]:
    """The `ConsumerConfig values:` block a client logs at start, as the settings it names."""
    return client_line(seconds, "client_config", instance=instance, settings_json=json.dumps(settings))


def rebalance(rebalance_id: str, start: float, end: float | None = None, **fields: Any) -> dict[str, Any]:
    """A stored `gold_rebalances` row from `start` to `end` seconds (None: still open)."""
    row: dict[str, Any] = {
        "rebalance_id": rebalance_id, "group_id": "g", "started_at": at(start),
        "completed_at": None if end is None else at(end),
        "duration_ms": None if end is None else round((end - start) * 1000),
        "cause": None, "cause_detail": None, "trigger_member_id": None,
    }
    row.update(fields)
    return row
