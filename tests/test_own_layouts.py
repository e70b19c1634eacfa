"""A source's own layout (`sources[].pattern`, `sources[].ts_format`) read the same way by `rebalance parse` and
`rebalance run`, and a pattern that stops matching its folder reported instead of silently bypassed."""

from __future__ import annotations

import datetime as dt
import json

import yaml

from jobs.cli import main
from pipelines.flow.run import run
from pipelines.storage import lake
from tests.conftest import SPARK_SETTINGS, make_config
from tests.test_layouts import PIPE_LINES, PIPE_PATTERN
from tests.test_pipeline import OWN_LAYOUT_LINES, OWN_PATTERN

# Every layout file of the layout tests, each in a folder its own rule reads.
SOURCES = [
    {"instances": "pipe-*", "pattern": PIPE_PATTERN},
    {"instances": "legacy-*", "pattern": OWN_PATTERN},
    {"instances": "odd-*", "pattern": PIPE_PATTERN, "tz": "Europe/Paris", "ts_format": "dd.MM.yyyy HH'h'mm'm'ss"},
    # A pattern that matches none of its folder's lines: the built-in layouts read them, and the miss is counted.
    {"instances": "stale-*", "pattern": r"^(?P<ts>\S+) >> (?P<msg>.*)$"},
    {"instances": "*"},
]
FILES = {
    "pipe-broker/server.log": [line for _, line in PIPE_LINES],
    "legacy-7/app.log": OWN_LAYOUT_LINES,
    "odd-1/app.log": ["19.11.2026 10h00m02|INFO|[GroupCoordinator 1]: Stabilized group orders generation 4 "
                      "(__consumer_offsets-12) with 2 members"],
    "stale-3/server.log": ["[2026-11-19 09:00:03,000] INFO [GroupCoordinator 1]: Stabilized group billing "
                           "generation 5 (__consumer_offsets-2) with 1 members "
                           "(kafka.coordinator.group.GroupCoordinator)"],
}
KEYS = ("line_no", "event_type", "group_id", "generation", "event_ts")


def _landing(root):
    for name, lines in FILES.items():
        path = root / "landing" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    return root / "landing"


def test_parse_and_run_give_the_same_events_for_every_own_layout(spark, tmp_path, capsys):
    landing = _landing(tmp_path)
    conf = tmp_path / "own.yml"
    conf.write_text(yaml.safe_dump({"spark": SPARK_SETTINGS, "sources": SOURCES}))
    files = sorted(str(landing / name) for name in FILES)
    assert main(["parse", *files, "--conf", str(conf)]) == 0
    out, err = capsys.readouterr()
    parsed = {(e["source_file"].split("landing/")[-1], *(e.get(k) for k in KEYS)) for e in map(json.loads,
                                                                                               out.splitlines())}
    cfg = make_config(tmp_path, sources=SOURCES)
    run(spark, cfg, stages=("ingest",))
    stored = {(r.source_file.split("landing/")[-1], r.line_no, r.event_type, r.group_id, r.generation,
               r.event_ts.isoformat()) for r in lake.read_table(spark, cfg, "silver_events").collect()}
    as_stored = {(f, n, t, g, gen, dt.datetime.fromisoformat(ts).replace(tzinfo=None).isoformat())
                 for f, n, t, g, gen, ts in parsed}
    assert as_stored == stored
    # Every line of every layout is an event with its own time: none inferred, none from the line order.
    assert len(stored) == sum(len(lines) for lines in FILES.values())
    assert ("odd-1/app.log", 1, "group_stabilized", "orders", 4, "2026-11-19T09:00:02") in stored
    assert ("pipe-broker/server.log", 1, "rebalance_started", "orders", 3, "2026-11-19T09:00:00") in stored

    summary = {f["file"].split("landing/")[-1]: f for f in json.loads(err.strip().splitlines()[-1])["files"]}
    assert summary["stale-3/server.log"]["own_layout_missed"] == 1
    assert "own_layout_missed" not in summary["pipe-broker/server.log"]
    accounted = {r.source_file.split("landing/")[-1]: r for r in lake.read_table(spark, cfg, "silver_accounting")
                 .select("source_file", "own_layout_missed_lines", "own_layout_miss_sample").collect()}
    assert accounted["stale-3/server.log"].own_layout_missed_lines == 1
    assert accounted["stale-3/server.log"].own_layout_miss_sample.startswith("[2026-11-19 09:00:03,000] INFO")
    assert accounted["pipe-broker/server.log"].own_layout_missed_lines == 0
    assert accounted["legacy-7/app.log"].own_layout_missed_lines == 0
