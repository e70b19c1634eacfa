"""The quality policy of a scheduled job: a pipeline rule that fails fails the run; rows from inconsistent input
that break an input rule are recorded and alerted once, and runs go on; rows within the allowed lateness are not
judged yet."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.flow.run import run
from pipelines.quality.rules import checks, scopes
from pipelines.quality.stage import QualityError
from pipelines.storage import lake, writes
from tests.conftest import make_config

T0 = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
MEMBER = "consumer-pay-app-1-5f0c2a8e-1b7d-4c3e-9a61-0d2f4b6e8a01"
COORDINATOR = " (kafka.coordinator.group.GroupCoordinator)"


def _line(at: str, message: str) -> str:
    return f"[2026-11-20 {at}] INFO [GroupCoordinator 1]: {message}{COORDINATOR}"


def _rebalance(group: str, at: tuple[str, str, str], old: int, new: int) -> list[str]:
    """A rebalance of `group` in the broker's words: prepared at at[0], stabilized at at[1], assigned at at[2]."""
    return [
        _line(at[0], f"Preparing to rebalance group {group} in state PreparingRebalance with old generation {old} "
                     f"(__consumer_offsets-3) (reason: Removing member {MEMBER} on LeaveGroup; client reason: the "
                     "consumer is being closed)"),
        _line(at[1], f"Stabilized group {group} generation {new} (__consumer_offsets-3) with 1 members"),
        _line(at[2], f"Assignment received from leader {MEMBER} for group {group} for generation {new}. "
                     "The group has 1 members, 0 of which are static."),
    ]


# Generation 48 stabilized twice: the line of the rebalance to 49 was lost, so generation 48 follows 48.
INCONSISTENT = (_rebalance("pay-app", ("10:00:00,000", "10:00:03,000", "10:00:03,050"), 47, 48)
                + _rebalance("pay-app", ("10:05:00,000", "10:05:03,000", "10:05:03,050"), 48, 48))


def _land(landing: Path, name: str, lines: list[str]) -> None:
    folder = landing / "broker-1"
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{name}.partial"
    partial.write_text("\n".join(lines) + "\n")
    partial.rename(folder / name)


def _naive(ts: dt.datetime) -> dt.datetime:
    return ts.astimezone(dt.timezone.utc).replace(tzinfo=None)


def _input_alerts(spark, cfg):
    return lake.read_table(spark, cfg, "gold_alerts").filter("rule = 'inconsistent_input'")


@pytest.fixture(scope="module")
def inconsistent(spark, tmp_path_factory):
    """A lost line an hour before the newest event (well past the allowed lateness), run once at T0."""
    root = tmp_path_factory.mktemp("policy")
    cfg = make_config(root)
    _land(cfg.landing, "server.log.2026-11-20-10",
          INCONSISTENT + _rebalance("other", ("11:00:00,000", "11:00:02,000", "11:00:02,040"), 5, 6))
    return {"cfg": cfg, "first": run(spark, cfg, run_ts=T0)}


def test_only_cross_row_rules_over_event_order_are_input_rules():
    inputs = {rule for rule, scope in scopes(checks()).items() if scope == "input"}
    assert inputs == {("gold_group_states", "legal_transition"), ("gold_rebalances", "generation_grows")}


def test_a_lost_line_is_reported_once_and_later_runs_go_on(spark, inconsistent):
    cfg, first = inconsistent["cfg"], inconsistent["first"]
    assert first.quality is not None and not first.quality.failures, first.quality.error()
    assert [(r.full_name, r.unexpected_count) for r in first.quality.findings] == [
        ("gold_rebalances.generation_grows", 1)]
    broken = lake.read_table(spark, cfg, "gold_rebalances").filter("generation_before = 48").first().rebalance_id
    alert = _input_alerts(spark, cfg).select("group_id", "opened_at", "rebalance_ids", "delivered_to")
    assertDataFrameEqual(alert, spark.createDataFrame(
        [("pay-app", dt.datetime(2026, 11, 20, 10, 5), [broken], ["jsonl"])], alert.schema))
    assert "generation_before=48, generation_after=48" in _input_alerts(spark, cfg).first().summary
    assert lake.read_table(spark, cfg, "gold_alerts").filter("rule = 'quality'").count() == 0
    stored = lake.read_table(spark, cfg, "gold_quality_results").filter("rule = 'generation_grows'").first()
    assert (stored.success, stored.unexpected_count) == (False, 1)
    assert f"rebalance_id={broken}" in stored.samples and "generation_after=48" in stored.samples

    # A later file of another group: every table changes, the same row is judged again and found again.
    alerts_before = lake.read_table(spark, cfg, "gold_alerts")
    _land(cfg.landing, "server.log.2026-11-20-11",
          _rebalance("audit-app", ("11:10:00,000", "11:10:01,000", "11:10:01,030"), 0, 1))
    second = run(spark, cfg, run_ts=T0 + dt.timedelta(minutes=15))
    assert second.quality.validated and not second.quality.failures
    assert [r.full_name for r in second.quality.findings] == ["gold_rebalances.generation_grows"]
    assertDataFrameEqual(lake.read_table(spark, cfg, "gold_alerts"), alerts_before)
    feed = [json.loads(line) for line in cfg.alerts_jsonl.read_text().splitlines()]
    assert [a["rule"] for a in feed].count("inconsistent_input") == 1


def test_a_broken_pipeline_rule_still_fails_the_run(spark, inconsistent):
    cfg = inconsistent["cfg"]
    states = lake.table(cfg, "gold_group_states")
    clean = states.delta(spark).history(1).first().version
    # A duplicated state of the newest group: pipeline rules judge every row, also those within the lateness.
    newest = lake.read_table(spark, cfg, "gold_group_states").orderBy(F.desc("started_at")).limit(1)
    writes.append(newest, cfg, "gold_group_states")
    try:
        with pytest.raises(QualityError) as failure:
            run(spark, cfg, stages=("quality",), run_ts=T0 + dt.timedelta(minutes=30))
        assert "gold_group_states.state_id_unique" in str(failure.value).splitlines()[0]
    finally:
        states.delta(spark).restoreToVersion(clean)


def test_rows_within_the_allowed_lateness_are_not_judged_yet(spark, tmp_path):
    cfg = make_config(tmp_path)
    # The newest event (10:15:01.03) is less than 900 s after the broken rebalance (10:05).
    _land(cfg.landing, "server.log.2026-11-20-10",
          INCONSISTENT + _rebalance("audit-app", ("10:15:00,000", "10:15:01,000", "10:15:01,030"), 0, 1))
    early = run(spark, cfg, run_ts=T0)
    assert not early.quality.failures and not early.quality.findings
    judged = lake.read_table(spark, cfg, "gold_quality_results").filter("rule = 'generation_grows'").first()
    assert (judged.success, judged.checked_rows) == (True, 1)
    assert _input_alerts(spark, cfg).count() == 0

    _land(cfg.landing, "server.log.2026-11-20-11",
          _rebalance("other", ("11:00:00,000", "11:00:02,000", "11:00:02,040"), 5, 6))
    final = run(spark, cfg, run_ts=T0 + dt.timedelta(minutes=15))
    assert not final.quality.failures
    assert [(r.full_name, r.unexpected_count) for r in final.quality.findings] == [
        ("gold_rebalances.generation_grows", 1)]
    assert [r.opened_at for r in _input_alerts(spark, cfg).collect()] == [_naive(T0.replace(hour=10, minute=5))]
