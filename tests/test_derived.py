"""The derived gold tables on their own clock: the records of the groups waiting for a refresh, and a refresh that
a crash interrupted."""

from __future__ import annotations

import re
import time

import pytest
from pyspark.sql import functions as F

from pipelines.flow import run as run_module
from pipelines.flow.derived import freshness
from pipelines.flow.run import run
from pipelines.gold.build import DERIVED, HOT
from pipelines.report.data import collect_fast
from pipelines.report.render import render
from pipelines.state import pending
from pipelines.storage import lake
from schemas.tables import TABLES
from tests.conftest import DATA, continuous_run, land, make_config


def test_records_are_read_whole_and_only_those_read_are_cleared(tmp_path):
    cfg = make_config(tmp_path)
    assert not pending.pending(cfg)
    assert pending.mark(cfg, [], batch_id=0) is None  # a batch that touched no group records nothing
    pending.mark(cfg, ["b", "a"], batch_id=3)
    pending.mark(cfg, ["a", "c"], batch_id=3)  # the same batch replayed after a crash: its own record
    folder = cfg.checkpoint_root / pending.FOLDER
    (folder / "000000000004-x.json.tmp").write_text('{"groups": ["half-writ', encoding="utf-8")  # a write cut short
    read = pending.pending(cfg)
    assert read.groups == {"a", "b", "c"} and len(read.files) == 2 and read.unreadable == 0
    later = pending.mark(cfg, ["d"], batch_id=5)  # written while a refresh runs: not among what it read
    pending.clear(read)
    left = pending.pending(cfg)
    assert left.files == (later,) and left.groups == {"d"}


def test_an_unreadable_record_makes_the_refresh_cover_every_group(tmp_path):
    cfg = make_config(tmp_path)
    pending.mark(cfg, ["a"], batch_id=1)
    (cfg.checkpoint_root / pending.FOLDER / "000000000002-y.json").write_bytes(b"\x00\xff not json")
    read = pending.pending(cfg)
    assert read.unreadable == 1 and read.groups == {"a"} and len(read.files) == 2


def test_a_run_stopped_before_its_derived_refresh_leaves_the_groups_for_the_next(spark, tmp_path, monkeypatch):
    """The hot tables are committed per micro-batch; when the refresh does not happen (a crash, a kill), the
    groups stay recorded and the next run, with nothing new to ingest, brings the derived tables up to date."""
    cfg = make_config(tmp_path)
    land(DATA / "landing" / "part1", cfg.landing)

    def crashed(*args, **kwargs):
        raise RuntimeError("injected crash before the derived refresh")

    monkeypatch.setattr(run_module, "refresh_derived", crashed)
    with pytest.raises(RuntimeError, match="injected crash"):
        run(spark, cfg)
    assert lake.read_table(spark, cfg, "gold_rebalances").count() == 2  # the hot path committed
    assert lake.read_table(spark, cfg, "gold_group_health").count() == 0  # the derived tables did not follow
    waiting = freshness(spark, cfg)
    assert waiting["groups_waiting"] == 1 and waiting["reflects"] is None
    # SQL over a derived table and the report say that they lag.
    note = pending.lag_note(cfg, ["gold_group_health"])
    assert note is not None and note.startswith("gold_group_health may lag the hot tables: 1 group rebuilt")
    assert pending.lag_note(cfg, []) is None
    assert f'<p class="note">{note}</p>' in render({**collect_fast(cfg)}, notes=[note])
    monkeypatch.undo()

    again = run(spark, cfg)
    assert again.batches == {}  # nothing new was ingested or reconstructed
    assert again.added["gold_rebalance_stats_hourly"] >= 1
    health = lake.read_table(spark, cfg, "gold_group_health")
    assert [r.group_id for r in health.collect()] == ["orders-app"]
    fresh = freshness(spark, cfg)
    assert fresh["groups_waiting"] == 0 and fresh["reflects"] == fresh["current"]
    assert pending.lag_note(cfg, ["gold_group_health"]) is None
    assert set(fresh["current"]) == set(HOT)
    # A third run has nothing to refresh and writes nothing.
    third = run(spark, cfg)
    assert not any(third.added[name] for name in DERIVED)
    assert lake.read_table(spark, cfg, "gold_config_advice").filter(F.col("group_id") != "orders-app").count() == 0


def test_a_continuous_run_refreshes_the_derived_tables_on_their_own_clock(spark, tmp_path):
    """With `--trigger continuous`, the derived tables follow the hot ones within `derived_every_s`, without a
    second run; what the refresh reflects is recorded."""
    cfg = make_config(tmp_path, derived_every_s=1)
    land(DATA / "landing" / "part1", cfg.landing)
    with continuous_run(spark, cfg) as failure:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not failure and not _refreshed(spark, cfg):
            time.sleep(0.5)
        assert failure == [] and _refreshed(spark, cfg), f"no refresh within 240 s: {failure}"


def _refreshed(spark, cfg) -> bool:
    """The group's health row is there and the refresh that wrote it has recorded what it reflects."""
    health = lake.table(cfg, "gold_group_health")
    return health.exists(spark) and lake.read_table(spark, cfg, "gold_group_health") \
        .filter(F.col("group_id") == "orders-app").count() == 1 and freshness(spark, cfg)["reflects"] is not None


def test_a_continuous_run_compacts_the_small_files_its_batches_leave_and_no_row_changes(spark, tmp_path):
    """Every `compact_every_s`, the derived turn bin-packs the tables holding `compact_min_files` files or more
    (Delta OPTIMIZE beside the streams), then deletes the files replaced before the table's retention (VACUUM LITE);
    the tables still equal the batch oracle afterwards."""
    from pipelines.storage import inputs
    from tests.test_survival import _same_as_oracle

    cfg = make_config(tmp_path, derived_every_s=1, compact_every_s=1, compact_min_files=2, vacuum_every_s=1)
    lake.ensure_tables(spark, cfg)
    # A retention of nothing on one table that no query of the run reads back, so that its VACUUM deletes at once.
    lines = lake.table(cfg, "bronze_log_lines")
    spark.sql(f"ALTER TABLE {lines.sql_name} SET TBLPROPERTIES "
              "('delta.deletedFileRetentionDuration' = 'interval 0 hours')")
    land(DATA / "landing" / "part1", cfg.landing)
    said: list[str] = []

    def one_file_vacuumed() -> bool:
        """part2 is in, bronze_log_lines is down to one file, and a vacuum followed its last compaction."""
        if not (_optimized(spark, cfg, "bronze_log_lines") and _data_files(spark, cfg, "bronze_log_lines") == 1
                and _ingested_files(spark, cfg) == len(inputs.landing_files(cfg))):
            return False
        compacted = [i for i, line in enumerate(list(said)) if line.startswith("compacted ") and
                     "bronze_log_lines" in line]
        return bool(compacted) and any(line.startswith("vacuumed ") for line in said[compacted[-1]:])

    with continuous_run(spark, cfg, on_progress=said.append) as failure:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not failure and not _refreshed(spark, cfg):
            time.sleep(0.5)
        land(DATA / "landing" / "part2", cfg.landing)  # a second ingest batch: a second file in every bronze table
        while time.monotonic() < deadline and not failure and not one_file_vacuumed():
            time.sleep(0.5)
        assert failure == [] and one_file_vacuumed(), f"no compaction and vacuum in 240 s: {failure}, {said}"
        # No file lands any more, so nothing compacts again: the files the compaction replaced are gone from the
        # folder, and only the current snapshot's file is left.
        on_disk = [p for p in (cfg.lakehouse / "bronze_log_lines").rglob("*.parquet") if "_delta_log" not in p.parts]
        assert len(on_disk) == 1, on_disk
    run(spark, cfg)  # whatever the continuous run had not refreshed yet
    _same_as_oracle(spark, cfg)


def _data_files(spark, cfg, name: str) -> int:
    from pipelines.storage import maintenance, writes

    return writes.with_conflict_retries(name, lambda: maintenance.data_files(spark, cfg, name))


def _ingested_files(spark, cfg) -> int:
    return lake.read_table(spark, cfg, "bronze_files").count()


def _optimized(spark, cfg, name: str) -> bool:
    history = spark.sql(f"DESCRIBE HISTORY {lake.table(cfg, name).sql_name}")
    return history.filter(F.col("operation") == "OPTIMIZE").count() > 0


def test_a_vacuum_that_fails_is_said_and_ends_nothing(spark, tmp_path):
    """VACUUM is housekeeping: a table whose VACUUM fails (here its log is damaged) is said and left for the next
    vacuum, a table that does not exist yet is passed over, the others are vacuumed, and a stopping run begins no
    further table."""
    from pipelines.storage import maintenance

    cfg = make_config(tmp_path)
    lake.ensure_tables(spark, cfg, ["gold_alerts", "gold_incidents"])
    for commit in (cfg.lakehouse / "gold_alerts" / "_delta_log").glob("*.json"):
        commit.write_text("{not json\n")
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # so the damaged log is read again
    said: list[str] = []
    done = maintenance.vacuum(spark, cfg, ["gold_alerts", "gold_incidents", "gold_whatif"], on_progress=said.append)
    assert done == ["gold_incidents"]
    assert said[0].startswith("vacuum: gold_alerts failed (") and said[0].endswith("tried again at the next vacuum")
    assert said[1].startswith("vacuumed 1 table(s)"), said
    # A run that is stopping begins no further table.
    asked: list[str] = []

    def stopping_after_one() -> bool:
        asked.append("asked")
        return len(asked) > 1

    assert maintenance.vacuum(spark, cfg, ["gold_incidents", "gold_alerts"], stopping=stopping_after_one) == [
        "gold_incidents"]
    assert len(asked) == 2


def test_a_compaction_that_fails_is_said_and_ends_nothing(spark, tmp_path):
    """A compaction is housekeeping too: a table whose OPTIMIZE fails (here its log is damaged) is said and left for
    the next compaction, the other tables are compacted, and a stopping run begins no further table."""
    from pipelines.storage import maintenance

    cfg = make_config(tmp_path)
    lake.ensure_tables(spark, cfg)
    for commit in (cfg.lakehouse / "gold_alerts" / "_delta_log").glob("*.json"):
        commit.write_text("{not json\n")
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # so the damaged log is read again
    said: list[str] = []
    done = maintenance.compact(spark, cfg, min_files=0, on_progress=said.append)  # every table, however few files
    assert sorted(done) == sorted(name for name in TABLES if name != "gold_alerts")
    failed = [line for line in said if line.startswith("compaction: ")]
    assert len(failed) == 1 and failed[0].startswith("compaction: gold_alerts failed (") \
        and failed[0].endswith("tried again at the next compaction"), said
    asked: list[str] = []

    def stopping_after_one() -> bool:
        asked.append("asked")
        return len(asked) > 1

    assert list(maintenance.compact(spark, cfg, min_files=0, stopping=stopping_after_one)) == [next(iter(TABLES))]


def test_the_maintenance_clocks_are_kept_beside_the_checkpoints(tmp_path):
    """A run restarted more often than `vacuum_every_s` keeps the clock of the runs before it; an available-now run
    starts the compaction clock of a lakehouse that has none instead of compacting at once."""
    import datetime as dt

    from pipelines.flow.maintenance_clocks import COMPACT_RECORD, VACUUM_RECORD, compaction_due, done, due
    from pipelines.state.seen import Seen, last_seen, remember

    cfg = make_config(tmp_path, compact_every_s=900)
    now = dt.datetime(2026, 12, 7, 12, tzinfo=dt.timezone.utc)
    assert due(cfg, VACUUM_RECORD, 3600, now)  # never vacuumed
    done(cfg, VACUUM_RECORD, now)
    assert not due(cfg, VACUUM_RECORD, 3600, now + dt.timedelta(minutes=58))
    assert due(cfg, VACUUM_RECORD, 3600, now + dt.timedelta(hours=1))
    remember(cfg, VACUUM_RECORD, Seen("", {}, {"at": "yesterday"}))
    assert due(cfg, VACUUM_RECORD, 3600, now)
    # The compaction clock of an available-now run: started by the first, due compact_every_s later.
    assert not compaction_due(cfg, now)
    assert last_seen(cfg, COMPACT_RECORD) == Seen("", {}, {"at": now.isoformat()})
    # A minute early counts (runs scheduled every compact_every_s start a little sooner after the last stamp).
    assert not compaction_due(cfg, now + dt.timedelta(seconds=cfg.compact_every_s - 61))
    assert compaction_due(cfg, now + dt.timedelta(seconds=cfg.compact_every_s - 60))
    assert compaction_due(cfg, now + dt.timedelta(seconds=cfg.compact_every_s))
    off = make_config(tmp_path / "off")  # the tests' default: compact_every_s null
    assert off.compact_every_s is None
    assert not compaction_due(off, now) and last_seen(off, COMPACT_RECORD) is None


def test_an_available_now_run_compacts_and_vacuums_after_its_reconstruct_step_when_its_clocks_are_due(spark, tmp_path):
    """A scheduled job's runs each append files to every bronze and silver table: a run whose compaction is due
    compacts the tables that hold compact_min_files files or more and vacuums, and moves both clocks; no row
    changes, and the next run with nothing new is told from files as after any run. The first run of a lakehouse
    only starts the compaction clock."""
    import datetime as dt

    from pipelines.flow.idle import idle_run
    from pipelines.flow.maintenance_clocks import COMPACT_RECORD, VACUUM_RECORD, compaction_due, done
    from pipelines.state.seen import last_seen
    from tests.test_survival import _same_as_oracle

    cfg = make_config(tmp_path, compact_every_s=900, compact_min_files=2)
    land(DATA / "landing" / "part1", cfg.landing)
    first = run(spark, cfg)
    assert "maintenance" not in first.seconds  # the first run starts the clock
    started = last_seen(cfg, COMPACT_RECORD)
    assert started is not None and last_seen(cfg, VACUUM_RECORD) is None
    land(DATA / "landing" / "part2", cfg.landing)
    long_ago = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=cfg.compact_every_s + 60)
    done(cfg, COMPACT_RECORD, long_ago)
    said: list[str] = []
    second = run(spark, cfg, on_progress=said.append)
    # Once the reconstruct stream has read all it compacts, before the quality and alerts steps read the tables.
    steps = list(second.seconds)
    assert steps.index("derived") + 1 == steps.index("maintenance") < steps.index("quality"), steps
    compacted = next(line for line in said if line.startswith("compacted "))
    for name in ("bronze_log_lines", "silver_events"):  # each run appended its own files
        assert re.search(rf"\b{name} ([2-9]|\d\d+) -> 1 files", compacted), compacted
        assert _optimized(spark, cfg, name)
        # The files are counted from the commit's checksum, without Spark: the count Delta itself gives.
        detail = spark.sql(f"DESCRIBE DETAIL {lake.table(cfg, name).sql_name}").first()
        assert detail is not None and lake.local_file_count(cfg, name) == detail["numFiles"] == 1
    assert any(line.startswith(f"vacuumed {len(TABLES)} table(s)") for line in said), said
    for record in (COMPACT_RECORD, VACUUM_RECORD):
        seen = last_seen(cfg, record)
        assert seen is not None and dt.datetime.fromisoformat(seen.detail["at"]) > long_ago + dt.timedelta(seconds=60)
    assert not compaction_due(cfg)  # the next run's clocks start again from here
    # The commits change no row: the next run with nothing new needs no Spark, as after any complete run.
    assert idle_run(cfg, run_ts=dt.datetime.now(dt.timezone.utc)) is not None
    _same_as_oracle(spark, cfg)
