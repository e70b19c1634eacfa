"""The JVM template matcher (only the templates whose literal a line holds, one by one) parses every line exactly as
the one-regex alternation of the SQL path: golden lines, real excerpts, and lines no layout knows (searched anywhere,
the earliest match first), including lines that hold two messages."""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from pathlib import Path

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import pipelines.session.recipes as recipes
from pipelines.jvm.matcher import template_match
from pipelines.settings.config import load_config
from pipelines.silver import parse as parse_module
from tests.conftest import parse_with
from tests.test_golden import golden_rows

EXCERPTS = Path(__file__).parent / "data" / "real-excerpts"


def _lines() -> list[tuple[str, str]]:
    """(file name, line) pairs: every golden line as written, then as pasted after an unknown prefix, then pairs
    of golden lines joined into one line, then every line of the real excerpts."""
    golden = [line for _, line, _, _ in golden_rows()]
    out = [("server.log.2024-05-14-10", line) for line in golden]
    out += [("pasted.log", f"$ tail app.out >> {line}") for line in golden]
    # The message of one line, then another whole line: where both match, the earlier start wins.
    pairs = zip(golden, golden[7::3], strict=False)
    out += [("pasted.log", f"seen: {a.split('] ', 1)[-1]} then {b}") for a, b in pairs]
    for path in sorted(EXCERPTS.glob("*/*.log")):
        out += [(f"{path.parent.name}.log", line) for line in path.read_text(encoding="utf-8").splitlines()]
    return out


def test_the_jvm_matcher_parses_as_the_alternation(spark, monkeypatch):
    rows = _lines()
    bronze = spark.createDataFrame(
        [(f"l{i}", f"file:/landing/host-1/{name}", "host-1", name, dt.datetime(2024, 5, 14, 12), i, line, len(line), 0)
         for i, (name, line) in enumerate(rows, start=1)],
        "line_id string, source_file string, instance string, file_name string, file_modified_at timestamp, "
        "line_no long, value string, line_length long, batch_id long",
    ).withColumn("ingested_at", F.lit(dt.datetime(2024, 5, 14, 13)))
    cfg = load_config()
    built = []
    # Each parse built anew (a recipe noted earlier in the session would repeat the matcher it was built with).
    with monkeypatch.context() as patched:
        patched.setattr(recipes, "_recipes", OrderedDict())
        patched.setattr(parse_module, "template_match",
                        lambda *args: built.append(template_match(*args)) or built[-1])
        one_by_one = parse_with(bronze, cfg)
    assert built and all(column is not None for column in built)  # the local session runs the JVM matcher
    with monkeypatch.context() as patched:
        patched.setattr(recipes, "_recipes", OrderedDict())
        patched.setattr(parse_module, "template_match", lambda *args: None)
        alternation = parse_with(bronze, cfg)
    # Collected whole: a filter on the unpinned parse would be pushed through its projections and grow the plan.
    found, expected = one_by_one.collect(), alternation.collect()
    matched = sum(1 for row in found if row.template_id is not None)
    assert matched > len(golden_rows())  # the lines exercise the matcher, they are not all noise
    assertDataFrameEqual(found, expected)
