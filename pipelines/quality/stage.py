"""The quality step of a run: validate the checked tables' current snapshots, store one row per rule in
gold_quality_results, and fail (QualityError, naming the rules) when any rule fails.

A snapshot is validated once: when no checked table has a new Delta version since the last stored run, that run's
verdicts stand (nothing is written), and a failure in them fails this step again. It never passes silently.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import io
from pipelines.config import Config
from pipelines.quality.derived import with_generation_check, with_transition_check
from pipelines.quality.rules import TableCheck, checks
from pipelines.quality.validate import RuleResult, validate
from schemas.gold import GOLD_QUALITY_RESULTS

DERIVED: dict[str, Callable[[DataFrame], DataFrame]] = {
    "gold_group_states": with_transition_check,
    "gold_rebalances": with_generation_check,
}


class QualityError(RuntimeError):
    """One or more data-quality rules failed; the message names each rule and shows a few offending rows."""


@dataclass(frozen=True)
class QualityReport:
    """The verdicts of one quality step; `validated` is False when an earlier run's verdicts were reused."""

    run_ts: dt.datetime
    results: tuple[RuleResult, ...]
    validated: bool

    @property
    def failures(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.results if not r.success)

    def line(self) -> str:
        """One line for progress output."""
        tables = len({r.table for r in self.results})
        verdict = f"{len(self.failures)} failed" if self.failures else "all passed"
        how = "validated" if self.validated else "unchanged since the last check"
        return f"quality: {len(self.results)} rules on {tables} tables {how}, {verdict}"

    def error(self) -> QualityError | None:
        """The error that names every failed rule (None when all passed)."""
        if not self.failures:
            return None
        names = ", ".join(r.full_name for r in self.failures)
        details = [f"  {r.full_name}: " + (f"could not be checked: {r.error}" if r.error else
                                          f"{r.unexpected_count} of {r.checked_rows} rows unexpected"
                                          + (f" (e.g. {r.samples})" if r.samples else ""))
                   for r in self.failures]
        return QualityError(f"data quality rule(s) failed: {names}; see gold_quality_results\n" + "\n".join(details))


def _utc(ts: dt.datetime) -> dt.datetime:
    return ts.astimezone(dt.timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts


def _previous(spark: SparkSession, cfg: Config, rules: set[tuple[str, str]],
              versions: dict[str, int]) -> QualityReport | None:
    """The last stored run, if it checked the same rules on the same table versions."""
    stored = io.read_table(spark, cfg, "gold_quality_results")
    latest = stored.agg(F.max("run_ts")).first()[0]
    if latest is None:
        return None
    rows = stored.filter(F.col("run_ts") == F.lit(latest)).collect()
    if {(r.table_name, r.rule) for r in rows} != rules:
        return None
    if any(r.table_version != versions[r.table_name] for r in rows):
        return None
    results = tuple(
        RuleResult(r.table_name, r.rule, r.expectation, r.success, r.checked_rows, r.unexpected_count, r.samples,
                   r.error) for r in rows)
    return QualityReport(latest, results, validated=False)


def _store(spark: SparkSession, cfg: Config, report: QualityReport, versions: dict[str, int]) -> None:
    run_ts = _utc(report.run_ts)
    rows = [(run_ts, r.table, r.rule, r.expectation, r.success, r.checked_rows, r.unexpected_count, r.samples,
             r.error, versions[r.table]) for r in report.results]
    frame = spark.createDataFrame(rows, GOLD_QUALITY_RESULTS)
    # Keyed by run: a repeated run with the same run_ts replaces its own rows, never another run's.
    io.replace_keys(spark, frame, cfg, "gold_quality_results", keys=["run_ts", "table_name", "rule"],
                    scope=F.col("t.run_ts") == F.lit(run_ts))


def run_quality(spark: SparkSession, cfg: Config, *, run_ts: dt.datetime,
                table_checks: tuple[TableCheck, ...] | None = None,
                on_progress: Callable[[str], None] | None = None) -> QualityReport:
    """Validate every checked table (or reuse the last verdicts when no table changed) and store the results."""
    table_checks = table_checks or checks()
    versions = {c.table: io.table_version(spark, cfg, c.table) for c in table_checks}
    rules = {(c.table, r.name) for c in table_checks for r in c.rules}
    report = _previous(spark, cfg, rules, versions)
    if report is None:
        frames = {}
        for check in table_checks:
            frame = io.read_table(spark, cfg, check.table, version=versions[check.table])
            frames[check.table] = DERIVED.get(check.table, lambda df: df)(frame).persist()
        try:
            report = QualityReport(run_ts, tuple(validate(frames, table_checks)), validated=True)
        finally:
            for frame in frames.values():
                frame.unpersist()
        _store(spark, cfg, report, versions)
    if on_progress is not None:
        on_progress(report.line())
    return report
