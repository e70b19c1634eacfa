"""The benchmark's inputs: simulated landing directories (1x and 4x the lines), their file lists, and the hours of an
estate's files (the history and scale benchmarks time one hour after the hours before it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pipelines.storage.inputs import listing_of
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
    """The files the pipeline reads, listed by the pipeline's own listing (`pipelines.storage.inputs`), named below
    `landing` as given."""
    root = landing.resolve()
    return tuple(landing / path.relative_to(root) for path in listing_of(landing).files)


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
    """The history cut to the estate's last `hours` hours of hourly files, with the files that are not hourly (a GC
    log per JVM run) whose last line is in or after those hours, each whole: a run that ended before them is the
    older history's (a file whose last line carries no time is kept)."""
    if hours < 1:
        raise ValueError(f"hours must be at least 1, not {hours}")
    kept = sorted({h for p in history if (h := hour_of(p)) is not None})[-hours:]
    since = kept[0] if kept else ""
    return [p for p in history if (h := hour_of(p)) in kept or (h is None and _gc_hour(p, last=True) >= since)]


# The time at the start of a unified-logging GC line: `[2026-11-20T10:27:47.694+0000]`.
_GC_TIME = re.compile(rb"^\[(\d{4}-\d{2}-\d{2})T(\d{2})")


def _gc_hour(path: Path, *, last: bool) -> str:
    """The hour (`2026-11-20-10`) of the first (or last) line of a GC log that starts with its time; without one,
    "~" for the last (after every hour) and "" for the first (before every hour), so such a file is always kept."""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 4096) if last else 0)
        lines = handle.read(4096).splitlines()
    for line in reversed(lines) if last else lines:
        if m := _GC_TIME.match(line):
            return f"{m.group(1).decode()}-{m.group(2).decode()}"
    return "~" if last else ""


def increment_hour(truth_file: Path, landing: Path, *, within: int | None = None,
                   after: int = 0) -> tuple[str, int]:
    """The hour the increment is taken from: of the second half of the estate's hours (or of its last `within`
    hours, leaving out its first `after` hours), the latest one in which the most true rebalances start, and how
    many start in it (a quiet estate's groups have one or two incidents each, planned early in the span: the last
    hours of a simulated day hold none). Hours as the hourly files name them (`2026-11-20-08`, UTC)."""
    if within is not None and within < 1:
        raise ValueError(f"within must be at least 1, not {within}")
    every = sorted({h for p in landing_files(landing) if (h := hour_of(p)) is not None})
    hours = every[len(every) // 2:] if within is None else every[max(after, len(every) - within):]
    if not hours:
        raise ValueError(f"{landing}: no hourly broker or client file after the first {after} hours to time")
    starts: dict[str, int] = dict.fromkeys(hours, 0)
    for line in truth_file.read_text(encoding="utf-8").splitlines():
        started = json.loads(line)["started_at"]  # 2026-11-20T08:36:22.093Z
        hour = started[:10] + "-" + started[11:13]
        if hour in starts:
            starts[hour] += 1
    best = max(hours, key=lambda h: (starts[h], h))
    return best, starts[best]


def split_at(landing: Path, hour: str) -> tuple[list[Path], list[Path]]:
    """The estate's files before `hour` and those of `hour`; the hours after it are left out. Files that are not
    hourly (a GC log per JVM run) are history when their first line is before `hour`, each whole (a run that spans
    the hour brings its later lines too), and left out when the run started at or after it."""
    files = landing_files(landing)
    history = [p for p in files if _starts_before(p, hour)]
    return history, [p for p in files if hour_of(p) == hour]


def _starts_before(path: Path, hour: str) -> bool:
    own = hour_of(path)
    return own < hour if own is not None else _gc_hour(path, last=False) < hour
