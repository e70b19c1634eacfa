"""Checks that `rebalance explain` can account for every rebalance of a replayed group (shared by the tests that
build an estate, the lab corpora and the real excerpts)."""

from __future__ import annotations

import gzip
from pathlib import Path
from urllib.parse import unquote, urlparse

from pipelines.gold.explain import explain
from pipelines.gold.rulebook import rule
from pipelines.gold.timeline import Timeline
from pipelines.settings.config import Thresholds


def landed_line(source_file: str, line_no: int) -> str:
    """Line `line_no` (1-based) of a landed file named by its URI or path."""
    path = Path(unquote(urlparse(source_file).path)) if "://" in source_file or source_file.startswith("file:") \
        else Path(source_file)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        for number, text in enumerate(fh, 1):
            if number == line_no:
                return text.rstrip("\n")
    raise AssertionError(f"{path} has no line {line_no}")


def check_explained(timeline: Timeline, stored: dict[str, dict], thresholds: Thresholds) -> int:
    """Every rebalance of `timeline` (replayed with trace=True) explained: one deciding rule, the stored row's, the
    trace in the rule book's order, and every event the evidence names on its line of a landed file. Returns how many
    were checked."""
    by_id = {e["event_id"]: e for e in timeline._events}
    for row in timeline.rebalances:
        rid = row["rebalance_id"]
        found = explain(timeline, rid, thresholds=thresholds, configured=set())
        decided = [s["rule"] for s in found["rules"] if s["status"] == "decided"]
        assert decided == [row["cause_rule"]], (rid, decided, row["cause_rule"])
        if rid in stored:
            assert stored[rid]["cause_rule"] == row["cause_rule"], (rid, stored[rid]["cause_rule"], row["cause_rule"])
            assert stored[rid]["cause"] == row["cause"], rid
        orders = [rule(r).order for r, _, _ in timeline.traces[rid]]
        assert orders == sorted(orders), (rid, timeline.traces[rid])
        placed = [by_id[i] for i in found["event_ids"] if i in by_id]
        assert placed, (rid, found["event_ids"])
        for event in placed:
            assert landed_line(event["source_file"], int(event["line_no"])).strip(), (rid, event["event_id"])
    return len(timeline.rebalances)
