"""The top of the report, for whoever is on call: the period in one sentence, the groups and incidents that cost the
most, and what to change (the configuration advice, the changes that would have saved the most first)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from pipelines.report.incidents import anchor, headline
from pipelines.report.text import duration, esc, plural

SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}
SHOWN = 3  # groups and incidents named at the top; the rest are further down
ADVICE_SHOWN = 5


def benefit(advice: dict[str, Any]) -> str:
    """What the advice's change would have done on the group's own history (its gold_whatif figures)."""
    change = advice.get("whatif_change")
    if not change:
        return ""
    avoided = advice.get("avoided_rebalances") or 0
    return f"{change}: avoids {plural(avoided, 'rebalance')} ({duration(advice.get('saved_ms') or 0)} of rebalancing)"


def _period(data: dict[str, list[dict[str, Any]]]) -> str:
    rebalances = data["rebalances"]
    groups = [g for g in data["groups"] if g.get("rebalances")]
    if not rebalances:
        return "<p>No rebalances in this period.</p>"
    first, last = min(r["started_at"] for r in rebalances), max(r["started_at"] for r in rebalances)
    lost = sum(r["duration_ms"] or 0 for r in rebalances)
    open_alerts = sum(1 for a in data["alerts"] if not a.get("closed_at"))
    return (f'<p class="lead">{plural(len(rebalances), "rebalance")} in {plural(len(groups), "group")} from '
            f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC: <b>{duration(lost)}</b> without consuming in all; "
            f'{plural(len(data["incidents"]), "incident")}, {plural(len(data["alerts"]), "alert")} '
            f"({open_alerts} still open).</p>")


def _worst_groups(data: dict[str, list[dict[str, Any]]]) -> str:
    causes: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in data["rebalances"]:
        causes[r["group_id"]][r["cause"]] += 1
    ranked = sorted((g for g in data["groups"] if g.get("rebalances")),
                    key=lambda g: (-(g.get("unavailable_ms") or 0), str(g["group_id"])))[:SHOWN]
    items = []
    for g in ranked:
        top = causes[g["group_id"]].most_common(1)
        mostly = f", mostly {esc(top[0][0])} ({top[0][1]})" if top else ""
        items.append(f"<li><b>{esc(g['group_id'])}</b>: {duration(g.get('unavailable_ms'))} without consuming in "
                     f"{plural(g['rebalances'], 'rebalance')}{mostly}</li>")
    return f"<h3>Groups that lost the most time</h3><ol>{''.join(items)}</ol>" if items else ""


def _worst_incidents(data: dict[str, list[dict[str, Any]]]) -> str:
    ranked = sorted(data["incidents"], key=lambda i: (-(i.get("unavailable_ms") or 0), str(i["incident_id"])))
    items = [f'<li><a href="#{anchor(i["incident_id"])}">{headline(i)}</a>, from '
             f"{i['started_at']:%Y-%m-%d %H:%M:%S} UTC</li>" for i in ranked[:SHOWN]]
    return f"<h3>Worst incidents</h3><ol>{''.join(items)}</ol>" if items else ""


def _what_to_change(advice: list[dict[str, Any]]) -> str:
    ranked = sorted(advice, key=lambda a: (SEVERITY_ORDER.get(a.get("severity") or "", 3),
                                           -(a.get("saved_ms") or 0), str(a["group_id"]), str(a.get("rule"))))
    items = []
    for a in ranked[:ADVICE_SHOWN]:
        gain = benefit(a)
        items.append(f"<li><b>{esc(a['group_id'])}</b> ({esc(a.get('severity'))}): {esc(a['advice'])}. "
                     f'<span class="muted">Seen: {esc(a.get("observed"))}.'
                     f"{' Measured on this history: ' + esc(gain) + '.' if gain else ''}</span></li>")
    more = '<p><a href="#advice">all the advice, with what each setting is now</a></p>'
    return f"<h3>What to change</h3><ol>{''.join(items)}</ol>{more}" if items else ""


def overview(data: dict[str, list[dict[str, Any]]]) -> str:
    """The estate-level summary that opens the report."""
    return (f'<section class="overview" id="summary">{_period(data)}{_worst_groups(data)}'
            f"{_worst_incidents(data)}{_what_to_change(data['advice'])}</section>")
