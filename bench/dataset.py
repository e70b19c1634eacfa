"""The benchmark's inputs: simulated landing directories (1x and 4x the lines) and their file lists."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from simulator import simulate


@dataclass(frozen=True)
class Dataset:
    """One simulated landing directory: its files, lines and bytes."""

    name: str
    root: Path
    landing: Path
    files: tuple[Path, ...]
    lines: int
    bytes: int
    rebalances: int

    def as_dict(self) -> dict[str, object]:
        """What the report says about the dataset."""
        return {"files": len(self.files), "lines": self.lines, "mb": round(self.bytes / 2**20, 1),
                "rebalances": self.rebalances}


def landing_files(landing: Path) -> tuple[Path, ...]:
    """The files the pipeline reads: `<landing>/<instance>/<file>`, hidden names excluded as Spark does."""
    return tuple(sorted(p for p in landing.glob("*/*") if p.is_file() and not p.name.startswith((".", "_"))))


def lines_in(files: Iterable[Path]) -> int:
    """The lines of `files` (each file closed as soon as it is counted)."""
    total = 0
    for path in files:
        with path.open("rb") as handle:
            total += sum(1 for _ in handle)
    return total


def generate(root: Path, name: str, *, lines: int, groups: int, seed: int,
             progress: Callable[[str], None] | None = None) -> Dataset:
    """Simulate about `lines` log lines under `root/name/landing` (the simulator lands within ±10% of `lines`)."""
    summary = simulate(root / name, seed=seed, groups=groups, lines=lines, progress=progress)
    files = landing_files(summary.landing_dir)
    return Dataset(name=name, root=root / name, landing=summary.landing_dir, files=files, lines=summary.lines,
                   bytes=sum(p.stat().st_size for p in files), rebalances=summary.rebalances)


def hour_of(path: Path) -> str | None:
    """The hour suffix of an hourly broker or client file (`server.log.2026-11-20-08`), None for the others."""
    return path.name.rsplit(".", 1)[-1] if path.name.startswith(("server.log.", "consumer.log.")) else None


def last_hours(history: list[Path], hours: int) -> list[Path]:
    """The history cut to its last `hours` hourly files of each process, with every file that is not hourly (the GC
    logs, which span the whole estate)."""
    kept = sorted({h for p in history if (h := hour_of(p)) is not None})[-hours:]
    return [p for p in history if hour_of(p) is None or hour_of(p) in kept]


def increment_hour(truth_file: Path, landing: Path, *, within: int | None = None) -> tuple[str, int]:
    """The hour the increment is taken from: of the second half of the estate's hours (or of its last `within`
    hours), the latest one in which the most true rebalances start, and how many start in it (a quiet estate's
    groups have one or two incidents each, planned early in the span: the last hours of a simulated day hold none).
    Hours as the hourly files name them (`2026-11-20-08`, UTC)."""
    every = sorted({h for p in landing_files(landing) if (h := hour_of(p)) is not None})
    hours = every[len(every) // 2:] if within is None else every[-within:]
    starts: dict[str, int] = dict.fromkeys(hours, 0)
    for line in truth_file.read_text(encoding="utf-8").splitlines():
        started = json.loads(line)["started_at"]  # 2026-11-20T08:36:22.093Z
        hour = started[:10] + "-" + started[11:13]
        if hour in starts:
            starts[hour] += 1
    best = max(hours, key=lambda h: (starts[h], h))
    return best, starts[best]


def split_at(landing: Path, hour: str) -> tuple[list[Path], list[Path]]:
    """The estate's files before `hour` (and the files that are not hourly: the GC logs) and those of `hour`; the
    hours after it are left out."""
    files = landing_files(landing)
    history = [p for p in files if (h := hour_of(p)) is None or h < hour]
    return history, [p for p in files if hour_of(p) == hour]
