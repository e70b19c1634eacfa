"""Every lab scenario in the order a run takes them: the single-group ones (lab/scenarios.py), the estate ones
(lab/estate_scenarios.py, `estate_restart` restarting a broker and starting it again), and last `coordinator`, which
stops a broker."""

from __future__ import annotations

from lab.estate_scenarios import estate_host_freeze, estate_restart, estate_rolling, estate_stall
from lab.scenarios import SCENARIOS as SINGLE_GROUP
from lab.scenarios import Scenario

SCENARIOS: tuple[Scenario, ...] = (*SINGLE_GROUP[:-1], Scenario("estate_stall", estate_stall),
                                   Scenario("estate_host_freeze", estate_host_freeze),
                                   Scenario("estate_rolling", estate_rolling),
                                   Scenario("estate_restart", estate_restart), SINGLE_GROUP[-1])
assert SINGLE_GROUP[-1].name == "coordinator"  # it restarts a broker: nothing may run after it
