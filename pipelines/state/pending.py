"""The groups whose derived gold tables are behind the hot path, kept beside the checkpoints.

Each reconstruct micro-batch records the groups it rebuilt once all its hot commits are in (`mark`); the derived
refresh reads every record (`pending`), rebuilds those groups' derived rows from the stored hot rows, and only then
removes the records it read (`clear`). A record is never read before the rows it stands for, even by a refresh
running beside the stream. A run stopped anywhere, even by kill -9, leaves its groups behind: a record not yet
cleared stays for the next refresh, and a batch stopped before its record was written is not committed in its
stream's checkpoint, so the next run replays it and writes the record then. Each record is its own file, written
whole and then renamed, so a refresh never loses a record written while it ran.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from pipelines.settings.config import Config

FOLDER = "derived-pending"
_SUFFIX = ".json"


@dataclass(frozen=True)
class Pending:
    """The records read (`files`) and the groups they name; `unreadable` counts records that could not be read,
    which make the refresh cover every group (a damaged record must not leave a group stale for good)."""

    files: tuple[Path, ...]
    groups: frozenset[str]
    unreadable: int = 0

    def __bool__(self) -> bool:
        return bool(self.files)


def _folder(cfg: Config) -> Path:
    return cfg.checkpoint_root / FOLDER


def mark(cfg: Config, groups: list[str], *, batch_id: int) -> Path | None:
    """Record that reconstruct batch `batch_id` rebuilt `groups` (their hot rows are committed); None when there are
    none."""
    if not groups:
        return None
    folder = _folder(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{batch_id:012d}-{uuid.uuid4().hex}{_SUFFIX}"
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps({"batch_id": batch_id, "groups": sorted(groups)}) + "\n", encoding="utf-8")
    partial.replace(path)
    return path


def pending(cfg: Config) -> Pending:
    """Every record written so far (a record still being written, `.tmp`, is not one yet)."""
    folder = _folder(cfg)
    if not folder.is_dir():
        return Pending((), frozenset())
    files: list[Path] = []
    groups: set[str] = set()
    unreadable = 0
    for path in sorted(folder.glob(f"*{_SUFFIX}")):
        try:
            groups.update(str(g) for g in json.loads(path.read_text(encoding="utf-8"))["groups"])
        except (OSError, ValueError, KeyError, TypeError):
            unreadable += 1
        files.append(path)
    return Pending(tuple(files), frozenset(groups), unreadable)


def lag_note(cfg: Config, tables: list[str]) -> str | None:
    """A sentence saying that the derived `tables` do not yet reflect every group the hot path rebuilt, or None when
    no group waits for a refresh (or `tables` is empty)."""
    if not tables:
        return None
    waiting = pending(cfg)
    if not waiting:
        return None
    groups = "every group" if waiting.unreadable else (
        f"{len(waiting.groups)} group{'s' if len(waiting.groups) != 1 else ''}")
    return (f"{', '.join(tables)} may lag the hot tables: {groups} rebuilt since their last refresh (the next "
            f"available-now `rebalance run` refreshes them; a continuous run every {cfg.derived_every_s:g} s)")


def clear(read: Pending) -> None:
    """Remove the records `read` names, once the refresh they asked for is committed."""
    for path in read.files:
        path.unlink(missing_ok=True)
