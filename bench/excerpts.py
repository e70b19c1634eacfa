"""Real public log excerpts (tests/data/real-excerpts): how many group-related lines become typed events with the
right group, and whether the pipeline's verdicts contain the cause the excerpt's thread established.

    python -m bench.excerpts [--root tests/data/real-excerpts] [--no-causes] [--out FILE.md] [--show-misses]

Each excerpt is a folder with one file per process and a `label.yml` written before parsing (see the folder's
README.md). Lines are measured as `rebalance parse` reads them: the whole corpus in one batch through the pipeline's
bronze-to-silver build. Causes are measured as `rebalance run` decides them, through the pipeline's gold build over
the same batch, each excerpt's groups apart from every other excerpt's (their ids are prefixed by the excerpt) and
every file of an excerpt an instance folder of its own (a `gc*` file joins the process of the same suffix). A line
that names no group keeps none, as in `rebalance run` (until 2026-12-06 such lines were put in one group per
excerpt, which credited client-only excerpts with verdicts the pipeline does not give).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "tests" / "data" / "real-excerpts"


class LabelledLine(BaseModel):
    """One group-related line: its file, 1-based line number, and the group it is about (None: names none)."""

    model_config = ConfigDict(extra="forbid")
    file: str
    line: int
    group: str | None = None


class Label(BaseModel):
    """What a person established about an excerpt before any parsing."""

    model_config = ConfigDict(extra="forbid")
    source: str
    title: str
    family: str
    layout: str
    kafka_version: str | None = None
    client_kind: str | None = None
    group_type: str = "consumer"
    date: dt.date | None = None
    cause: str | None = None
    cause_detail: str | None = None
    cause_basis: str | None = None
    lines: list[LabelledLine] = []


@dataclass
class Excerpt:
    """A folder of the corpus with its label."""

    folder: Path
    label: Label

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def files(self) -> list[Path]:
        return sorted(p for p in self.folder.iterdir() if p.is_file() and p.name != "label.yml")


def load_corpus(root: Path = DEFAULT_ROOT) -> list[Excerpt]:
    """Every excerpt folder under `root` (folders without a label.yml are skipped)."""
    excerpts = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        label_file = folder / "label.yml"
        if label_file.is_file():
            excerpts.append(Excerpt(folder, Label.model_validate(yaml.safe_load(label_file.read_text()))))
    return excerpts


@dataclass
class LineResult:
    """The parser's outcome for one labelled line."""

    excerpt: str
    family: str
    file: str
    line: int
    group: str | None
    outcome: str  # event, wrong_group, quarantined, noise
    got_group: str | None = None
    raw: str = ""


def _instance(excerpt: str, file_name: str) -> str:
    """The instance folder of an excerpt's file: one process per file, a `gc*` file joining the process of the same
    suffix (`gc.log` with `consumer.log`), all prefixed by the excerpt so that no two excerpts share one."""
    stem = file_name.split(".")[0]
    process = "consumer" + stem[2:] if stem.startswith("gc") else stem
    return f"{excerpt}{SEP}{process}"


SEP = "__"


def _source_rules(excerpts: list[Excerpt]) -> list[dict[str, Any]]:
    """Source rules that give undated excerpts the date their thread implies."""
    rules: list[dict[str, Any]] = [
        {"instances": f"{ex.name}{SEP}*", "date": ex.label.date.isoformat()} for ex in excerpts if ex.label.date
    ]
    return rules + [{"instances": "*", "tz": "UTC"}]


@dataclass
class Measured:
    """What one run over the corpus found: the parser's outcome per labelled line and the verdicts per excerpt."""

    lines: list[LineResult]
    causes: list[CauseResult]


def measure(spark: Any, excerpts: list[Excerpt], *, causes: bool = True,
            on_gold: Callable[[Any, Any, Any], None] | None = None) -> Measured:
    """Parse every excerpt in one batch (as `rebalance parse` does), judge each labelled line, and (with `causes`)
    build the gold tables of every excerpt in one batch too, its groups kept apart from other excerpts' groups of
    the same name by prefixing them with the excerpt. `on_gold(events, pauses, gold)` sees the built frames while
    the excerpts' copies still exist (a test explains every rebalance from them)."""
    from pyspark.sql import functions as F

    from pipelines.gold.build import build_gold
    from pipelines.gold.placement import OWN_GROUP_PREFIX, gold_events
    from pipelines.gold.rebalances import rules_from
    from pipelines.settings.config import load_config
    from pipelines.settings.sources import resolve_sources
    from pipelines.silver.build import build_silver
    from pipelines.silver.outputs import to_events, to_gc_pauses
    from pipelines.storage import inputs, lake

    work = Path(tempfile.mkdtemp(prefix="excerpts-"))
    try:
        copies = []
        for ex in excerpts:
            for f in ex.files:
                target = work / _instance(ex.name, f.name) / f.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
                copies.append(target)
        cfg = load_config(None, {"sources": _source_rules(excerpts)})
        batch = build_silver(inputs.read_files(spark, sorted(copies)), resolve_sources(cfg),
                             existing_files=lake.empty(spark, "bronze_files"), batch_id=0, now=F.current_timestamp())
        excerpt = F.element_at(F.split("instance", SEP), 1)
        rows = batch.parsed.select(
            excerpt.alias("excerpt"), F.element_at(F.split("source_file", "/"), -1).alias("file"), "line_no",
            "record_lines", "disposition", "group_id", "event_type", "template_id",
        ).collect()
        verdicts: dict[str, list[str]] = {}
        doubts: dict[str, list[str]] = {}  # the causes the verdicts leave open (gold_rebalances.cause_alternatives)
        if causes:
            # a line that names no group keeps none until the pipeline places it (`gold_events`)
            named = F.when(F.col("group_id").isNotNull(), F.concat_ws(SEP, excerpt, "group_id"))
            events = gold_events(to_events(batch.parsed).withColumn("group_id", named))
            gold = build_gold(events, to_gc_pauses(batch.parsed), rules_from(cfg.thresholds))
            if on_gold is not None:
                on_gold(events, to_gc_pauses(batch.parsed), gold)
            # a process's own group is named after its instance folder, which begins with the excerpt too
            unwrapped = F.regexp_replace("group_id", "^" + re.escape(OWN_GROUP_PREFIX), "")
            for r in gold["gold_rebalances"].select(F.element_at(F.split(unwrapped, SEP), 1).alias("excerpt"),
                                                    "cause", "cause_alternatives.cause").collect():
                if r[1] not in verdicts.setdefault(r["excerpt"], []):
                    verdicts[r["excerpt"]].append(r[1])
                for other in r[2] or []:
                    if other not in doubts.setdefault(r["excerpt"], []):
                        doubts[r["excerpt"]].append(other)
        batch.unpersist()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # A physical line can hold several records (two glued on one line, a platform's record wrapping an
    # application's): every part of it is judged, and the line counts by its best part.
    by_line: dict[tuple[str, str, int], list[Any]] = {}
    for r in rows:
        for offset in range(r["record_lines"] or 1):
            by_line.setdefault((r["excerpt"], r["file"], r["line_no"] + offset), []).append(r)
    lines = []
    for ex in excerpts:
        texts = {f.name: f.read_text(errors="replace").splitlines() for f in ex.files}
        for lab in ex.label.lines:
            text = texts.get(lab.file, [])
            raw = text[lab.line - 1] if lab.line <= len(text) else ""
            outcome, got = judge_line(by_line.get((ex.name, lab.file, lab.line), []), lab.group)
            lines.append(LineResult(ex.name, ex.label.family, lab.file, lab.line, lab.group, outcome, got, raw))
    judged = [CauseResult(ex.name, ex.label.family, ex.label.cause, sorted(verdicts.get(ex.name, [])),
                          sorted(doubts.get(ex.name, []))) for ex in excerpts if causes and ex.label.cause]
    return Measured(lines, judged)


# The outcomes of `_judge`, best first.
_RANK = {"event": 0, "wrong_group": 1, "quarantined": 2, "noise": 3}


def judge_line(parts: list[Any], group: str | None) -> tuple[str, str | None]:
    """The outcome of one labelled line and the group it got: the best outcome of its parsed parts (`noise` when the
    parse left no row for it)."""
    return min((_judge(part, group) for part in parts or [None]), key=lambda judged: _RANK[judged[0]])


def _judge(row: Any, group: str | None) -> tuple[str, str | None]:
    """`event` for a line typed with the right group (with or without a time: `rebalance parse` shows both)."""
    if row is None:
        return "noise", None
    typed = row["template_id"] is not None and row["event_type"] != "noise"
    if typed:
        if group is None or row["group_id"] == group or (row["group_id"] is None and _redacted(group)):
            return "event", row["group_id"]
        return "wrong_group", row["group_id"]
    if row["disposition"] == "quarantine":
        return "quarantined", row["group_id"]
    return "noise", None


def _redacted(group: str) -> bool:
    return set(group) <= {"*", "x", "X", "."}


@dataclass
class CauseResult:
    """The pipeline's verdicts for one excerpt whose thread established a cause."""

    excerpt: str
    family: str
    cause: str
    verdicts: list[str] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return self.cause in self.verdicts

    @property
    def left_open(self) -> bool:
        """Not among the verdicts, but among the causes they say they cannot rule out."""
        return not self.agrees and self.cause in self.alternatives


def _table(title: str, rows: dict[str, list[bool]]) -> list[str]:
    out = [f"| {title} | n | right | share |", "|---|---:|---:|---:|"]
    for key in sorted(rows):
        oks = rows[key]
        out.append(f"| {key} | {len(oks)} | {sum(oks)} | {sum(oks) / len(oks):.0%} |")
    total = [ok for oks in rows.values() for ok in oks]
    if total:
        out.append(f"| **all** | {len(total)} | {sum(total)} | {sum(total) / len(total):.1%} |")
    return out


def report(lines: list[LineResult], causes: list[CauseResult] | None, *, show_misses: bool = False) -> str:
    """Markdown: line coverage per layout family, verdict agreement per cause and per family."""
    per_family: dict[str, list[bool]] = defaultdict(list)
    for r in lines:
        per_family[r.family].append(r.outcome == "event")
    out = ["## Group-related lines that became typed events with the right group", ""]
    out += _table("layout family", per_family)
    outcomes: dict[str, int] = defaultdict(int)
    for r in lines:
        outcomes[r.outcome] += 1
    out += ["", "Outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))]
    if causes is not None:
        per_cause: dict[str, list[bool]] = defaultdict(list)
        per_cfam: dict[str, list[bool]] = defaultdict(list)
        for c in causes:
            per_cause[c.cause].append(c.agrees)
            per_cfam[c.family].append(c.agrees)
        out += ["", "## Excerpts whose labelled cause is among the pipeline's verdicts", ""]
        out += _table("labelled cause", per_cause) + [""] + _table("layout family", per_cfam)
        found = sum(1 for c in causes if c.verdicts)
        out += ["", f"A rebalance found for {found} of {len(causes)} excerpts."]
        open_ = [c for c in causes if c.left_open]
        if open_:
            out += [f"For {len(open_)} of the others the labelled cause is one the verdicts say they cannot rule out "
                    f"(`cause_alternatives`): {', '.join(c.excerpt.split('-', 1)[0] for c in open_)}."]
    if show_misses:
        out += ["", "## Misses", ""]
        out += [f"- {r.excerpt}/{r.file}:{r.line} {r.outcome} (want {r.group}, got {r.got_group}): `{r.raw[:200]}`"
                for r in lines if r.outcome != "event"]
        if causes:
            out += [f"- {c.excerpt}: want {c.cause}, got {c.verdicts}"
                    + (f" (left open: {c.alternatives})" if c.alternatives else "") for c in causes if not c.agrees]
    return "\n".join(out)


def line_share(lines: list[LineResult]) -> float:
    """The share of labelled lines that became events with the right group."""
    return sum(r.outcome == "event" for r in lines) / len(lines) if lines else 0.0


def cause_share(causes: list[CauseResult]) -> float:
    """The share of cause-labelled excerpts whose cause is among the verdicts."""
    return sum(c.agrees for c in causes) / len(causes) if causes else 0.0


def main(argv: list[str] | None = None) -> int:
    """Measure the corpus and print (or write) the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.excerpts", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="corpus folder")
    parser.add_argument("--no-causes", action="store_true", help="measure lines only (one batch; fast)")
    parser.add_argument("--show-misses", action="store_true", help="list every line and excerpt that missed")
    parser.add_argument("--only", help="comma-separated excerpt folder prefixes to measure")
    parser.add_argument("--out", type=Path, help="also write the report to this markdown file")
    args = parser.parse_args(argv)
    from pipelines.session.spark import get_spark
    from pipelines.settings.config import load_config

    excerpts = load_corpus(args.root)
    if args.only:
        prefixes = tuple(args.only.split(","))
        excerpts = [e for e in excerpts if e.name.startswith(prefixes)]
    if not excerpts:
        print(f"no labelled excerpts under {args.root}", file=sys.stderr)
        return 2
    spark = get_spark(load_config())
    print(f"{len(excerpts)} excerpts, {sum(len(e.label.lines) for e in excerpts)} labelled lines", file=sys.stderr)
    measured = measure(spark, excerpts, causes=not args.no_causes)
    text = report(measured.lines, None if args.no_causes else measured.causes, show_misses=args.show_misses)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
