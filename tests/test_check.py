"""`rebalance check`: its counts are those a run then stores (per instance folder: lines read, typed lines = rows of
silver_events and silver_gc_pauses, quarantined lines = rows of silver_quarantine; per group: the groups of
silver_events and the brokers that logged them), on a simulated estate, the committed lab corpora and the real
excerpts; bad files get one clear line each and the command still exits 0."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from bench.excerpts import DEFAULT_ROOT, SEP, _instance, _source_rules, load_corpus
from jobs.check import to_html, to_text
from jobs.cli import main
from pipelines.flow.check import check_landing
from pipelines.flow.check_reach import reach
from pipelines.flow.run import run
from pipelines.gold.placement import place_in_processes
from pipelines.settings.config import Config
from pipelines.storage import lake
from tests.conftest import make_config

LAB = Path(__file__).parent / "data" / "kafka-lab"
LAB_VERSIONS = sorted(p.name for p in LAB.glob("*") if (p / "landing").is_dir())


def _by_instance(df, column: str | None = None) -> dict[str, int]:
    agg = F.count("*") if column is None else F.sum(column)
    return {r[0]: r[1] for r in df.groupBy("instance").agg(agg).collect()}


def assert_counts_match(spark, cfg: Config, report: dict) -> None:
    """Every per-instance and per-group count of `report` equals what the run stored under `cfg.lakehouse`."""
    events = lake.read_table(spark, cfg, "silver_events")
    stored_events = _by_instance(events)
    gc = _by_instance(lake.read_table(spark, cfg, "silver_gc_pauses"))
    quarantined = _by_instance(lake.read_table(spark, cfg, "silver_quarantine"))
    read = _by_instance(lake.read_table(spark, cfg, "silver_accounting"), "lines_read")
    by_kind = {(r["instance"], r["source_kind"]): r["count"]
               for r in events.groupBy("instance", "source_kind").count().collect()}
    checked = {d["instance"]: d for d in report["instances"]}
    assert set(checked) == set(read)
    for name, d in checked.items():
        assert d["lines_read"] == read[name], name
        assert d["typed"] == stored_events.get(name, 0) + gc.get(name, 0), name
        assert d["gc_pauses"] == gc.get(name, 0), name
        assert d["quarantined"] == quarantined.get(name, 0), name
        assert sum(d["quarantine_reasons"].values()) == d["quarantined"], name
        assert d["broker_events"] == by_kind.get((name, "broker"), 0), name
        assert d["client_events"] == by_kind.get((name, "client"), 0), name
    placed = place_in_processes(events)  # the groups the run builds: a process's group-less lines placed
    stored_groups = {r["group_id"]: sorted(r["brokers"]) for r in placed.filter(F.col("group_id").isNotNull())
                     .groupBy("group_id").agg(F.collect_set(F.when(F.col("source_kind") == "broker", F.col("instance")))
                                              .alias("brokers")).collect()}
    assert {g["group_id"]: g["coordinator_log"] for g in report["groups"]} == stored_groups


def test_check_counts_equal_what_the_run_stored_on_the_simulated_estate(spark, estate):
    cfg = estate["cfg"]
    report = check_landing(spark, cfg)
    assert not report["problems"]
    assert_counts_match(spark, cfg, report)
    assert sum(d["typed"] for d in report["instances"]) > 1000
    # Every simulated member joins generations its coordinator logged: the offset is measured, and the simulator's
    # clocks agree (the figure is the join answer's travel time).
    clients = [d for d in report["instances"] if d["client_events"]]
    assert clients and all(d["clock_offset"] and abs(d["clock_offset"]["offset_ms"]) < 1000 for d in clients)
    assert all(g["coordinator_log"] and "session_timeout" in g["causes_full"] for g in report["groups"])
    text = to_text(report)
    assert "per group:" in text and report["groups"][0]["group_id"] in text
    assert "<table>" in to_html(report)


@pytest.mark.parametrize("version", [
    pytest.param(v, marks=() if v == LAB_VERSIONS[-1] else pytest.mark.slow) for v in LAB_VERSIONS])
def test_check_counts_equal_what_the_run_stored_on_a_lab_corpus(spark, tmp_path, version):
    cfg = make_config(tmp_path, landing=LAB / version / "landing")
    run(spark, cfg, stages=("ingest",))
    report = check_landing(spark, cfg)
    # The lab's consumers leave an empty stderr.log: said, and nothing else.
    assert all(p["problem"].startswith("empty file") for p in report["problems"])
    assert_counts_match(spark, cfg, report)
    no_coordinator = [g for g in report["groups"] if not g["coordinator_log"]]
    assert all(g["rule_paths"] == ["client"] for g in no_coordinator)


def test_check_counts_equal_what_the_run_stored_on_the_real_excerpts(spark, tmp_path):
    excerpts = load_corpus(DEFAULT_ROOT)
    landing = tmp_path / "landing"
    for ex in excerpts:
        for f in ex.files:
            target = landing / _instance(ex.name, f.name) / f.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target)
    cfg = make_config(tmp_path, sources=_source_rules(excerpts))
    run(spark, cfg, stages=("ingest",))
    report = check_landing(spark, cfg)
    assert_counts_match(spark, cfg, report)
    # Pasted excerpts hold wordings no catalogue knows, and their samples name a real line of the folder's file.
    unknown = [d for d in report["instances"] if d["unknown_wording"]]
    assert unknown
    for d in unknown:
        top = d["unknown_shapes"]["top"]
        assert top and sum(s["lines"] for s in top) <= d["unknown_wording"]
        assert d["instance"].split(SEP)[0] in top[0]["file"]


def test_bad_files_get_a_line_each_and_exit_zero(spark, tmp_path, capsys):
    landing = tmp_path / "landing" / "app-1"
    landing.mkdir(parents=True)
    line = ("[2026-11-20 08:00:00,000] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state "
            "PreparingRebalance with old generation 3 (__consumer_offsets-12) (reason: Adding new member x)\n")
    (landing / "server.log").write_text(line * 3)
    (landing / "core.bin").write_bytes(b"\x7fELF\x00\x00\x01" * 100)
    (landing / "empty.log").write_bytes(b"")
    whole = gzip.compress((line * 200).encode())
    (landing / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    # A name that is not UTF-8: Spark's listing leaves it out (tests/test_pipeline.py), so it is said here.
    (landing / b"caf\xe9.log".decode("utf-8", "surrogateescape")).write_text(line)
    code = main(["check", str(tmp_path / "landing"), "--format", "json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    problems = {Path(p["file"]).name: p["problem"] for p in report["problems"]}
    assert set(problems) == {"core.bin", "empty.log", "cut.log.gz", "caf\\xe9.log"}, problems
    assert "not UTF-8" in problems["caf\\xe9.log"]
    assert "binary" in problems["core.bin"] and "empty" in problems["empty.log"]
    assert "cut short" in problems["cut.log.gz"] or "damaged" in problems["cut.log.gz"]
    (app,) = report["instances"]
    assert app["broker_events"] >= 3 and app["quarantine_reasons"].get("truncated_gzip") == 1
    # The same files through a run: the counts agree.
    cfg = make_config(tmp_path)
    run(spark, cfg, stages=("ingest",))
    assert_counts_match(spark, cfg, check_landing(spark, cfg))
    assert main(["check", str(tmp_path / "no-such-dir")]) == 0
    assert "no such directory" in capsys.readouterr().out


def test_without_the_coordinators_log_only_client_rules_decide():
    alone = reach(coordinator_log=False, epoch_protocol=False, classic_protocol=False, members=2, members_with_gc=0)
    assert alone.paths == ("client",) and alone.none == ("gc_pause",)
    assert alone.partial["metadata_change"] == (0.7, 0.85)  # a member's own rejoin reason, not the coordinator's
    assert "session_timeout" in alone.partial and alone.partial["session_timeout"] == (0.6, 0.9)
    full = reach(coordinator_log=True, epoch_protocol=False, classic_protocol=True, members=2, members_with_gc=2)
    assert "session_timeout" in full.full and "gc_pause" in full.full and not full.none
    some_gc = reach(coordinator_log=True, epoch_protocol=False, classic_protocol=True, members=2, members_with_gc=1)
    assert "gc_pause" in some_gc.partial
