"""The committed corpus: a run's logs trimmed to what matters (every group-related record kept, long noise
stretches cut) plus its truth, under tests/data/kafka-lab/<version>/."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

# The first line of a record in each layout the lab writes; any other line continues the record above it.
RECORD_START = re.compile(
    r"^(?:\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d{3}"  # Kafka's `[%d]`, JVM unified logging `[time]`
    r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\.\d{3}"  # Spring Boot
    r"|\d\d:\d\d:\d\d\.\d{3} \[)"  # Logback TTLL
)
# A record the analytics reads: anything from a group coordinator (classic or new, any class), the consumer's
# group membership, or a group id of the lab.
GROUP_RELATED = re.compile(
    r"\[GroupCoordinator |\[GroupMetadataManager |coordinator\.group\.|GroupCoordinator|\[GroupId |\[Consumer "
    r"|[Rr]ebalanc|\bgroup lab-|groupId=lab-|\bGroup lab-"
)
NOISE_KEPT_PER_STRETCH = 2


def is_group_related(line: str) -> bool:
    """True for a line the analytics must account for (kept whole by the trimming)."""
    return bool(GROUP_RELATED.search(line))


def records(lines: list[str]) -> list[list[str]]:
    """Physical lines grouped into records (a record's continuation lines follow its first line)."""
    out: list[list[str]] = []
    for line in lines:
        if RECORD_START.match(line) or not out:
            out.append([line])
        else:
            out[-1].append(line)
    return out


def trim(lines: list[str]) -> list[str]:
    """Keep every group-related record (with its continuation lines); of each stretch of other records keep the
    first few single-line ones, and the first multi-line one of the file (a configuration dump) so continuation
    lines stay represented."""
    kept: list[str] = []
    stretch = 0
    multi_kept = False
    for rec in records(lines):
        if any(is_group_related(line) for line in rec[:1]) or (len(rec) > 1 and is_group_related(rec[0])):
            kept.extend(rec)
            stretch = 0
            continue
        if len(rec) > 1:
            if not multi_kept:
                kept.extend(rec)
                multi_kept = True
            continue
        if stretch < NOISE_KEPT_PER_STRETCH:
            kept.extend(rec)
        stretch += 1
    return kept


def commit_corpus(run: Path, dest: Path) -> int:
    """Copy run/landing (trimmed; GC logs whole) and run/truth into dest; the total size in bytes."""
    shutil.rmtree(dest, ignore_errors=True)
    total = 0
    for src in sorted((run / "landing").rglob("*")):
        if not src.is_file():
            continue
        target = dest / "landing" / src.relative_to(run / "landing")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text(encoding="utf-8", errors="replace")
        if not src.name.startswith("gc"):
            text = "".join(line + "\n" for line in trim(text.splitlines()))
        target.write_text(text, encoding="utf-8")
        total += target.stat().st_size
    for name in ("truth/rebalances.jsonl", "lab-run.json"):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / name, target)
        total += target.stat().st_size
    meta = json.loads((dest / "lab-run.json").read_text())
    meta.pop("out", None)  # a local path, meaningless in the repository
    (dest / "lab-run.json").write_text(json.dumps(meta, indent=2) + "\n")
    return total
