"""Real public log excerpts (tests/data/real-excerpts), labelled before parsing: the share of group-related lines
that become typed events with the right group, and the share of excerpts whose thread-established cause is among the
pipeline's verdicts, must not fall below what this release reaches (`python -m bench.excerpts` prints the tables).

The floors are the measured figures of this release, not the targets: the targets are 95% of lines and 85% of
causes; raise a floor whenever the figure rises."""

from __future__ import annotations

import pytest

from bench.excerpts import DEFAULT_ROOT, cause_share, line_share, load_corpus, measure, report
from pipelines.gold.rebalances import timeline_input, timeline_records
from pipelines.gold.timeline import Timeline
from pipelines.settings.config import Thresholds
from tests.explaining import check_explained

# Four sets, each with its own floors. The first 140 excerpts (folders 100-515) guided the rules written so far; the
# fresh set (folders 600-699, 28 excerpts collected on 2026-11-26 and labelled before any parsing, weighted to
# librdkafka, Streams, Connect and 4.x) is the nearest thing to the held-out set, so its figures say how the
# parser does on logs it was not shaped by. The fresh2 set (folders 700+, 28 excerpts collected and labelled on
# 2026-11-26 before any parsing, for the clients other than the Java and librdkafka ones: kafka-python, aiokafka,
# KafkaJS, franz-go, Sarama, kafka-go, and librdkafka protocol debug lines) measures the wordings added for those
# clients, which were read from the clients' sources, not from these excerpts. The fresh3 set (folders 800+, 34
# excerpts collected and labelled on 2026-11-26 before any parsing, weighted to Connect, Streams and librdkafka in
# odd wrappings) was measured as it came, before any rule looked at it. The fresh4 set (folders 900+, 7 excerpts
# collected and labelled on 2026-12-02 before any parsing: Confluent components' groups and a librdkafka start-up)
# was measured before and after the session's rules, which were read from Kafka's and Schema Registry's sources;
# the rest of that collection is held out in bench/held-out/ and no test reads it. All floors rise as the figures do.
FRESH_FROM = 600
FRESH2_FROM = 700
FRESH3_FROM = 800
FRESH4_FROM = 900
LINE_FLOOR = 0.97  # measured 97.1% (692 of 713 lines, 140 excerpts)
# The cause floors below were lowered on 2026-12-06 and raised again the same day, and neither time because a verdict
# changed where the lines name their group: until then the benchmark put every line of an excerpt that names no
# group into one group named after the excerpt, which the pipeline did not do. Measured the pipeline's way the
# floors fell to first 64 of 88, fresh 7 of 11, fresh2 6 of 11. Since the pipeline places a process's group-less
# lines in the group its other lines name, or in a group of its own when they name none and no coordinator line is
# near (pipelines/gold/placement.py), it gives those verdicts itself: first 80, fresh 10, fresh2 7.
CAUSE_FLOOR = 0.90  # measured 90.9% (80 of 88)
FRESH_LINE_FLOOR = 0.91  # measured 91.7% (133 of 145 lines, 28 excerpts)
FRESH_CAUSE_FLOOR = 0.90  # measured 90.9% (10 of 11)
FRESH2_LINE_FLOOR = 0.96  # measured 96.8% (120 of 124 lines, 28 excerpts)
FRESH2_CAUSE_FLOOR = 0.63  # measured 63.6% (7 of 11)
FRESH3_LINE_FLOOR = 0.94  # measured 94.4% (85 of 90 lines, 34 excerpts; 67.8% before any rule looked at it)
FRESH3_CAUSE_FLOOR = 0.66  # measured 66.7% (8 of 12; 50.0% before any rule looked at it)
FRESH4_LINE_FLOOR = 0.78  # measured 78.3% (18 of 23 lines, 7 excerpts; 52.2% before the session's rules)
FRESH4_CAUSE_FLOOR = 0.85  # measured 85.7% (6 of 7; 71.4% before)
SETS = ((FRESH4_FROM, "fresh4"), (FRESH3_FROM, "fresh3"), (FRESH2_FROM, "fresh2"), (FRESH_FROM, "fresh"), (0, "first"))


def _set(name: str) -> str:
    number = int(name.split("-", 1)[0])
    return next(subset for start, subset in SETS if number >= start)


EXPLAINED: dict[str, int] = {}


def _explain_every_rebalance(events, pauses, gold) -> None:
    """Replay every excerpt's groups with the rule trace on and explain each rebalance (tests/explaining.py)."""
    rules = Thresholds()
    inputs = timeline_input(events, pauses, min_pause_ms=rules.gc_pause_min_ms).toPandas()
    stored = {r.rebalance_id: r.asDict() for r in
              gold["gold_rebalances"].select("rebalance_id", "cause", "cause_rule", "group_id").collect()}
    EXPLAINED["stored"] = len(stored)
    EXPLAINED["explained"] = sum(
        check_explained(Timeline(group, timeline_records(frame), rules, trace=True), stored, rules)
        for group, frame in inputs.groupby("group_id"))


@pytest.fixture(scope="module")
def measured(spark):
    return measure(spark, load_corpus(DEFAULT_ROOT), on_gold=_explain_every_rebalance)


def test_every_rebalance_of_the_excerpts_is_explained(measured):
    # 198 rebalances since the benchmark stopped inventing a group for each excerpt's group-less lines (2026-12-06)
    assert EXPLAINED["explained"] >= EXPLAINED["stored"] >= 195, EXPLAINED


def test_every_label_names_real_lines():
    excerpts = load_corpus(DEFAULT_ROOT)
    assert len(excerpts) >= 230
    for ex in excerpts:
        assert ex.label.source.startswith("https://"), ex.name
        files = {f.name: f.read_text(errors="replace").splitlines() for f in ex.files}
        for lab in ex.label.lines:
            assert lab.file in files and 1 <= lab.line <= len(files[lab.file]), f"{ex.name}: {lab}"
            assert files[lab.file][lab.line - 1].strip(), f"{ex.name}: {lab} is a blank line"


@pytest.mark.parametrize(("subset", "floor"),
                         [("first", LINE_FLOOR), ("fresh", FRESH_LINE_FLOOR), ("fresh2", FRESH2_LINE_FLOOR),
                          ("fresh3", FRESH3_LINE_FLOOR), ("fresh4", FRESH4_LINE_FLOOR)],
                         ids=["first", "fresh", "fresh2", "fresh3", "fresh4"])
def test_group_lines_become_typed_events(measured, subset, floor):
    lines = [r for r in measured.lines if _set(r.excerpt) == subset]
    share = line_share(lines)
    assert share >= floor, f"{share:.1%} of labelled lines typed\n" + report(lines, None, show_misses=True)


@pytest.mark.parametrize(("subset", "floor", "least"),
                         [("first", CAUSE_FLOOR, 50), ("fresh", FRESH_CAUSE_FLOOR, 10),
                          ("fresh2", FRESH2_CAUSE_FLOOR, 10), ("fresh3", FRESH3_CAUSE_FLOOR, 10),
                          ("fresh4", FRESH4_CAUSE_FLOOR, 7)],
                         ids=["first", "fresh", "fresh2", "fresh3", "fresh4"])
def test_labelled_causes_are_among_the_verdicts(measured, subset, floor, least):
    causes = [c for c in measured.causes if _set(c.excerpt) == subset]
    lines = [r for r in measured.lines if _set(r.excerpt) == subset]
    share = cause_share(causes)
    assert len(causes) >= least
    assert share >= floor, f"{share:.1%} of labelled causes found\n" + report(lines, causes, show_misses=True)
