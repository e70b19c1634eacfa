"""The benchmark's inputs: simulated landing directories (1x and 4x the lines) and their file lists."""

from __future__ import annotations

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
