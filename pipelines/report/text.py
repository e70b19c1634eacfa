"""How the report (and the end of a run) writes values: escaped text, UTC times, durations for people."""

from __future__ import annotations

import datetime as dt
import html
from typing import Any


def esc(value: object) -> str:
    """Text from logs, escaped for HTML (attributes included)."""
    return html.escape("" if value is None else str(value), quote=True)


def ts(value: object) -> str:
    """A time as `2026-11-20 08:00:07` (UTC), anything else escaped."""
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, dt.datetime) else esc(value)


def duration(ms: float | None) -> str:
    """A duration for people: `850 ms`, `48.5 s`, `3 min 2 s`, `2 h 5 min`; `-` when unknown."""
    if ms is None or ms != ms:
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s" if whole % 60 else f"{whole // 60} min"
    minutes = whole % 3600 // 60
    return f"{whole // 3600} h {minutes} min" if minutes else f"{whole // 3600} h"


def plural(n: int, word: str) -> str:
    """`1 rebalance`, `2 rebalances`."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def incident_line(incident: dict[str, Any]) -> str:
    """An incident in a line, its durations for people: `12 rebalances of payments-ledger in 2 min 2 s, 35.2 s
    without consuming; root cause membership_change`."""
    span = ""
    if incident.get("ended_at"):
        span = f" in {duration((incident['ended_at'] - incident['started_at']).total_seconds() * 1000)}"
    return (f"{plural(incident.get('rebalances') or 0, 'rebalance')} of {incident['group_id']}{span}, "
            f"{duration(incident.get('unavailable_ms') or 0)} without consuming; root cause "
            f"{incident.get('root_cause')}")
