"""The quality rules as data: per checked table, what must hold (its key columns come from schemas.tables.REGISTRY).

Each rule becomes one Great Expectations expectation (validate.py). Rules GX cannot state directly (legal state
transitions, generations that grow) are computed as a boolean column by a transform in derived.py, and the rule
expects that column to be true wherever it is not null.

Each rule also says whose mistake a violation is (`scope`): a `pipeline` rule judges the pipeline's own output
(keys, vocabularies, ranges), and its failure fails the step; an `input` rule spans rows in event order, so lost or
reordered log lines can break it, and its violations are reported once (an alert per violating row) while the run
goes on. Input rules judge only rows old enough to be final (see findings.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipelines.gold.causes import CAUSES
from pipelines.gold.machines import STATES
from pipelines.silver.templates import load_templates
from schemas.tables import keys_of

Kind = Literal["not_null", "unique", "compound_unique", "in_set", "between", "is_true"]
Scope = Literal["pipeline", "input"]
# Kinds judged row by row: a violating row can be named on its own, which an input rule's alert needs.
ROW_KINDS = ("not_null", "in_set", "between", "is_true")

OUTCOMES = ("stabilized", "emptied", "superseded", "open")
PROTOCOLS = ("classic", "consumer")


@dataclass(frozen=True)
class Rule:
    """One expectation on one or more columns: `values` for in_set, `low`/`high` for between (None: open); `scope`
    whose mistake a violation is; `shown` the columns that describe a violating row of an input rule."""

    name: str
    kind: Kind
    columns: tuple[str, ...]
    values: tuple[object, ...] = ()
    low: float | None = None
    high: float | None = None
    scope: Scope = "pipeline"
    shown: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableCheck:
    """The rules of one table; `key` names the columns shown for each sample of a failing rule, `time_column` when
    a row happened (input rules leave rows within the allowed lateness unjudged)."""

    table: str
    key: tuple[str, ...]
    rules: tuple[Rule, ...]
    time_column: str | None = None

    def __post_init__(self) -> None:
        for rule in self.rules:
            if rule.scope == "input" and (self.time_column is None or rule.kind not in ROW_KINDS):
                raise ValueError(f"input rule {self.table}.{rule.name} needs the table's time_column and a row-level "
                                 f"kind ({', '.join(ROW_KINDS)}), not {rule.kind!r}")

    def part(self, scope: Scope) -> TableCheck:
        """The same check with only its rules of `scope`; an input part shows each rule's `shown` columns too."""
        rules = tuple(r for r in self.rules if r.scope == scope)
        shown = tuple(dict.fromkeys(c for r in rules for c in r.shown if scope == "input" and c not in self.key))
        return TableCheck(self.table, self.key + shown, rules, self.time_column)


def key_rules(key: tuple[str, ...]) -> tuple[Rule, ...]:
    """Every key column present, and the key unique."""
    present = tuple(Rule(f"{column}_not_null", "not_null", (column,)) for column in key)
    if len(key) == 1:
        return (*present, Rule(f"{key[0]}_unique", "unique", key))
    return (*present, Rule("key_unique", "compound_unique", key))


def keyed(table: str, *rules: Rule, time_column: str | None = None) -> TableCheck:
    """The check of a registered table: its key columns (schemas.tables.REGISTRY) present and unique, then `rules`."""
    key = keys_of(table)
    return TableCheck(table, key, (*key_rules(key), *rules), time_column)


def non_negative(column: str) -> Rule:
    """A duration (or other amount) that is never below zero."""
    return Rule(f"{column}_non_negative", "between", (column,), low=0)


def input_rule(name: str, column: str, *, shown: tuple[str, ...]) -> Rule:
    """A cross-row flag (derived.py) that must be true, and that inconsistent input can break."""
    return Rule(name, "is_true", (column,), scope="input", shown=shown)


def scopes(table_checks: tuple[TableCheck, ...]) -> dict[tuple[str, str], Scope]:
    """(table, rule) -> the rule's scope."""
    return {(c.table, r.name): r.scope for c in table_checks for r in c.rules}


def event_types() -> tuple[str, ...]:
    """Every event type the template registry can produce (noise wordings never reach silver_events)."""
    return tuple(sorted({t.template.event for t in load_templates()} - {"noise"}))


def template_ids() -> tuple[str, ...]:
    """Every template id of the registry."""
    return tuple(sorted(t.template.id for t in load_templates()))


def checks() -> tuple[TableCheck, ...]:
    """The checked tables, in validation order, with their rules."""
    return (
        keyed("silver_events",
              Rule("event_type_known", "in_set", ("event_type",), values=event_types()),
              Rule("template_id_known", "in_set", ("template_id",), values=template_ids())),
        keyed("silver_gc_pauses", non_negative("duration_ms")),
        keyed(
            "gold_group_states",
            Rule("group_id_not_null", "not_null", ("group_id",)),
            Rule("state_known", "in_set", ("state",), values=STATES),
            non_negative("duration_ms"),
            input_rule("legal_transition", "legal_transition",
                       shown=("group_id", "started_at", "previous_state", "state", "generation")),
            time_column="started_at",
        ),
        keyed(
            "gold_rebalances",
            Rule("group_id_not_null", "not_null", ("group_id",)),
            Rule("cause_known", "in_set", ("cause",), values=CAUSES),
            Rule("outcome_known", "in_set", ("outcome",), values=OUTCOMES),
            Rule("protocol_known", "in_set", ("protocol",), values=PROTOCOLS),
            non_negative("duration_ms"),
            Rule("cause_confidence_in_range", "between", ("cause_confidence",), low=0, high=1),
            input_rule("generation_grows", "generation_grows",
                       shown=("group_id", "started_at", "generation_before", "generation_after")),
            time_column="started_at",
        ),
        keyed("gold_incidents",
              Rule("root_cause_known", "in_set", ("root_cause",), values=CAUSES),
              non_negative("unavailable_ms")),
        keyed("gold_rebalance_stats_hourly", Rule("cause_known", "in_set", ("cause",), values=CAUSES)),
    )
