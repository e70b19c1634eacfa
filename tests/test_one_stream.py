"""A continuous run in one process ingests and rebuilds in one micro-batch; the reconstruct stream catches up on what
no such batch rebuilt and skips what one did (`pipelines.flow.one_stream`, `pipelines.state.rebuilt`)."""

from __future__ import annotations

import threading
import time

from pipelines.flow import one_stream
from pipelines.flow.landing_names import unreadable_line
from pipelines.flow.run import run
from pipelines.flow.stopping import StopRequest
from pipelines.state import rebuilt
from pipelines.storage import lake
from tests.conftest import DATA, continuous_run, land, make_config
from tests.test_survival import _each_key_once, _same_as_oracle


def test_the_record_keeps_ranges_and_forgets_only_what_it_is_told(tmp_path):
    cfg = make_config(tmp_path)
    assert rebuilt.recorded(cfg) == ()
    for batch_id in (3, 4, 5, 9, 7, 8):
        rebuilt.mark(cfg, batch_id)
    assert rebuilt.recorded(cfg) == ((3, 5), (7, 9))
    assert rebuilt.is_recorded(rebuilt.recorded(cfg), 8) and not rebuilt.is_recorded(rebuilt.recorded(cfg), 6)
    # What a reconstruct stream passed is forgotten; a batch recorded after it looked stays.
    rebuilt.forget(cfg, ((3, 5), (8, 8)))
    assert rebuilt.recorded(cfg) == ((7, 7), (9, 9))
    rebuilt.forget(cfg, ((7, 9),))
    assert rebuilt.recorded(cfg) == ()
    assert not (cfg.checkpoint_root / rebuilt.FILE).exists()
    # A damaged record names nothing: its batches are rebuilt again, never skipped.
    (cfg.checkpoint_root / rebuilt.FILE).write_text('{"ranges": [[1,', encoding="utf-8")
    assert rebuilt.recorded(cfg) == ()


def test_skip_leaves_out_the_recorded_batches(spark):
    rows = spark.createDataFrame([(b,) for b in range(10)], "batch_id long")
    kept = rows.filter(rebuilt.skip(((2, 4), (7, 7)), rows.batch_id))
    assert sorted(r.batch_id for r in kept.collect()) == [0, 1, 5, 6, 8, 9]


def test_a_continuous_run_rebuilds_in_its_ingest_batch_and_the_next_run_skips_it(spark, tmp_path):
    """An ingest-only run leaves batch 0 for the reconstruct stream; a continuous run first catches up on it, then
    rebuilds its own batch 1 in the batch that ingested it and records it; the next available-now run's reconstruct
    stream passes batch 1 without rebuilding it and forgets it. The tables equal the batch oracle throughout."""
    cfg = make_config(tmp_path)
    land(DATA / "landing" / "part1", cfg.landing)
    run(spark, cfg, stages=("ingest",))
    assert lake.read_table(spark, cfg, "gold_rebalances").count() == 0
    land(DATA / "landing" / "part2", cfg.landing)
    with continuous_run(spark, cfg) as failure:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not failure and not rebuilt.recorded(cfg):
            time.sleep(0.5)
        assert failure == [] and rebuilt.recorded(cfg) == ((1, 1),), f"batch 1 not rebuilt in 240 s: {failure}"
    # Only the ingest stream ran after the catch-up: the reconstruct stream's checkpoint holds one batch (batch 0's).
    assert sorted(p.name for p in (cfg.checkpoint_root / "reconstruct" / "commits").iterdir()
                  if not p.name.startswith(".")) == ["0"]
    said: list[str] = []
    after = run(spark, cfg, on_progress=said.append)
    assert after.batches.get("reconstruct") == 1
    assert not [line for line in said if line.startswith("reconstruct batch")], said
    assert rebuilt.recorded(cfg) == ()
    _same_as_oracle(spark, cfg)
    _each_key_once(spark, cfg)


def test_a_long_continuous_run_moves_the_reconstruct_checkpoint_up_between_batches(spark, tmp_path, monkeypatch):
    """A one-stream run moves the reconstruct stream's checkpoint past the batches it rebuilt on the derived turn (here
    every turn), so a run that lasts longer than the tables' log retention, or whose compaction replaced the files of
    older versions, leaves no checkpoint naming a version gone; nothing is rebuilt twice and the record is forgotten."""
    monkeypatch.setattr(one_stream, "ADVANCE_EVERY_S", 0.0)
    cfg = make_config(tmp_path, derived_every_s=1)
    land(DATA / "landing" / "part1", cfg.landing)
    said: list[str] = []

    def moved_past(batch_id: int) -> bool:
        for line in said:
            if line.startswith("reconstruct stream moved past one-stream batches "):
                ranges = line.split("batches ")[1].split(" (")[0].split(", ")
                if any(int(r.split("-")[0]) <= batch_id <= int(r.split("-")[-1]) for r in ranges):
                    return True
        return False

    with continuous_run(spark, cfg, on_progress=said.append) as failure:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not failure and not moved_past(0):
            time.sleep(0.5)
        land(DATA / "landing" / "part2", cfg.landing)
        # A file no run can read, landed while the run goes on: the run says so on the derived refresh's clock.
        unnamed = next(cfg.landing.iterdir()) / b"server.log.caf\xe9".decode("utf-8", "surrogateescape")
        unnamed.write_text("line\n")
        while time.monotonic() < deadline and not failure and not (moved_past(1) and unreadable_line(1) in said):
            time.sleep(0.5)
        assert failure == [] and moved_past(1), f"the checkpoint did not move past both in 240 s: {failure}, {said}"
        assert said.count(unreadable_line(1)) == 1, said
    assert rebuilt.recorded(cfg) == ()
    assert _ingested(spark, cfg) == [0, 1]
    assert (cfg.checkpoint_root / "reconstruct" / "commits" / "1").exists()
    # The moves ran the reconstruct stream over the batches the one stream rebuilt, and rebuilt nothing twice.
    assert [line.split(":")[0] for line in said if line.startswith("reconstruct batch")] == [
        "reconstruct batch 0", "reconstruct batch 1"], said
    said.clear()
    run(spark, cfg, on_progress=said.append)
    assert not [line for line in said if line.startswith(("ingest batch", "reconstruct batch"))], said
    _same_as_oracle(spark, cfg)


def _ingested(spark, cfg) -> list[int]:
    return sorted(r.batch_id for r in lake.read_table(spark, cfg, "silver_accounting").select("batch_id").distinct()
                  .collect())


def test_a_batch_waiting_for_a_move_has_not_begun_and_a_stop_starts_no_move(tmp_path):
    """The stop gate sits inside the lock: a batch that waited for a checkpoint move while a stop was requested is
    held at the gate without writing, and is not counted as under way; once a stop is requested no move starts."""
    cfg = make_config(tmp_path)
    ran: list[int] = []
    stop = StopRequest()
    one = one_stream.OneStream(None, cfg, lambda df, batch_id: ran.append(batch_id), lambda df, batch_id: None,
                               gated=stop.guard, stop=stop)
    with one.between_batches():
        waiting = threading.Thread(target=one.batch, args=(None, 7), daemon=True)
        waiting.start()
        time.sleep(0.2)
        stop.requested.set()
        assert stop.wait_idle(0.1)  # the waiting batch is not under way
    waiting.join(0.5)
    assert waiting.is_alive() and ran == []  # held at the gate, for good
    # The held batch keeps the lock: a move waiting for it gives up once a stop is requested, and none starts.
    with one.between_batches() as free:
        assert free is False
    rebuilt.mark(cfg, 3)
    one.advance()  # would start a query on the (absent) session if it tried
    assert rebuilt.recorded(cfg) == ((3, 3),)
