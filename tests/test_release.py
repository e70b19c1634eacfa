"""Which release and line-id scheme a lakehouse's checkpoints record (no Spark needed)."""

from __future__ import annotations

import json

import pytest

from pipelines.state.errors import PipelineStateError
from pipelines.state.release import CHECKPOINT_LAYOUT, MARKER, check_release
from tests.conftest import make_config


def test_a_new_lakehouse_takes_content_ids_and_keeps_them(tmp_path):
    cfg = make_config(tmp_path)
    assert check_release(cfg) == "content"
    marker = json.loads((cfg.checkpoint_root / MARKER).read_text())
    assert marker["line_ids"] == "content" and marker["checkpoint_layout"] == CHECKPOINT_LAYOUT
    assert check_release(cfg) == "content"


def test_a_lakehouse_begun_by_an_earlier_release_keeps_position_ids(tmp_path):
    # 0.1.0 wrote no marker: its checkpoints are recognised by the batches in the streams' offset logs.
    old = make_config(tmp_path / "no-marker")
    (old.checkpoint_root / "ingest" / "offsets").mkdir(parents=True)
    (old.checkpoint_root / "ingest" / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0}\n')
    assert check_release(old) == "position"
    # An offset log holding only what a run killed before its first batch left wrote nothing: a new lakehouse.
    killed = make_config(tmp_path / "killed")
    (killed.checkpoint_root / "ingest" / "offsets").mkdir(parents=True)
    (killed.checkpoint_root / "ingest" / "offsets" / ".0.5b0c3f4e-2a61-4d0e-9a57-0c1d6e1f2a3b.tmp").write_text("v1\n")
    assert check_release(killed) == "content"
    assert json.loads((old.checkpoint_root / MARKER).read_text())["line_ids"] == "position"
    # A marker written before it recorded the scheme.
    marked = make_config(tmp_path / "marker")
    marked.checkpoint_root.mkdir(parents=True)
    (marked.checkpoint_root / MARKER).write_text('{"release": "0.1.0", "checkpoint_layout": 1}')
    assert check_release(marked) == "position"
    # A newer layout still stops with a message, whatever the scheme.
    (marked.checkpoint_root / MARKER).write_text('{"release": "9.0.0", "checkpoint_layout": 99, "line_ids": "content"}')
    with pytest.raises(PipelineStateError, match=r"release 9\.0\.0"):
        check_release(marked)
