"""Render the report as one HTML page with inline SVG. Every text that comes from logs goes through `html.escape`,
so a group named `<script>` shows as text; the page has no scripts at all. It opens with what an on-call engineer
needs (`overview`), then the charts, the incidents and the details."""

from __future__ import annotations

from typing import Any

from pipelines.report.charts import CAUSE_COLOURS, GROUP_TYPE_COLOURS, STATE_COLOURS, hourly, timeline
from pipelines.report.incidents import incidents
from pipelines.report.overview import benefit, overview
from pipelines.report.tables import table
from pipelines.report.text import duration, esc


def _legend() -> str:
    def keys(colours: dict[str, str]) -> str:
        return "".join(f'<span class="key"><i style="background:{c}"></i>{esc(n)}</span>' for n, c in colours.items())

    return (f'<p class="legend">Causes: {keys(CAUSE_COLOURS)}</p><p class="legend">States: {keys(STATE_COLOURS)}</p>'
            f'<p class="legend">Group types: {keys(GROUP_TYPE_COLOURS)} (dashed line: a live protocol conversion; '
            "thin ticks: a share group's members joining and leaving, never a rebalance)</p>")


STYLE = """
body{font-family:system-ui,sans-serif;margin:24px auto;padding:0 16px;color:#222;max-width:1040px;line-height:1.4}
h1{font-size:22px}.note{background:#fff8e1;border-left:3px solid #f0b400;padding:4px 8px;font-size:13px}
h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 6px}h4{font-size:13px;margin:10px 0 4px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;
vertical-align:top;overflow-wrap:break-word}th{background:#f6f6f6}
.scroll,.chart{overflow-x:auto;max-width:100%}.chart svg{display:block}
.label{font-size:12px}.axis{font-size:11px;fill:#666}.tick{font-size:11px;fill:#444}
.key{margin-right:12px;font-size:12px;white-space:nowrap}
.key i{display:inline-block;width:10px;height:10px;margin-right:4px}
.incident{margin:4px 0 20px;font-size:13px;border-top:1px solid #eee}.muted{color:#666}
.lead{font-size:15px}.overview ol{padding-left:22px}.overview li{margin:3px 0}
code{font-size:11px;color:#555;overflow-wrap:anywhere}li{overflow-wrap:anywhere}summary{cursor:pointer}
@media (max-width:600px){body{margin:12px auto;padding:0 10px}h1{font-size:19px}
thead{display:none}table,tbody,tr,td{display:block}tr{border:1px solid #ddd;margin:0 0 8px;padding:4px 6px}
td{border:0;padding:1px 0;overflow-wrap:anywhere}td:empty{display:none}td::before{content:attr(data-label) ": ";
color:#666}}
"""


def spared(row: dict[str, Any]) -> list[str]:
    """The groups an estate incident spared, each with why when the row says (older rows name the group alone)."""
    whys = {w["group_id"]: w["why"] for w in row.get("groups_unaffected_why") or []}
    return [f"{g} ({whys[g]})" if g in whys else g for g in row.get("groups_unaffected") or []]


def render(data: dict[str, list[dict[str, Any]]], *, title: str = "Kafka rebalance report",
           notes: list[str] | None = None) -> str:
    """The whole page; `notes` (how fresh the derived tables are) go under the title."""
    groups = data["groups"]
    lost = table([{**g, "lost": duration(g.get("unavailable_ms"))} for g in groups],
                 [("group_id", "group"), ("group_type", "type"), ("rebalances", "rebalances"),
                  ("lost", "time without consuming"), ("last_cause", "last cause"),
                  ("membership_changes", "share membership changes")], "lost")
    alerts = table(data["alerts"], [("opened_at", "opened (UTC)"), ("severity", "severity"), ("rule", "rule"),
                                    ("summary", "summary"), ("delivered_to", "delivered to")], "alerts")
    advice = table([{**row, "benefit": benefit(row)} for row in data["advice"]],
                   [("group_id", "group"), ("severity", "severity"), ("observed", "observed"),
                    ("configured", "configured"), ("advice", "advice"), ("benefit", "measured on this history")],
                   "advice")
    estate = table([{**row, "lost": duration(row.get("unavailable_group_ms")), "groups_unaffected": spared(row)}
                    for row in data.get("estate", [])],
                   [("started_at", "started (UTC)"), ("root_kind", "root"), ("root_instance", "root folder"),
                    ("groups", "groups rebalanced"), ("groups_unaffected", "groups it spared"),
                    ("lost", "group time without consuming"), ("summary", "summary")], "estate")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>{STYLE}</style></head><body>
<h1 id="top">{esc(title)}</h1>
{"".join(f'<p class="note">{esc(note)}</p>' for note in notes or [])}
{overview(data)}
<h2 id="timeline">Group timelines</h2>{_legend()}<div class="chart">{timeline(groups, data["states"],
                                                                               data["rebalances"],
                                                                               data.get("memberships"))}</div>
<h2 id="hourly">Rebalances per hour by cause</h2><div class="chart">{hourly(data["hourly"])}</div>
<h2 id="lost">Groups that lost the most time</h2>{lost}
<h2 id="estate">Estate incidents: one cause, several groups</h2>{estate}
<h2 id="incidents">Incidents</h2>{incidents(data)}
<h2 id="advice">Configuration advice</h2>{advice}
<h2 id="alerts">Alerts</h2>{alerts}
</body></html>
"""
