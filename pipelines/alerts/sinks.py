"""Deliver alerts exactly once per sink across restarts: a JSON-lines feed and a Slack-compatible webhook.

The delivery log (gold_alert_deliveries) says what each sink already has. The feed is also checked for the alert's
id before appending, so a crash between the append and the log entry cannot duplicate a line. The webhook carries
the alert id as an `Idempotency-Key` header for the same window. Secrets (the webhook URL) are read from the
environment and never printed.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.settings.config import AlertSettings


@dataclass(frozen=True)
class Delivery:
    """One alert delivered to one sink."""

    alert_id: str
    sink: str
    attempts: int


class DeliveryError(RuntimeError):
    """A sink could not take an alert after every attempt (the message never contains the secret URL)."""

    def __init__(self, message: str, delivered: list[Delivery] | None = None) -> None:
        super().__init__(message)
        self.delivered = delivered or []


def append_jsonl(path: Path, alerts: list[dict[str, Any]]) -> list[Delivery]:
    """Append alerts to a JSON-lines file, skipping ids the file already has."""
    path.parent.mkdir(parents=True, exist_ok=True)
    present = set()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                present.add(json.loads(line)["alert_id"])
            except (ValueError, KeyError, TypeError):
                continue
    new = [a for a in alerts if a["alert_id"] not in present]
    if new:
        torn = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
        with path.open("a", encoding="utf-8") as feed:
            if torn:
                # A crash cut the last line short: end it, so that the next alert starts a line of its own.
                feed.write("\n")
            for alert in new:
                feed.write(json.dumps(alert, sort_keys=True) + "\n")
            feed.flush()
            os.fsync(feed.fileno())
    return [Delivery(a["alert_id"], "jsonl", 1) for a in alerts]


def slack_payload(alert: dict[str, Any]) -> dict[str, Any]:
    """A Slack-compatible message: `text` for Slack, the alert's fields beside it for other receivers."""
    icon = {"critical": ":rotating_light:", "warning": ":warning:"}.get(alert["severity"], ":information_source:")
    return {"text": f"{icon} [{alert['severity']}] {alert['summary']}", "alert": alert}


def post_webhook(url: str, alerts: list[dict[str, Any]], *, settings: AlertSettings,
                 sleep: Callable[[float], None] = time.sleep) -> list[Delivery]:
    """POST each alert; retry connection errors, 429 and 5xx with exponential backoff. Stops at the first alert
    that still fails (the rest wait for the next run) and raises DeliveryError after recording what got through."""
    delivered: list[Delivery] = []
    for alert in alerts:
        body = json.dumps(slack_payload(alert)).encode()
        delay, last = settings.webhook_backoff_s, ""
        for attempt in range(1, settings.webhook_attempts + 1):
            request = urllib.request.Request(url, data=body, method="POST", headers={  # noqa: S310 - operator's URL
                "Content-Type": "application/json", "Idempotency-Key": alert["alert_id"]})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - operator's URL
                    if 200 <= response.status < 300:
                        delivered.append(Delivery(alert["alert_id"], "webhook", attempt))
                        break
                    last = f"HTTP {response.status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
                if exc.code < 500 and exc.code != 429:
                    raise DeliveryError(f"webhook refused alert {alert['alert_id']}: {last}", delivered) from None
            except (urllib.error.URLError, OSError) as exc:
                last = type(getattr(exc, "reason", exc)).__name__
            if attempt < settings.webhook_attempts:
                sleep(delay)
                delay *= 2
        else:
            raise DeliveryError(
                f"webhook did not take alert {alert['alert_id']} after {settings.webhook_attempts} attempts "
                f"(last: {last}); {len(delivered)} delivered, the rest wait for the next run",
                delivered,
            )
    return delivered


def webhook_url(settings: AlertSettings) -> str | None:
    """The webhook URL from the environment variable the configuration names (None: webhook sink off)."""
    return os.environ.get(settings.webhook_url_env) or None
