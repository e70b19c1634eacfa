"""The estate rules, one function each, in the order pipelines/gold/estate.py tries them (pipelines/gold/estate_rules.py
says what each asks and rests on)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import pandas as pd

from pipelines.gold.estate_model import (
    LEAVING,
    RESTART_DETAILS,
    EstateFacts,
    EstateParams,
    Found,
    Row,
    at_text,
    chains,
    follow_ups,
    groups_of,
    is_removal,
    line_of,
    secs,
)
from pipelines.gold.estate_rules import estate_window


def shared_process(pool: list[Row], facts: EstateFacts, params: EstateParams) -> list[Found]:
    """Members of several groups removed from one process folder within the window."""
    by_folder: dict[str, list[Row]] = defaultdict(list)
    for r in pool:
        if r.get("trigger_instance") and is_removal(r):
            by_folder[r["trigger_instance"]].append(r)
    found = []
    for folder, rows in sorted(by_folder.items()):
        for seed in chains(rows, params.window_s):
            if len(groups_of(seed)) >= params.min_groups:
                evidence = [line_of(r, f"{r['cause']} of member {r.get('trigger_member_id')} from {folder}")
                            for r in seed]
                evidence += _pause_lines(_pauses(facts, folder, seed[0]["started_at"], params.window_s), folder)
                found.append(Found("estate_shared_process", folder, follow_ups(seed, pool, params.window_s),
                                   evidence))
    return found


def _pauses(facts: EstateFacts, folder: str | None, at: pd.Timestamp, window_s: float) -> list[Row]:
    """The GC pauses of `folder` ending from `window_s` before `at` to just after it."""
    return [p for p in facts.broker_pauses if p.get("instance") == folder
            and -window_s <= secs(p["ended_at"] - at) <= estate_window("estate_instant_s")]


def _pause_lines(pauses: list[Row], folder: str | None) -> list[Row]:
    """Evidence entries naming `folder`'s GC pauses."""
    return [{"event_id": p.get("pause_id"), "explanation": f"{folder}: JVM paused "
             f"{float(p['duration_ms']) / 1000:.1f} s, until {at_text(p['ended_at'])}"} for p in pauses]


def _coordinated_at(facts: EstateFacts, broker: str, at: pd.Timestamp) -> set[str]:
    """Groups whose states show `broker` as their coordinator at `at`."""
    groups = set()
    for c in facts.coordinated:
        ended = c.get("ended_at")
        if c.get("coordinator") == broker and c["started_at"] <= at and (ended is None or pd.isna(ended)
                                                                          or ended >= at):
            groups.add(c["group_id"])
    return groups


# Removals the member's own process explains (its poll loop outran its limit, its JVM paused through the expiry):
# not a stalled coordinator's, however close in time another group's expiry on the same broker is.
OWN_FAULT = ("poll_timeout", "gc_pause")


def coordinator_stall(pool: list[Row], facts: EstateFacts, params: EstateParams) -> list[Found]:
    """Members of several groups expired by one coordinator in one instant, none explained by its own process."""
    by_broker: dict[str, list[Row]] = defaultdict(list)
    for r in pool:
        if r.get("coordinator") and is_removal(r) and r.get("cause") not in OWN_FAULT:
            by_broker[str(r["coordinator"])].append(r)
    found = []
    for broker, rows in sorted(by_broker.items()):
        for seed in chains(rows, estate_window("estate_instant_s")):
            if len(groups_of(seed)) < params.min_groups:
                continue
            folder = facts.broker_folders.get(broker)
            at = seed[0]["started_at"]
            evidence = [line_of(r, f"coordinator {broker} expired member {r.get('trigger_member_id')}") for r in seed]
            pauses = _pauses(facts, folder, at, params.window_s)
            evidence += _pause_lines(pauses, folder)
            rows_in = follow_ups(seed, pool, params.window_s)
            found.append(Found("estate_coordinator_stall", folder or f"broker {broker}", rows_in, evidence,
                               _coordinated_at(facts, broker, at) - groups_of(rows_in),
                               pause_s=max((float(p["duration_ms"]) / 1000 for p in pauses), default=None)))
    return found


def _moved_by(r: Row, groups: set[str], after_s: float, params: EstateParams) -> bool:
    """Whether a rebalance `after_s` after a broker's lifecycle lines is theirs: one its group's replay already blames
    on a coordinator change (within the move window), or, for a group whose partition moved, a member's missed
    session or a cause not known (within the estate window). A member joining or leaving is a deploy's, not a
    move's."""
    if r.get("cause") == "coordinator_change":
        return after_s <= params.move_window_s
    return (r["group_id"] in groups and r.get("cause") in ("session_timeout", "unknown")
            and after_s <= params.window_s)


def _episodes(facts: EstateFacts, params: EstateParams) -> list[tuple[str, list[Row], set[str]]]:
    """The coordinators' lifecycle lines of every broker cut where they pause longer than the window, then split by
    the broker that let go (one move: the old broker resigning and unloading, the new ones electing and loading what
    it let go), each with its root broker (the one that let go of partitions, else the one that loaded them) and the
    groups whose partitions it names. Two brokers letting go of partitions within the window are two roots: a broker
    restart resigns all its partitions at once, and another broker's move nearby is an event of its own."""
    out = []
    for chain in chains(facts.lifecycle, params.window_s, at="event_ts"):
        for root, events in _by_root(chain):
            partitions = {e["offsets_partition"] for e in events if e.get("offsets_partition") is not None}
            groups = {e["group_id"] for e in events if e.get("group_id")}
            groups |= {g for g, p in facts.group_partitions.items() if p in partitions}
            out.append((root, events, groups))
    return out


def _broker_of(e: Row) -> str | None:
    who = e.get("broker") or e.get("instance")
    return str(who) if who else None


def _by_root(chain: list[Row]) -> list[tuple[str, list[Row]]]:
    """`chain` (time order) split by the brokers that let go of partitions or groups in it, in the order they first
    did: each root takes its own lines and the loads of what it let go. Loads of what no broker in the chain let go
    (the old coordinator's log is missing) are one more episode, rooted at the first broker that loaded."""
    roots: dict[str, tuple[set[int], set[str]]] = {}
    for e in chain:
        broker = _broker_of(e)
        if e["event_type"] in LEAVING and broker:
            partitions, groups = roots.setdefault(broker, (set(), set()))
            if e.get("offsets_partition") is not None:
                partitions.add(e["offsets_partition"])
            if e.get("group_id"):
                groups.add(e["group_id"])
    split: dict[str, list[Row]] = defaultdict(list)
    for e in chain:
        broker = _broker_of(e)
        if not broker:
            continue
        if e["event_type"] in LEAVING:
            split[broker].append(e)
            continue
        owner = next((r for r, (partitions, groups) in roots.items()
                      if e.get("offsets_partition") in partitions or e.get("group_id") in groups), None)
        if owner is None and len(roots) == 1:
            owner = next(iter(roots))
        split[owner or ""].append(e)
    out = [(root, split[root]) for root in roots if split[root]]
    if split.get(""):
        out.append((str(_broker_of(split[""][0])), split[""]))
    return out


def coordinator_moved(pool: list[Row], facts: EstateFacts, params: EstateParams) -> list[Found]:
    """Several groups rebalancing right after the move of their __consumer_offsets partitions (each rebalance goes
    to the latest move of its group before it); or several groups whose members lost their coordinator together."""
    episodes = _episodes(facts, params)
    mine: dict[int, list[Row]] = defaultdict(list)
    for r in pool:
        before = [i for i, (_, events, groups) in enumerate(episodes) if events[0]["event_ts"] <= r["started_at"]
                  and r["group_id"] in groups]
        if before:
            i = max(before, key=lambda k: episodes[k][1][-1]["event_ts"])
            if _moved_by(r, episodes[i][2], secs(r["started_at"] - episodes[i][1][-1]["event_ts"]), params):
                mine[i].append(r)
    # a rebalance its own partition's move explains is that move's, whether or not the move tied several groups
    taken = {r["rebalance_id"] for rows in mine.values() for r in rows}
    found = []
    for i, rows in sorted(mine.items()):
        root, events, groups = episodes[i]
        if len(groups_of(rows)) < params.min_groups:
            continue
        folder = facts.broker_folders.get(root, root)
        evidence = [{"event_id": e.get("event_id"), "explanation": _lifecycle_text(
            facts.broker_folders.get(str(e.get("broker")), str(e.get("broker") or e.get("instance"))), e)}
            for e in events[:20]]
        found.append(Found("estate_coordinator_moved", folder, rows, evidence, groups - groups_of(rows),
                           root_at=events[0]["event_ts"]))
    rest = [r for r in pool if r["rebalance_id"] not in taken and r.get("cause") == "coordinator_change"
            and r.get("cause_detail") != "rejoin"]
    for seed in chains(rest, params.window_s):
        if len(groups_of(seed)) >= params.min_groups:
            named = {str(r["coordinator"]) for r in seed if r.get("coordinator")}
            where = facts.broker_folders.get(next(iter(named)), next(iter(named))) if len(named) == 1 else None
            found.append(Found("estate_coordinator_moved", where, seed,
                               [line_of(r, "members lost their coordinator") for r in seed]))
    return found


def _lifecycle_text(folder: str, e: Row) -> str:
    what = [folder + ":", e["event_type"], e.get("group_id") or ""]
    if e.get("offsets_partition") is not None:
        what.append(f"__consumer_offsets-{e['offsets_partition']}")
    return " ".join(w for w in what if w) + f" at {at_text(e['event_ts'])}"


def _restarted(rows: list[Row]) -> bool:
    """Whether a group's membership changes include a restart: a member leaving and then one joining, or a static
    member replaced by its new process."""
    left = None
    for r in sorted(rows, key=lambda x: (x["started_at"], x["rebalance_id"])):
        if r.get("cause_detail") == "static_member_replaced" or (left is not None
                                                                 and r.get("cause_detail") == "member_join"):
            return True
        if r.get("cause_detail") == "member_leave":
            left = r
    return False


def deploy_wave(pool: list[Row], facts: EstateFacts, params: EstateParams) -> list[Found]:
    """Processes of several groups restarting (a member leaves, a new one joins) in one rolling window."""
    changes = [r for r in pool if r.get("cause") == "membership_change" and r.get("cause_detail") in RESTART_DETAILS]
    found = []
    for chain in chains(changes, estate_window("estate_wave_gap_s")):
        by_group: dict[str, list[Row]] = defaultdict(list)
        for r in chain:
            by_group[r["group_id"]].append(r)
        seed = [r for rows in by_group.values() if _restarted(rows) for r in rows]
        processes = {r.get("trigger_instance") or r.get("trigger_member_id") for r in seed} - {None}
        if len(groups_of(seed)) >= params.burst_min_groups and len(processes) >= 2:
            found.append(Found("estate_deploy_wave", None, sorted(seed, key=lambda r: r["started_at"]),
                               [line_of(r, f"{r['cause_detail']} of {r.get('trigger_instance') or 'a member'}")
                                for r in seed]))
    return found


def windows(rows: Iterable[Row], span_s: float) -> list[list[Row]]:
    """`rows` in time order, cut into windows of at most `span_s` from each window's first start (unlike `chains`,
    a steady trickle never grows into one window)."""
    out: list[list[Row]] = []
    for r in sorted(rows, key=lambda x: (x["started_at"], x["rebalance_id"])):
        if out and secs(r["started_at"] - out[-1][0]["started_at"]) <= span_s:
            out[-1].append(r)
        else:
            out.append([r])
    return out


def correlated_burst(pool: list[Row], facts: EstateFacts, params: EstateParams) -> list[Found]:
    """Several groups starting to rebalance within a few seconds with nothing shared."""
    return [Found("estate_correlated_burst", None, seed, [line_of(r, str(r.get("cause"))) for r in seed])
            for seed in windows(pool, estate_window("estate_burst_s"))
            if len(groups_of(seed)) >= params.burst_min_groups]


# Rules without evidence shared by the groups: coincidence needs one group more.
