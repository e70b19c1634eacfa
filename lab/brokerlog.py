"""Read the brokers' own group lines while the lab runs: the rebalances (classic generations, KIP-848 group epochs)
that confirm each scenario's truth."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*) \(([\w.$-]+)\)$")
BROKER = re.compile(r"\[GroupCoordinator (?:id=)?(\d+)")
PREPARING = re.compile(r"Preparing to rebalance group (\S+) in state \S+ with old generation (\d+)"
                       r"(?: \(__consumer_offsets-\d+\))? \(reason: (.*)\)\.?$")
STABILIZED = re.compile(r"Stabilized group (\S+) generation (\d+)")
EMPTIED = re.compile(r"Group (\S+) with generation (\d+) is now empty")
# KIP-848 consumer groups, and (4.1+) streams groups: `[GroupId g][MemberId m] Bumped streams group epoch to N ...`.
EPOCH = re.compile(r"\[GroupId (\S+)\](?:\[MemberId \S+\])? Bumped (?:streams )?group epoch to (\d+)")
# A streams group (4.2) logs no `Bumped` line when it fences a member: its new target assignment names the epoch.
TARGET = re.compile(r"\[GroupId (\S+)\] Computed a new target assignment for epoch (\d+)")
GROUP_ID = re.compile(
    r"\[GroupId (\S+?)\]|\[Group (\S+?)\]"
    r"|[Gg]roup (\S+?) (?:in state|with (?:old )?generation|generation|is |could|removed|transitioned)"
    r"|(?:in|left|joins|for) group (\S+?)(?:[ ,]|\.?$)|metadata for (\S+) with generation"
)


def parse_ts(text: str) -> datetime:
    """A log4j `%d` timestamp of a lab JVM (they all run in UTC)."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class GroupLine:
    """One broker line that names a group."""

    ts: datetime
    broker: int
    group: str
    message: str


@dataclass
class Rebalance:
    """A rebalance as the broker logged it: opened by `Preparing to rebalance` lines (classic) or a group-epoch bump
    (KIP-848), closed by `Stabilized` / `is now empty` / the bump itself."""

    group: str
    generation_after: int
    outcome: str  # stabilized | emptied | epoch
    started_at: datetime
    completed_at: datetime
    brokers: list[int] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


class BrokerLogs:
    """Incremental reader of every broker's server.log; `rebalances(group)` rebuilds a group's history."""

    def __init__(self, logs: dict[int, Path]) -> None:
        self.logs = logs
        self.offsets = dict.fromkeys(logs, 0)
        self.lines: list[GroupLine] = []

    def refresh(self) -> None:
        """Read what the brokers wrote since the last call (complete lines only)."""
        for broker, path in self.logs.items():
            if not path.exists():
                continue
            with path.open("rb") as f:
                f.seek(self.offsets[broker])
                data = f.read()
            end = data.rfind(b"\n") + 1
            self.offsets[broker] += end
            for raw in data[:end].decode("utf-8", "replace").splitlines():
                m = LINE.match(raw)
                if not m or "roup" not in m.group(3):
                    continue
                group = _group_of(m.group(3))
                if group:
                    self.lines.append(GroupLine(parse_ts(m.group(1)), broker, group, m.group(3)))
        self.lines.sort(key=lambda g: g.ts)

    def group_lines(self, group: str) -> list[GroupLine]:
        return [g for g in self.lines if g.group == group]

    def rebalances(self, group: str) -> list[Rebalance]:
        """Completed rebalances of `group` in time order (an open one is not included)."""
        out: list[Rebalance] = []
        opened: Rebalance | None = None
        context: list[GroupLine] = []
        bumped: set[int] = set()
        for line in self.group_lines(group):
            msg = line.message
            if m := PREPARING.search(msg):
                if opened is None:
                    opened = Rebalance(group, -1, "open", line.ts, line.ts)
                opened.reasons.append(m.group(3))
                opened.brokers.append(line.broker)
                opened.lines.append(msg)
            elif (m := STABILIZED.search(msg)) or (m := EMPTIED.search(msg)):
                reb = opened or Rebalance(group, -1, "open", line.ts, line.ts)
                reb.generation_after = int(m.group(2))
                reb.outcome = "stabilized" if "Stabilized" in msg else "emptied"
                reb.completed_at = line.ts
                reb.brokers.append(line.broker)
                reb.lines.append(msg)
                out.append(reb)
                opened = None
            elif ((m := EPOCH.search(msg)) or (m := TARGET.search(msg))) and int(m.group(2)) not in bumped:
                bumped.add(int(m.group(2)))
                reb = Rebalance(group, int(m.group(2)), "epoch", line.ts, line.ts, [line.broker],
                                [c.message for c in context], [*(c.message for c in context), msg])
                out.append(reb)
                context = []
            else:
                context.append(line)
                if opened is not None:
                    opened.lines.append(msg)
        return out

    def has_open_rebalance(self, group: str) -> bool:
        """True when the group's last `Preparing to rebalance` has no `Stabilized`/`is now empty` after it."""
        state = False
        for line in self.group_lines(group):
            if PREPARING.search(line.message):
                state = True
            elif STABILIZED.search(line.message) or EMPTIED.search(line.message):
                state = False
        return state

    def last_line_at(self, group: str) -> datetime | None:
        lines = self.group_lines(group)
        return lines[-1].ts if lines else None


def _group_of(message: str) -> str | None:
    m = GROUP_ID.search(message)
    if not m:
        return None
    return next(g for g in m.groups() if g)
