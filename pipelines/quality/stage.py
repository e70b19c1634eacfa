"""The quality step of a run: validate the checked tables' current snapshots, store one row per rule in
gold_quality_results, and fail (QualityError, naming the rules) when a pipeline rule fails or any rule could not be
checked. An input rule that finds rows breaking it does not fail the step: its rows are reported by the alerts step.

A snapshot is validated once: when no checked table has a new Delta version since the last stored run, that run's
verdicts stand (nothing is written), and a failure in them fails this step again. It never passes silently.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.quality.derived import with_generation_check, with_transition_check
from pipelines.quality.findings import filter_final, judged_until, violations
from pipelines.quality.rules import Scope, TableCheck, checks, scopes
from pipelines.quality.screen import EXPECTATION_TYPES, screen
from pipelines.quality.validate import RuleResult, validate
from pipelines.session.caching import CachedFrames
from pipelines.session.steps import as_step
from pipelines.settings.config import Config
from pipelines.state.seen import Seen, last_seen, remember, settings_key
from pipelines.storage import delta_sql, lake, writes
from schemas.gold import GOLD_QUALITY_RESULTS

STEP = "quality"
RESULTS = "gold_quality_results"
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
        """Failed pipeline rules, and rules of either scope that could not be checked: these fail the step."""
        return tuple(r for r in self.results if not r.success and (r.scope == "pipeline" or r.error is not None))

    @property
    def findings(self) -> tuple[RuleResult, ...]:
        """Input rules that found rows breaking them: reported, they do not fail the step."""
        return tuple(r for r in self.results if not r.success and r.scope == "input" and r.error is None)

    def line(self) -> str:
        """One line for progress output."""
        tables = len({r.table for r in self.results})
        verdict = f"{len(self.failures)} failed" if self.failures else "all passed"
        how = "validated" if self.validated else "unchanged since the last check"
        found = "".join(f"; input rule {r.full_name}: {r.unexpected_count} row(s) from inconsistent input, reported"
                        for r in self.findings)
        return f"quality: {len(self.results)} rules on {tables} tables {how}, {verdict}{found}"

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


def _previous(spark: SparkSession, cfg: Config, rules: dict[tuple[str, str], Scope],
              versions: dict[str, int]) -> QualityReport | None:
    """The last stored run, if it checked the same rules on the same table versions."""
    stored = lake.read_table(spark, cfg, "gold_quality_results")
    row = stored.agg(F.max("run_ts")).first()
    assert row is not None  # an aggregate without grouping has exactly one row
    latest = row[0]
    if latest is None:
        return None
    rows = stored.filter(F.col("run_ts") == F.lit(latest)).collect()
    if {(r.table_name, r.rule) for r in rows} != set(rules):
        return None
    if any(r.table_version != versions[r.table_name] for r in rows):
        return None
    results = tuple(
        RuleResult(r.table_name, r.rule, r.expectation, r.success, r.checked_rows, r.unexpected_count, r.samples,
                   r.error, rules[(r.table_name, r.rule)]) for r in rows)
    return QualityReport(latest, results, validated=False)


def _store(spark: SparkSession, cfg: Config, report: QualityReport, versions: dict[str, int]) -> None:
    run_ts = _utc(report.run_ts)
    rows = [(run_ts, r.table, r.rule, r.expectation, r.success, r.checked_rows, r.unexpected_count, r.samples,
             r.error, versions[r.table]) for r in report.results]
    frame = spark.createDataFrame(rows, GOLD_QUALITY_RESULTS)
    # Keyed by run: a repeated run with the same run_ts replaces its own rows, never another run's.
    writes.replace_keys(spark, frame, cfg, "gold_quality_results", keys=["run_ts", "table_name", "rule"],
                    scope=f"t.run_ts = {delta_sql.timestamp_literal(run_ts)}")


def _checked(spark: SparkSession, cfg: Config, table: str, version: int | None = None) -> DataFrame:
    derive: Callable[[DataFrame], DataFrame] = DERIVED.get(table, lambda df: df)
    return derive(lake.read_table(spark, cfg, table, version=version))


def _judged_until(spark: SparkSession, cfg: Config, version: int | None = None) -> dt.datetime | None:
    """The newest row time input rules judge: the newest event of silver_events (at `version`) minus the allowed
    lateness."""
    row = lake.read_table(spark, cfg, "silver_events", version=version).agg(F.max("event_ts")).first()
    assert row is not None  # an aggregate without grouping has exactly one row
    newest = row[0]
    return judged_until(newest, allowed_lateness_s=cfg.thresholds.allowed_lateness_s)


def _validate(spark: SparkSession, cfg: Config, table_checks: tuple[TableCheck, ...],
              versions: dict[str, int]) -> list[RuleResult]:
    until = _judged_until(spark, cfg, versions.get("silver_events"))
    with CachedFrames() as cached:
        parts: list[tuple[TableCheck, DataFrame]] = []
        for check in table_checks:
            frame = _checked(spark, cfg, check.table, versions[check.table])
            if check.part("pipeline").rules:
                parts.append((check.part("pipeline"), frame))
            if check.part("input").rules:
                final = filter_final(frame, time_column=str(check.time_column), until=until)
                parts.append((check.part("input"), final))
        results: list[RuleResult] = []
        for_gx: list[tuple[TableCheck, DataFrame]] = []
        for (check, frame), screened in zip(parts, screen(parts), strict=True):
            results += [RuleResult(check.table, rule.name, EXPECTATION_TYPES[rule.kind], True, rows, 0, None, None,
                                   rule.scope) for rule, rows in screened.passed]
            if screened.for_gx is not None:
                # GX scans its frame once per metric: keep the rows it judges.
                for_gx.append((screened.for_gx, cached(frame)))
        if for_gx:
            results += validate(for_gx)
    order = {(c.table, r.name): i for i, (c, r) in enumerate((c, r) for c in table_checks for r in c.rules)}
    return sorted(results, key=lambda r: order[(r.table, r.rule)])


def input_violations(spark: SparkSession, cfg: Config, *, rules: set[tuple[str, str]],
                     table_checks: tuple[TableCheck, ...] | None = None) -> DataFrame | None:
    """The final rows of the current tables that break the input rules named in `rules` ((table, rule) pairs), in
    the columns of `findings.violations`; None when `rules` names none."""
    if not rules:
        return None
    until = _judged_until(spark, cfg)
    found = [
        violations(filter_final(_checked(spark, cfg, check.table), time_column=str(check.time_column), until=until),
                   check=check, rule=rule)
        for check in table_checks or checks() for rule in check.rules
        if rule.scope == "input" and (check.table, rule.name) in rules
    ]
    if not found:
        return None
    result = found[0]
    for part in found[1:]:
        result = result.unionByName(part)
    return result


def _remembered(seen: Seen | None, key: str, versions: dict[str, int]) -> QualityReport | None:
    """The verdicts the last step recorded beside the checkpoints, when it saw these very table versions (the
    stored results included: they are the record's source and were not written since)."""
    if seen is None or seen.key != key or seen.versions != versions:
        return None
    try:
        results = tuple(RuleResult(**r) for r in seen.detail["results"])
        return QualityReport(dt.datetime.fromisoformat(seen.detail["run_ts"]), results, validated=False)
    except (KeyError, TypeError, ValueError):
        return None


def _key(cfg: Config, table_checks: tuple[TableCheck, ...]) -> str:
    """What the verdicts depend on besides the tables: the rules, their scopes, the allowed lateness."""
    return settings_key(rules=sorted(f"{t}.{r}:{s}" for (t, r), s in scopes(table_checks).items()),
                        allowed_lateness_s=cfg.thresholds.allowed_lateness_s)


def unchanged_report(cfg: Config) -> QualityReport | None:
    """The verdicts the step would reuse without validating (`run_quality`), told from the tables' logs alone
    (no Spark): None when a table changed, the record is missing, or a table's version cannot be read so."""
    table_checks = checks()
    versions = lake.local_versions(cfg, {c.table for c in table_checks} | {RESULTS})
    return None if versions is None else _remembered(last_seen(cfg, STEP), _key(cfg, table_checks), versions)


@as_step("quality")
def run_quality(spark: SparkSession, cfg: Config, *, run_ts: dt.datetime,
                table_checks: tuple[TableCheck, ...] | None = None,
                on_progress: Callable[[str], None] | None = None) -> QualityReport:
    """Validate every checked table (or reuse the last verdicts when no table changed) and store the results."""
    table_checks = table_checks or checks()
    rules = scopes(table_checks)
    key = _key(cfg, table_checks)
    versions = {c.table: lake.table_version(spark, cfg, c.table) for c in table_checks}
    seen = last_seen(cfg, STEP)
    stored = lake.table_version(spark, cfg, RESULTS)
    report = _remembered(seen, key, {**versions, RESULTS: stored})
    if report is None:
        # When the stored results are still the ones the record saw, they judged the record's table versions, which
        # are not today's: only results stored by another process (or with the record lost) can be reused.
        if seen is None or seen.key != key or seen.versions.get(RESULTS) != stored:
            report = _previous(spark, cfg, rules, versions)
        if report is None:
            report = QualityReport(run_ts, tuple(_validate(spark, cfg, table_checks, versions)), validated=True)
            _store(spark, cfg, report, versions)
        remember(cfg, STEP, Seen(key, {**versions, RESULTS: lake.table_version(spark, cfg, RESULTS)},
                                 {"run_ts": report.run_ts.isoformat(), "results": [asdict(r) for r in report.results]}))
    if on_progress is not None:
        on_progress(report.line())
    return report
