"""The committed corpus: a run's logs trimmed to what matters (every group-related record kept, long noise
stretches cut) plus its truth, under tests/data/kafka-lab/<version>/."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from lab.procs import LabError

# The first line of a record in each layout the lab writes; any other line continues the record above it.
RECORD_START = re.compile(
    r"^(?:\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d{3}"  # Kafka's `[%d]`, JVM unified logging `[time]`
    r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\.\d{3}"  # Spring Boot
    r"|\d\d:\d\d:\d\d\.\d{3} \["  # Logback TTLL
    r"|%\d\|\d{10}\.\d{3}\|)"  # librdkafka's default logger: `%<level>|<epoch>.<ms>|`
)
# A record the analytics reads: anything from a group coordinator (classic or new, any class), the consumer's
# group membership, or a group id of the lab.
GROUP_RELATED = re.compile(
    r"\[GroupCoordinator |\[GroupMetadataManager |coordinator\.group\.|GroupCoordinator|\[GroupId |\[Consumer "
    r"|[Rr]ebalanc|\bgroup lab-|groupId=lab-|\bGroup lab-|stream-thread \[|stream-client \[|\[Worker clientId="
)
# librdkafka's default logger (`%7|1764071234.567|CGRPSTATE|rdkafka#consumer-1| [thrd:main]: ...`): a line is about
# the group by its facility (state changes, join/sync/leave, heartbeat errors, rebalances, poll and session timeouts,
# the coordinator, assignments handed to the application) or by its level (warnings and errors, at most a few).
RDKAFKA_GROUP = re.compile(
    r"^%(?:[0-4]\|[\d.]+\|[A-Z_]+|\d\|[\d.]+\|(?:CGRPSTATE|CGRPJOINSTATE|CGRPCOORD|COORDSET|COORDCLEAR|JOINGROUP|JOIN"
    r"|SYNCGROUP|LEAVEGROUP|LEAVE|HEARTBEAT|REBALANCE|REJOIN|NOREJOIN|MAXPOLL|SESSTMOUT|MEMBERID|LOST|FENCED"
    r"|GRPLEADER|ASSIGNOR|SUBSCRIBE|UNSUBSCRIBE|SUBSCRIPTION|ASSIGNDONE|CLEARASSIGN|UNASSIGN|CGRPTERM"
    r"|CONSUMER|COMMIT))\|"
)
# ...except its routine heartbeats (one or two a second at debug level; a few of each stretch stay as noise).
RDKAFKA_ROUTINE = re.compile(
    r"\|HEARTBEAT\|.*(?:: Heartbeat for group \"|ConsumerGroupHeartbeat of member id|ConsumerGroupHeartbeat response "
    r"received for member id \"[^\"]*\" with epoch \d+$)"
)
NOISE_KEPT_PER_STRETCH = 2


# Kafka Streams and Connect print much more than their group's lines under the same prefixes: a stream thread's
# task lifecycle and state restoration (only its rebalance, assignment and state lines are about the group), the
# consumers a Streams restore or a Connect worker's offsets, statuses and configs topics use (assigned partitions
# by hand, members of no group), and the list of unused settings (whose names hold `rebalance`).
STREAMS_PREFIX = re.compile(r"stream-(?:thread|client|task) \[")
STREAMS_GROUP = re.compile(r"[Rr]ebalanc|[Aa]ssign|[Rr]evok|\blost\b|State transition|[Ff]enced|[Ff]ollowup|probing"
                           r"|migrated|corrupted")
NOT_GROUP = re.compile(r"These configurations '|clientId=\S+-(?:restore-consumer|offsets|statuses|configs),")


def is_group_related(line: str) -> bool:
    """True for a line the analytics must account for (kept whole by the trimming)."""
    if line.startswith("%"):
        return bool(RDKAFKA_GROUP.match(line)) and not RDKAFKA_ROUTINE.search(line)
    if NOT_GROUP.search(line):
        return False
    if STREAMS_PREFIX.search(line) and not line.count("[Consumer clientId="):
        return bool(STREAMS_GROUP.search(line))
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
    for name in ("truth/rebalances.jsonl", "truth/estate_incidents.jsonl", "lab-run.json"):
        if not (run / name).exists():
            continue  # a run without estate incidents has no estate truth
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / name, target)
        total += target.stat().st_size
    meta = json.loads((dest / "lab-run.json").read_text())
    meta.pop("out", None)  # a local path, meaningless in the repository
    (dest / "lab-run.json").write_text(json.dumps(meta, indent=2) + "\n")
    return total


# Instance folders every run has (one cluster's nodes): their logs are appended to, not replaced, by a merge.
NODE_FOLDER = re.compile(r"^(?:broker|controller)-\d+$")


def _trimmed(src: Path) -> str:
    text = src.read_text(encoding="utf-8", errors="replace")
    if src.name.startswith("gc"):
        return text
    return "".join(line + "\n" for line in trim(text.splitlines()))


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def merge_corpus(run: Path, dest: Path) -> int:
    """Add a run of some scenarios to an existing corpus without touching what other scenarios left there: new
    member folders are copied (trimmed), the run's broker and controller logs are appended to the corpus's own (the
    cluster reads as restarted later), its truth rows join the corpus's (rows written before `client_kind` and
    `group_type` existed get `java` and `consumer`, nothing else changes) and lab-run.json records the merge.
    Refuses a run whose groups or member folders the corpus already has (restore the corpus from git first).
    Returns the number of bytes added."""
    if not (dest / "truth" / "rebalances.jsonl").exists():
        return commit_corpus(run, dest)
    old = _rows(dest / "truth" / "rebalances.jsonl")
    new = _rows(run / "truth" / "rebalances.jsonl")
    clash = sorted({r["group_id"] for r in new} & {r["group_id"] for r in old})
    files = [p for p in sorted((run / "landing").rglob("*")) if p.is_file()]
    folders = sorted({p.relative_to(run / "landing").parts[0] for p in files})
    taken = [f for f in folders if not NODE_FOLDER.match(f) and (dest / "landing" / f).exists()]
    if clash or taken:
        raise LabError(f"the corpus in {dest} already has groups {clash} / member folders {taken}; restore it "
                       f"(git checkout) before merging this run again")
    before = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    for src in files:
        target = dest / "landing" / src.relative_to(run / "landing")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as f:  # a node's log: appended; a member's: a new file
            f.write(_trimmed(src))
    for row in old:
        row.setdefault("client_kind", "java")
        row.setdefault("group_type", "consumer")
    rows = sorted(old + new, key=lambda r: (r["started_at"], r["group_id"], r["generation_after"]))
    (dest / "truth" / "rebalances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    estates = _rows(dest / "truth" / "estate_incidents.jsonl") + _rows(run / "truth" / "estate_incidents.jsonl")
    if estates:
        estates.sort(key=lambda r: (r["started_at"], r["root_kind"]))
        (dest / "truth" / "estate_incidents.jsonl").write_text("".join(json.dumps(r) + "\n" for r in estates))
    meta = json.loads((dest / "lab-run.json").read_text())
    added = json.loads((run / "lab-run.json").read_text())
    added.pop("out", None)
    for key in ("passed", "skipped"):
        meta[key] = [*meta.get(key, []), *(n for n in added.get(key, []) if n not in meta.get(key, []))]
    for key in ("scenario_seconds", "skip_reasons", "failed"):
        meta[key] = {**meta.get(key, {}), **added.get(key, {})}
    meta["truth_rows"] = len(rows)
    meta.setdefault("merged_runs", []).append(added)
    (dest / "lab-run.json").write_text(json.dumps(meta, indent=2) + "\n")
    return sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) - before
