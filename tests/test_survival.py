"""Failures injected into real streaming runs; the tables are compared with the batch oracle afterwards."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

from pipelines import io
from pipelines.batch import build_batch
from pipelines.errors import PipelineStateError
from pipelines.release import CHECKPOINT_LAYOUT
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


PREVIOUS = DATA / "previous-release" / "release-0.1.0.tar.gz"
# Spark's file source keeps absolute paths in its checkpoint: the archive is unpacked where 0.1.0 ran.
PREVIOUS_ROOT = Path("/tmp/rebalance-previous-release")


def test_todays_code_continues_a_previous_release_lakehouse(spark):
    shutil.rmtree(PREVIOUS_ROOT, ignore_errors=True)
    PREVIOUS_ROOT.mkdir(parents=True)
    with tarfile.open(PREVIOUS) as archive:
        archive.extractall(PREVIOUS_ROOT, filter="data")
    cfg = make_config(PREVIOUS_ROOT)
    assert not (cfg.checkpoint_root / "release.json").exists()
    land(DATA / "landing" / "part2", cfg.landing)
    summary = run(spark, cfg)
    # Only the new files were read: part1 was ingested by 0.1.0 and is not read again.
    assert summary.added["bronze_files"] == 2
    assert {"last_event_ts", "late_events"} <= set(io.read_table(spark, cfg, "silver_accounting").columns)
    _same_as_oracle(spark, cfg)
    assert json.loads((cfg.checkpoint_root / "release.json").read_text())["checkpoint_layout"] == CHECKPOINT_LAYOUT


def test_incompatible_checkpoints_or_tables_stop_with_a_message(spark, workspace):
    cfg = make_config(workspace)
    cfg.landing.mkdir(parents=True, exist_ok=True)
    cfg.checkpoint_root.mkdir(parents=True, exist_ok=True)
    (cfg.checkpoint_root / "release.json").write_text('{"release": "9.0.0", "checkpoint_layout": 99}')
    with pytest.raises(PipelineStateError, match=r"release 9\.0\.0 \(checkpoint layout 99\).*older"):
        run(spark, cfg)
    (cfg.checkpoint_root / "release.json").unlink()
    # A table whose column changed type since it was written: named, before any write.
    spark.createDataFrame([("x",)], "lines_read string").write.format("delta").save(
        str(cfg.lakehouse / "silver_accounting"))
    with pytest.raises(PipelineStateError, match="silver_accounting.*lines_read is string"):
        io.ensure_tables(spark, cfg)


def test_late_sources_are_counted_and_their_groups_rebuilt(spark, workspace):
    cfg = make_config(workspace, thresholds={"allowed_lateness_s": 60})
    land(DATA / "landing" / "part2", cfg.landing)
    run(spark, cfg)
    land(DATA / "landing" / "part1", cfg.landing)
    run(spark, cfg)
    acct = {r.source_file.rsplit("/", 1)[-1]: r for r in io.read_table(spark, cfg, "silver_accounting").collect()}
    # part1 is an hour older than part2: every one of its events is late; part2's are not.
    late = acct["server.log.2026-11-20-08"]
    assert late.late_events == late.event_lines > 0
    assert acct["server.log.2026-11-20-09"].late_events == 0
    _same_as_oracle(spark, cfg)
