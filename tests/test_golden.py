"""Golden lines: every template row rendered in a real layout (tests/data/golden_lines.tsv) becomes the typed event
the row promises, with every field the line carries. One whole-frame comparison for all rows.

The data file has one line per row of pipelines/silver/wordings/*.yml: `template_id`, the line (`\\n`, `\\t` and
`\\\\` escaped), the expected `event_type`, and a JSON object with every non-null typed column of the result.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.settings.config import load_config
from pipelines.silver.templates import load_templates
from tests.conftest import parse_with

GOLDEN = Path(__file__).parent / "data" / "golden_lines.tsv"
FIELDS = [
    "event_ts", "level", "group_id", "member_id", "old_member_id", "group_instance_id", "client_id", "client_host",
    "generation", "group_epoch", "member_epoch", "previous_member_epoch", "target_epoch", "offsets_partition",
    "member_count", "static_count", "state", "previous_state", "protocol", "group_protocol", "coordinator", "error",
    "epoch", "reason", "client_reason", "partitions", "revoked_partitions", "topics", "members", "broker_id",
]
COLUMNS = ["line_no", "template_id", "event_type", "source_kind", "disposition", *FIELDS]


def _unescape(text: str) -> str:
    out, chars = [], iter(text)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars)
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
        else:
            out.append(ch)
    return "".join(out)


def golden_rows() -> list[tuple[str, str, str, dict]]:
    """(template_id, line, event_type, expected fields) of every golden line."""
    rows = []
    for raw in GOLDEN.read_text(encoding="utf-8").splitlines()[1:]:
        template_id, line, event_type, expected = raw.split("\t")
        rows.append((template_id, _unescape(line), event_type, json.loads(expected)))
    return rows


def test_every_template_row_has_a_golden_line():
    ids = [t.template.id for t in load_templates()]
    golden = {row[0] for row in golden_rows()}
    assert [i for i in ids if i not in golden] == []
    assert sorted(golden - set(ids)) == []


def test_golden_lines_become_their_typed_events(spark):
    kinds = {t.template.id: t.template.kind for t in load_templates()}
    rows = golden_rows()
    folders = {
        "broker": ("broker-1", "server.log.2024-05-14-10"), "client": ("orders-svc-0", "consumer.log.2024-05-14"),
    }
    bronze = spark.createDataFrame(
        [
            (f"g{i}", f"file:/landing/{folders[kinds[tid]][0]}/{folders[kinds[tid]][1]}", *folders[kinds[tid]],
             dt.datetime(2024, 5, 14, 12), i, line, len(line), 0)
            for i, (tid, line, _, _) in enumerate(rows, start=1)
        ],
        "line_id string, source_file string, instance string, file_name string, file_modified_at timestamp, "
        "line_no long, value string, line_length long, batch_id long",
    ).withColumn("ingested_at", F.current_timestamp())
    actual = parse_with(bronze, load_config()).select(COLUMNS)

    def expected_row(i: int, tid: str, event_type: str, fields: dict) -> tuple:
        values = dict(fields)
        values["event_ts"] = dt.datetime.fromisoformat(values["event_ts"])
        disposition = "noise" if event_type == "noise" else "event"
        return (i, tid, event_type, kinds[tid], disposition, *[values.get(f) for f in FIELDS])

    expected = spark.createDataFrame(
        [expected_row(i, tid, ev, fields) for i, (tid, _, ev, fields) in enumerate(rows, start=1)], actual.schema
    )
    assertDataFrameEqual(actual, expected)
