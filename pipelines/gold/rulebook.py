"""The rule book: every rule that gives a rebalance its cause, with its question, its windows, its confidence and its
basis, in the order the replay consults them.

A verdict is made only here (`decide`), from a rule's entry: its cause, detail and confidence are the entry's, so no
confidence is written anywhere else. Windows are named: a number of seconds fixed here, or the name of a configured
threshold (`thresholds:` of the configuration, pipelines.settings.config.Thresholds), whose value the replay reads
from there.
Precedence is the list's order: within one rebalance the replay consults the rules from the top, the first base rule
that applies decides, and the refinements below it may change that verdict (tests/test_rulebook.py checks every trace
of the test corpora against this order). `docs/causes.md` is generated from this list (`python -m
pipelines.gold.rulebook --write`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pipelines.gold.rules_alternatives import ALTERNATIVES
from pipelines.gold.rules_data import RULE_ROWS, WINDOWS

RulePath = Literal["broker", "epoch", "client", "any"]


@dataclass(frozen=True)
class Alternative:
    """A cause a rule's verdict does not rule out: its confidence, the log that would decide it (`client`, `gc` or
    `broker`) and the line to look for there."""

    cause: str
    confidence: float
    needs: str  # client, gc or broker
    decided_by: str


@dataclass(frozen=True)
class Verdict:
    """A cause with its finer detail, confidence, the member that triggered it, a one-line explanation, and the id of
    the rule book entry that decided it."""

    cause: str
    detail: str | None
    confidence: float
    trigger_member_id: str | None
    explanation: str
    rule: str


@dataclass(frozen=True)
class Rule:
    """One entry of the rule book.

    `cause`/`detail` None: the rule carries over the cause (or detail) of what it traces the rebalance to (a rejoin,
    a follow-up). `path`: which replay consults it (`broker`: the coordinator's classic lines; `epoch`: KIP-848 and
    streams groups' epoch bumps; `client`: members' lines only; `any`: every path). `windows`: names of WINDOWS
    entries or configured thresholds it reads. `confidence` of a modifier (`kind` cap or factor) is the cap or the
    factor it applies to the verdict it changes."""

    id: str
    path: RulePath
    question: str
    cause: str | None
    detail: str | None
    confidence: float
    basis: str
    windows: tuple[str, ...] = ()
    kind: Literal["base", "refinement", "cap", "factor"] = "base"
    order: int = field(default=0, compare=False)
    alternatives: tuple[Alternative, ...] = field(default=(), compare=False)


RULES: tuple[Rule, ...] = tuple(
    Rule(**row, order=i, alternatives=tuple(Alternative(*a) for a in ALTERNATIVES.get(row["id"], ())))
    for i, row in enumerate(RULE_ROWS)
)
BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
if len(BY_ID) != len(RULES):
    raise ValueError("rule ids in the rule book must be unique")
if set(ALTERNATIVES) - set(BY_ID):
    raise ValueError(f"alternatives for rules not in the book: {sorted(set(ALTERNATIVES) - set(BY_ID))}")


def rule(rule_id: str) -> Rule:
    """The rule book's entry `rule_id` (KeyError naming the id when there is none)."""
    try:
        return BY_ID[rule_id]
    except KeyError:
        raise KeyError(f"no rule {rule_id!r} in the rule book") from None


def window(name: str) -> float:
    """A fixed window of the rule book, in seconds."""
    return WINDOWS[name][0]


def confidence(rule_id: str) -> float:
    """The confidence (or, for a cap or factor, the limit) of rule `rule_id`."""
    return rule(rule_id).confidence


def decide(rule_id: str, trigger: str | None, explanation: str, *, cause: str | None = None,
           detail: str | None = None, confidence: float | None = None) -> Verdict:
    """The verdict of rule `rule_id`: its cause, detail and confidence from the book. `cause`/`detail` only for a
    rule that carries them over (its entry leaves them None), `confidence` only for one that carries it over."""
    entry = rule(rule_id)
    if entry.cause is not None and cause is not None and cause != entry.cause:
        raise ValueError(f"rule {rule_id} decides {entry.cause}, not {cause}")
    final_cause = entry.cause if entry.cause is not None else cause
    if final_cause is None:
        raise ValueError(f"rule {rule_id} carries its cause over: pass it")
    return Verdict(final_cause, entry.detail if entry.detail is not None else detail,
                   entry.confidence if confidence is None else confidence, trigger, explanation, rule_id)


DOCS = "docs/causes.md"
_PATH_TITLES = {"broker": "the coordinator's log (classic protocol)",
                "epoch": "KIP-848 and streams groups' epoch bumps",
                "client": "members' lines only (no coordinator log)", "any": "every path"}


def docs_text() -> str:
    """docs/causes.md: the rule book as a page (a test fails when the committed page differs)."""
    from pipelines.gold.rules_data import CONFIGURED, WINDOWS

    out = ["# Why a rebalance gets its cause: the rule book", "",
           "Generated from `pipelines/gold/rules_data.py` by `python -m pipelines.gold.rulebook --write`; do not edit.",
           "", "The replay consults these rules from the top. A rebalance's first verdict comes from the first *base* "
           "rule of its path that applies; the *refinements*, *factors* and *caps* below may then change it, each in "
           "this order. `gold_rebalances.cause_rule` names the rule that decided; `rebalance explain REBALANCE_ID` "
           "prints every rule consulted for one rebalance, whether it applied and why not.", "",
           "| # | rule | path | question | cause / detail | confidence | windows | basis |",
           "|---|---|---|---|---|---|---|---|"]
    for entry in RULES:
        verdict = f"{entry.cause or '(carried over)'} / {entry.detail or '-'}"
        value = {"factor": f"x {entry.confidence:g}", "cap": f"<= {entry.confidence:g}"}.get(
            entry.kind, f"{entry.confidence:g}")
        out.append(f"| {entry.order + 1} | `{entry.id}` ({entry.kind}) | {entry.path} | {entry.question} | "
                   f"{verdict} | {value} | {', '.join(f'`{w}`' for w in entry.windows) or '-'} | {entry.basis} |")
    out += ["", "## What a verdict does not rule out", "",
            "`gold_rebalances.cause_alternatives` lists, for the rule that decided, the other causes its lines are "
            "consistent with, and the line that would decide each. An alternative is left out when the replay read "
            "the log that would decide it (the trigger member's client log, the GC log of its process, the "
            "coordinator's log) and found nothing there.", "", "| rule | alternative | confidence | decided by |",
            "|---|---|---|---|"]
    out += [f"| `{entry.id}` | {a.cause} | {a.confidence:g} | {a.needs} log: {a.decided_by} |"
            for entry in RULES for a in entry.alternatives]
    out += estate_docs()
    out += ["", "## Paths", ""] + [f"- `{k}`: {v}" for k, v in _PATH_TITLES.items()]
    out += ["", "## Windows", "", "Fixed in the rule book:", "", "| window | seconds | what it bounds |",
            "|---|---|---|"]
    out += [f"| `{name}` | {value:g} | {text} |" for name, (value, text) in WINDOWS.items()]
    out += ["", "Configured (`thresholds:` in the configuration, defaults in `pipelines/settings/config.py`): "
            + ", ".join(f"`{name}`" for name in CONFIGURED) + ".", ""]
    return "\n".join(out)


def estate_docs() -> list[str]:
    """The estate rules' section of docs/causes.md."""
    from pipelines.gold.estate_rules import ESTATE_RULES, ESTATE_WINDOWS

    out = ["", "## Estate incidents: what ties rebalances of different groups", "",
           "After every group's rebalances have their causes, these rules tie rebalances of different groups that "
           "share a root event into one row of `gold_estate_incidents` (`gold_rebalances.estate_incident_id` names "
           "it; `rebalance explain` prints it). They are tried in this order, and a rebalance belongs to at most one "
           "estate incident. Rebalances of groups whose lines print no time, of a process's own group (its lines name "
           "none; several may be one real group's members), and an empty group's fresh start are never tied.", "",
           "| # | rule | root kind | question | basis | windows |", "|---|---|---|---|---|---|"]
    out += [f"| {i + 1} | `{r.id}` | {r.root_kind} | {r.question} | {r.basis} | "
            f"{', '.join(f'`{w}`' for w in r.windows)} |" for i, r in enumerate(ESTATE_RULES)]
    out += ["", "| number | value (seconds, or groups) | what it bounds, and what it rests on |", "|---|---|---|"]
    out += [f"| `{name}` | {value:g} | {text} |" for name, (value, text) in ESTATE_WINDOWS.items()]
    out += ["", "Configured: `thresholds.estate_window_s` (rebalances of different groups this close can share a "
            "root), `thresholds.estate_min_groups` (a shared root ties at least this many groups; a deploy wave or a "
            "burst needs two more, and at least `estate_unshared_min_groups`), "
            "`thresholds.coordinator_move_window_s`.", "",
            "Each group a coordinator event spared (`groups_unaffected`: coordinated by the stalled broker, or its "
            "__consumer_offsets partition moved, and not rebalanced by it) gets one sentence in "
            "`groups_unaffected_why` (`pipelines/gold/estate_spared.py`), from its own rows at the incident's start, "
            "the first that applies: a rebalance of its own that no rule tied to the incident, begun between the "
            "root event (a move's first line, else the first rebalance) and the incident's end; a state with no "
            "member (`Empty`, `Dead`); no member session active then; else its members then (static ones counted) "
            "and their shortest session timeout, with where that number comes from (the "
            "`session.timeout.ms` their clients logged, else `thresholds.default_session_timeout_ms`; for KIP-848 "
            "and streams groups, the broker's setting): after a move, they reached the new coordinator within it; "
            "after a stall, it was longer than the broker's GC pause, or, when no pause is logged or the timeout is "
            "shorter, none expired because their heartbeats reached the coordinator before it checked their "
            "sessions (the lab's 12 s SIGSTOP of a 4.2.2 broker spared two of four groups whose one member each had "
            "a 6 s timeout)."]
    return out


if __name__ == "__main__":
    import sys
    from pathlib import Path

    target = Path(__file__).resolve().parents[2] / DOCS
    if "--write" in sys.argv:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(docs_text(), encoding="utf-8")
        print(f"wrote {target}")
    else:
        print(docs_text())
