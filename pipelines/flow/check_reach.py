"""Which causes a group's logs can decide, read from the rule book (pipelines/gold/rules_data.py).

Each rule has a `path`: `broker` (the classic coordinator's lines), `epoch` (a KIP-848 or streams coordinator's epoch
bumps), `client` (members' lines only) or `any`. The `any` rules refine what a coordinator path saw (an expiry, a
leave, a leader's rejoin: pipelines/gold/refine.py runs under broker.py and epochs.py only), so without the
coordinator's log a group reaches the client rules alone. A cause is reachable at full confidence when the best rule
its logs can reach gives it the best confidence the book gives it anywhere, and from partial evidence when only a
weaker rule can decide it. `gc_pause` needs a member's GC log besides."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.gold.rulebook import RULES

CAUSES = ("session_timeout", "poll_timeout", "gc_pause", "membership_change", "metadata_change",
          "coordinator_change")
_COORDINATOR_PATHS = frozenset({"broker", "epoch"})
# Base rules whose entry leaves the cause to the line they read, and the cause that line gives in general
# (pipelines/gold/client_causes.py `_rejoin_reason`: a metadata change; Streams' probing rebalance aside).
_CAUSE_FROM_LINE = {"client_rejoin_reason": ("metadata_change",)}


@dataclass(frozen=True)
class Reach:
    """What a group's logs can decide: causes at the book's full confidence, causes only at a lower one (cause ->
    (reachable, best) confidence), causes out of reach, and the rule paths its logs open."""

    paths: tuple[str, ...]
    full: tuple[str, ...]
    partial: dict[str, tuple[float, float]]
    none: tuple[str, ...]


def _best(cause: str, paths: frozenset[str]) -> float:
    return max((r.confidence for r in RULES if cause in ((r.cause,) if r.cause else _CAUSE_FROM_LINE.get(r.id, ()))
                and r.kind in ("base", "refinement") and r.path in paths), default=0.0)


def reach(*, coordinator_log: bool, epoch_protocol: bool, classic_protocol: bool, members: int,
          members_with_gc: int) -> Reach:
    """The causes a group can get at full and at partial confidence, given whether its coordinator's log is there,
    which protocols its lines show, and how many of its member processes have a GC log."""
    paths = {"client"}
    if coordinator_log:
        paths |= {"broker"} if classic_protocol or not epoch_protocol else set()
        paths |= {"epoch"} if epoch_protocol else set()
    if paths & _COORDINATOR_PATHS:
        paths.add("any")
    every = frozenset({"broker", "epoch", "client", "any"})
    full: list[str] = []
    partial: dict[str, tuple[float, float]] = {}
    none: list[str] = []
    for cause in CAUSES:
        top, got = _best(cause, every), _best(cause, frozenset(paths))
        if cause == "gc_pause" and members_with_gc == 0:
            got = 0.0
        if got <= 0:
            none.append(cause)
        elif got < top or (cause == "gc_pause" and members_with_gc < members):
            partial[cause] = (got, top)
        else:
            full.append(cause)
    order = ("broker", "epoch", "client", "any")
    return Reach(tuple(p for p in order if p in paths), tuple(full), partial, tuple(none))
