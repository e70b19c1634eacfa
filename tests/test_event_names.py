"""Every event name the replay, the quality rules and the alerts compare against exists in a wording file.

Events are plain dicts and their `event_type` a string, so a misspelt name in gold (`client_leaveing`) would make a
rule silently never apply. This scan reads the source of pipelines/gold, pipelines/quality and pipelines/alerts and
checks every string literal shaped like an event name against the `event:` values of pipelines/silver/wordings.
Literals of the same shape that name something else (columns, rule ids, causes, windows, thresholds) are known from
their own single source; the few left are listed below with what they are.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pipelines.gold import rules_data
from pipelines.gold.estate_rules import ESTATE_RULES, ESTATE_WINDOWS
from pipelines.gold.machines import MOVES
from pipelines.settings.config import Thresholds
from pipelines.silver.templates import load_templates
from schemas.tables import TABLES

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"
SCANNED = ("gold", "quality", "alerts")
SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
# Event-shaped literals that are not events, each with what it is.
NOT_EVENTS = {
    "coordinator_epoch": "a derived column of the quality rules (pipelines/quality/derived.py)",
    "group_id_not_null": "a quality rule's name",
    "member_settings": "a section of `rebalance explain`'s output",
}


def _vocabulary() -> set[str]:
    return {t.template.event for t in load_templates()}


def _other_names() -> set[str]:
    """Every snake_case name of the tables, the rule book and the thresholds: not event names."""
    names = {field.name for schema in TABLES.values() for field in schema.fields}
    for row in rules_data.RULE_ROWS:
        names |= {row["id"], row["cause"], row["detail"]} - {None}
    for rule in ESTATE_RULES:  # the estate rules' ids and root kinds (gold_estate_incidents.root_kind)
        names |= {rule.id, rule.root_kind}
    names |= set(ESTATE_WINDOWS)
    names |= set(MOVES)  # the state machines' moves (pipelines/gold/machines.py)
    return names | set(rules_data.WINDOWS) | set(rules_data.CONFIGURED) | set(Thresholds.model_fields) | set(NOT_EVENTS)


def _literals_in(source: str, prefixes: set[str]) -> set[str]:
    """The snake_case string literals of one module's source whose first word starts an event name."""
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SNAKE.match(node.value)
            and node.value.split("_", 1)[0] in prefixes}


def _event_shaped_literals(prefixes: set[str]) -> dict[str, set[str]]:
    """Literal -> the files that hold it, over the scanned folders."""
    found: dict[str, set[str]] = {}
    for folder in SCANNED:
        for path in sorted((PIPELINES / folder).rglob("*.py")):
            for name in _literals_in(path.read_text(), prefixes):
                found.setdefault(name, set()).add(str(path.relative_to(PIPELINES)))
    return found


def test_every_event_name_used_in_gold_quality_and_alerts_is_a_wording_event():
    vocabulary = _vocabulary()
    literals = _event_shaped_literals({name.split("_", 1)[0] for name in vocabulary})
    events_used = {name for name in literals if name in vocabulary}
    unknown = {name: sorted(files) for name, files in literals.items()
               if name not in vocabulary and name not in _other_names()}
    assert not unknown, f"event-shaped names no wording file defines (a misspelt event? else NOT_EVENTS): {unknown}"
    # The scan sees the replay's vocabulary: far more than a handful of the events are compared against in gold.
    assert len(events_used) >= 40, sorted(events_used)


def test_the_scan_catches_a_misspelt_event_name():
    vocabulary = _vocabulary()
    prefixes = {name.split("_", 1)[0] for name in vocabulary}
    module = 'def f(event):\n    return event["event_type"] in ("client_leaving", "client_leaveing")\n'
    unknown = {name for name in _literals_in(module, prefixes) if name not in vocabulary | _other_names()}
    assert unknown == {"client_leaveing"}


def test_the_known_exceptions_are_still_used():
    """An entry of NOT_EVENTS that no scanned file holds any more is stale."""
    literals = _event_shaped_literals({name.split("_", 1)[0] for name in NOT_EVENTS})
    assert set(NOT_EVENTS) <= set(literals), set(NOT_EVENTS) - set(literals)
