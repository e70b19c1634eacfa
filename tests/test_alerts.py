"""Alerts: each condition once, delivered once per sink across re-runs, a webhook that fails and recovers."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pyspark.sql import functions as F

from pipelines import io
from pipelines.alerts.sinks import DeliveryError, append_jsonl, post_webhook
from pipelines.config import AlertSettings
from pipelines.run import run
from tests.conftest import Receiver, make_config

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
    alerts = io.read_table(spark, cfg, "gold_alerts")
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
    assert io.read_table(spark, cfg, "gold_alerts").count() == total
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
        return io.read_table(spark, cfg, "gold_alerts").filter(F.col("rule") == "stuck").collect()

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
