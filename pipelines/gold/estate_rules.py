"""The estate rules: what ties rebalances of different groups into one estate incident, in the order they are tried.

A rebalance belongs to at most one estate incident: the first rule below whose evidence covers it takes it. The
numbers are the rule book's (ESTATE_WINDOWS below, `thresholds.estate_*` where configured). `docs/causes.md` lists
these rules after the per-rebalance ones.
"""

from __future__ import annotations

from dataclasses import dataclass

# The estate rules' fixed numbers, each with what it rests on.
ESTATE_WINDOWS: dict[str, tuple[float, str]] = {
    "estate_instant_s": (2.0, "expiries on one coordinator this close are one instant: a broker waking from a stall "
                              "runs its overdue expiry timers together (lab estate_stall on 4.2.2: two groups' members "
                              "expired within milliseconds)"),
    "estate_burst_s": (5.0, "rebalances of different groups starting within this of the first, with no shared "
                            "evidence, are one burst (chosen: the lab's scripted steps, about 4 s apart, must not "
                            "chain into one)"),
    "estate_wave_gap_s": (120.0, "a deploy wave's next group restarts within this of the previous one (chosen: a "
                                 "rolling deploy's pause between services)"),
    "estate_unshared_min_groups": (4.0, "groups a deploy wave or a burst needs, having no shared evidence (chosen: "
                                        "three groups' independent restarts coincided by chance in the simulator's "
                                        "40-group estates; no real log sets it)"),
}


@dataclass(frozen=True)
class EstateRule:
    """One estate rule: the root kind it names, the question it asks, what it rests on and the windows it reads."""

    id: str
    root_kind: str
    question: str
    basis: str
    windows: tuple[str, ...]


ESTATE_RULES: tuple[EstateRule, ...] = (
    EstateRule("estate_shared_process", "shared_process",
               "Were members of several groups removed against their will (expired, poll timeout) from one process "
               "folder within the window? One JVM or host running consumers of several groups froze or died.",
               "gold_member_sessions.instance of each rebalance's trigger member; the folder's GC log",
               ("estate_window_s",)),
    EstateRule("estate_coordinator_stall", "coordinator_event",
               "Did one coordinator expire members of several groups in one instant, none of them explained by "
               "its own process (a GC pause of its JVM, a poll timeout)? The broker stalled (GC, SIGSTOP, a frozen "
               "disk) and on waking expired every member whose session ran out meanwhile.",
               "the coordinator's `removing member ... on heartbeat expiration` lines; its own GC log",
               ("estate_instant_s", "estate_window_s")),
    EstateRule("estate_coordinator_moved", "coordinator_event",
               "Did several groups rebalance right after one broker resigned, unloaded or loaded their "
               "__consumer_offsets partitions (a restart, a controlled shutdown, a leader change), or after their "
               "members lost the coordinator?",
               "the brokers' `Unloading group metadata` / `Loading group metadata` / resign and elect lines; the "
               "members' `Group coordinator ... is unavailable or invalid`",
               ("coordinator_move_window_s", "estate_window_s")),
    EstateRule("estate_deploy_wave", "deploy_wave",
               "Did members of several groups leave and join from several processes in one rolling window, each "
               "group's restart within the wave gap of the previous one?",
               "the coordinators' LeaveGroup and new-member lines; each new process's start lines",
               ("estate_wave_gap_s",)),
    EstateRule("estate_correlated_burst", "correlated_burst",
               "None of the above: several groups started rebalancing within seconds of the first with no shared "
               "evidence.",
               "the rebalances' start times alone", ("estate_burst_s",)),
)
ESTATE_BY_ID: dict[str, EstateRule] = {r.id: r for r in ESTATE_RULES}


def estate_window(name: str) -> float:
    """A fixed number of the estate rules (seconds, or a count of groups)."""
    return ESTATE_WINDOWS[name][0]
