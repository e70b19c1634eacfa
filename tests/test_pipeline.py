"""End to end on a real Structured Streaming run with Delta tables: drop a file, run, drop another, run again."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from io import StringIO
from pathlib import Path

import pytest
import yaml
from delta.tables import DeltaTable
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from jobs.cli import main
from jobs.summary import print_found
from pipelines.flow.found import Found, from_history
from pipelines.flow.idle import idle_run
from pipelines.flow.run import STREAMED, PipelineStateError, run
from pipelines.state import pending
from pipelines.storage import commits, inputs, lake
from pipelines.storage.lake import register_views
from schemas.tables import TABLES
from tests.conftest import DATA, land, make_config

GOLD = ["group_id", "generation_before", "generation_after", "outcome", "cause", "cause_detail", "duration_ms",
        "members_before", "members_after"]


def _versions(spark, cfg) -> dict[str, int]:
    return {name: DeltaTable.forPath(spark, lake.table(cfg, name).path).history(1).first()["version"]
            for name in TABLES}


def test_two_drops_then_a_rerun(spark, workspace, monkeypatch, capsys):
    cfg = make_config(workspace)
    land(DATA / "landing" / "part1", cfg.landing)
    first = run(spark, cfg)
    assert first.batches == {"ingest": 1, "reconstruct": 1}
    # The run says where its time went, step by step.
    assert list(first.seconds) == ["setup", "ingest", "reconstruct", "derived", "quality", "alerts"]
    assert all(seconds > 0 for seconds in first.seconds.values())
    assert first.time_line().startswith("time: setup ") and first.time_line().endswith(" s")
    gold = lake.read_table(spark, cfg, "gold_rebalances")
    expected_first = [
        ("orders-app", 0, 1, "stabilized", "membership_change", "member_join", 3039, 0, 1),
        ("orders-app", 1, 2, "stabilized", "membership_change", "member_join", 1070, 1, 2),
    ]
    assertDataFrameEqual(gold.select(GOLD), spark.createDataFrame(expected_first, gold.select(GOLD).schema))
    first_ids = {r.rebalance_id for r in gold.select("rebalance_id").collect()}
    # What the run found comes from the rows it committed: both rebalances, the incident they make.
    assert sorted((r["cause"], r["duration_ms"]) for r in first.found.rebalances.values()) == [
        ("membership_change", 1070), ("membership_change", 3039)]
    assert set(first.found.rebalances) == first_ids
    assert set(first.found.incidents) == {r["incident_id"] for r in first.found.rebalances.values()}

    land(DATA / "landing" / "part2", cfg.landing)
    spark.catalog.clearCache()
    before_second = commits.versions(spark, cfg, STREAMED)
    second = run(spark, cfg)
    assert second.added["bronze_files"] == 2
    # A run releases every frame it cached (a scheduled job runs many batches in one driver).
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()
    gold = lake.read_table(spark, cfg, "gold_rebalances")
    expected = expected_first + [
        ("orders-app", 2, 3, "stabilized", "session_timeout", "heartbeat_expiration", 1085, 2, 1),
        ("orders-app", 3, 4, "emptied", "poll_timeout", "leave_on_poll_timeout", 6, 1, 0),
    ]
    assertDataFrameEqual(gold.select(GOLD), spark.createDataFrame(expected, gold.select(GOLD).schema))
    assert first_ids <= {r.rebalance_id for r in gold.select("rebalance_id").collect()}

    # Accounting adds up for every file: nothing lost, nothing counted twice.
    acct = lake.read_table(spark, cfg, "silver_accounting")
    assert acct.count() == 3
    assert acct.filter(
        F.col("lines_read") != F.col("noise_lines") + F.col("event_lines") + F.col("gc_pause_lines")
        + F.col("quarantined_lines") + F.col("duplicate_lines")
    ).count() == 0
    quarantine = lake.read_table(spark, cfg, "silver_quarantine").select("line_no", "reason", "batch_id").collect()
    assert [(r.line_no, r.reason) for r in quarantine] == [(9, "no_template")]
    # The second run found the two new rebalances (the first two are unchanged) and counted its unread lines.
    assert sorted(r["cause"] for r in second.found.rebalances.values()) == ["poll_timeout", "session_timeout"]
    assert not set(second.found.rebalances) & first_ids
    runs_quarantine = {"quarantined:no_template": 1} if quarantine[0].batch_id == 1 else {}
    assert {k: n for k, n in second.found.unread.items() if k.startswith("quarantined:")} == runs_quarantine
    assert second.found.first_batch == 1
    # Read back from the commits' history (what a Spark Connect run does), the run found the same.
    history = Found()
    from_history(spark, cfg, before_second, history)
    assert (history.rebalances, history.incidents) == (second.found.rebalances, second.found.incidents)
    assert history.unread == {k: n for k, n in second.found.unread.items() if k.startswith("quarantined:")}
    # The end of `rebalance run`: the table of what it found, the sentence, the unread lines and how to list them.
    printed = StringIO()
    print_found(second, sql=f"rebalance sql --lakehouse {cfg.lakehouse}", out=printed)
    text = printed.getvalue()
    assert "This run added or changed 2 rebalances in 1 group (poll_timeout 1, session_timeout 1)" in text, text
    assert re.search(r"Worst incident: \d rebalances? of orders-app( in [\d.]+ s)?, [\d.]+ s without consuming; "
                     r"root cause \w+, from 2026-11-20 \d\d:\d\d:\d\d UTC\.", text), text
    if runs_quarantine:
        assert (f"1 quarantined as no_template: rebalance sql --lakehouse {cfg.lakehouse} \"SELECT source_file, "
                "line_no, raw FROM silver_quarantine WHERE reason = 'no_template' AND batch_id >= 1") in text, text

    # A re-run with no new files commits nothing anywhere, and does not even start the ingest stream.
    versions = _versions(spark, cfg)
    said: list[str] = []
    third = run(spark, cfg, on_progress=said.append)
    assert third.batches == {}
    assert {line for line in said if line.endswith("the stream was not started")} == {
        "ingest: the landing holds nothing the last run did not read; the stream was not started",
        "reconstruct: silver_accounting holds nothing the last run did not read; the stream was not started"}, said
    assert (third.found.rebalances, third.found.incidents, third.found.unread) == ({}, {}, {})
    assert _versions(spark, cfg) == versions
    _idle_without_spark(spark, cfg, said, monkeypatch, capsys)

    register_views(spark, cfg)
    causes = {r["cause"]: r["n"] for r in spark.sql(
        "SELECT cause, count(*) AS n FROM gold_rebalances GROUP BY cause").collect()}
    assert causes == {"membership_change": 2, "session_timeout": 1, "poll_timeout": 1}


def _idle_without_spark(spark, cfg, said: list[str], monkeypatch, capsys) -> None:
    """After a complete run, a run with nothing new is told from files (`pipelines.flow.idle`): it says what the
    steps of a full run said, and any of the changes a step would act on makes it start Spark."""
    now = dt.datetime.now(dt.timezone.utc)
    idle = idle_run(cfg, run_ts=now)
    assert idle is not None and list(idle.said) == said, (idle, said)

    # The command line ends there, without a session.
    def no_spark(*args, **kwargs):
        raise AssertionError("a run with nothing new started Spark")

    monkeypatch.setattr("jobs.commands._spark", no_spark)
    capsys.readouterr()
    code = main(["run", "--landing", str(cfg.landing), "--lakehouse", str(cfg.lakehouse)])
    out = capsys.readouterr()
    assert code == 0, out
    assert "nothing is new since the last complete run: Spark was not started" in out.err, out
    assert "run finished: nothing new to process" in out.out and "time: checks " in out.out, out

    # A file landed, a group waiting for the derived refresh, an alert due on the clock, a record gone: each one
    # leaves the run to Spark, and undone, the run is idle again.
    landed = cfg.landing / "broker-9" / "server.log"
    landed.parent.mkdir()
    landed.write_text("late line\n", encoding="utf-8")
    assert idle_run(cfg, run_ts=now) is None
    shutil.rmtree(landed.parent)
    waiting = pending.mark(cfg, ["orders-app"], batch_id=99)
    assert waiting is not None and idle_run(cfg, run_ts=now) is None
    waiting.unlink()
    alerts_record = cfg.checkpoint_root / "seen" / "alerts.json"
    kept = alerts_record.read_text(encoding="utf-8")
    record = json.loads(kept)
    record["detail"]["stuck_at"] = "2000-01-01T00:00:00"
    alerts_record.write_text(json.dumps(record), encoding="utf-8")
    assert idle_run(cfg, run_ts=now) is None
    alerts_record.write_text(kept, encoding="utf-8")
    run_record = cfg.checkpoint_root / "seen" / "run.json"
    run_record.rename(run_record.with_suffix(".kept"))
    assert idle_run(cfg, run_ts=now) is None
    run_record.with_suffix(".kept").rename(run_record)
    # A commit to a table no step's own record covers (as a writer elsewhere would make), a lost checkpoint (setup
    # refuses it), verdicts that failed (the run must exit 1 again): each one too.
    log = Path(lake.table(cfg, "gold_rebalance_stats_hourly").path) / "_delta_log"
    newest = max(log.glob("*.json"))
    commit = log / f"{int(newest.stem) + 1:020d}.json"
    shutil.copy(newest, commit)
    assert idle_run(cfg, run_ts=now) is None
    commit.unlink()
    checkpoint = inputs.checkpoint_dir(cfg, inputs.INGEST_QUERY)
    checkpoint.rename(checkpoint.with_name("kept"))
    assert idle_run(cfg, run_ts=now) is None
    checkpoint.with_name("kept").rename(checkpoint)
    quality_record = cfg.checkpoint_root / "seen" / "quality.json"
    kept = quality_record.read_text(encoding="utf-8")
    record = json.loads(kept)
    record["detail"]["results"][0].update(success=False, scope="pipeline")
    quality_record.write_text(json.dumps(record), encoding="utf-8")
    assert idle_run(cfg, run_ts=now) is None
    quality_record.write_text(kept, encoding="utf-8")
    # Checkpoints of a release this one cannot continue are refused as setup refuses them, and left as they are.
    marker = cfg.checkpoint_root / "release.json"
    kept = marker.read_text(encoding="utf-8")
    marker.write_text(json.dumps({**json.loads(kept), "checkpoint_layout": 99}), encoding="utf-8")
    with pytest.raises(PipelineStateError, match="cannot read them"):
        idle_run(cfg, run_ts=now)
    assert json.loads(marker.read_text(encoding="utf-8"))["checkpoint_layout"] == 99
    marker.write_text(kept, encoding="utf-8")
    assert idle_run(cfg, run_ts=now) == idle
    # Only a run of every step records the tables (this one wrote nothing, and leaves the record as it was).
    recorded = run_record.read_bytes(), run_record.stat().st_mtime_ns
    run(spark, cfg, stages=("quality", "alerts"))
    assert (run_record.read_bytes(), run_record.stat().st_mtime_ns) == recorded


def test_lost_checkpoint_is_refused_then_rebuilt_to_the_same_tables(spark, workspace):
    cfg = make_config(workspace)
    land(DATA / "landing" / "part1", cfg.landing)
    land(DATA / "landing" / "part2", cfg.landing)
    run(spark, cfg)
    before = lake.read_table(spark, cfg, "gold_rebalances").select(GOLD + ["rebalance_id"]).collect()
    shutil.rmtree(cfg.checkpoint_root / "ingest")
    with pytest.raises(PipelineStateError, match="--rebuild"):
        run(spark, cfg)
    run(spark, cfg, rebuild=True)
    after = lake.read_table(spark, cfg, "gold_rebalances").select(GOLD + ["rebalance_id"])
    assertDataFrameEqual(after, spark.createDataFrame(before, after.schema))
    assert lake.read_table(spark, cfg, "silver_events").count() == 16


def test_the_landing_stream_reads_every_visible_file_at_any_depth_as_the_batch_oracle_lists_them(spark, workspace):
    cfg = make_config(workspace)
    broker_log = DATA / "landing" / "part1" / "broker-1" / "server.log.2026-11-20-08"
    # Below the landing's own entries (globbed as `[!._]*`), Spark's file listing leaves out names starting with `.`,
    # and with `_` unless they hold `=` (or name a `_metadata` folder), and files still being copied (`._COPYING_`, at
    # any depth); it follows a linked folder and names its files through the link.
    placed = {"server.log": True, "broker-2/.server.log.partial": False, "broker-2/_server.log": False,
              "_staging/server.log": False, ".tmp/server.log": False, "broker-3/rotated/server.log": True,
              "broker-3/_old/server.log": False, "broker-4/_day=20/server.log": True,
              "broker-4/_metadata.log": False, "broker-4/server.log._COPYING_": False,
              "broker-4/_metadata/server.log": True, "broker-4/_x=1.log": True, "top.log._COPYING_": False,
              "broker-6._COPYING_/server.log": True, "broker-7/_metadata._COPYING_/server.log": True,
              "broker-7/café.log": True, "outside/server.log": False}
    for relative in placed:
        (cfg.landing / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(broker_log, cfg.landing / relative)
    # A folder linked twice is read under both names; a name that is not UTF-8 is not read at all.
    shutil.move(cfg.landing / "outside", workspace / "outside")
    (cfg.landing / "broker-5").symlink_to(workspace / "outside", target_is_directory=True)
    (cfg.landing / "broker-8").symlink_to(workspace / "outside", target_is_directory=True)
    placed.update({"broker-5/server.log": True, "broker-8/server.log": True})
    shutil.copyfile(broker_log, cfg.landing / "broker-7" / b"caf\xe9.log".decode("utf-8", "surrogateescape"))
    run(spark, cfg, stages=("ingest",))
    files = lake.read_table(spark, cfg, "bronze_files").select("source_file", "instance").collect()
    # A file's instance is the folder it sits in; one directly in the landing directory takes the landing's name.
    assert sorted(r.instance for r in files) == sorted(
        [cfg.landing.name, "rotated", "_day=20", "_metadata", "broker-4", "broker-5", "broker-6._COPYING_",
         "_metadata._COPYING_", "broker-7", "broker-8"])
    read = sorted(r.source_file.removeprefix("file:") for r in files)
    landing = cfg.landing.resolve()
    assert read == sorted(str(landing / p) for p, visible in placed.items() if visible)
    assert sorted(str(p) for p in inputs.landing_files(cfg)) == read


# A layout that prints the time after the message: no built-in layout and no general path reads its time, so only the
# source's own pattern (sources[].pattern) turns these lines into events.
OWN_PATTERN = r"^(?P<msg>.*) @@ (?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (?P<level>[A-Z]+)$"
_OWN_PREFIX = "[Consumer clientId=consumer-billing-1, groupId=billing] "
OWN_LAYOUT_LINES = [
    _OWN_PREFIX + "(Re-)joining group @@ 2024-05-14 08:21:07.100 INFO",
    _OWN_PREFIX + "Successfully joined group with generation Generation{generationId=7, memberId='m-1', "
    "protocol='range'} @@ 2024-05-14 08:21:07.520 INFO",
]


def test_a_sources_own_layout_reaches_the_parser_of_the_stream(spark, workspace):
    pattern, lines = OWN_PATTERN, OWN_LAYOUT_LINES
    cfg = make_config(workspace, sources=[{"instances": "legacy-*", "pattern": pattern}, {"instances": "*"}])
    (cfg.landing / "legacy-7").mkdir(parents=True)
    (cfg.landing / "legacy-7" / "app.log").write_text("\n".join(lines) + "\n")
    run(spark, cfg, stages=("ingest",))
    events = lake.read_table(spark, cfg, "silver_events").select("line_no", "event_type", "group_id", "generation",
                                                               "event_ts", "level")
    expected = spark.createDataFrame([
        (1, "client_joining", "billing", None, dt.datetime(2024, 5, 14, 8, 21, 7, 100000), "INFO"),
        (2, "client_joined", "billing", 7, dt.datetime(2024, 5, 14, 8, 21, 7, 520000), "INFO"),
    ], events.schema)
    assertDataFrameEqual(events, expected)


def test_rebalance_parse_reads_a_file_with_the_sources_own_layout(spark, tmp_path, capsys):
    conf = tmp_path / "own.yml"
    conf.write_text(yaml.safe_dump({
        "spark": {"master": "local[2]", "shuffle_partitions": 2, "driver_memory": "2g"},
        "sources": [{"instances": "legacy-*", "pattern": OWN_PATTERN}, {"instances": "*"}],
    }))
    file = tmp_path / "legacy-7" / "app.log"
    file.parent.mkdir()
    file.write_text("\n".join(OWN_LAYOUT_LINES) + "\n")
    assert main(["parse", str(file), "--conf", str(conf)]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["line_no"], e["event_type"], e["group_id"], e.get("generation"), e["event_ts"][:23])
            for e in printed] == [
        (1, "client_joining", "billing", None, "2024-05-14T08:21:07.100"),
        (2, "client_joined", "billing", 7, "2024-05-14T08:21:07.520"),
    ]
