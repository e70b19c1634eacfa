"""Data-quality gates: clean tables pass every rule; a corrupted row fails its pipeline rule (named in the error,
stored in gold_quality_results, alerted), the failure stands until the data is repaired, and the CLI exits 1 naming
it; a row breaking an input rule is stored and alerted once without failing the run."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from jobs.cli import main
from pipelines.flow.run import run
from pipelines.quality.derived import with_generation_check, with_transition_check
from pipelines.quality.rules import checks
from pipelines.quality.stage import STEP, QualityError, run_quality
from pipelines.state.seen import FOLDER
from pipelines.storage import lake
from tests.conftest import DATA, land, make_config

T0 = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
CORRUPTED = ["gold_rebalances.duration_ms_non_negative", "silver_events.event_type_known"]
INCONSISTENT = ["gold_group_states.legal_transition", "gold_rebalances.generation_grows"]


def _at(minutes: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def _naive(ts: dt.datetime) -> dt.datetime:
    return ts.astimezone(dt.timezone.utc).replace(tzinfo=None)


@pytest.fixture(scope="module")
def lakehouse(spark, tmp_path_factory):
    """The small test landing run through every stage once, at T0."""
    root = tmp_path_factory.mktemp("quality")
    cfg = make_config(root)
    (root / "landing").mkdir()
    land(DATA / "landing" / "part1", cfg.landing)
    land(DATA / "landing" / "part2", cfg.landing)
    summary = run(spark, cfg, run_ts=T0)
    return {"cfg": cfg, "summary": summary, "root": root}


def test_transitions_follow_the_group_state_machine(spark):
    t = dt.datetime(2026, 11, 20, 8, 0)
    rows = [  # (state_id, group, state, coordinator, started, ended)
        ("a1", "g", "PreparingRebalance", "1", t, t + dt.timedelta(seconds=3)),
        ("a2", "g", "CompletingRebalance", "1", t + dt.timedelta(seconds=3), t + dt.timedelta(seconds=3)),
        # Same millisecond: the zero-length CompletingRebalance comes before the Stable that follows it.
        ("a3", "g", "Stable", "1", t + dt.timedelta(seconds=3), t + dt.timedelta(seconds=9)),
        ("a4", "g", "CompletingRebalance", "1", t + dt.timedelta(seconds=9), None),
        ("b1", "h", "Dead", None, t, t + dt.timedelta(seconds=1)),
        ("b2", "h", "PreparingRebalance", None, t + dt.timedelta(seconds=1), None),
        # A rebalance cut off by a coordinator move restarts on the new coordinator: legal there, not on the same.
        ("c1", "k", "PreparingRebalance", "1", t, t + dt.timedelta(seconds=2)),
        ("c2", "k", "PreparingRebalance", "2", t + dt.timedelta(seconds=2), t + dt.timedelta(seconds=4)),
        ("c3", "k", "PreparingRebalance", "2", t + dt.timedelta(seconds=4), None),
    ]
    states = spark.createDataFrame(rows, "state_id string, group_id string, state string, coordinator string, "
                                         "started_at timestamp, ended_at timestamp")
    checked = with_transition_check(states).select("state_id", "previous_state", "legal_transition")
    expected = [("a1", None, None), ("a2", "PreparingRebalance", True), ("a3", "CompletingRebalance", True),
                ("a4", "Stable", False), ("b1", None, None), ("b2", "Dead", True),
                ("c1", None, None), ("c2", "PreparingRebalance", True), ("c3", "PreparingRebalance", False)]
    assertDataFrameEqual(checked, spark.createDataFrame(expected, checked.schema))


def test_a_live_protocol_conversion_is_a_legal_transition(spark):
    t = dt.datetime(2026, 11, 20, 8, 0)
    s = dt.timedelta(seconds=1)
    rows = [  # (state_id, state, protocol, started, ended): classic -> consumer -> classic, as Kafka 4.x does it
        ("s1", "Stable", "classic", t, t + 2 * s),
        ("s2", "Assigning", "consumer", t + 2 * s, t + 3 * s),        # the upgrade: any state may come before
        ("s3", "Reconciling", "consumer", t + 3 * s, t + 4 * s),
        ("s4", "Stable", "consumer", t + 4 * s, t + 6 * s),
        ("s5", "PreparingRebalance", "classic", t + 6 * s, t + 7 * s),  # the downgrade
        ("s6", "Stable", "classic", t + 7 * s, t + 8 * s),            # classic again: PreparingRebalance -> Stable
        ("s7", "Assigning", "classic", t + 8 * s, None),               # a consumer state in a classic one: illegal
    ]
    states = spark.createDataFrame([(i, "g", st, p, "1", a, b) for i, st, p, a, b in rows],
                                   "state_id string, group_id string, state string, protocol string, "
                                   "coordinator string, started_at timestamp, ended_at timestamp")
    checked = {r.state_id: r.legal_transition for r in with_transition_check(states).collect()}
    assert checked == {"s1": None, "s2": True, "s3": True, "s4": True, "s5": True, "s6": False, "s7": False}


def test_generations_grow_within_a_coordinator_epoch(spark):
    t = dt.datetime(2026, 11, 20, 8, 0)
    rows = [  # (rebalance_id, group, coordinator, generation_before, generation_after, started)
        ("r1", "g", "1", 0, 1, t),
        ("r2", "g", "1", 1, 2, t + dt.timedelta(minutes=1)),
        ("r3", "g", None, 2, None, t + dt.timedelta(minutes=2)),  # open: nothing to compare
        ("r4", "g", "1", 2, 2, t + dt.timedelta(minutes=3)),      # the same generation again: a broken timeline
        ("r5", "g", "2", 1, 2, t + dt.timedelta(minutes=4)),      # failover: the new coordinator's first
        ("r6", "g", "2", 2, 3, t + dt.timedelta(minutes=5)),
        ("r7", "g", "2", 0, 1, t + dt.timedelta(minutes=6)),      # the group re-created from generation 0
    ]
    rebalances = spark.createDataFrame(rows, "rebalance_id string, group_id string, coordinator string, "
                                             "generation_before int, generation_after int, started_at timestamp")
    checked = with_generation_check(rebalances).select("rebalance_id", "coordinator_epoch", "generation_grows")
    expected = [("r1", 1, None), ("r2", 1, True), ("r3", 1, None), ("r4", 1, False), ("r5", 2, None),
                ("r6", 2, True), ("r7", 3, None)]
    assertDataFrameEqual(checked, spark.createDataFrame(expected, checked.schema))


def test_clean_tables_pass_every_rule(spark, lakehouse):
    cfg, report = lakehouse["cfg"], lakehouse["summary"].quality
    assert report is not None and report.validated and not report.failures
    stored = lake.read_table(spark, cfg, "gold_quality_results")
    expected = {(c.table, r.name) for c in checks() for r in c.rules}
    assert {(r.table_name, r.rule) for r in stored.collect()} == expected
    assert stored.filter(~F.col("success") | (F.col("run_ts") != F.lit(_naive(T0)))).count() == 0
    # The rebalance of 09:30 is within the allowed lateness of the newest event (09:30:41): not judged yet.
    assert stored.filter("table_name = 'gold_rebalances' AND rule = 'generation_grows'").first().checked_rows == 3
    assert lake.read_table(spark, cfg, "gold_alerts").filter("rule = 'quality'").count() == 0


def test_without_its_record_the_step_reuses_the_stored_verdicts_of_the_same_table_versions(spark, lakehouse):
    cfg = lakehouse["cfg"]
    record = cfg.checkpoint_root / FOLDER / f"{STEP}.json"
    assert record.exists()
    record.unlink()  # as when another process (a separate job task) ran the step
    before = lake.table_version(spark, cfg, "gold_quality_results")
    report = run_quality(spark, cfg, run_ts=_at(5))
    assert not report.validated and report.run_ts.replace(tzinfo=None) == _naive(T0)
    assert lake.table_version(spark, cfg, "gold_quality_results") == before
    assert record.exists()  # and the next run finds it again


def test_the_simulated_estate_passes_every_rule(spark, estate):
    report = estate["summary"].quality
    assert report is not None and report.validated
    assert not report.failures, report.error()


def test_corrupted_rows_fail_their_rules_until_repaired(spark, lakehouse, capsys):
    cfg = lakehouse["cfg"]
    names = ["silver_events", "gold_rebalances", "gold_group_states"]
    clean = {name: lake.table_version(spark, cfg, name) for name in names}
    rebalances = lake.table(cfg, "gold_rebalances").delta(spark)
    rebalances.update("generation_after = 2", {"duration_ms": F.lit(-5)})
    rebalances.update("generation_after = 3", {"generation_after": F.lit(1)})
    lake.table(cfg, "silver_events").delta(spark).update(
        F.col("event_id") == lake.read_table(spark, cfg, "silver_events").agg(F.min("event_id")).first()[0],
        {"event_type": F.lit("made_up_event")})
    stable = lake.read_table(spark, cfg, "gold_group_states").filter(
        "state = 'Stable' AND started_at < '2026-11-20 09:00:00'").agg(F.min("state_id"))
    lake.table(cfg, "gold_group_states").delta(spark).update(
        F.col("state_id") == stable.first()[0], {"state": F.lit("CompletingRebalance")})
    broken_id = lake.read_table(spark, cfg, "gold_rebalances").filter("duration_ms < 0").first().rebalance_id

    with pytest.raises(QualityError) as failure:
        run(spark, cfg, stages=("quality", "alerts"), run_ts=_at(15))
    message = str(failure.value)
    assert all(name in message.splitlines()[0] for name in CORRUPTED), message
    assert not any(name in message for name in INCONSISTENT), message
    assert f"rebalance_id={broken_id}, duration_ms=-5" in message

    stored = lake.read_table(spark, cfg, "gold_quality_results").filter(F.col("run_ts") == F.lit(_naive(_at(15))))
    failed = stored.filter(~F.col("success")).select(
        F.concat_ws(".", "table_name", "rule").alias("rule"), "unexpected_count")
    assertDataFrameEqual(failed, spark.createDataFrame([(name, 1) for name in CORRUPTED + INCONSISTENT],
                                                       failed.schema))
    assert stored.count() == len({(c.table, r.name) for c in checks() for r in c.rules})

    alerts = lake.read_table(spark, cfg, "gold_alerts").filter("rule = 'quality'")
    assert alerts.count() == len(CORRUPTED)
    summaries = [r.summary for r in alerts.filter(F.col("closed_at").isNull()).collect()]
    assert all(any(f"rule {name} failed since 2026-11-20 12:15 UTC" in s for s in summaries) for name in CORRUPTED)
    assert all(r.delivered_to == ["jsonl"] for r in alerts.collect())
    found = lake.read_table(spark, cfg, "gold_alerts").filter("rule = 'inconsistent_input'")
    assert sorted(r.summary.split(" is broken")[0] for r in found.collect()) == [
        f"Inconsistent input: {name}" for name in INCONSISTENT]

    # Nothing changed since: the stored failure stands (nothing written), and the command line exits 1 naming it.
    before = lake.table_version(spark, cfg, "gold_quality_results")
    conf = lakehouse["root"] / "test.yml"
    conf.write_text("spark:\n  master: local[2]\n  shuffle_partitions: 2\n  driver_memory: 2g\n")
    code = main(["run", "--conf", str(conf), "--landing", str(cfg.landing), "--lakehouse", str(cfg.lakehouse)])
    err = capsys.readouterr().err
    assert code == 1
    assert "data quality rule(s) failed" in err and all(name in err for name in CORRUPTED), err
    assert "input rule gold_rebalances.generation_grows: 1 row(s) from inconsistent input, reported" in err, err
    assert lake.table_version(spark, cfg, "gold_quality_results") == before

    for name, version in clean.items():
        lake.table(cfg, name).delta(spark).restoreToVersion(version)
    repaired = run(spark, cfg, stages=("quality", "alerts"), run_ts=_at(30))
    assert repaired.quality.validated and not repaired.quality.failures
    closed = lake.read_table(spark, cfg, "gold_alerts").filter("rule = 'quality'").select("closed_at").distinct()
    assert [r.closed_at for r in closed.collect()] == [_naive(_at(30))]


def test_the_early_import_of_gx_loads_it_and_never_raises(monkeypatch):
    import importlib
    import sys
    import threading

    from pipelines.quality import validate

    validate.import_gx_early().join(timeout=120)
    assert "great_expectations" in sys.modules

    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))

    def broken(name: str) -> None:
        raise ImportError(f"no module named {name}")

    monkeypatch.setattr(importlib, "import_module", broken)
    thread = validate.import_gx_early()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert raised == []  # the failure is left for the quality step's own import to report
