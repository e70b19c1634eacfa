"""Failures injected into real streaming runs; the tables are compared with the batch oracle afterwards."""

from __future__ import annotations

import shutil

import pytest
from pyspark.testing import assertDataFrameEqual

from pipelines import io
from pipelines.batch import build_batch
from pipelines.run import run
from tests.conftest import DATA, land, make_config

COMPARED = ["silver_events", "silver_gc_pauses", "gold_rebalances", "gold_group_states", "gold_member_sessions",
            "gold_incidents"]


def _same_as_oracle(spark, cfg) -> None:
    oracle = build_batch(spark, cfg)
    for name in COMPARED:
        streamed = io.read_table(spark, cfg, name)
        columns = [c for c in streamed.columns if c not in ("batch_id", "ingested_at")]
        assertDataFrameEqual(streamed.select(columns), oracle[name].select(columns))


def test_batch_replayed_after_its_commit_changes_nothing(spark, workspace):
    cfg = make_config(workspace)
    land(DATA / "landing" / "part1", cfg.landing)
    land(DATA / "landing" / "part2", cfg.landing)
    run(spark, cfg)
    counts = {name: io.read_table(spark, cfg, name).count() for name in COMPARED + ["bronze_log_lines"]}
    # Forget that batch 0 was committed: Spark replays it on restart, and Delta's txnVersion skips each write.
    for query in ("ingest", "reconstruct"):
        for name in ("0", ".0.crc"):
            (cfg.checkpoint_root / query / "commits" / name).unlink(missing_ok=True)
    replay = run(spark, cfg)
    assert replay.batches.get("ingest") == 1
    assert {name: io.read_table(spark, cfg, name).count() for name in counts} == counts
    _same_as_oracle(spark, cfg)


def test_crash_between_two_table_writes_of_one_batch(spark, workspace, monkeypatch):
    cfg = make_config(workspace)
    land(DATA / "landing" / "part1", cfg.landing)
    land(DATA / "landing" / "part2", cfg.landing)
    original, calls = io.append_once, []

    def crash_on_third(df, cfg_, name, **kwargs):
        calls.append(name)
        if len(calls) == 3:
            raise RuntimeError("injected crash between table writes")
        return original(df, cfg_, name, **kwargs)

    monkeypatch.setattr(io, "append_once", crash_on_third)
    with pytest.raises(Exception, match="injected crash"):
        run(spark, cfg)
    assert calls[:2] == ["bronze_log_lines", "silver_events"]
    monkeypatch.setattr(io, "append_once", original)
    run(spark, cfg)
    _same_as_oracle(spark, cfg)


def test_the_same_file_landed_twice_under_another_name(spark, workspace):
    cfg = make_config(workspace)
    land(DATA / "landing" / "part1", cfg.landing)
    run(spark, cfg)
    before = {name: io.read_table(spark, cfg, name).count() for name in COMPARED}
    source = next((cfg.landing / "broker-1").iterdir())
    shutil.copyfile(source, cfg.landing / "broker-1" / ".copy.partial")
    (cfg.landing / "broker-1" / ".copy.partial").rename(cfg.landing / "broker-1" / (source.name + ".copy"))
    again = run(spark, cfg)
    assert again.added["bronze_files"] == 1
    assert {name: io.read_table(spark, cfg, name).count() for name in COMPARED} == before
    files = io.read_table(spark, cfg, "bronze_files").filter("duplicate_of IS NOT NULL").collect()
    assert [f.duplicate_of.endswith(source.name) for f in files] == [True]
