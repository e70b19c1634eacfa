"""Real public log excerpts (tests/data/real-excerpts), labelled before parsing: the share of group-related lines
that become typed events with the right group, and the share of excerpts whose thread-established cause is among the
pipeline's verdicts, must not fall below what this release reaches (`python -m bench.excerpts` prints the tables).

The floors are the measured figures of this release, not the targets: the targets are 95% of lines and 85% of
causes; raise a floor whenever the figure rises."""

from __future__ import annotations

import pytest

from bench.excerpts import DEFAULT_ROOT, cause_share, line_share, load_corpus, measure, report

LINE_FLOOR = 0.94  # measured 94.8% (676 of 713 lines, 140 excerpts)
CAUSE_FLOOR = 0.86  # measured 86.4% (76 of 88); the 16 excerpts added last measure 50% (3 of 6) alone


@pytest.fixture(scope="module")
def measured(spark):
    return measure(spark, load_corpus(DEFAULT_ROOT))


def test_every_label_names_real_lines():
    excerpts = load_corpus(DEFAULT_ROOT)
    assert len(excerpts) >= 80
    for ex in excerpts:
        assert ex.label.source.startswith("https://"), ex.name
        files = {f.name: f.read_text(errors="replace").splitlines() for f in ex.files}
        for lab in ex.label.lines:
            assert lab.file in files and 1 <= lab.line <= len(files[lab.file]), f"{ex.name}: {lab}"
            assert files[lab.file][lab.line - 1].strip(), f"{ex.name}: {lab} is a blank line"


def test_group_lines_become_typed_events(measured):
    share = line_share(measured.lines)
    assert share >= LINE_FLOOR, f"{share:.1%} of labelled lines typed\n" + report(measured.lines, None,
                                                                                   show_misses=True)


def test_labelled_causes_are_among_the_verdicts(measured):
    share = cause_share(measured.causes)
    assert len(measured.causes) >= 50
    assert share >= CAUSE_FLOOR, f"{share:.1%} of labelled causes found\n" + report(measured.lines, measured.causes,
                                                                                      show_misses=True)
