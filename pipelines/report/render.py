"""Render the report as one HTML page with inline SVG. Every text that comes from logs goes through `html.escape`,
so a group named `<script>` shows as text; the page has no scripts at all."""

from __future__ import annotations

import datetime as dt
import html
import itertools
from collections import defaultdict
from typing import Any

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


def esc(value: object) -> str:
    """Text from logs, escaped for HTML (attributes included)."""
    return html.escape("" if value is None else str(value), quote=True)


def _ts(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, dt.datetime) else esc(value)


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


def _timeline(groups: list[dict[str, Any]], states: list[dict[str, Any]], rebalances: list[dict[str, Any]],
              memberships: list[dict[str, Any]] | None = None) -> str:
    memberships = memberships or []
    times: list[dt.datetime] = [s["started_at"] for s in states] + [s["ended_at"] for s in states if s["ended_at"]]
    times += [r["started_at"] for r in rebalances]
    times += [t for t, _ in _membership_ticks(memberships)]
    if not times:
        return "<p>No group states yet.</p>"
    start, end = min(times), max(times)
    span = max((end - start).total_seconds(), 1.0)

    def x(t: dt.datetime) -> float:
        return LABEL + (WIDTH - LABEL - 10) * (t - start).total_seconds() / span

    by_group_states, by_group_rebalances, by_group_members = defaultdict(list), defaultdict(list), defaultdict(list)
    for s in states:
        by_group_states[s["group_id"]].append(s)
    for r in rebalances:
        by_group_rebalances[r["group_id"]].append(r)
    for m in memberships:
        by_group_members[m["group_id"]].append(m)
    height = ROW * len(groups) + 30
    parts = [f'<svg class="timeline" width="{WIDTH}" height="{height}" role="img" '
             f'aria-label="group states over time">']
    for i, group in enumerate(groups):
        y = 10 + i * ROW
        name = esc(group["group_id"])
        kind = group.get("group_type") or "consumer"
        parts.append(f'<rect class="group-type" x="0" y="{y + 5}" width="8" height="10" '
                     f'fill="{GROUP_TYPE_COLOURS.get(kind, "#7f7f7f")}"><title>{esc(kind)} group</title></rect>')
        parts.append(f'<text x="12" y="{y + 15}" class="label">{name}</text>')
        for s in by_group_states[group["group_id"]]:
            x0, x1 = x(s["started_at"]), x(s["ended_at"] or end)
            colour = STATE_COLOURS.get(s["state"], "#eeeeee")
            parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{ROW - 6}" '
                         f'fill="{colour}"><title>{esc(s["state"])} generation {esc(s["generation"])} from '
                         f'{_ts(s["started_at"])}</title></rect>')
        for at, protocol in _conversions(by_group_states[group["group_id"]]):
            parts.append(f'<line class="conversion" x1="{x(at):.1f}" x2="{x(at):.1f}" y1="{y - 2}" y2="{y + ROW - 4}" '
                         f'stroke="#000" stroke-dasharray="3,2"><title>{_ts(at)} converted to the {esc(protocol)} '
                         f'protocol</title></line>')
        for at, what in _membership_ticks(by_group_members[group["group_id"]]):
            parts.append(f'<line class="membership" x1="{x(at):.1f}" x2="{x(at):.1f}" y1="{y + 3}" '
                         f'y2="{y + ROW - 9}" stroke="{GROUP_TYPE_COLOURS["share"]}"><title>{_ts(at)} '
                         f'{esc(what)}</title></line>')
        for r in by_group_rebalances[group["group_id"]]:
            colour = CAUSE_COLOURS.get(r["cause"], "#000000")
            parts.append(f'<circle class="rebalance" cx="{x(r["started_at"]):.1f}" cy="{y + (ROW - 6) / 2}" r="5" '
                         f'fill="{colour}"><title>{_ts(r["started_at"])} {esc(r["cause"])} '
                         f'({esc(r["cause_detail"])}), {esc(r["duration_ms"])} ms</title></circle>')
    parts.append(f'<text x="{LABEL}" y="{height - 4}" class="axis">{_ts(start)} UTC</text>')
    parts.append(f'<text x="{WIDTH - 10}" y="{height - 4}" text-anchor="end" class="axis">{_ts(end)} UTC</text>')
    parts.append("</svg>")
    return "".join(parts)


def _hourly(hourly: list[dict[str, Any]]) -> str:
    if not hourly:
        return "<p>No rebalances yet.</p>"
    hours = sorted({h["hour"] for h in hourly})
    totals: defaultdict[dt.datetime, int] = defaultdict(int)
    for h in hourly:
        totals[h["hour"]] += h["rebalances"]
    peak = max(totals.values())
    bar = max(4, min(40, (WIDTH - 60) // max(len(hours), 1)))
    height = 200
    parts = [f'<svg class="hourly" width="{60 + bar * len(hours)}" height="{height + 40}" role="img" '
             f'aria-label="rebalances per hour by cause">']
    for i, hour in enumerate(hours):
        y = height
        for h in sorted((h for h in hourly if h["hour"] == hour), key=lambda h: h["cause"]):
            size = height * h["rebalances"] / peak
            y -= size
            parts.append(f'<rect x="{40 + i * bar}" y="{y:.1f}" width="{bar - 2}" height="{size:.1f}" '
                         f'fill="{CAUSE_COLOURS.get(h["cause"], "#000")}"><title>{_ts(hour)}: {h["rebalances"]} '
                         f'{esc(h["cause"])}</title></rect>')
    parts.append(f'<text x="0" y="12" class="axis">{peak}</text><text x="0" y="{height}" class="axis">0</text>')
    parts.append("</svg>")
    return "".join(parts)


def _benefit(advice: dict[str, Any]) -> str:
    """What the advice's change would have done on the group's own history (its gold_whatif figures)."""
    change = advice.get("whatif_change")
    if not change:
        return ""
    avoided, saved = advice.get("avoided_rebalances") or 0, (advice.get("saved_ms") or 0) / 1000
    return f"{change}: avoids {avoided} rebalance{'s' if avoided != 1 else ''} ({saved:.1f} s of rebalancing)"


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], css: str) -> str:
    if not rows:
        return "<p>None.</p>"
    head = "".join(f"<th>{esc(title)}</th>" for _, title in columns)
    body = []
    for row in rows:
        cells = []
        for key, _ in columns:
            value = row.get(key)
            if isinstance(value, list):
                value = ", ".join(str(v) for v in value)
            cells.append(f"<td>{_ts(value) if isinstance(value, dt.datetime) else esc(value)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _incidents(data: dict[str, list[dict[str, Any]]]) -> str:
    """One section per incident (its own anchor, `#incident-<id>`): a timeline zoomed to the incident, the evidence
    of each rebalance, the partitions each member gave up, received and lost with the reprocessing risk, and what
    the what-if says a changed setting would have done."""
    incidents = data["incidents"]
    if not incidents:
        return "<p>No incidents.</p>"
    by_incident: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for key in ("evidence", "churn", "whatif"):
        for row in data.get(key, []):
            by_incident[row["incident_id"]][key].append(row)
    rebalances = defaultdict(list)
    for r in data.get("rebalances", []):
        if r.get("incident_id"):
            rebalances[r["incident_id"]].append(r)
    index, parts = [], []
    for inc in incidents:
        rows = by_incident[inc["incident_id"]]
        anchor = f"incident-{esc(inc['incident_id'])}"
        index.append(f'<li><a href="#{anchor}">{esc(inc["summary"])}</a></li>')
        items = []
        for r in rows["evidence"]:
            lines = "".join(f"<li><code>{esc(ev['event_id'])}</code> {esc(ev['explanation'])}</li>"
                            for ev in (r["evidence"] or []))
            items.append(f"<li>{_ts(r['started_at'])} <b>{esc(r['cause'])}</b> ({esc(r['cause_detail'])})"
                         f"<ul>{lines}</ul></li>")
        churn = _table(rows["churn"], [("first_event_at", "from (UTC)"), ("member", "member"),
                                       ("revoked", "revoked"), ("assigned", "assigned"), ("lost", "lost"),
                                       ("kept", "kept"), ("reprocessing_risk", "reprocessing risk"),
                                       ("exposed_partitions", "exposed to duplicates")], "churn")
        whatif = _table(rows["whatif"], [("started_at", "rebalance (UTC)"), ("change", "change"),
                                         ("verdict", "verdict"), ("saved_ms", "saved (ms)"),
                                         ("delay_ms", "later by (ms)"), ("detail", "why")], "whatif")
        parts.append(f'<section class="incident" id="{anchor}"><h3>{esc(inc["summary"])}</h3>'
                     f"{_zoomed(inc, rebalances[inc['incident_id']], data['states'])}"
                     f'<details><summary>evidence</summary><ol>{"".join(items)}</ol></details>'
                     f"<h4>Partitions moved</h4>{churn}<h4>What a changed setting would have done</h4>{whatif}"
                     "</section>")
    return f'<ol class="incident-index">{"".join(index)}</ol>{"".join(parts)}'


def _zoomed(incident: dict[str, Any], rebalances: list[dict[str, Any]], states: list[dict[str, Any]]) -> str:
    """The incident's own timeline: its group's states from a little before its first rebalance to a little after
    its last, each rebalance a bar from its start to its end."""
    start: dt.datetime = incident["started_at"]
    end: dt.datetime = incident["ended_at"] or start
    margin = max((end - start) * 0.1, dt.timedelta(seconds=5))
    lo, hi = start - margin, end + margin
    span = max((hi - lo).total_seconds(), 1.0)

    def x(t: dt.datetime) -> float:
        return 10 + (WIDTH - 20) * (min(max(t, lo), hi) - lo).total_seconds() / span

    parts = [f'<svg class="zoomed" width="{WIDTH}" height="{ROW * 2 + 24}" role="img" '
             f'aria-label="the incident\'s timeline">']
    for s in states:
        if s["group_id"] != incident["group_id"] or (s["ended_at"] and s["ended_at"] < lo) or s["started_at"] > hi:
            continue
        x0, x1 = x(s["started_at"]), x(s["ended_at"] or hi)
        parts.append(f'<rect x="{x0:.1f}" y="4" width="{max(x1 - x0, 1):.1f}" height="{ROW - 6}" '
                     f'fill="{STATE_COLOURS.get(s["state"], "#eeeeee")}"><title>{esc(s["state"])} generation '
                     f'{esc(s["generation"])} from {_ts(s["started_at"])}</title></rect>')
    for r in rebalances:
        x0, x1 = x(r["started_at"]), x(r["completed_at"] or r["started_at"])
        parts.append(f'<rect class="rebalance-bar" x="{x0:.1f}" y="{ROW + 2}" width="{max(x1 - x0, 3):.1f}" '
                     f'height="{ROW - 8}" fill="{CAUSE_COLOURS.get(r["cause"], "#000000")}"><title>'
                     f'{_ts(r["started_at"])} {esc(r["cause"])} ({esc(r["cause_detail"])}), '
                     f'{esc(r["duration_ms"])} ms</title></rect>')
    parts.append(f'<text x="10" y="{ROW * 2 + 20}" class="axis">{_ts(lo)} UTC</text>')
    parts.append(f'<text x="{WIDTH - 10}" y="{ROW * 2 + 20}" text-anchor="end" class="axis">{_ts(hi)} UTC</text>')
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    causes = "".join(f'<span class="key"><i style="background:{c}"></i>{esc(n)}</span>'
                     for n, c in CAUSE_COLOURS.items())
    states = "".join(f'<span class="key"><i style="background:{c}"></i>{esc(n)}</span>'
                     for n, c in STATE_COLOURS.items())
    kinds = "".join(f'<span class="key"><i style="background:{c}"></i>{esc(n)}</span>'
                    for n, c in GROUP_TYPE_COLOURS.items())
    return (f'<p class="legend">Causes: {causes}</p><p class="legend">States: {states}</p>'
            f'<p class="legend">Group types: {kinds} (dashed line: a live protocol conversion; thin ticks: a share '
            f"group's members joining and leaving, never a rebalance)</p>")


STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
.label{font-size:12px}.axis{font-size:11px;fill:#666}.key{margin-right:12px;font-size:12px}
.key i{display:inline-block;width:10px;height:10px;margin-right:4px}.incident{margin:4px 0;font-size:13px}
code{font-size:11px;color:#555}h3{font-size:15px;margin-top:22px}h4{font-size:13px;margin:10px 0 4px}
"""


def render(data: dict[str, list[dict[str, Any]]], *, title: str = "Kafka rebalance report") -> str:
    """The whole page."""
    groups = data["groups"]
    lost = _table(groups, [("group_id", "group"), ("group_type", "type"), ("rebalances", "rebalances"),
                           ("unavailable_ms", "time without consuming (ms)"), ("last_cause", "last cause"),
                           ("membership_changes", "share membership changes")], "lost")
    alerts = _table(data["alerts"], [("opened_at", "opened (UTC)"), ("severity", "severity"), ("rule", "rule"),
                                     ("summary", "summary"), ("delivered_to", "delivered to")], "alerts")
    advice = _table([{**row, "benefit": _benefit(row)} for row in data["advice"]],
                    [("group_id", "group"), ("severity", "severity"), ("observed", "observed"), ("advice", "advice"),
                     ("benefit", "measured on this history")], "advice")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>{STYLE}</style></head><body>
<h1>{esc(title)}</h1>
<p>{len(data["rebalances"])} rebalances in {len(groups)} groups. Times are UTC.</p>
{_legend()}
<h2 id="timeline">Group timelines</h2>{_timeline(groups, data["states"], data["rebalances"], data.get("memberships"))}
<h2 id="hourly">Rebalances per hour by cause</h2>{_hourly(data["hourly"])}
<h2 id="lost">Groups that lost the most time</h2>{lost}
<h2 id="incidents">Incidents</h2>{_incidents(data)}
<h2 id="advice">Configuration advice</h2>{advice}
<h2 id="alerts">Alerts</h2>{alerts}
</body></html>
"""
