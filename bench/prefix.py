"""`python -m bench.prefix LANDING`: would a replay from a snapshot give the rows the full replay gives? (issue #52)

A reconstruct batch replays each group it touches over the group's whole history, so the cost of an hour's increment
grows with the history before it (`python -m bench.history`). The issue's remedy is a snapshot: keep each group's
replay state at the lateness watermark and replay only what came after. That is only right if the rows the snapshot
leaves as they were (those that ended before the watermark) are the rows a full replay gives: no later event may
change them. This measures it on the logs of a landing directory (a lab run of real brokers and clients, public
excerpts, a simulated estate).

Every group of LANDING (`<landing>/<instance>/<file>`, parsed as the batch oracle parses them) is replayed over each
prefix of its history, its events up to a cut (every `--step-hours` of the clock), and the rows a snapshot at that
cut would have frozen (rebalances, state intervals, member sessions and churn rows that ended more than the allowed
lateness before it, and the what-if rows of those rebalances) are compared field by field with the full replay's,
both ways: a frozen row the full replay lacks or changed, and a row of the full replay that ended before the cut and
the prefix lacks. Each is one a snapshot replay would leave stale; the fields say what it would have to recompute.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pipelines.gold.records import TimelineEvent
from pipelines.gold.timeline import Rules, Timeline

# Each output of the replay: its key, and the column saying when a row ended (a row not ended is never frozen; a
# what-if row, None here, is frozen with the rebalance it weighs). Rebalances first: the what-if rows follow them.
FROZEN: dict[str, tuple[str, str | None]] = {
    "rebalances": ("rebalance_id", "completed_at"), "states": ("state_id", "ended_at"),
    "sessions": ("session_id", "left_at"), "churn": ("churn_id", "last_event_at"), "whatif": ("whatif_id", None)}


@dataclass
class Stability:
    """Per output: rows compared (a row frozen at several cuts counts at each), rows differing, the distinct rows
    frozen and differing, and how often each field differed (`(gone)`: the full replay has no such row; `(missing)`:
    the full replay has a row that ended before the cut and the prefix has not)."""

    compared: Counter[str] = field(default_factory=Counter)
    differing: Counter[str] = field(default_factory=Counter)
    rows: dict[str, set[str]] = field(default_factory=dict)
    rows_differing: dict[str, set[str]] = field(default_factory=dict)
    fields: Counter[str] = field(default_factory=Counter)

    def add(self, output: str, key: str, different: list[str]) -> None:
        """Count one frozen row of `output` and the fields in which it differs from the full replay."""
        self.compared[output] += 1
        self.rows.setdefault(output, set()).add(key)
        if different:
            self.differing[output] += 1
            self.rows_differing.setdefault(output, set()).add(key)
            self.fields.update(f"{output}.{name}" for name in different)

    def summary(self) -> dict[str, Any]:
        """The counts as JSON-ready values, per output and field."""
        return {output: {"compared": self.compared[output], "differing": self.differing[output],
                         "distinct_rows": len(self.rows.get(output, ())),
                         "distinct_rows_differing": len(self.rows_differing.get(output, ()))}
                for output in FROZEN} | {"fields": dict(sorted(self.fields.items()))}


def _outputs(timeline: Timeline) -> dict[str, dict[str, dict[str, Any]]]:
    """Each output's rows by key."""
    rows: dict[str, list[dict[str, Any]]] = {
        "rebalances": [dict(row) for row in timeline.rebalances], "states": list(timeline.states),
        "sessions": list(timeline.sessions.values()), "churn": list(timeline.churn), "whatif": list(timeline.whatif)}
    return {name: {str(row[FROZEN[name][0]]): row for row in rows[name]} for name in FROZEN}


def _frozen(name: str, row: dict[str, Any], before: pd.Timestamp, rebalances: set[str]) -> bool:
    """Whether a snapshot whose watermark is `before` has frozen `row` of output `name` (`rebalances`: the ids of
    the rebalances it has frozen)."""
    ended = FROZEN[name][1]
    if ended is None:
        return str(row.get("rebalance_id")) in rebalances
    value = row.get(ended)
    return value is not None and bool(pd.notna(value)) and value < before


def _frozen_rebalances(rows: dict[str, dict[str, Any]], before: pd.Timestamp) -> set[str]:
    return {key for key, row in rows.items() if _frozen("rebalances", row, before, set())}


def _replay(group_id: str, records: Iterable[TimelineEvent], rules: Rules) -> Timeline:
    return Timeline(group_id, list(records), rules)


def different_fields(row: dict[str, Any], full: dict[str, Any] | None) -> list[str]:
    """The public fields in which a prefix's row differs from the full replay's (`["(gone)"]` when it has none)."""
    if full is None:
        return ["(gone)"]
    return sorted(name for name in row.keys() | full.keys()
                  if not name.startswith("_") and str(row.get(name)) != str(full.get(name)))


def cuts(records: list[TimelineEvent], step: pd.Timedelta) -> Iterator[pd.Timestamp]:
    """The cuts of a group's history: every `step` after its first event, before its last. The watermark moves with
    the clock, not with the group's own lines, so a quiet stretch has cuts too (a snapshot there freezes rows that
    the first line after it may change); of the cuts with the same prefix only the last is kept (it freezes the
    most rows)."""
    times = sorted(r["event_ts"] for r in records if r.get("event_ts") is not None)
    if not times:
        return
    cut, last = times[0] + step, times[-1]
    while cut < last:
        following = cut + step
        if following >= last or bisect.bisect_right(times, following) != bisect.bisect_right(times, cut):
            yield cut
        cut = following


def group_stability(group_id: str, records: list[TimelineEvent], rules: Rules, *, step: pd.Timedelta,
                    lateness: pd.Timedelta, into: Stability) -> None:
    """Replay one group (its timeline input in time order) over each prefix and count, in `into`, the rows a
    snapshot at each cut would have frozen and how they differ from the full replay's, and the full replay's rows
    that ended before the cut and that the prefix lacks."""
    full = _outputs(_replay(group_id, records, rules))
    for cut in cuts(records, step):
        before = cut - lateness
        prefix = _outputs(_replay(group_id, [r for r in records if r.get("event_ts") is None or r["event_ts"] <= cut],
                                  rules))
        ours, theirs = _frozen_rebalances(prefix["rebalances"], before), _frozen_rebalances(full["rebalances"], before)
        for name in FROZEN:
            for key, row in prefix[name].items():
                if _frozen(name, row, before, ours):
                    into.add(name, key, different_fields(row, full[name].get(key)))
            for key, row in full[name].items():
                if key not in prefix[name] and _frozen(name, row, before, theirs):
                    into.add(name, key, ["(missing)"])


def replay_seconds(group_id: str, records: list[TimelineEvent], rules: Rules) -> dict[str, Any]:
    """One full replay of a group, timed: its events, rebalances and seconds."""
    started = time.perf_counter()
    timeline = _replay(group_id, records, rules)
    return {"events": len(records), "rebalances": len(timeline.rebalances),
            "seconds": round(time.perf_counter() - started, 3)}


def landing_records(landing: Path, work: Path) -> tuple[dict[str, list[TimelineEvent]], Rules, float]:
    """The timeline input of every group in `landing`, parsed as the batch oracle parses it (a local Spark session
    under `work`), with the replay's rules and the allowed lateness in seconds."""
    from pipelines.flow.batch import batch_tables
    from pipelines.gold.placement import gold_events
    from pipelines.gold.rebalances import rules_from, timeline_input, timeline_records
    from pipelines.session.spark import get_spark
    from pipelines.settings.config import load_config

    cfg = load_config(None, {"landing": landing, "lakehouse": work / "lakehouse"})
    rules = rules_from(cfg.thresholds)
    spark = get_spark(cfg, app_name="rebalance-prefix")
    try:
        # Only the oracle's silver frames are read: its gold frames are planned, never computed.
        with batch_tables(spark, cfg) as tables:
            frame = timeline_input(gold_events(tables["silver_events"]), tables["silver_gc_pauses"],
                                   min_pause_ms=rules.gc_pause_min_ms).toPandas()
    finally:
        spark.stop()
    groups = {str(group_id): timeline_records(rows) for group_id, rows in frame.groupby("group_id")}
    return groups, rules, cfg.thresholds.allowed_lateness_s


def main(argv: list[str] | None = None) -> int:
    """Measure the landing directory named on the command line; print the summary (and write it with `--out`)."""
    parser = argparse.ArgumentParser(prog="python -m bench.prefix", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("landing", type=Path, help="a landing directory: <landing>/<instance>/<file>")
    parser.add_argument("--step-hours", type=float, default=1.0, help="hours between two cuts (default 1)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/rebalance-prefix"),
                        help="scratch directory of the Spark session (default /tmp/rebalance-prefix)")
    parser.add_argument("--lateness-s", type=float,
                        help="freeze rows that ended this long before a cut (default: the configured allowed "
                             "lateness; shorter for logs of a few minutes, such as a lab run's)")
    parser.add_argument("--replay-only", action="store_true",
                        help="only time each group's full replay (pure Python, the events already in memory): the "
                             "share of a reconstruct batch a snapshot could save")
    parser.add_argument("--out", type=Path, help="also write the summary there as JSON")
    args = parser.parse_args(argv)
    if not args.landing.is_dir():
        parser.error(f"{args.landing}: not a directory")
    if args.step_hours <= 0:
        parser.error("--step-hours must be positive")
    groups, rules, lateness_s = landing_records(args.landing, args.work)
    lateness_s = lateness_s if args.lateness_s is None else args.lateness_s
    if args.replay_only:
        return _print(args.out, {"landing": str(args.landing), "groups": len(groups),
                                 "replay": {group_id: replay_seconds(group_id, records, rules)
                                            for group_id, records in sorted(groups.items())}})
    stability = Stability()
    for number, (group_id, records) in enumerate(sorted(groups.items()), 1):
        print(f"[prefix] group {number}/{len(groups)}: {group_id} ({len(records)} events)", file=sys.stderr)
        group_stability(group_id, records, rules, step=pd.Timedelta(hours=args.step_hours),
                        lateness=pd.Timedelta(seconds=lateness_s), into=stability)
    summary = {"landing": str(args.landing), "groups": len(groups), "step_hours": args.step_hours,
               "lateness_s": lateness_s, **stability.summary()}
    return _print(args.out, summary)


def _print(out: Path | None, summary: dict[str, Any]) -> int:
    text = json.dumps(summary, indent=1)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
