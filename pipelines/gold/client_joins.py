"""A member's joins read from its own log: one process's lines in time order, each join with the chain of lines that
led into it (the client-only replay, client_only.py, makes one rebalance of the joins into one generation)."""

from __future__ import annotations

from typing import TypedDict

import pandas as pd

from pipelines.gold.client_lines import (
    CLIENT_CHAIN_S,
    CLIENT_CONTEXT,
    CLIENT_DONE,
    CLIENT_SIGNS,
    JOINED,
    chain_into_join,
    is_sign,
    named_chain,
)
from pipelines.gold.client_signs import is_newcomer_sign
from pipelines.gold.member_states import enters_rebalance, leaves_rebalance
from pipelines.gold.records import TimelineEvent
from pipelines.gold.replay_state import secs, to_int


class Join(TypedDict):
    """One member's join into a generation with the lines that led it there, or (generation, event and member None)
    the lines of a rebalance no join line shows."""

    generation: int | None
    event: TimelineEvent | None
    member: str | None
    signs: list[TimelineEvent]
    newcomers: list[TimelineEvent]
    completed: pd.Timestamp | None


def when_joined(join: Join) -> tuple[int, pd.Timestamp]:
    """The generation and time of a join read from a member's join line (`read_stream` makes only those)."""
    event, generation = join["event"], join["generation"]
    assert event is not None and generation is not None
    return generation, event["event_ts"]


def _later(ts: pd.Timestamp | None, other: pd.Timestamp) -> pd.Timestamp:
    return other if ts is None else max(ts, other)


def read_stream(stream: list[TimelineEvent], joins: list[Join],
                trailing: list[TimelineEvent], ends: list[TimelineEvent]) -> None:
    """One process's lines (one client id in one instance folder), in time order: each of its joins with the
    chain of lines that led into it (added to `joins`), the lines after its last join that lead to no join of
    its own (`trailing`), and the returns to a steady state no join explains (`ends`)."""
    signs: list[TimelineEvent] = []
    stream_ends = 0
    member, first = None, True
    last: Join | None = None
    for event in stream:
        kind = event["event_type"]
        if event.get("member_id"):
            member = event["member_id"]
        if kind in JOINED and to_int(event.get("generation")) is not None:
            chain = named_chain(chain_into_join(signs), member)
            news = [e for e in chain
                    if is_newcomer_sign(e) and (first or e["event_type"] == "client_subscribed")]
            last = {"generation": to_int(event["generation"]), "event": event, "member": member,
                    "signs": [e for e in chain if is_sign(e)],
                    "newcomers": [{**e, "_member": member} for e in news], "completed": event["event_ts"]}
            joins.append(last)
            signs, first = [], False
        elif kind in CLIENT_DONE and last is not None and not signs:
            if kind == "client_partitions_assigned" or to_int(event.get("generation")) == last["generation"]:
                last["completed"] = _later(last["completed"], event["event_ts"])
        elif kind in CLIENT_SIGNS or kind in CLIENT_CONTEXT or enters_rebalance(event):
            signs.append({**event, "_member": event.get("member_id") or member,
                          "_rebalancing": enters_rebalance(event)})
        elif leaves_rebalance(event) or (kind == "client_partitions_assigned" and last is None):
            # An assignment before any join of the process is a rebalance's end whose start the log does not
            # hold (a fragment cut there, or a client that logs only its rebalance callbacks).
            done = last["completed"] if last is not None else None
            after_join = done is not None and secs(event["event_ts"] - done) <= CLIENT_CHAIN_S
            if last is not None and after_join and not signs:
                last["completed"] = _later(last["completed"], event["event_ts"])
            else:
                ends.append({**event, "_member": event.get("member_id") or member})
                if last is None and signs:
                    # A process that never joined: the lines before this end led into it, not into a later join.
                    trailing += _chain(signs, member, starting=not stream_ends and is_newcomer_sign(stream[0]))
                    signs = []
                stream_ends += 1
    # Only a process whose very first line is that way in: a lookup in the middle of its life (`querying for
    # coordinator ... in state up`, then `coordinator is ...`) is no start.
    starting = first and not stream_ends and is_newcomer_sign(stream[0])
    if any(is_sign(e) for e in signs) or stream_ends or starting:
        # A process that never joined in this log and shows a rebalance is new to the group; one that only
        # subscribed or looked up its coordinator is on its way into it (the log ends before its join).
        trailing += _chain(signs, member, starting=starting)


def _chain(signs: list[TimelineEvent], member: str | None, *, starting: bool) -> list[TimelineEvent]:
    """The chain of `signs` that leads into what follows them, each marked `_newcomer` when the process is `starting`
    (its first line is a way into the group) and the line is such a way in."""
    return [{**e, "_newcomer": starting and is_newcomer_sign(e)} for e in named_chain(chain_into_join(signs), member)]
