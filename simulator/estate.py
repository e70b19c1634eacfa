"""Estate events: one broker stall that rebalances several groups at once, or a deploy wave that restarts processes
of several groups one after another (truth/estate_incidents.jsonl).

Modelled on what the lab measured on real brokers (3.9.2 and 4.2.2, lab/estate_scenarios.py): a broker frozen past
its members' session timeout leaves every client logging that its coordinator is unavailable (`session timed out
without receiving a heartbeat response`) and finding it again after the thaw; on waking, the broker expires the
members of some of its groups (those whose queued heartbeats lost the race with its expiry timers) and not others.
A deploy wave is what the lab's rolling restart across services does (estate_rolling): one process of each group
in turn stops (its consumer leaves) and starts again (a new member joins), each group's restart a minute or less after
the previous one settled, with nothing shared but the timing. Both are opt-in (`simulate(..., broker_stalls=N,
deploy_waves=N)`) with random streams of their own, so estates simulated without them stay as they were.
"""

from __future__ import annotations

import random
from typing import Any

from simulator.consumer import SESSION_EXPIRED_CAUSE, Consumers
from simulator.frameworks import rdkafka_session_timeout, writes_java_lines
from simulator.model import GroupSpec, Tag, World
from simulator.render import HB
from simulator.scenarios import MINUTE, Incidents

EXPIRY = Tag("session_timeout", "heartbeat_expiration", "broker_stall")
REJOIN = Tag("session_timeout", "rejoin", "broker_stall")


class EstateEvents:
    """What the estate events share: `count` of them planned over the span, a random stream of their own (so that
    estates simulated without them stay as they were), the truth rows they record, and releasing the groups they
    held."""

    STREAM = ""

    def __init__(self, world: World, consumers: Consumers, incidents: Incidents, *, seed: int, count: int) -> None:
        self.world, self.c, self.incidents = world, consumers, incidents
        self.rng = random.Random(f"{seed}:{self.STREAM}")
        self.count = count
        self.truth: list[dict[str, Any]] = []

    def _release(self, t: int, groups: list[GroupSpec]) -> None:
        for g in groups:
            g.hold = False


class BrokerStalls(EstateEvents):
    """Plans `count` broker stalls spread over the span; each waits until at least three groups of one broker are
    idle, holds them, freezes the broker and records the estate incident it made."""

    STREAM = "estate"

    def plan(self) -> None:
        if self.world.w.new_coordinator or self.world.brokers < 2:
            return  # the new coordinator's (4.x) partition handling is not simulated, as for coordinator moves
        span = self.world.end - self.world.start
        for i in range(self.count):
            self.world.at(self.world.start + span * (i + 1) // (self.count + 1), self.stall, 0)

    def _idle_groups(self, broker: int) -> list[GroupSpec]:
        return [g for g in self.world.groups if g.protocol == "classic" and g.coord is not None
                and g.coord.broker == broker and not g.busy and not g.hold and self.incidents.idle(g)]

    def stall(self, t: int, attempt: int) -> None:
        """Freeze a broker with at least three idle groups, or try again a minute later."""
        ready = [b for b in range(1, self.world.brokers + 1) if len(self._idle_groups(b)) >= 3]
        best = self.rng.choice(ready) if ready else 0
        groups = self._idle_groups(best) if ready else []
        if len(groups) < 3:
            if attempt < 30 and t + 10 * MINUTE < self.world.end:
                self.world.at(t + MINUTE, self.stall, attempt + 1)
            return
        duration = self.rng.randint(12_000, 20_000)
        for g in groups:
            g.hold = True
        thaw = t + duration
        for g in groups:
            for proc in self.incidents.running(g):
                if g.session_ms < duration:
                    # Its client gives up the coordinator a session after its last answered heartbeat, finds it
                    # again after the thaw.
                    t_lost = proc.last_heartbeat(t) + g.session_ms + self.rng.randint(1, 40)
                    self.c.log(proc, t_lost, self.c.w.coordinator_unavailable(best, SESSION_EXPIRED_CAUSE, False))
                    if not writes_java_lines(g.kind):  # librdkafka's own session timer says it instead
                        waited = t_lost - proc.last_heartbeat(t)
                        self.c.log(proc, t_lost, [rdkafka_session_timeout(waited, best, "Success")])
                    self.c.log(proc, thaw + self.rng.randint(20, 200), [self.c.w.discovered(best, HB)])
        expirable = [g for g in groups if g.session_ms < duration]
        chosen = self.rng.sample(expirable, self.rng.randint(2, len(expirable))) if len(expirable) >= 2 else []
        self.world.at(thaw, self._thaw, best, groups, chosen)

    def _thaw(self, t: int, broker: int, groups: list[GroupSpec], chosen: list[GroupSpec]) -> None:
        """On waking, the broker expires one member of each chosen group at once; they rejoin after their next
        heartbeat is refused."""
        expired = []
        for g in sorted(chosen, key=lambda x: x.group_id):
            procs = self.incidents.running(g)
            if not procs or g.coord is None:
                continue
            proc = procs[self.rng.randrange(len(procs))]
            member = g.coord.members.get(proc.member_id)
            if member is None or member.joined:
                continue
            proc.silent_tag = EXPIRY
            g.coord.expire(t + self.rng.randint(0, 40), proc.member_id, member.token)
            self.world.at(t + self.rng.randint(300, 2_000), self._rejoin, proc)
            expired.append(g.group_id)
        if len(expired) >= 2:
            self.truth.append({"root_kind": "coordinator_event", "root_instance": f"broker-{broker}",
                               "groups": expired, "groups_unaffected": sorted(
                                   g.group_id for g in groups if g.group_id not in expired),
                               "started_at": t, "scenario": "broker_stall"})
        self.world.at(t + 2 * MINUTE, self._release, groups)

    def _rejoin(self, t: int, proc: Any) -> None:
        proc.silent_tag = None
        self.c.evicted_on_heartbeat(t, proc, REJOIN)



LEAVE = Tag("membership_change", "member_leave", "deploy_wave")
JOIN = Tag("membership_change", "member_join", "deploy_wave")
WAVE_GROUPS = (4, 6)  # groups a wave restarts: the deploy-wave rule needs four (estate_unshared_min_groups)
# How long the estate is quiet before a wave starts: the deploy-wave rule's gap (estate_wave_gap_s, 120 s). A group's
# own rolling deploy that ended a minute before the wave would be, to anyone reading the logs, the wave's first group.
QUIET_MS = 120_000


class DeployWaves(EstateEvents):
    """Plans `count` deploy waves spread over the span. A wave holds every group (none starts an incident of its own
    until the wave ends: another group's restart inside the window would be, to anyone reading the logs, part of the
    wave), waits until the incidents under way are over, restarts one process of four to six idle classic groups in
    turn and records the estate incident."""

    STREAM = "waves"

    def plan(self) -> None:
        span = self.world.end - self.world.start
        for i in range(self.count):
            # off the broker stalls' times (i + 1) / (count + 1) of the span, so that the two rarely meet
            self.world.at(self.world.start + int(span * (i + 0.3) / self.count), self.wave, 0, [])

    def wave(self, t: int, attempt: int, held: list[GroupSpec], quiet_since: int | None = None) -> None:
        """Hold the estate, then start the wave once no group has been in an incident for QUIET_MS (or give up
        after 30 minutes)."""
        if attempt == 0:
            held = [g for g in self.world.groups if not g.hold]
            for g in held:
                g.hold = True
        # Groups of two members or more: restarting a lone member empties its group, and the join that refills it
        # is a fresh start, which the estate rules leave out (a wave then misses that group).
        idle = [g for g in held if g.protocol == "classic" and self.incidents.idle(g) and g.coord is not None
                and len(g.coord.members) >= 2]
        quiet = not any(g.busy for g in self.world.groups) and len(idle) >= WAVE_GROUPS[0]
        if not quiet or quiet_since is None or t - quiet_since < QUIET_MS:
            if attempt < 90 and t + 30 * MINUTE < self.world.end:
                self.world.at(t + 20_000, self.wave, attempt + 1, held,
                              (t if quiet_since is None else quiet_since) if quiet else None)
            else:
                self._release(t, held)
            return
        chosen = self.rng.sample(idle, min(len(idle), self.rng.randint(*WAVE_GROUPS)))
        self.truth.append({"root_kind": "deploy_wave", "root_instance": None,
                           "groups": sorted(g.group_id for g in chosen), "groups_unaffected": [], "started_at": t,
                           "scenario": "deploy_wave"})
        self._restart(t, chosen, 0, held)

    def _restart(self, t: int, groups: list[GroupSpec], k: int, held: list[GroupSpec]) -> None:
        """Restart one process of the k-th group; the next group's follows once this one's new member settled."""
        if k == len(groups):
            self.world.at(t + 2 * MINUTE, self._release, held)
            return
        old = self.incidents.pick(groups[k])
        self.c.stop(t, old, LEAVE)
        new = self.c.start(old.inst, t + self.rng.randint(2_500, 7_000), JOIN)
        new.on_stable.append(lambda t1: self.world.at(t1 + self.rng.randint(10_000, 60_000), self._restart, groups,
                                                      k + 1, held))

