"""Damaged input (lines lost, duplicated and reordered, a broker's clock ahead, an hour of a broker's log missing,
all at once): most true rebalances are still found, with their causes. bench/damage.py measures each damage apart."""

from __future__ import annotations

from bench.damage import choose_targets, damage_landing, evaluate
from simulator import simulate
from tests.conftest import make_config

SEED = 7


def test_most_rebalances_and_causes_survive_every_damage_at_once(spark, tmp_path):
    sim = simulate(tmp_path / "sim", seed=SEED, groups=2, hours=2.0)
    targets = choose_targets(sim.landing_dir, sim.groups, SEED)
    damaged = tmp_path / "damaged" / "landing"
    damage_landing(sim.landing_dir, damaged, "all", targets, seed=SEED)
    scored = evaluate(spark, make_config(tmp_path / "damaged", landing=damaged), sim.truth_file)
    result, wrong = scored["result"], scored["wrong"]
    story = f"{result.line()}; damage {targets}; not matched right: {wrong}"
    assert result.truth >= 20, story
    assert result.found >= 0.9 * result.truth, story
    assert result.cause_right >= 0.9 * result.found, story
