"""The estate rules' vocabulary: the windows and facts they read, the time helpers they share, and a finding
(`Found`) before it becomes a gold_estate_incidents row. pipelines/gold/estate_finders.py holds the rules,
pipelines/gold/estate.py runs them in order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pipelines.gold.estate_rules import estate_window
from pipelines.gold.placement import is_own_group

Row = dict[str, Any]

REMOVALS = ("session_timeout", "gc_pause", "poll_timeout")
REMOVAL_DETAILS = ("heartbeat_expiration", "leave_on_poll_timeout")
# A membership change a restart makes (not a rejoin of a removed member).
RESTART_DETAILS = ("member_join", "member_leave", "static_member_replaced")
# Broker lines that say a coordinator resigned, unloaded, elected or loaded __consumer_offsets partitions.
LIFECYCLE_EVENTS = ("coordinator_resigned", "coordinator_unload_scheduled", "coordinator_unload_started",
                    "coordinator_unload_finished", "group_unloaded", "coordinator_elected",
                    "coordinator_load_scheduled", "coordinator_load_finished", "coordinator_load_failed",
                    "coordinator_reloading", "group_loaded")
LEAVING = ("coordinator_resigned", "coordinator_unload_scheduled", "coordinator_unload_started",
            "coordinator_unload_finished", "group_unloaded")


@dataclass(frozen=True)
class EstateParams:
    """The configured windows: rebalances of different groups this close share a root (`window_s`), a shared root
    ties at least `min_groups` groups, and a rebalance this soon after its group's coordinator moved is the move's
    (`move_window_s`); a member whose session timeout no line shows has `default_session_timeout_ms`."""

    window_s: float = 30.0
    min_groups: int = 2
    move_window_s: float = 120.0
    default_session_timeout_ms: int = 45_000

    @property
    def burst_min_groups(self) -> int:
        """Without shared evidence, "many groups": the rule book's `estate_unshared_min_groups`, and two more than a
        shared root needs."""
        return max(int(estate_window("estate_unshared_min_groups")), self.min_groups + 2)


@dataclass
class SparedFacts:
    """The rows of the groups an incident spared: their states and member sessions (gold rows, in time order) and the
    `session.timeout.ms` each member's process logged in its client configuration, by (group id, process folder); the
    group id is empty where the configuration names none."""

    states: dict[str, list[Row]] = field(default_factory=dict)
    sessions: dict[str, list[Row]] = field(default_factory=dict)
    session_timeouts: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass
class EstateFacts:
    """What the rules read beside the rebalances: groups whose lines print no time (their times are line order, so
    they never coincide with another group's), each broker's folder, the coordinators' lifecycle lines, each group's
    __consumer_offsets partition, the brokers' GC pauses, which broker coordinated which group when, and the rows of
    the groups an incident spared (`spared`, read only for those)."""

    line_order_groups: set[str] = field(default_factory=set)
    broker_folders: dict[str, str] = field(default_factory=dict)
    lifecycle: list[Row] = field(default_factory=list)
    group_partitions: dict[str, int] = field(default_factory=dict)
    broker_pauses: Iterable[Row] = field(default_factory=list)
    coordinated: Iterable[Row] = field(default_factory=list)
    spared: Callable[[set[str]], SparedFacts] = field(default=lambda groups: SparedFacts())


class Later:
    """Rows read on first use (`Iterable`): most estates never raise the question they answer."""

    def __init__(self, load: Callable[[], list[Row]]) -> None:
        self._load = load
        self._rows: list[Row] | None = None

    def __iter__(self) -> Iterator[Row]:
        if self._rows is None:
            self._rows = self._load()
        return iter(self._rows)


def secs(delta: pd.Timedelta) -> float:
    """A time difference in seconds."""
    return float(delta.total_seconds())


def end_of(r: Row) -> pd.Timestamp:
    """When a rebalance ended (its start while it is open)."""
    done = r.get("completed_at")
    return pd.Timestamp(r["started_at"] if done is None or pd.isna(done) else done)


def chains(rows: Iterable[Row], gap_s: float, at: str = "started_at") -> list[list[Row]]:
    """`rows` in time order, cut wherever the next one starts more than `gap_s` after the previous."""
    out: list[list[Row]] = []
    for r in sorted(rows, key=lambda x: (x[at], str(x.get("rebalance_id") or x.get("event_id") or ""))):
        if out and secs(r[at] - out[-1][-1][at]) <= gap_s:
            out[-1].append(r)
        else:
            out.append([r])
    return out


def groups_of(rows: Iterable[Row]) -> set[str]:
    """The groups of some rebalances."""
    return {r["group_id"] for r in rows}


def eligible(r: Row, facts: EstateFacts) -> bool:
    """A rebalance whose time is a time (not a line order), that is not a group's fresh start (an empty group's
    first members joining stalls nothing; a rejoin into a group the incident emptied does), and that is of a group
    a line names: a process's own group (`is_own_group`) may be one of several processes of one real group, whose
    one rebalance would look like many groups rebalancing together."""
    before = r.get("members_before")
    fresh_start = (before is not None and not pd.isna(before) and int(before) == 0
                   and r.get("cause") == "membership_change")
    return (not fresh_start and r["group_id"] not in facts.line_order_groups
            and not is_own_group(str(r["group_id"])))


def is_removal(r: Row) -> bool:
    """A member removed against its will (expired, poll timeout), not the rejoin that follows."""
    return r.get("cause_detail") != "rejoin" and (r.get("cause") in REMOVALS
                                                  or r.get("cause_detail") in REMOVAL_DETAILS)


def follow_ups(seed: list[Row], pool: list[Row], window_s: float) -> list[Row]:
    """The seed and the rejoins of its groups within `window_s` of its last (the removed members coming back)."""
    groups, last = groups_of(seed), max(r["started_at"] for r in seed)
    ids = {r["rebalance_id"] for r in seed}
    more = [r for r in pool if r["rebalance_id"] not in ids and r["group_id"] in groups
            and r.get("cause_detail") == "rejoin"
            and seed[0]["started_at"] <= r["started_at"] and secs(r["started_at"] - last) <= window_s]
    return seed + more


def line_of(r: Row, what: str) -> Row:
    """An evidence entry: the rebalance's first line and what it says of the incident."""
    return {"event_id": r.get("start_event_id"),
            "explanation": f"{r['group_id']}: {what} at {at_text(r['started_at'])}"}


def at_text(ts: Any) -> str:
    """A time as evidence and summaries print it (UTC, milliseconds)."""
    return f"{pd.Timestamp(ts):%Y-%m-%d %H:%M:%S.%f}"[:-3]


@dataclass
class Found:
    """One estate incident before it becomes a row: its rule, root folder, rebalances, evidence, unaffected groups,
    the root broker's GC pause (seconds) when its log shows one, and when the root event began when it is not the first
    rebalance (a coordinator move's first line)."""

    rule: str
    root_instance: str | None
    rebalances: list[Row]
    evidence: list[Row]
    unaffected: set[str] = field(default_factory=set)
    pause_s: float | None = None
    root_at: pd.Timestamp | None = None


Finder = Callable[[list[Row], EstateFacts, EstateParams], list[Found]]
