"""A re-run with nothing new leaves the ingest stream unstarted only when the landing lists the files the last run
read and the checkpoint stands where that run left it (pipelines/flow/landing_seen.py). No Spark: the checkpoint's
logs are files, laid out here as Spark writes them."""

from __future__ import annotations

from pathlib import Path

from pipelines.flow.landing_seen import LandingCheck, landing_listing
from pipelines.storage import inputs
from tests.conftest import make_config


def _batch(cfg, batch_id: int, *, committed: bool = True) -> None:
    checkpoint = inputs.checkpoint_dir(cfg, inputs.INGEST_QUERY)
    for log in ("offsets", "commits") if committed else ("offsets",):
        (checkpoint / log).mkdir(parents=True, exist_ok=True)
        (checkpoint / log / str(batch_id)).write_text("v1\n")


def _file(root: Path, relative: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("line\n")


def _after_a_run(tmp_path):
    cfg = make_config(tmp_path)
    _file(cfg.landing, "broker-1/server.log")
    _file(cfg.landing, "app-1/app.log")
    _batch(cfg, 0)
    LandingCheck(cfg, classic=True).all_read()
    return cfg


def test_the_same_files_and_checkpoint_need_no_stream(tmp_path):
    cfg = _after_a_run(tmp_path)
    said: list[str] = []
    assert LandingCheck(cfg, classic=True).unchanged(said.append)
    assert said == ["ingest: the landing holds the same 2 files the last run read; the stream was not started"]
    # Files being copied in (a name starting with `.` or `_`, at any depth) are not read by the stream either.
    _file(cfg.landing, "app-1/.app.log.partial")
    _file(cfg.landing, "_staging/app-2/app.log")
    assert LandingCheck(cfg, classic=True).unchanged()


def test_a_new_removed_or_renamed_file_starts_the_stream(tmp_path):
    cfg = _after_a_run(tmp_path)
    _file(cfg.landing, "app-1/app.log.1")
    assert not LandingCheck(cfg, classic=True).unchanged()
    (cfg.landing / "app-1" / "app.log.1").unlink()
    assert LandingCheck(cfg, classic=True).unchanged()
    (cfg.landing / "app-1" / "app.log").rename(cfg.landing / "app-1" / "app.log.2")
    assert not LandingCheck(cfg, classic=True).unchanged()
    (cfg.landing / "app-1" / "app.log.2").unlink()
    assert not LandingCheck(cfg, classic=True).unchanged()


def test_a_checkpoint_that_moved_starts_the_stream(tmp_path):
    cfg = _after_a_run(tmp_path)
    _batch(cfg, 1, committed=False)  # a batch planned and never committed: the stream must finish it
    assert not LandingCheck(cfg, classic=True).unchanged()
    _batch(cfg, 1)  # committed since, by a run that kept no record of its landing
    assert not LandingCheck(cfg, classic=True).unchanged()
    LandingCheck(cfg, classic=True).all_read()
    assert LandingCheck(cfg, classic=True).unchanged()
    # A checkpoint deleted or rewound is not where the record left it.
    checkpoint = inputs.checkpoint_dir(cfg, inputs.INGEST_QUERY)
    for log in ("offsets", "commits"):
        (checkpoint / log / "1").unlink()
    assert not LandingCheck(cfg, classic=True).unchanged()


def test_no_record_another_landing_or_source_or_session_starts_the_stream(tmp_path):
    cfg = make_config(tmp_path)
    _file(cfg.landing, "app-1/app.log")
    assert not LandingCheck(cfg, classic=True).unchanged()  # no run has kept a record
    cfg = _after_a_run(tmp_path / "kept")
    moved = make_config(tmp_path / "kept", landing=tmp_path / "other")
    _file(moved.landing, "broker-1/server.log")
    _file(moved.landing, "app-1/app.log")
    assert landing_listing(moved) == landing_listing(cfg)
    assert not LandingCheck(moved, classic=True).unchanged()
    assert not LandingCheck(make_config(tmp_path / "kept", source_format="cloudFiles"), classic=True).unchanged()
    # Through Spark Connect the server reads the landing: this driver does not vouch for it.
    assert not LandingCheck(cfg, classic=False).unchanged()
