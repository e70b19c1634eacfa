"""What a streaming query's checkpoint says it has done, read without Spark."""

from __future__ import annotations

from pathlib import Path


def _numbered(folder: Path) -> list[int]:
    """The batch ids of one of a checkpoint's logs: files named by a number (Spark's temporary files are not)."""
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def written_batches(checkpoint: Path) -> list[int]:
    """The batch ids a query's offset log holds (each micro-batch planned)."""
    return _numbered(checkpoint / "offsets")


def committed_batches(checkpoint: Path) -> list[int]:
    """The batch ids a query's commit log holds (each micro-batch finished)."""
    return _numbered(checkpoint / "commits")
