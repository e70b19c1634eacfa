"""Rebuild each group's rebalances from its silver events: a small state machine per group, run per group with
applyInPandas, so a rebuild of the touched groups gives the same rows whatever order the files arrived in."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.gold.causes import Verdict, classify_reason
from schemas.tables import EVIDENCE, GOLD_REBALANCES

EVENT_COLUMNS = (
    "event_id", "event_ts", "event_type", "source_kind", "group_id", "member_id", "generation", "reason",
    "client_reason", "member_count", "broker_id", "source_file", "line_no",
)
_ORDER = ("event_ts", "source_file", "line_no")
# Member events before a reason-less start (brokers before 2.1) explain it when this close (seconds).
_NEIGHBOUR_S = 5.0


@dataclass
class _Open:
    start: dict
    verdict: Verdict
    members_before: int | None
    evidence: list[dict] = field(default_factory=list)
    generation_after: int | None = None
    stabilized_at: pd.Timestamp | None = None
    members_after: int | None = None
    joined: set[str] = field(default_factory=set)
    left: set[str] = field(default_factory=set)


def _rebalance_id(group_id: str, anchor_event_id: str) -> str:
    return hashlib.sha256(f"{group_id}|{anchor_event_id}".encode()).hexdigest()[:24]


def _neighbour_verdict(recent: list[dict], start_ts: pd.Timestamp) -> Verdict | None:
    for event in reversed(recent):
        if (start_ts - event["event_ts"]).total_seconds() > _NEIGHBOUR_S:
            break
        if event["event_type"] == "member_failed":
            return Verdict("session_timeout", "heartbeat_expiration", 0.7, event["member_id"],
                           "no reason printed; member expired just before the start")
        if event["event_type"] == "member_left":
            return Verdict("membership_change", "member_leave", 0.6, event["member_id"],
                           "no reason printed; member left just before the start")
    return None


def _row(group_id: str, open_: _Open, *, completed_at, outcome: str) -> dict:
    start = open_.start
    started = start["event_ts"]
    duration = None if completed_at is None else int((completed_at - started).total_seconds() * 1000)
    verdict = open_.verdict
    evidence = [{"event_id": start["event_id"], "explanation": verdict.explanation}] + open_.evidence
    broker = start.get("broker_id")
    return {
        "rebalance_id": _rebalance_id(group_id, start["event_id"]),
        "group_id": group_id,
        "protocol": "classic",
        "coordinator": None if broker is None or pd.isna(broker) else str(int(broker)),
        "generation_before": _int(start.get("generation")),
        "generation_after": open_.generation_after,
        "started_at": started,
        "completed_at": completed_at,
        "duration_ms": duration,
        "outcome": outcome,
        "members_before": open_.members_before,
        "members_after": open_.members_after,
        "members_joined": len(open_.joined),
        "members_left": len(open_.left),
        "trigger_member_id": verdict.trigger_member_id,
        "cause": verdict.cause,
        "cause_detail": verdict.detail,
        "cause_confidence": verdict.confidence,
        "evidence_json": json.dumps(evidence),
        "incident_id": None,
    }


def _int(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def reconstruct_group(group_id: str, events: Iterable[dict]) -> list[dict]:
    """All rebalances of one group from its broker events in time order (rows shaped like gold_rebalances)."""
    rows: list[dict] = []
    members: set[str] = set()
    # Group size after the last completed rebalance: what the group had before the next one started.
    size: int | None = None
    recent: list[dict] = []
    current: _Open | None = None
    for event in events:
        kind = event["event_type"]
        member = event.get("member_id")
        if kind in ("member_failed", "member_left") and member:
            members.discard(member)
            if current is not None:
                current.left.add(member)
                current.evidence.append({"event_id": event["event_id"], "explanation": f"{kind}: {member}"})
        elif kind == "member_joining" and member:
            members.add(member)
            if current is not None:
                current.joined.add(member)
        elif kind == "rebalance_started":
            if current is not None:
                rows.append(_row(group_id, current, completed_at=event["event_ts"], outcome="superseded"))
                size = current.members_after if current.members_after is not None else size
            verdict = classify_reason(event.get("reason"), event.get("client_reason"))
            if verdict is None:
                verdict = _neighbour_verdict(recent, event["event_ts"]) or Verdict(
                    "unknown", None, 0.1, None, "no reason printed and no member event just before the start"
                )
            before = size if size is not None else (0 if _int(event.get("generation")) == 0 else None)
            current = _Open(start=event, verdict=verdict, members_before=before)
            trigger = verdict.trigger_member_id
            if trigger and verdict.detail == "member_join":
                members.add(trigger)
                current.joined.add(trigger)
            elif trigger and (verdict.cause in ("session_timeout", "poll_timeout") or verdict.detail == "member_leave"):
                members.discard(trigger)
                current.left.add(trigger)
        elif kind == "group_stabilized" and current is not None:
            current.generation_after = _int(event.get("generation"))
            current.stabilized_at = event["event_ts"]
            count = _int(event.get("member_count"))
            current.members_after = count if count is not None else len(members)
        elif kind == "assignment_received" and current is not None and current.generation_after is not None:
            if _int(event.get("generation")) == current.generation_after:
                rows.append(_row(group_id, current, completed_at=event["event_ts"], outcome="stabilized"))
                size = current.members_after
                current = None
        elif kind == "group_emptied" and current is not None:
            current.generation_after = _int(event.get("generation"))
            current.members_after = 0
            members.clear()
            rows.append(_row(group_id, current, completed_at=event["event_ts"], outcome="emptied"))
            size = 0
            current = None
        recent.append(event)
        if len(recent) > 50:
            del recent[:25]
    if current is not None:
        if current.stabilized_at is not None:
            rows.append(_row(group_id, current, completed_at=current.stabilized_at, outcome="stabilized"))
        else:
            rows.append(_row(group_id, current, completed_at=None, outcome="open"))
    return rows


_PANDAS_SCHEMA = ", ".join(
    f"{f.name} {f.dataType.simpleString()}" if f.name != "evidence" else "evidence_json string"
    for f in GOLD_REBALANCES.fields
)


def _reconstruct_pdf(pdf: pd.DataFrame) -> pd.DataFrame:
    pdf = pdf.sort_values(list(_ORDER), kind="mergesort")
    group_id = pdf["group_id"].iloc[0]
    records = pdf.astype(object).where(pdf.notna(), None).to_dict("records")
    rows = reconstruct_group(group_id, records)
    columns = [f.name if f.name != "evidence" else "evidence_json" for f in GOLD_REBALANCES.fields]
    return pd.DataFrame(rows, columns=columns)


def rebuild_rebalances(events: DataFrame) -> DataFrame:
    """gold_rebalances rows for every group present in `events` (silver_events rows, broker side)."""
    broker = events.filter((F.col("source_kind") == "broker") & F.col("group_id").isNotNull())
    rows = broker.select(*EVENT_COLUMNS).groupBy("group_id").applyInPandas(_reconstruct_pdf, schema=_PANDAS_SCHEMA)
    return rows.withColumn("evidence", F.from_json("evidence_json", EVIDENCE)).select(
        [f.name for f in GOLD_REBALANCES.fields]
    )
