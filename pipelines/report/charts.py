"""The report's charts as inline SVG, each over a time axis with readable ticks: the group timelines, the rebalances
per hour, and an incident's zoomed timeline."""

from __future__ import annotations

import datetime as dt
import itertools
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from pipelines.report.text import duration, esc, plural, ts

CAUSE_COLOURS = {
    "session_timeout": "#d62728", "poll_timeout": "#ff7f0e", "gc_pause": "#9467bd", "membership_change": "#1f77b4",
    "metadata_change": "#2ca02c", "coordinator_change": "#8c564b", "unknown": "#7f7f7f",
}
STATE_COLOURS = {
    "Stable": "#c7e9c0", "PreparingRebalance": "#fdae6b", "CompletingRebalance": "#fdd0a2", "Empty": "#d9d9d9",
    "Dead": "#969696", "Assigning": "#fdae6b", "Reconciling": "#fdd0a2",
}
# A group's type colours its label's marker: a share group never rebalances, so its row shows membership ticks.
GROUP_TYPE_COLOURS = {"consumer": "#1f77b4", "streams": "#17becf", "connect": "#bcbd22", "share": "#e377c2"}
WIDTH, ROW, LABEL = 1000, 26, 180
AXIS = 30  # room under a chart for its tick labels and the axis title
# Tick steps, in seconds, from a second to a week; the first that keeps ticks at least MIN_TICK_PX apart wins.
STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
MIN_TICK_PX = 90

Scale = Callable[[dt.datetime], float]


def time_axis(lo: dt.datetime, hi: dt.datetime, *, left: float, right: float, top: float, bottom: float) -> str:
    """Gridlines from `top` to `bottom` and tick labels under them for the times between `lo` and `hi` drawn from
    x=`left` to x=`right`, with an axis title naming the date(s) and UTC."""
    span = max((hi - lo).total_seconds(), 1.0)
    step = next((s for s in STEPS if (right - left) * s / span >= MIN_TICK_PX), STEPS[-1])
    epoch = dt.datetime(1970, 1, 1, tzinfo=lo.tzinfo)
    first = epoch + dt.timedelta(seconds=-(-(lo - epoch).total_seconds() // step) * step)
    fmt = "%H:%M:%S" if step < 60 else "%H:%M" if step < 86400 else "%m-%d"
    if step < 86400 and hi.date() != lo.date():
        fmt = "%m-%d " + fmt
    parts = ['<g class="time-axis">']
    tick = first
    while tick <= hi:
        x = left + (right - left) * (tick - lo).total_seconds() / span
        # A label at either end of the axis is aligned inwards, so that it stays inside the chart.
        align = "start" if x - left < 25 else "end" if right - x < 25 else "middle"
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="#ccc" stroke-width="0.5"/>'
                     f'<text x="{x:.1f}" y="{bottom + 12}" text-anchor="{align}" class="tick">'
                     f"{tick.strftime(fmt)}</text>")
        tick += dt.timedelta(seconds=step)
    days = lo.strftime("%Y-%m-%d") + ("" if hi.date() == lo.date() else f" to {hi:%Y-%m-%d}")
    parts.append(f'<text x="{right:.1f}" y="{bottom + 26}" text-anchor="end" class="axis">time (UTC), {days}'
                 "</text></g>")
    return "".join(parts)


def _scale(lo: dt.datetime, hi: dt.datetime, left: float, right: float) -> Scale:
    span = max((hi - lo).total_seconds(), 1.0)
    return lambda t: left + (right - left) * (min(max(t, lo), hi) - lo).total_seconds() / span


def _conversions(states: list[dict[str, Any]]) -> list[tuple[dt.datetime, str]]:
    """Where a group's protocol changed between two consecutive states (a live conversion), and to which."""
    out = []
    for before, after in itertools.pairwise(states):
        if before.get("protocol") and after.get("protocol") and before["protocol"] != after["protocol"]:
            out.append((after["started_at"], after["protocol"]))
    return out


def _membership_ticks(rows: list[dict[str, Any]]) -> list[tuple[dt.datetime, str]]:
    """A share group's member joins and departures, each a tick (no rebalance: its members never wait)."""
    ticks = [(m["joined_at"], f"{m['member_id']} joined") for m in rows if m.get("joined_at")]
    ticks += [(m["left_at"], f"{m['member_id']} {m['end_reason']}") for m in rows if m.get("left_at")]
    return sorted(ticks, key=lambda t: t[0])


def _state_rect(s: dict[str, Any], x: Scale, y: float, end: dt.datetime) -> str:
    x0, x1 = x(s["started_at"]), x(s["ended_at"] or end)
    return (f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{ROW - 6}" '
            f'fill="{STATE_COLOURS.get(s["state"], "#eeeeee")}"><title>{esc(s["state"])} generation '
            f'{esc(s["generation"])} from {ts(s["started_at"])}</title></rect>')


def _rebalance_title(r: dict[str, Any]) -> str:
    return (f'<title>{ts(r["started_at"])} {esc(r["cause"])} ({esc(r["cause_detail"])}), '
            f'{duration(r["duration_ms"])} without consuming</title>')


def timeline(groups: list[dict[str, Any]], states: list[dict[str, Any]], rebalances: list[dict[str, Any]],
             memberships: list[dict[str, Any]] | None = None) -> str:
    """One row per group: its states as coloured bars, each rebalance a dot of its cause's colour, protocol
    conversions dashed, a share group's membership changes as ticks; a time axis under them."""
    memberships = memberships or []
    times: list[dt.datetime] = [s["started_at"] for s in states] + [s["ended_at"] for s in states if s["ended_at"]]
    times += [r["started_at"] for r in rebalances]
    times += [t for t, _ in _membership_ticks(memberships)]
    if not times:
        return "<p>No group states yet.</p>"
    start, end = min(times), max(times)
    x = _scale(start, end, LABEL, WIDTH - 10)
    by_group: dict[str, defaultdict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for key, rows in (("states", states), ("rebalances", rebalances), ("members", memberships)):
        for row in rows:
            by_group[row["group_id"]][key].append(row)
    height = ROW * len(groups) + 10
    parts = [f'<svg class="timeline" width="{WIDTH}" height="{height + AXIS}" role="img" '
             f'aria-label="group states over time">',
             time_axis(start, end, left=LABEL, right=WIDTH - 10, top=4, bottom=height)]
    for i, group in enumerate(groups):
        y, mine = 10 + i * ROW, by_group[group["group_id"]]
        kind = group.get("group_type") or "consumer"
        parts.append(f'<rect class="group-type" x="0" y="{y + 5}" width="8" height="10" '
                     f'fill="{GROUP_TYPE_COLOURS.get(kind, "#7f7f7f")}"><title>{esc(kind)} group</title></rect>')
        name = str(group["group_id"])
        short = name if len(name) <= 26 else name[:25] + "…"  # the label column is 180 px wide
        parts.append(f'<text x="12" y="{y + 15}" class="label">{esc(short)}<title>{esc(name)}</title></text>')
        parts.extend(_state_rect(s, x, y, end) for s in mine["states"])
        for at, protocol in _conversions(mine["states"]):
            parts.append(f'<line class="conversion" x1="{x(at):.1f}" x2="{x(at):.1f}" y1="{y - 2}" y2="{y + ROW - 4}" '
                         f'stroke="#000" stroke-dasharray="3,2"><title>{ts(at)} converted to the {esc(protocol)} '
                         f'protocol</title></line>')
        for at, what in _membership_ticks(mine["members"]):
            parts.append(f'<line class="membership" x1="{x(at):.1f}" x2="{x(at):.1f}" y1="{y + 3}" '
                         f'y2="{y + ROW - 9}" stroke="{GROUP_TYPE_COLOURS["share"]}"><title>{ts(at)} '
                         f'{esc(what)}</title></line>')
        for r in mine["rebalances"]:
            parts.append(f'<circle class="rebalance" cx="{x(r["started_at"]):.1f}" cy="{y + (ROW - 6) / 2}" r="5" '
                         f'fill="{CAUSE_COLOURS.get(r["cause"], "#000000")}">{_rebalance_title(r)}</circle>')
    parts.append("</svg>")
    return "".join(parts)


def hourly(rows: list[dict[str, Any]]) -> str:
    """Rebalances per hour, stacked by cause, each bar where its hour is on a time axis (quiet hours stay empty),
    with a count axis."""
    if not rows:
        return "<p>No rebalances yet.</p>"
    totals: defaultdict[dt.datetime, int] = defaultdict(int)
    for h in rows:
        totals[h["hour"]] += h["rebalances"]
    peak = max(totals.values())
    lo, hi = min(totals), max(totals) + dt.timedelta(hours=1)
    left, right, height = 50, WIDTH - 10, 200
    x = _scale(lo, hi, left, right)
    bar = max((right - left) / max((hi - lo).total_seconds() / 3600, 1) - 2, 1)
    parts = [f'<svg class="hourly" width="{WIDTH}" height="{height + 10 + AXIS}" role="img" '
             f'aria-label="rebalances per hour by cause">',
             time_axis(lo, hi, left=left, right=right, top=10, bottom=height + 10)]
    for value in sorted({0, (peak + 1) // 2, peak}):
        y = 10 + height * (1 - value / peak)
        parts.append(f'<line x1="{left - 4}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" class="tick">{value}</text>')
    parts.append(f'<text x="0" y="0" transform="translate(12,{10 + height / 2}) rotate(-90)" text-anchor="middle" '
                 'class="axis">per hour</text>')
    for hour in sorted(totals):
        y = 10.0 + height
        for h in sorted((h for h in rows if h["hour"] == hour), key=lambda h: h["cause"]):
            size = height * h["rebalances"] / peak
            y -= size
            parts.append(f'<rect x="{x(hour) + 1:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{size:.1f}" '
                         f'fill="{CAUSE_COLOURS.get(h["cause"], "#000")}"><title>{ts(hour)}: '
                         f'{plural(h["rebalances"], "rebalance")} {esc(h["cause"])}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


def zoomed(incident: dict[str, Any], rebalances: list[dict[str, Any]], states: list[dict[str, Any]]) -> str:
    """The incident's own timeline: its group's states from a little before its first rebalance to a little after
    its last, each rebalance a bar from its start to its end, over a time axis."""
    start: dt.datetime = incident["started_at"]
    end: dt.datetime = incident["ended_at"] or start
    margin = max((end - start) * 0.1, dt.timedelta(seconds=5))
    lo, hi = start - margin, end + margin
    x = _scale(lo, hi, 10, WIDTH - 10)
    parts = [f'<svg class="zoomed" width="{WIDTH}" height="{ROW * 2 + 4 + AXIS}" role="img" '
             f'aria-label="the incident\'s timeline">',
             time_axis(lo, hi, left=10, right=WIDTH - 10, top=2, bottom=ROW * 2 + 4)]
    for s in states:
        if s["group_id"] != incident["group_id"] or (s["ended_at"] and s["ended_at"] < lo) or s["started_at"] > hi:
            continue
        parts.append(_state_rect(s, x, 4, hi))
    for r in rebalances:
        x0, x1 = x(r["started_at"]), x(r["completed_at"] or r["started_at"])
        parts.append(f'<rect class="rebalance-bar" x="{x0:.1f}" y="{ROW + 2}" width="{max(x1 - x0, 3):.1f}" '
                     f'height="{ROW - 8}" fill="{CAUSE_COLOURS.get(r["cause"], "#000000")}">'
                     f"{_rebalance_title(r)}</rect>")
    parts.append("</svg>")
    return "".join(parts)
