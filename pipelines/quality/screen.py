"""One pass per checked frame that counts, for every rule at once, the rows that break it.

Great Expectations on Spark runs several Spark jobs per expectation (the unexpected count, the row count, the
unexpected values and their keys): about 95 jobs for the 31 rules, 8-11 s of every run whatever the tables' size,
and a pass over the table for each. The screen states each rule as the condition GX's own metric uses and sums all
of them in one aggregate per frame. A rule it finds unbroken passes with the screen's counts; a rule it finds broken,
or a frame it cannot count, goes to GX, whose verdict, samples or error are what the run stores.
`tests/test_quality_screen.py` holds the screen's counts equal to GX's for every rule kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.quality.findings import breaks
from pipelines.quality.rules import ROW_KINDS, Rule, TableCheck

# The GX expectation each rule kind becomes (validate.expectation), by the type name GX reports in its results.
EXPECTATION_TYPES = {
    "not_null": "expect_column_values_to_not_be_null",
    "unique": "expect_column_values_to_be_unique",
    "compound_unique": "expect_compound_columns_to_be_unique",
    "in_set": "expect_column_values_to_be_in_set",
    "is_true": "expect_column_values_to_be_in_set",
    "between": "expect_column_values_to_be_between",
}


@dataclass(frozen=True)
class Counts:
    """The rows of one frame, and per rule name the rows that break it."""

    rows: int
    broken: dict[str, int]


def _duplicated(frame: DataFrame, rule: Rule, index: int) -> tuple[DataFrame, Column]:
    """`frame` with a column counting the rows that share the rule's key, and the condition of a duplicated row.

    GX leaves a row out of a uniqueness check when all of the rule's columns are null (`all_values_are_missing`
    for a compound key; the null filter of a one-column check), so nulls never count as duplicates of each other."""
    columns = [F.col(c) for c in rule.columns]
    shared = f"__shared_{index}"
    with_count = frame.withColumn(shared, F.count(F.lit(1)).over(Window.partitionBy(*columns)))
    present = columns[0].isNotNull()
    for column in columns[1:]:
        present = present | column.isNotNull()
    return with_count, present & (F.col(shared) > 1)


def _tally(check: TableCheck, frame: DataFrame, index: int) -> DataFrame:
    """One row: `index`, the frame's row count, and an array with each of `check`'s rules' count of breaking rows."""
    conditions: list[Column] = []
    for position, rule in enumerate(check.rules):
        if rule.kind in ROW_KINDS:
            conditions.append(breaks(rule))
        else:
            frame, duplicated = _duplicated(frame, rule, position)
            conditions.append(duplicated)
    broken = [F.sum(F.when(condition, 1).otherwise(0)).cast("long") for condition in conditions]
    return frame.agg(F.lit(index).alias("part"), F.count(F.lit(1)).alias("rows"),
                     F.array(*broken).alias("broken"))


def count_breaks(parts: list[tuple[TableCheck, DataFrame]]) -> list[Counts]:
    """For each (check, frame), count the frame's rows and, per rule, the rows GX would report as unexpected. All
    parts are counted by one query, so their stages run side by side instead of one small job after another."""
    if not parts:
        return []
    tallies = [_tally(check, frame, index) for index, (check, frame) in enumerate(parts)]
    union = tallies[0]
    for tally in tallies[1:]:
        union = union.unionByName(tally)
    rows = {row["part"]: row for row in union.collect()}
    return [Counts(int(rows[i]["rows"]), {rule.name: int(n or 0) for rule, n in zip(check.rules, rows[i]["broken"],
                                                                                   strict=True)})
            for i, (check, _) in enumerate(parts)]


@dataclass(frozen=True)
class Screened:
    """What the screen decided for one frame: the rules that passed with its counts, and the check of the rules
    left for GX (None when none is)."""

    passed: tuple[tuple[Rule, int], ...]
    for_gx: TableCheck | None


def _screened(check: TableCheck, counts: Counts | None) -> Screened:
    if counts is None:
        return Screened((), check)
    broken = tuple(r for r in check.rules if counts.broken[r.name])
    passed = tuple((r, counts.rows) for r in check.rules if not counts.broken[r.name])
    return Screened(passed, TableCheck(check.table, check.key, broken, check.time_column) if broken else None)


def _counted(parts: list[tuple[TableCheck, DataFrame]]) -> list[Counts | None]:
    try:
        return list(count_breaks(parts))
    except Exception:  # noqa: BLE001 - the screen only saves time: whatever stops it, GX judges the frame and says why
        if len(parts) == 1:
            return [None]
    # Count each part on its own, so that one frame that cannot be counted leaves only itself to GX.
    return [_counted([part])[0] for part in parts]


def screen(parts: list[tuple[TableCheck, DataFrame]]) -> list[Screened]:
    """For each (check, frame): pass the rules the frame does not break and hand GX the rest, or the whole check
    when the frame cannot be counted (a missing column, a failed read: GX then reports the error it meets)."""
    return [_screened(check, counts) for (check, _), counts in zip(parts, _counted(parts), strict=True)]
