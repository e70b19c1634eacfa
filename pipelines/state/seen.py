"""What the quality and alerts steps last saw: the Delta versions of the tables they read and the settings they ran
with, kept beside the checkpoints.

A step that would see exactly that again has nothing to do, and says so without reading a table: a scheduled run
with nothing new otherwise spends most of its time (8-12 s per step in a new JVM) finding that out from the tables.
A missing or unreadable record only costs one full evaluation; a table written while a step ran has a newer version
than the one recorded (versions are taken before the step reads), so the next run evaluates again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.settings.config import Config
from pipelines.state.release import this_release

FOLDER = "seen"


@dataclass(frozen=True)
class Seen:
    """One step's record: a digest of what its verdicts depend on besides the tables (release, settings), the
    version of every table it read or wrote, and what the step keeps for the next run (`detail`)."""

    key: str
    versions: dict[str, int]
    detail: dict[str, Any] = field(default_factory=dict)


def settings_key(**parts: Any) -> str:
    """A digest of this release and the given settings (JSON-serialisable values)."""
    text = json.dumps({"release": this_release(), **parts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _path(cfg: Config, step: str) -> Path:
    return cfg.checkpoint_root / FOLDER / f"{step}.json"


def last_seen(cfg: Config, step: str) -> Seen | None:
    """The step's record, or None when there is none or it cannot be read (the step then runs in full)."""
    try:
        found = json.loads(_path(cfg, step).read_text(encoding="utf-8"))
        return Seen(str(found["key"]), {str(k): int(v) for k, v in found["versions"].items()},
                    dict(found.get("detail") or {}))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def remember(cfg: Config, step: str, seen: Seen) -> None:
    """Store the step's record (written whole, then renamed: a crash leaves the old record or the new one)."""
    path = _path(cfg, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two runs at once each write their own
    partial.write_text(json.dumps({"key": seen.key, "versions": seen.versions, "detail": seen.detail},
                                  sort_keys=True, default=str) + "\n", encoding="utf-8")
    partial.replace(path)

