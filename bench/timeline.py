"""Where a run's time went, read back from the Delta logs it wrote: every commit of every table in time order, with
the seconds since the previous commit (the work that produced it, plus the commit itself)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def commits(lakehouse: Path, *, since_ms: int) -> list[dict[str, Any]]:
    """Commits made at or after `since_ms` (epoch ms) in the tables under `lakehouse`, oldest first."""
    found = []
    for log in sorted(lakehouse.glob("*/_delta_log/*.json")):
        table = log.parent.parent.name
        for line in log.read_text(encoding="utf-8").splitlines():
            info = json.loads(line).get("commitInfo") if line.strip() else None
            if not info or info.get("timestamp", 0) < since_ms:
                continue
            metrics = info.get("operationMetrics", {})
            found.append({"table": table, "operation": info.get("operation", "?"), "ts_ms": info["timestamp"],
                          "delta_execution_ms": int(metrics["executionTimeMs"]) if "executionTimeMs" in metrics
                          else None})
    return sorted(found, key=lambda c: c["ts_ms"])


def steps(lakehouse: Path, *, start_ms: int, end_ms: int) -> dict[str, Any]:
    """Each commit with the seconds since the previous one (the first since `start_ms`), and the tail after the
    last commit up to `end_ms`."""
    rows = commits(lakehouse, since_ms=start_ms)
    previous = start_ms
    out = []
    for row in rows:
        out.append({"table": row["table"], "operation": row["operation"],
                    "gap_s": round((row["ts_ms"] - previous) / 1000, 3),
                    **({"delta_execution_s": round(row["delta_execution_ms"] / 1000, 3)}
                       if row["delta_execution_ms"] is not None else {})})
        previous = row["ts_ms"]
    return {"commits": len(out), "steps": out, "after_last_commit_s": round((end_ms - previous) / 1000, 3)}
