"""The script an operator writes by hand: read every file line by line, match the group coordinator's rebalance and
member lines and the consumer's poll-timeout line with a few compiled regexes, emit one dict per event.

Standard library only, single-threaded; the benchmark runs it in a subprocess so its time and memory are its own.
Usage: python bench/handwritten.py LANDING_DIR [--out EVENTS.jsonl]; prints one JSON summary line on stdout.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import resource
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

TIMESTAMP = re.compile(r"^\[([^\]]+)\] |^(\d\d:\d\d:\d\d\.\d{3}) ")
PATTERNS = (
    ("rebalance_started", re.compile(
        r"\[GroupCoordinator (\d+)\]: Preparing to rebalance group (\S+) in state (\w+) with old generation (\d+) "
        r"\(__consumer_offsets-(\d+)\) \(reason: (.*)\) \(kafka"
    ), ("broker_id", "group_id", "state", "generation", "offsets_partition", "reason")),
    ("group_stabilized", re.compile(
        r"\[GroupCoordinator (\d+)\]: Stabilized group (\S+) generation (\d+) \(__consumer_offsets-(\d+)\)"
        r"(?: with (\d+) members)?"
    ), ("broker_id", "group_id", "generation", "offsets_partition", "member_count")),
    ("assignment_received", re.compile(
        r"\[GroupCoordinator (\d+)\]: Assignment received from leader (\S+) for group (\S+) for generation (\d+)"
    ), ("broker_id", "member_id", "group_id", "generation")),
    ("group_emptied", re.compile(r"\[GroupCoordinator (\d+)\]: Group (\S+) with generation (\d+) is now empty"),
     ("broker_id", "group_id", "generation")),
    ("member_joined", re.compile(
        r"\[GroupCoordinator (\d+)\]: Dynamic member with unknown member id joins group (\S+) in (\w+) state\. "
        r"Created a new member id (\S+)"
    ), ("broker_id", "group_id", "state", "member_id")),
    ("member_failed", re.compile(
        r"\[GroupCoordinator (\d+)\]: Member (\S+) in group (\S+) has failed, removing it from the group"
    ), ("broker_id", "member_id", "group_id")),
    ("member_left", re.compile(
        r"\[GroupCoordinator (\d+)\]: Member MemberMetadata\(memberId=([^,]+), .* has left group (\S+) "
        r"through explicit `LeaveGroup`"
    ), ("broker_id", "member_id", "group_id")),
    ("poll_timeout", re.compile(
        r"\[Consumer clientId=([^,\]]*), groupId=([^\]]*)\] consumer poll timeout has expired"
    ), ("client_id", "group_id")),
)
def read_lines(path: Path) -> Iterator[str]:
    """The lines of one log file (gzip when its name ends in .gz), without line ends."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            yield line.rstrip("\n")


def parse_line(line: str, *, prefilter: bool = False) -> dict[str, Any] | None:
    """One event dict for a broker rebalance/member line or a client poll-timeout line, else None."""
    # The generous variant skips the regexes on lines without a literal they need (most lines are not about groups).
    if prefilter and "GroupCoordinator" not in line and "poll timeout" not in line:
        return None
    for event_type, regex, names in PATTERNS:
        found = regex.search(line)
        if found is None:
            continue
        event: dict[str, Any] = {"event_type": event_type, **dict(zip(names, found.groups(), strict=True))}
        stamp = TIMESTAMP.match(line)
        if stamp and stamp.group(1):
            when = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc)
            event["event_ts"] = when.isoformat()
        elif stamp:
            event["event_time_of_day"] = stamp.group(2)
        return event
    return None


def parse_tree(landing: Path, sink: IO[str], *, prefilter: bool = False) -> tuple[int, int, int]:
    """Parse every file under `landing/<instance>/`, write one JSON event per line to `sink`; (files, lines, events)."""
    files = lines = events = 0
    for path in sorted(p for p in landing.glob("*/*") if p.is_file() and not p.name.startswith((".", "_"))):
        files += 1
        instance = path.parent.name
        for number, line in enumerate(read_lines(path), start=1):
            lines += 1
            event = parse_line(line, prefilter=prefilter)
            if event is not None:
                events += 1
                event.update(instance=instance, source_file=str(path), line_no=number)
                sink.write(json.dumps(event) + "\n")
    return files, lines, events


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited from the parent before exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    """Parse a landing directory; print {files, lines, events, seconds, peak_rss_mb} as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("landing", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/dev/null"), help="where the JSON events go")
    parser.add_argument("--prefilter", action="store_true", help="skip lines without a literal the regexes need")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with args.out.open("w", encoding="utf-8") as sink:
        files, lines, events = parse_tree(args.landing, sink, prefilter=args.prefilter)
    seconds = time.perf_counter() - start
    summary = {"files": files, "lines": lines, "events": events, "seconds": seconds, "peak_rss_mb": peak_rss_mb()}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
