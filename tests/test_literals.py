"""The grouped literal search equals a plain OR of `contains`, on literals and texts chosen to hit every branch."""

from __future__ import annotations

import random
import re

import pytest
from pyspark.sql import functions as F

from pipelines.bronze import literals as literals_module
from pipelines.bronze.literals import MIN_SHARED, contains_any, minimal_literals, search_plan
from pipelines.bronze.prefilter import PREFILTER_LITERALS
from pipelines.silver.templates import FIELD_PATTERNS, load_templates


def test_a_literal_holding_another_is_dropped():
    assert minimal_literals(["oordinator", "roupCoordinator", " group", " group"]) == ("oordinator", " group")


def test_the_plan_covers_every_literal_once_and_keys_stand_for_several():
    literals = [t.literal for t in load_templates()]
    plan = search_plan(literals)
    planned = [literal for group in plan.values() for literal in group]
    assert sorted(planned) == sorted(minimal_literals(literals))
    for key, group in plan.items():
        assert key is None or (len(group) >= MIN_SHARED and all(key in literal for literal in group))
    # The point of the plan: far fewer scans of a line that holds none of the literals.
    assert len(plan) - (None in plan) + len(plan.get(None, ())) < len(planned) / 4


def _balanced_or(terms: list) -> object:
    """`F.lit(False) | t1 | t2 | ...` as a balanced tree (pairwise reduction): the same value in SQL's three-valued
    logic, with a depth of log2(n) instead of n, so ~500 literals do not overflow Spark's Java stack."""
    level = [F.lit(False), *terms]
    while len(level) > 1:
        level = [level[i] | level[i + 1] if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return level[0]


@pytest.mark.parametrize("one_pass", [True, False], ids=["jvm-matcher", "spark-contains"])
def test_contains_any_equals_the_plain_or(spark, monkeypatch, one_pass):
    if not one_pass:
        monkeypatch.setattr(literals_module, "any_literal", lambda text, literals: None)
    literals = [t.literal for t in load_templates()] + list(PREFILTER_LITERALS) + ["Grüße", "Gr"]
    rng = random.Random(5)
    texts = [None, "", "nothing to see here", "a group of three", "[GC (Allocation Failure)", "GroupCoordinator 1",
             "Grüße aus Köln", "Gr\ufffdße", "Grusse", "\U0001f600 GroupCoordinator", "eneratio", "eneration"]
    for literal in rng.sample(literals, 60):
        cut = rng.randrange(1, len(literal))
        texts += [f"x {literal} y", literal[:cut], literal[cut:], literal[:cut] + "#" + literal[cut:]]
    df = spark.createDataFrame([(t,) for t in texts], "text string")
    for chosen in (literals, list(PREFILTER_LITERALS), ["only"], ["Grüße"], [""], []):
        plain = _balanced_or([F.col("text").contains(literal) for literal in chosen])
        rows = df.select(contains_any(F.col("text"), chosen).alias("fast"), plain.alias("plain")).collect()
        assert [r.fast for r in rows] == [r.plain for r in rows], chosen[:3]


def test_a_local_session_runs_the_one_pass_matcher(spark):
    """The local session loads the project's jar, so the prefilter is one JVM call per line, not Spark's contains."""
    plan = spark.range(1).select(contains_any(F.lit("x"), PREFILTER_LITERALS).alias("c"))._jdf.queryExecution()
    assert "any_literal" in plan.analyzed().toString()


def test_every_golden_line_passes_the_bronze_prefilter():
    """A template whose lines bronze drops before parsing is dead: every golden line of an event (noise rows only name
    lines to ignore) holds a prefilter literal."""
    from tests.test_golden import golden_rows

    missed = [tid for tid, line, event, _ in golden_rows()
              if event != "noise" and not any(lit in line for lit in PREFILTER_LITERALS)]
    assert missed == []


def _named_choices(field: str) -> list[str] | None:
    """The names a placeholder of a fixed choice of names stands for (`{_group_api}`: JoinGroup, Heartbeat, ...)."""
    choice = re.fullmatch(r"\(\?:([\w|]+)\)", FIELD_PATTERNS.get(field, ""))
    return choice.group(1).split("|") if choice else None


def test_every_bare_wording_passes_the_bronze_prefilter():
    """A stripped paste or a layout without the client's `[Consumer ...]` prefix leaves the bare message: each event
    wording, its fields filled with a value that holds no literal (a placeholder of a fixed choice of names with
    each of them), still holds a prefilter literal."""
    missed = []
    for t in load_templates():
        fills = [""]
        for part in re.split(r"(\{\w+\})", t.template.text):
            field = part[1:-1] if part.startswith("{") else None
            choices = (_named_choices(field) or ["v"]) if field is not None else [part]
            fills = [done + choice for done in fills for choice in choices]
        if t.template.event != "noise":
            missed += [(t.template.id, bare) for bare in fills if not any(lit in bare for lit in PREFILTER_LITERALS)]
    assert missed == []
