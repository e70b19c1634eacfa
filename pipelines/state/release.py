"""Which release wrote a lakehouse's checkpoints, so that an incompatible one stops with a message instead of
misreading them.

Streaming checkpoints hold state whose layout only the code that wrote it knows (the foreachBatch writers' batch
ids, the shuffle partition count, the sources' offsets). `CHECKPOINT_LAYOUT` is raised whenever a release changes
that layout; a release refuses checkpoints of a newer layout, and of an older layout it cannot continue.

The marker also records the lakehouse's line-id scheme (`pipelines.bronze.lines.LineIds`). Line ids flow into every
event, rebalance, state, session, incident and alert id, and an alert's id is the idempotency key of its webhook
deliveries: rewriting the ids of a lakehouse in place would deliver its alerts again. So a lakehouse keeps the
scheme it was begun with: one begun before the marker said (release 0.1.0, whose marker has no `line_ids`, or no
marker at all) keeps position-derived ids, and a new one (or one rebuilt with `--rebuild`) takes content-derived
ids.
"""

from __future__ import annotations

import json
import os
from importlib import metadata

from pipelines.bronze.lines import LineIds
from pipelines.settings.config import Config
from pipelines.state.checkpoints import written_batches
from pipelines.state.errors import PipelineStateError

CHECKPOINT_LAYOUT = 1
# Checkpoint layouts this release continues from (0.1.0 wrote layout 1 without a marker file).
CONTINUES_FROM = frozenset({1})
MARKER = "release.json"


def this_release() -> str:
    """The installed package version ('unknown' when run from a source tree that is not installed)."""
    try:
        return metadata.version("kafka-rebalance-analytics")
    except metadata.PackageNotFoundError:
        return "unknown"


def check_release(cfg: Config) -> LineIds:
    """Stop, naming both releases, when the checkpoints were written by a release whose layout this one cannot
    continue; record this release in the checkpoint root otherwise, and return the lakehouse's line-id scheme."""
    line_ids = refuse_incompatible(cfg)
    root = cfg.checkpoint_root
    root.mkdir(parents=True, exist_ok=True)
    marker, partial = root / MARKER, root / f"{MARKER}.{os.getpid()}.tmp"
    # Whole, then renamed: a run stopped mid-write must not leave a marker every later run fails to read.
    partial.write_text(json.dumps({"release": this_release(), "checkpoint_layout": CHECKPOINT_LAYOUT,
                                   "line_ids": line_ids}) + "\n", encoding="utf-8")
    partial.replace(marker)
    return line_ids


def refuse_incompatible(cfg: Config) -> LineIds:
    """`check_release` without recording anything: stop when this release cannot continue the checkpoints; return
    the lakehouse's line-id scheme."""
    root = cfg.checkpoint_root
    marker = root / MARKER
    line_ids: LineIds
    if marker.is_file():
        found = json.loads(marker.read_text(encoding="utf-8"))
        layout, release = found.get("checkpoint_layout"), found.get("release", "unknown")
        line_ids = "content" if found.get("line_ids") == "content" else "position"
    elif any(written_batches(root / q) for q in ("ingest", "reconstruct")):
        layout, release, line_ids = 1, "0.1.0", "position"
    else:
        layout, release, line_ids = CHECKPOINT_LAYOUT, this_release(), "content"
    if layout not in CONTINUES_FROM and layout != CHECKPOINT_LAYOUT:
        newer = isinstance(layout, int) and layout > CHECKPOINT_LAYOUT
        raise PipelineStateError(
            f"the checkpoints under {root} were written by release {release} (checkpoint layout {layout}); this "
            f"release ({this_release()}, layout {CHECKPOINT_LAYOUT}) "
            + ("is older and cannot read them; upgrade" if newer else "cannot continue them")
            + "; or run `rebalance run --rebuild` to rebuild every table from the landing files"
        )
    return line_ids
