"""Validate checked frames with Great Expectations: an ephemeral context, one Spark data frame asset and suite per
table, one validation per table; every rule's verdict comes from its expectation's result."""

from __future__ import annotations

import contextlib
import importlib
import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame

from pipelines.quality.rules import Rule, TableCheck

if TYPE_CHECKING:  # GX is imported when a validation runs (it is slow to import)
    from great_expectations.core.expectation_validation_result import ExpectationValidationResult
    from great_expectations.data_context import EphemeralDataContext
    from great_expectations.expectations import Expectation

SAMPLES = 5


@dataclass(frozen=True)
class RuleResult:
    """The verdict of one rule: rows checked, rows that broke it, a few of them, or the error that stopped GX."""

    table: str
    rule: str
    expectation: str
    success: bool
    checked_rows: int | None
    unexpected_count: int | None
    samples: str | None
    error: str | None
    scope: str = "pipeline"

    @property
    def full_name(self) -> str:
        return f"{self.table}.{self.rule}"


def import_gx_early() -> threading.Thread:
    """Start importing Great Expectations in a daemon thread and return the thread.

    The import takes about 3 s of one core, and a run needs GX only at its quality step: started with the run, the
    import overlaps the streams, whose Python side mostly waits on the JVM. A failed import is left for the
    quality step's own import to raise, where it names the step."""
    def load() -> None:
        # The quality step imports it again and reports any error there.
        with contextlib.suppress(Exception):
            importlib.import_module("great_expectations")
    thread = threading.Thread(target=load, name="import-great-expectations", daemon=True)
    thread.start()
    return thread


def _context() -> EphemeralDataContext:
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(), analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def expectation(rule: Rule) -> Expectation:
    """The GX expectation that states `rule`; its `meta` carries the rule name back into the result."""
    import great_expectations.expectations as gxe

    meta = {"rule": rule.name}
    column = rule.columns[0]
    if rule.kind == "not_null":
        return gxe.ExpectColumnValuesToNotBeNull(column=column, meta=meta)
    if rule.kind == "unique":
        return gxe.ExpectColumnValuesToBeUnique(column=column, meta=meta)
    if rule.kind == "compound_unique":
        return gxe.ExpectCompoundColumnsToBeUnique(column_list=list(rule.columns), meta=meta)
    if rule.kind == "in_set":
        return gxe.ExpectColumnValuesToBeInSet(column=column, value_set=list(rule.values), meta=meta)
    if rule.kind == "is_true":
        return gxe.ExpectColumnValuesToBeInSet(column=column, value_set=[True], meta=meta)
    if rule.kind == "between":
        return gxe.ExpectColumnValuesToBeBetween(column=column, min_value=rule.low, max_value=rule.high, meta=meta)
    raise ValueError(f"rule {rule.name}: unknown kind {rule.kind!r}")


def _samples(result: dict[str, Any]) -> str | None:
    rows = result.get("partial_unexpected_index_list") or result.get("partial_unexpected_list") or []
    if not rows:
        return None
    return "; ".join(
        ", ".join(f"{k}={v}" for k, v in row.items()) if isinstance(row, dict) else json.dumps(row, default=str)
        for row in rows[:SAMPLES]
    )


def validate(parts: list[tuple[TableCheck, DataFrame]]) -> list[RuleResult]:
    """Run every check's rules over its frame (with any derived columns) and return one result per rule, in the
    order of `parts`; one table may come in several parts (its input rules judge fewer rows)."""
    import great_expectations as gx

    context = _context()
    # GX would cache each batch and never release it (a leak per run in the driver's cache); the caller persists
    # the frames it validates and releases them.
    source = context.data_sources.add_spark(name="rebalance", persist=False)
    results: list[RuleResult] = []
    for index, (check, frame) in enumerate(parts):
        name = f"{check.table}_{index}"
        batch = source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe("whole")
        suite = context.suites.add(gx.ExpectationSuite(name=f"{name}_rules"))
        for rule in check.rules:
            suite.add_expectation(expectation(rule))
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name=f"{name}_validation", data=batch, suite=suite))
        outcome = definition.run(
            batch_parameters={"dataframe": frame},
            result_format={"result_format": "SUMMARY", "partial_unexpected_count": SAMPLES,
                           "unexpected_index_column_names": list(check.key)},
        )
        by_rule: dict[str, ExpectationValidationResult] = {}
        for r in outcome.results:
            assert r.expectation_config is not None  # a suite's results carry the expectation they checked
            by_rule[r.expectation_config.meta["rule"]] = r
        for rule in check.rules:
            results.append(_result(check.table, rule, by_rule.get(rule.name)))
    return results


def _result(table: str, rule: Rule, gx_result: ExpectationValidationResult | None) -> RuleResult:
    if gx_result is None:
        return RuleResult(table, rule.name, rule.kind, False, None, None, None, "GX returned no result for the rule",
                          rule.scope)
    assert gx_result.expectation_config is not None  # `validate` keys results by their expectation's meta
    info = gx_result.exception_info or {}
    # A validation of one expectation reports its exception flat; keep whichever shape GX used.
    if "raised_exception" not in info and info:
        info = next(iter(info.values()))
    error = info.get("exception_message") if info.get("raised_exception") else None
    result = gx_result.result or {}
    return RuleResult(
        table=table, rule=rule.name, expectation=gx_result.expectation_config.type,
        success=bool(gx_result.success) and error is None, checked_rows=result.get("element_count"),
        unexpected_count=result.get("unexpected_count"), samples=_samples(result), error=error, scope=rule.scope,
    )
