"""A cheap test for "does the text contain any of these literals", as Spark `contains` and `rlike` calls.

Each `contains` is one scan of the text, and most lines hold none of the literals, so the cost is the number of
scans. Literals that share a short substring (a key) are grouped behind it: a text is searched for the key once and
for the literals behind it only when it holds the key. The result is exactly `OR(contains(literal))`.

A key can be common in noise (`tion` is in nine of ten broker lines: `Partition`, `configuration`), so the search
behind it must stay cheap: a small group is a `contains` per literal. A Java regex of an alternation tries every
literal at every position of the text and cost twice as much per line as the `contains` it replaced; it is kept
only for large groups (the templates' literals), where a `contains` each would grow the generated code past the
JVM's 64 KB method limit.

A local session has a cheaper path: the project's JVM matcher (pipelines/jvm) finds all the literals in one pass
over the text's bytes, and `contains_any` uses it whenever the session can run it. The plan above is the fallback
(Spark Connect clients, clusters without the jar), and both give the same answer.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.jvm.matcher import any_literal

KEY_LENGTH = 4  # short enough to be shared, long enough to be rare in noise
MIN_SHARED = 2  # a key is worth a scan of its own when it stands for at least this many literals
CONTAINS_UP_TO = 16  # a group of at most this many literals is searched with a `contains` each, a larger one by regex


def minimal_literals(literals: Sequence[str]) -> tuple[str, ...]:
    """The literals without those that contain another one of the set (the shorter one finds all their texts)."""
    unique = list(dict.fromkeys(literals))
    return tuple(a for a in unique if not any(b != a and b in a for b in unique))


def search_plan(literals: Sequence[str]) -> dict[str | None, tuple[str, ...]]:
    """The literals to search for, grouped by the key a text must hold first (None: searched in every text).
    Keys are chosen greedily, the one shared by most remaining literals first (ties: alphabetical), so the plan
    is deterministic."""
    remaining = list(minimal_literals(literals))
    plan: dict[str | None, tuple[str, ...]] = {}
    while True:
        shared: dict[str, list[str]] = {}
        for literal in remaining:
            for key in {literal[i:i + KEY_LENGTH] for i in range(len(literal) - KEY_LENGTH + 1)}:
                shared.setdefault(key, []).append(literal)
        if not shared:
            break
        key, group = max(shared.items(), key=lambda item: (len(item[1]), item[0]))
        if len(group) < MIN_SHARED:
            break
        plan[key] = tuple(group)
        remaining = [literal for literal in remaining if literal not in group]
    if remaining:
        plan[None] = tuple(remaining)
    return plan


def _one_of(literals: Sequence[str]) -> str:
    """A Java regex that finds any of `literals` (each quoted as it stands)."""
    return "|".join(r"\Q" + literal.replace(r"\E", r"\E\\E\Q") + r"\E" for literal in literals)


def contains_any(text: Column, literals: Sequence[str]) -> Column:
    """True when `text` contains one of `literals` (null when `text` is null); false for an empty list.

    The literals behind one key are searched only in texts that hold the key: a `contains` each for a group of up to
    CONTAINS_UP_TO literals, one `rlike` of their alternation for a larger group. The literals without a key,
    searched in every text, stay one `contains` each.

    Where the session runs the project's JVM matcher (a local session), all of this is one pass over the text
    instead, with the same answer."""
    if not literals:
        return F.lit(False)
    one_pass = any_literal(text, minimal_literals(literals))
    if one_pass is not None:
        return one_pass
    tests = []
    for key, group in search_plan(literals).items():
        if key is None or len(group) <= CONTAINS_UP_TO:
            found = reduce(operator.or_, (text.contains(literal) for literal in group))
        else:
            found = text.rlike(_one_of(group))
        tests.append(found if key is None else text.contains(key) & found)
    return reduce(operator.or_, tests) if tests else F.lit(False)
