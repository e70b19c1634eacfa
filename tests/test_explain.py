"""`rebalance explain`: every rebalance of the test estate explained by one deciding rule that rests on landed lines;
the command's text and JSON; an unknown id or a time with no rebalance exits 2 saying how to list them."""

from __future__ import annotations

import json

from jobs.cli import main
from jobs.explain import group_timeline
from pipelines.storage import lake
from pipelines.storage.lake import register_views
from tests.explaining import check_explained, landed_line

CONF = "spark:\n  master: local[2]\n  shuffle_partitions: 2\n  driver_memory: 2g\n"


def _stored(spark, cfg) -> dict[str, dict]:
    rows = lake.read_table(spark, cfg, "gold_rebalances").collect()
    return {r.rebalance_id: r.asDict(recursive=True) for r in rows}


def test_every_rebalance_of_the_estate_is_explained(spark, estate):
    cfg = estate["cfg"]
    stored = _stored(spark, cfg)
    register_views(spark, cfg)
    checked = 0
    for group in sorted({r["group_id"] for r in stored.values()}):
        checked += check_explained(group_timeline(spark, cfg, group, trace=True), stored, cfg.thresholds)
    assert checked == len(stored) > 10
    assert {r["cause_rule"] for r in stored.values()} >= {"expiry_during_gc_pause", "plain_session_expiry"}


def _cli(tmp_path, cfg, *args: str) -> int:
    conf = tmp_path / "explain.yml"
    conf.write_text(CONF)
    return main(["explain", *args, "--conf", str(conf), "--lakehouse", str(cfg.lakehouse)])


def test_explain_prints_the_deciding_rule_and_its_lines(spark, estate, tmp_path, capsys):
    cfg = estate["cfg"]
    stored = _stored(spark, cfg)
    gc = next(r for r in stored.values() if r["cause"] == "gc_pause")
    assert _cli(tmp_path, cfg, gc["rebalance_id"]) == 0
    text = capsys.readouterr().out
    assert f"decided by rule {gc['cause_rule']}" in text
    assert "DECIDED      expiry_during_gc_pause" in text
    assert "gc_pause_min_ms = " in text and "the lines it rests on:" in text
    assert _cli(tmp_path, cfg, gc["rebalance_id"], "--format", "json") == 0
    found = json.loads(capsys.readouterr().out)
    assert found["cause_rule"] == gc["cause_rule"] and found["stored_differs"] == []
    assert found["lines"] and all(landed_line(line["source_file"], line["line_no"]) == line["text"]
                                  for line in found["lines"])
    at = gc["started_at"].isoformat() + "Z"
    assert _cli(tmp_path, cfg, "--group", gc["group_id"], "--at", at, "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)["rebalance"]["rebalance_id"] == gc["rebalance_id"]


def test_unknown_rebalance_exits_2_saying_how_to_list_them(spark, estate, tmp_path, capsys):
    cfg = estate["cfg"]
    assert _cli(tmp_path, cfg, "no-such-rebalance") == 2
    err = capsys.readouterr().err
    assert "no rebalance 'no-such-rebalance'" in err and "rebalance sql" in err
    assert _cli(tmp_path, cfg, "--group", "nobody", "--at", "2026-11-20T08:00:00Z") == 2
    assert "has no rebalance started" in capsys.readouterr().err
