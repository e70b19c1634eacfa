"""The one-pass screen of the quality step counts what Great Expectations counts: for every rule kind, on a frame
that breaks each rule in the ways GX treats differently (nulls, duplicated nulls, partly null compound keys), the
screen's rows and unexpected counts equal GX's. A rule it finds broken, or a frame it cannot count, goes to GX."""

from __future__ import annotations

from pipelines.quality.rules import Rule, TableCheck
from pipelines.quality.screen import EXPECTATION_TYPES, count_breaks, screen
from pipelines.quality.validate import validate

RULES = (
    Rule("id_not_null", "not_null", ("id",)),
    Rule("id_unique", "unique", ("id",)),
    Rule("pair_unique", "compound_unique", ("a", "b")),
    Rule("kind_known", "in_set", ("kind",), values=("x", "y")),
    Rule("size_in_range", "between", ("size",), low=0, high=10),
    Rule("size_non_negative", "between", ("size",), low=0),
    Rule("flag_true", "is_true", ("flag",)),
)
CHECK = TableCheck("t", ("row",), RULES)
SCHEMA = "row int, id string, a string, b int, kind string, size double, flag boolean"
ROWS = [
    (1, "i1", "p", 1, "x", 0.0, True),
    (2, "i2", "p", 1, "y", 10.0, None),     # (a, b) duplicated with row 1
    (3, "i2", "q", None, "z", -1.0, False),  # id duplicated with row 2; kind, size and flag broken
    (4, None, "q", None, None, 11.0, True),  # id missing; (q, null) duplicated with row 3; size too large
    (5, None, None, None, "x", None, True),  # id missing; all of (a, b) missing: left out, though duplicated below
    (6, "i3", None, None, "w", 5.0, False),
    (7, "i4", None, 2, "x", 2.0, True),
]


def _gx_counts(frame) -> dict[str, tuple[int | None, int | None, str]]:
    return {r.rule: (r.checked_rows, r.unexpected_count, r.expectation) for r in validate([(CHECK, frame)])}


def test_the_screen_counts_every_rule_kind_as_gx_does(spark):
    frame = spark.createDataFrame(ROWS, SCHEMA)
    [counts] = count_breaks([(CHECK, frame)])
    gx = _gx_counts(frame)
    assert {name: (counts.rows, n) for name, n in counts.broken.items()} == {
        name: (rows, unexpected) for name, (rows, unexpected, _) in gx.items()}
    # Every kind is broken at least once here, so the equality above is not one of zeros.
    assert all(counts.broken.values()), counts.broken
    assert {r.name: EXPECTATION_TYPES[r.kind] for r in RULES} == {name: kind for name, (_, _, kind) in gx.items()}


def test_on_clean_and_on_empty_frames_the_screen_passes_every_rule_with_gxs_row_count(spark):
    clean = spark.createDataFrame([(1, "i1", "p", 1, "x", 0.0, True), (2, "i2", "p", 2, "y", 3.0, None)], SCHEMA)
    empty = clean.limit(0)
    for frame in (clean, empty):
        [screened] = screen([(CHECK, frame)])
        assert screened.for_gx is None
        gx = _gx_counts(frame)
        assert {(r.name, rows) for r, rows in screened.passed} == {(name, rows) for name, (rows, _, _) in gx.items()}
        # GX reports no unexpected count at all (None) for most kinds on an empty frame; the screen stores 0.
        assert all(n in (0, None) for _, n, _ in gx.values())


def test_broken_rules_and_uncountable_frames_are_left_to_gx(spark):
    broken = spark.createDataFrame(ROWS[:2], SCHEMA)  # only pair_unique breaks (and flag_true ignores the null)
    missing = spark.createDataFrame([(1, "i1")], "row int, id string")
    first, second = screen([(CHECK, broken), (CHECK, missing)])
    assert first.for_gx is not None and [r.name for r in first.for_gx.rules] == ["pair_unique"]
    assert {r.name for r, _ in first.passed} == {r.name for r in RULES} - {"pair_unique"}
    # The frame without the rule's columns cannot be counted: all of its check goes to GX, which reports the error.
    assert second.passed == () and second.for_gx == CHECK
    errors = [r for r in validate([(CHECK, missing)]) if r.error is not None]
    assert {r.rule for r in errors} >= {"pair_unique", "kind_known"}
