"""Damaged input: what a log shipper does to lines (lost, duplicated, reordered, a broker's clock ahead) leaves most
true rebalances found with their causes, and so does an hour of the coordinator's log missing (the members' own joins
fill it). `python -m bench.damage` measures each damage apart."""

from __future__ import annotations

from bench.damage import choose_targets, damage_landing, evaluate
from simulator import simulate
from tests.conftest import make_config

SEED = 7


def _score(spark, tmp_path, kind: str) -> tuple:
    sim = simulate(tmp_path / "sim", seed=SEED, groups=2, hours=2.0)
    targets = choose_targets(sim.landing_dir, sim.groups, SEED)
    damaged = tmp_path / "damaged" / "landing"
    damage_landing(sim.landing_dir, damaged, kind, targets, seed=SEED)
    scored = evaluate(spark, make_config(tmp_path / "damaged", landing=damaged), sim.truth_file)
    result, wrong = scored["result"], scored["wrong"]
    return result, f"{result.line()}; damage {kind} {targets}; not matched right: {wrong}"


def test_most_rebalances_and_causes_survive_what_shipping_does_to_lines(spark, tmp_path):
    # 1% of lines lost, 0.3% duplicated, neighbours swapped in one broker file, that broker's clock 20 s ahead.
    result, story = _score(spark, tmp_path, "shipping")
    assert result.truth >= 20, story
    assert result.found >= 0.9 * result.truth, story
    assert result.cause_right >= 0.9 * result.found, story


def test_an_hour_of_the_coordinators_log_missing_is_filled_from_the_members_own_joins(spark, tmp_path):
    # The generations the members joined in the missing hour are rebuilt from their lines (pipelines/gold/gaps.py).
    result, story = _score(spark, tmp_path, "hour_missing")
    assert result.found >= 0.9 * result.truth, story
    assert result.cause_right >= 0.9 * result.found, story
