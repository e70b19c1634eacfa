"""The limits the rules read: reconstruction and cause thresholds, and the alert rules' settings (part of the
configuration, pipelines/settings/config.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class FrozenModel(BaseModel):
    """A configuration section: unknown keys are errors, values cannot change after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Thresholds(FrozenModel):
    """Limits used by reconstruction and classification (see pipelines/gold/causes.py for the rules)."""

    coordinator_move_window_s: float = Field(
        default=120, ge=0,
        description="a session expiry this soon after the group moved coordinator is blamed on the move",
    )
    heartbeat_tolerance_s: float = Field(
        default=3, ge=0, description="a GC pause must reach this close to the expiry (one heartbeat interval)"
    )
    gc_pause_min_ms: float = Field(default=1000, ge=0, description="shorter pauses never explain a session expiry")
    poll_timeout_window_s: float = Field(
        default=30, ge=0, description="client poll-timeout lines this close to a LeaveGroup explain it"
    )
    rejoin_window_s: float = Field(
        default=900, ge=0, description="a member removed this long ago that rejoins from the same process is a rejoin"
    )
    incident_gap_s: float = Field(
        default=300, ge=0, description="rebalances of a group closer than this belong to one incident"
    )
    default_session_timeout_ms: int = Field(
        default=45000, ge=1, description="session.timeout.ms assumed where the logs do not show it (Kafka 3.0+ default)"
    )
    estate_window_s: float = Field(
        default=30, ge=0, description="rebalances of different groups this close can share a root (estate incidents)"
    )
    estate_min_groups: int = Field(default=2, ge=2, description="an estate incident with a shared root ties at "
                                   "least this many groups (two more, and at least four, without shared evidence)")
    allowed_lateness_s: float = Field(
        default=900, ge=0,
        description="events older than the newest event already ingested minus this are counted as late "
                    "(silver_accounting.late_events); their groups are rebuilt all the same",
    )


class AlertSettings(FrozenModel):
    """Alert rules and where alerts go. Secrets (the webhook URL) come from the environment, never from files."""

    storm_rebalances: int = Field(default=5, ge=2, description="a storm is at least this many rebalances ...")
    storm_window_min: float = Field(default=10, gt=0, description="... of one group within this many minutes")
    long_rebalance_s: float = Field(default=60, gt=0, description="a rebalance longer than this is an alert")
    stuck_after_min: float = Field(default=5, gt=0, description="a group rebalancing longer than this is stuck")
    poll_timeouts_per_hour: int = Field(default=2, ge=1, description="poll timeouts of one process within an hour")
    estate_groups: int = Field(default=3, ge=2, description="an estate incident is an alert when it reaches this many "
                               "groups ...")
    estate_window_s: float = Field(default=600, gt=0, description="... within this many seconds, with a shared root")
    evaluate_every_s: float = Field(
        default=30, gt=0,
        description="a continuous run evaluates each reconstruct batch's alerts in the batch, and all of them at least "
        "this often "
        "(the stuck rule fires without new lines)",
    )
    jsonl_path: Path | None = Field(default=None,
                                    description="JSON-lines feed (default <lakehouse>/_alerts/alerts.jsonl)")
    webhook_url_env: str = Field(default="REBALANCE_ALERT_WEBHOOK_URL",
                                 description="environment variable holding the Slack-compatible webhook URL")
    webhook_attempts: int = Field(default=5, ge=1, description="delivery attempts per alert and run")
    webhook_backoff_s: float = Field(default=0.5, ge=0, description="first retry delay; doubles each attempt")
