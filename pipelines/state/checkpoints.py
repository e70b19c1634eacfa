"""What a streaming query's checkpoint says it has done, read without Spark."""

from __future__ import annotations

from pathlib import Path


def written_batches(checkpoint: Path) -> list[int]:
    """The batch ids a query's offset log holds: files named by a number (Spark's temporary files are not)."""
    offsets = checkpoint / "offsets"
    if not offsets.is_dir():
        return []
    return sorted(int(p.name) for p in offsets.iterdir() if p.name.isdigit())
