"""Alerts: each condition once, delivered once per sink across re-runs, a webhook that fails and recovers."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pyspark.sql import functions as F

from pipelines.alerts.sinks import DeliveryError, append_jsonl, post_webhook
from pipelines.flow.run import run
from pipelines.settings.config import AlertSettings
from pipelines.storage import lake
from tests.conftest import Receiver, continuous_run, make_config

ALERT = {"alert_id": "a1", "rule": "storm", "severity": "critical", "group_id": "g", "summary": "Rebalance storm"}


def test_webhook_retries_until_the_receiver_recovers():
    receiver = Receiver(failures=2)
    try:
        done = post_webhook(receiver.url, [ALERT], settings=AlertSettings(webhook_attempts=5), sleep=lambda s: None)
    finally:
        receiver.close()
    assert [(d.alert_id, d.attempts) for d in done] == [("a1", 3)]
    assert receiver.received == [("a1", {"text": ":rotating_light: [critical] Rebalance storm", "alert": ALERT})]


def test_webhook_failure_names_the_alert_not_the_secret_url():
    receiver = Receiver(failures=100)
    try:
        with pytest.raises(DeliveryError) as failure:
            post_webhook(receiver.url, [ALERT], settings=AlertSettings(webhook_attempts=3), sleep=lambda s: None)
    finally:
        receiver.close()
    assert "a1" in str(failure.value) and "HTTP 500" in str(failure.value)
    assert "secret-token" not in str(failure.value) and "127.0.0.1" not in str(failure.value)
    assert receiver.requests == 3


def test_feed_never_repeats_an_alert(tmp_path):
    feed = tmp_path / "alerts.jsonl"
    append_jsonl(feed, [ALERT])
    append_jsonl(feed, [ALERT, {**ALERT, "alert_id": "a2"}])  # a crash after the append, before the log
    assert [json.loads(line)["alert_id"] for line in feed.read_text().splitlines()] == ["a1", "a2"]


def test_planted_storm_alerts_once_however_often_the_pipeline_runs(spark, estate, monkeypatch):
    cfg, receiver = estate["cfg"], estate["receiver"]
    alerts = lake.read_table(spark, cfg, "gold_alerts")
    storms = alerts.filter(F.col("rule") == "storm").collect()
    assert len(storms) >= 1
    assert all(s.delivered_to == ["jsonl", "webhook"] for s in storms)
    total = alerts.count()
    assert total == alerts.select("alert_id").distinct().count()
    keys = [key for key, _ in receiver.received]
    assert sorted(keys) == sorted(r.alert_id for r in alerts.select("alert_id").collect())
    assert len(keys) == len(set(keys))

    monkeypatch.setenv(cfg.alerts.webhook_url_env, receiver.url)
    again = run(spark, cfg, run_ts=estate["run_ts"])
    assert again.batches == {}
    assert lake.read_table(spark, cfg, "gold_alerts").count() == total
    assert len(receiver.received) == total
    feed = [json.loads(line)["alert_id"] for line in cfg.alerts_jsonl.read_text().splitlines()]
    assert sorted(feed) == sorted(keys)


def test_a_stuck_group_alerts_on_the_wall_clock_with_no_new_line(spark, tmp_path):
    """A group left in PreparingRebalance alerts once the clock passes the threshold, on a run that finds nothing
    new; runs before that moment find nothing changed and skip the evaluation."""
    cfg = make_config(tmp_path)
    broker = cfg.landing / "broker-1"
    broker.mkdir(parents=True)
    (broker / "server.log").write_text(
        "[2024-05-14 10:21:07,482] INFO [GroupCoordinator 1]: Preparing to rebalance group stuck-app in state "
        "PreparingRebalance with old generation 41 (__consumer_offsets-17) (reason: Adding new member c-9-zz with "
        "group instance id None) (kafka.coordinator.group.GroupCoordinator)\n", encoding="utf-8")
    at = dt.datetime(2024, 5, 14, 10, 21, 7, tzinfo=dt.timezone.utc)
    threshold = dt.timedelta(minutes=cfg.alerts.stuck_after_min)

    def stuck_alerts():
        return lake.read_table(spark, cfg, "gold_alerts").filter(F.col("rule") == "stuck").collect()

    run(spark, cfg, run_ts=at + dt.timedelta(minutes=1))
    assert stuck_alerts() == []
    said: list[str] = []
    before = run(spark, cfg, run_ts=at + threshold - dt.timedelta(seconds=5), on_progress=said.append)
    assert before.batches == {} and stuck_alerts() == []
    assert any(m.startswith("alerts: no table changed") for m in said), said
    assert any("unchanged since the last check" in m for m in said), said

    said.clear()
    after = run(spark, cfg, run_ts=at + threshold + dt.timedelta(seconds=5), on_progress=said.append)
    assert set(after.batches) == {"alerts"}  # no stream batch: only the alerts step wrote
    assert not any(m.startswith("alerts: no table changed") for m in said), said
    [alert] = stuck_alerts()
    assert alert.group_id == "stuck-app" and "stuck in PreparingRebalance" in alert.summary
    assert alert.delivered_to == ["jsonl"]
    delivered = [json.loads(line)["alert_id"] for line in cfg.alerts_jsonl.read_text().splitlines()]
    assert delivered.count(alert.alert_id) == 1


def test_the_alert_loop_evaluates_at_start_when_poked_and_on_the_clock():
    """One evaluation at start, one per poke, and one per `every_s` without any; a refusing sink does not end it,
    any other error does and reaches the caller."""
    import time

    from pipelines.alerts.loop import AlertLoop

    calls: list[dt.datetime] = []

    def evaluate(now: dt.datetime) -> None:
        calls.append(now)
        if len(calls) == 3:
            raise DeliveryError("webhook refused a1")
        if len(calls) == 5:
            raise ValueError("a broken rule")

    said: list[str] = []

    def wait_for(n: int) -> None:
        """Until the loop has finished its n-th evaluation."""
        deadline = time.monotonic() + 10
        while loop.evaluations < n and time.monotonic() < deadline:
            time.sleep(0.02)
        assert loop.evaluations >= n, calls

    loop = AlertLoop(evaluate, every_s=600, on_progress=said.append).start()
    wait_for(1)
    loop.poke()
    wait_for(2)
    loop.poke()
    wait_for(3)
    assert said == ["alerts: webhook refused a1; retried at the next evaluation"]
    loop.check()  # a refusing sink is retried, not fatal
    loop.every_s = 0.2  # no poke from here: the clock alone
    loop.poke()
    wait_for(5)
    time.sleep(0.5)
    with pytest.raises(ValueError, match="a broken rule"):
        loop.check()
    assert len(calls) == 5  # the loop ended at the error
    with pytest.raises(ValueError):
        loop.stop()


def test_a_continuous_run_alerts_after_each_batch_without_another_run(spark, tmp_path):
    """With `--trigger continuous`, alerts come from the running process: a group already stuck when it starts, then
    a long rebalance landed while it runs: the clock alone would wait 10 minutes, and so would the derived refresh
    (which evaluates them after it refreshed), so the alert comes from the reconstruct batch itself."""
    import time

    cfg = make_config(tmp_path, alerts={"evaluate_every_s": 600}, derived_every_s=600)
    broker = cfg.landing / "broker-1"
    broker.mkdir(parents=True)
    coordinator = "(kafka.coordinator.group.GroupCoordinator)"
    (broker / "server.log").write_text(
        "[2024-05-14 10:21:07,482] INFO [GroupCoordinator 1]: Preparing to rebalance group stuck-app in state "
        "PreparingRebalance with old generation 41 (__consumer_offsets-17) (reason: Adding new member c-9-zz with "
        f"group instance id None) {coordinator}\n", encoding="utf-8")
    def delivered(group: str, rule: str, wait_s: float = 240) -> dict:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not failure:
            if cfg.alerts_jsonl.exists():
                for line in cfg.alerts_jsonl.read_text().splitlines():
                    alert = json.loads(line)
                    if alert["group_id"] == group and alert["rule"] == rule:
                        return alert
            time.sleep(0.2)
        raise AssertionError(f"no {rule} alert of {group} delivered; run failed with {failure}")

    with continuous_run(spark, cfg) as failure:
        assert "stuck in PreparingRebalance" in delivered("stuck-app", "stuck")["summary"]
        later = cfg.landing / "broker-2"
        later.mkdir()
        partial = tmp_path / "server.log"
        partial.write_text(
            "[2024-05-14 11:00:00,000] INFO [GroupCoordinator 2]: Preparing to rebalance group slow-app in state "
            "PreparingRebalance with old generation 3 (__consumer_offsets-4) (reason: Adding new member c-1-aa with "
            f"group instance id None) {coordinator}\n"
            "[2024-05-14 11:01:35,000] INFO [GroupCoordinator 2]: Stabilized group slow-app generation 4 "
            f"(__consumer_offsets-4) with 2 members {coordinator}\n"
            "[2024-05-14 11:01:35,020] INFO [GroupCoordinator 2]: Assignment received from leader c-1-aa for group "
            f"slow-app for generation 4. The group has 2 members, 0 of which are static. {coordinator}\n",
            encoding="utf-8")
        partial.replace(later / "server.log")
        assert "could not consume for 1 min 35 s" in delivered("slow-app", "long_rebalance")["summary"]
    stored = lake.read_table(spark, cfg, "gold_alerts").filter(F.col("group_id").isin("stuck-app", "slow-app"))
    assert sorted((r.group_id, r.rule) for r in stored.collect()) == [("slow-app", "long_rebalance"),
                                                                       ("stuck-app", "stuck")]
