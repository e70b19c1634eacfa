"""The incidents section: one section per incident with its zoomed timeline, its evidence, what each rebalance did
to the partitions (summed up, the per-member list folded away) and what a changed setting would have done."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pipelines.report.charts import zoomed
from pipelines.report.tables import table
from pipelines.report.text import duration, esc, incident_line, plural, ts

# The reprocessing risks of gold_partition_churn, the worst first.
RISKS = ("commit_failed", "partitions_lost", "none")
RISK_WORDS = {
    "commit_failed": "offsets not committed: records processed again",
    "partitions_lost": "partitions lost without a revoke: records may be processed again",
    "none": "none",
}


def anchor(incident_id: object) -> str:
    """The id of an incident's section."""
    return f"incident-{esc(incident_id)}"


def headline(incident: dict[str, Any]) -> str:
    """An incident in a line (`incident_line`), escaped."""
    return esc(incident_line(incident))


def _moved(rows: list[dict[str, Any]], key: str, word: str) -> str:
    """`12 from 6 members`: the partitions the members `key` (revoked, assigned, lost), and by whom when only one or
    two members did (escaped)."""
    members = [r for r in rows if r.get(key)]
    if not members:
        return "none"
    total = sum(r[key] for r in members)
    who = ", ".join(str(r["member"]) for r in members) if len(members) <= 2 else plural(len(members), "member")
    return esc(f"{plural(total, 'partition')} {word} {who}")


def churn_summary(churn: list[dict[str, Any]]) -> str:
    """Per rebalance: the partitions given up, assigned and lost (and by whom, when one or two members), and the
    worst reprocessing risk (with the partitions exposed to duplicates); then every member's row, folded away."""
    if not churn:
        return "<p>No partition moves recorded.</p>"
    by_rebalance: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in churn:
        by_rebalance[row["rebalance_id"]].append(row)
    summary = []
    for rows in by_rebalance.values():
        risk = min((r["reprocessing_risk"] or "none" for r in rows),
                   key=lambda v: RISKS.index(v) if v in RISKS else 0)
        exposed = sorted({p for r in rows for p in (r["exposed_partitions"] or [])})
        starts = [r["first_event_at"] for r in rows if r["first_event_at"]]
        summary.append({
            "at": f"{min(starts):%H:%M:%S}" if starts else "", "gave": _moved(rows, "revoked", "from"),
            "gained": _moved(rows, "assigned", "to"), "lost": _moved(rows, "lost", "by"),
            "risk": RISK_WORDS.get(risk, risk) + (f" ({plural(len(exposed), 'partition')} exposed)" if exposed else ""),
        })
    head = table(summary, [("at", "rebalance (UTC)"), ("gave", "given up"), ("gained", "assigned"),
                           ("lost", "lost"), ("risk", "risk")], "churn-summary",
                 raw=("gave", "gained", "lost"))
    full = table(churn, [("first_event_at", "from (UTC)"), ("member", "member"), ("revoked", "revoked"),
                         ("assigned", "assigned"), ("lost", "lost"), ("kept", "kept"),
                         ("reprocessing_risk", "reprocessing risk"), ("exposed_partitions", "exposed to duplicates")],
                 "churn")
    return (f"{head}<details><summary>every member ({plural(len(churn), 'row')})</summary>{full}</details>")


def _whatif(rows: list[dict[str, Any]]) -> str:
    shown = [{**r, "saved": duration(r["saved_ms"]) if r.get("saved_ms") else "",
              "later": duration(r["delay_ms"]) if r.get("delay_ms") else ""} for r in rows]
    return table(shown, [("started_at", "rebalance (UTC)"), ("change", "change"), ("verdict", "verdict"),
                         ("saved", "saved"), ("later", "later by"), ("detail", "why")], "whatif")


def incidents(data: dict[str, list[dict[str, Any]]]) -> str:
    """An index of the incidents, then one section per incident (its own anchor, `#incident-<id>`)."""
    rows = data["incidents"]
    if not rows:
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
    for inc in rows:
        mine, href = by_incident[inc["incident_id"]], anchor(inc["incident_id"])
        index.append(f'<li><a href="#{href}">{headline(inc)}</a> <span class="muted">from '
                     f"{ts(inc['started_at'])} UTC</span></li>")
        items = []
        for r in mine["evidence"]:
            lines = "".join(f"<li><code>{esc(ev['event_id'])}</code> {esc(ev['explanation'])}</li>"
                            for ev in (r["evidence"] or []))
            doubts = "".join(f"<li>not ruled out: <b>{esc(a['cause'])}</b> ({a['confidence']:.2f}), decided by "
                             f"{esc(a['decided_by'])}</li>" for a in (r.get("cause_alternatives") or []))
            rule = (f' <span class="muted">rule <code>{esc(r["cause_rule"])}</code></span>'
                    if r.get("cause_rule") else "")
            items.append(f"<li>{ts(r['started_at'])} <b>{esc(r['cause'])}</b> ({esc(r['cause_detail'])}){rule}"
                         f"<ul>{lines}{doubts}</ul></li>")
        until = f" to {ts(inc['ended_at'])}" if inc.get("ended_at") else ""
        facts = f"{ts(inc['started_at'])}{until} UTC"
        parts.append(f'<section class="incident" id="{href}"><h3>{headline(inc)}</h3>'
                     f'<p class="muted">{facts}</p><div class="chart">'
                     f"{zoomed(inc, rebalances[inc['incident_id']], data['states'])}</div>"
                     f'<details><summary>evidence ({plural(len(items), "rebalance")})</summary>'
                     f'<ol>{"".join(items)}</ol></details>'
                     f"<h4>Partitions moved</h4>{churn_summary(mine['churn'])}"
                     f"<h4>What a changed setting would have done</h4>{_whatif(mine['whatif'])}"
                     '<p><a href="#top">back to the summary</a></p></section>')
    return f'<ol class="incident-index">{"".join(index)}</ol>{"".join(parts)}'
