"""`rebalance check`: the report of pipelines/flow/check.py as text, JSON or one self-contained HTML page."""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import sys
from typing import Any

from pipelines.settings.config import load_config


def cmd_check(args: argparse.Namespace, *, progress: Any) -> int:
    """Parse the landing as a run would, write nothing, print what can and cannot be read; exit 0 on any input."""
    from jobs.commands import _json_value, _spark
    from pipelines.flow.check import check_landing

    cfg = load_config(args.conf, {"landing": args.landing})
    spark = _spark(cfg, "rebalance-check", args)
    report = check_landing(spark, cfg, progress=progress)
    if args.format == "json":
        print(json.dumps(_json_value(report), indent=1))
    elif args.format == "html":
        sys.stdout.write(to_html(report))
    else:
        sys.stdout.write(to_text(report))
    return 0


def _ts(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def _offset(entry: dict[str, Any] | None, kind: str) -> str:
    if not entry and kind == "broker":
        return "broker (reference)"
    if not entry:
        return "not measurable (no join the coordinator's log shows too)"
    return f"{entry['offset_ms'] / 1000:+.3f} s against the coordinator (median of {entry['pairs']} joins)"


def _kind(d: dict[str, Any]) -> str:
    kinds = [k for k, n in (("broker", d["broker_events"]), ("client", d["client_events"]), ("gc", d["gc_pauses"]))
             if n]
    return "+".join(kinds) or "nothing typed"


def _group_line(g: dict[str, Any]) -> str:
    coordinator = f"coordinator log in {', '.join(g['coordinator_log'])}" if g["coordinator_log"] else \
        "NO coordinator log (only client rules apply)"
    members = len(g["members"])
    partial = ", ".join(f"{c} ({v['confidence']:.2g} of {v['best']:.2g})" for c, v in g["causes_partial"].items())
    return (f"  {g['group_id']}: {coordinator}; {len(g['members_tied'])} of {members} member processes tied to member "
            f"ids; GC logs for {len(g['members_with_gc'])} of {members}"
            + (f" ({', '.join(g['members_with_gc'])})" if g["members_with_gc"] else "")
            + f"; full confidence: {', '.join(g['causes_full']) or 'none'}; partial only: {partial or 'none'}"
            + (f"; out of reach: {', '.join(g['causes_out_of_reach'])}" if g["causes_out_of_reach"] else "") + "\n")


def to_text(report: dict[str, Any]) -> str:
    """The plain-text report: totals, one block per instance folder, one line per group, one per unreadable file."""
    inst = report["instances"]
    total = {k: sum(d[k] for d in inst) for k in ("lines_read", "typed", "quarantined", "unknown_wording", "untimed")}
    out = [f"landing {report['landing']}: {report['files']} files, {len(inst)} instance folders, "
           f"{len(report['groups'])} groups (nothing was written)\n",
           f"lines read {total['lines_read']}, typed {total['typed']}, quarantined {total['quarantined']} "
           f"(group-related but no known wording {total['unknown_wording']}, no usable time {total['untimed']})\n"]
    if report["problems"]:
        out.append(f"\nfiles that cannot be read as logs ({len(report['problems'])}):\n")
        out.extend(f"  {p['file']}: {p['problem']}\n" for p in report["problems"])
    out.append("\nper instance folder:\n")
    for d in inst:
        kind = _kind(d)
        out.append(f"  {d['instance']} [{kind}]: {d['files']} files, {d['lines_read']} lines read, {d['typed']} "
                   f"typed ({d['broker_events']} broker, {d['client_events']} client, {d['gc_pauses']} GC pauses), "
                   f"{d['quarantined']} quarantined\n")
        out.append(f"    time {_ts(d['first_ts'])} .. {_ts(d['last_ts'])} UTC; no usable time {d['untimed']}; time "
                   f"borrowed from a neighbour {d['time_borrowed']}, from line order {d['time_from_line_order']}; "
                   f"clock {_offset(d['clock_offset'], 'broker' if d['broker_events'] else 'client')}\n")
        other = {k: n for k, n in d["quarantine_reasons"].items() if k not in ("no_template", "no_timestamp")}
        if other:
            out.append("    also quarantined: " + ", ".join(f"{k} {n}" for k, n in other.items()) + "\n")
        shapes = d["unknown_shapes"]
        if d["unknown_wording"]:
            out.append(f"    group-related but no known wording: {d['unknown_wording']} lines in {shapes['shapes']} "
                       "shapes; commonest:\n")
            out.extend(f"      {s['lines']} x  {s['sample']}   ({s['file'].rsplit('/', 1)[-1]}:{s['line_no']})\n"
                       for s in shapes["top"])
    out.append("\nper group:\n")
    out.extend(_group_line(g) for g in report["groups"])
    if not report["groups"]:
        out.append("  no group named by any typed line\n")
    return "".join(out)


def _table(columns: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def to_html(report: dict[str, Any]) -> str:
    """The report as one self-contained HTML page (no script, no external file)."""
    inst = [[d["instance"], _kind(d), d["files"], d["lines_read"], d["typed"], d["gc_pauses"], d["quarantined"],
             d["unknown_wording"], d["untimed"], f"{_ts(d['first_ts'])} .. {_ts(d['last_ts'])}",
             _offset(d["clock_offset"], "broker" if d["broker_events"] else "client")] for d in report["instances"]]
    shapes = [[d["instance"], s["lines"], s["shape"], s["sample"]] for d in report["instances"]
              for s in d["unknown_shapes"]["top"]]
    groups = [[g["group_id"], ", ".join(g["coordinator_log"]) or "none: client rules only",
               f"{len(g['members_tied'])} of {len(g['members'])}", ", ".join(g["members_with_gc"]) or "none",
               ", ".join(g["causes_full"]) or "none",
               ", ".join(f"{c} ({v['confidence']:.2g} of {v['best']:.2g})" for c, v in g["causes_partial"].items())
               or "none"] for g in report["groups"]]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>rebalance check</title><style>"
        "body{font:14px sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}</style></head><body>",
        f"<h1>rebalance check: {html.escape(report['landing'])}</h1>",
        f"<p>{report['files']} files; nothing was written.</p>",
        "<h2>Files that cannot be read as logs</h2>",
        _table(["file", "problem"], [[p["file"], p["problem"]] for p in report["problems"]]),
        "<h2>Instance folders</h2>",
        _table(["instance", "kind", "files", "lines read", "typed", "GC pauses", "quarantined", "no known wording",
                "no usable time", "time span (UTC)", "clock"], inst),
        "<h2>Group-related lines with no known wording (commonest shapes)</h2>",
        _table(["instance", "lines", "shape", "sample"], shapes),
        "<h2>Groups</h2>",
        _table(["group", "coordinator log", "members tied to ids", "members with GC logs", "causes at full confidence",
                "causes from partial evidence only"], groups),
        "</body></html>\n",
    ]
    return "".join(parts)
