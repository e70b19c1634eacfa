"""Whether an available-now stream has anything to read, told without starting it.

Creating and starting a stream in a new JVM costs a second or two before it finds that its source holds nothing new
(the file source lists the landing, the Delta source reads silver_accounting's log): a scheduled run with nothing new
paid that for both streams (issue #52 measures such a re-run against a count of the files). So before an
available-now stream starts, its source is described by a fingerprint (the landing's files; silver_accounting's
version), and once the stream has ended, having read everything there was when it started, the fingerprint is kept
with where the query's checkpoint stands (`pipelines.state.seen`). The next run leaves the stream unstarted when
the source has the same fingerprint and the checkpoint stands where it was left: no batch planned and not committed,
none removed or added since. Any doubt (no record, another release, landing or table, a file added, removed or
renamed, a commit to the table) starts the stream as before.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import Any

from pipelines.flow.landing_names import landing_listable, unreadable_line
from pipelines.flow.streams import RECONSTRUCT_QUERY
from pipelines.settings.config import Config
from pipelines.state.checkpoints import committed_batches, written_batches
from pipelines.state.seen import Seen, last_seen, remember, settings_key
from pipelines.storage import inputs, lake

Fingerprint = dict[str, Any]
# What each stream reads, as its skip says it.
_SOURCES = {inputs.INGEST_QUERY: "the landing", RECONSTRUCT_QUERY: "silver_accounting"}


def landing_fingerprint(cfg: Config) -> Fingerprint | None:
    """The landing's files as the landing stream reads them (`inputs.landing_files`): each one's path below the
    landing, size and modification time, as a count and a digest. None for a source this cannot vouch for (Auto
    Loader and Kafka keep their own state)."""
    if not landing_listable(cfg):
        return None
    landing = cfg.landing.resolve()
    entries: list[tuple[str, int, int]] = []
    try:
        listing = inputs.list_landing(cfg)
        for path in listing.files:
            stat = os.stat(path)
            entries.append((path.relative_to(landing).as_posix(), stat.st_size, stat.st_mtime_ns))
    except OSError:  # a folder that cannot be listed, a file removed while listed: the stream starts and tells
        return None
    digest = hashlib.sha256(json.dumps(entries).encode("utf-8")).hexdigest()
    return {"landing": str(landing), "files": len(entries), "digest": digest, "unnamed": len(listing.unnamed)}


def table_fingerprint(cfg: Config, name: str) -> Fingerprint | None:
    """The table's latest Delta version, read from its log folder; None for a catalog table (its version costs a
    query, which is what this saves)."""
    version = lake.local_version(cfg, name)
    return None if version is None else {"table": lake.table(cfg, name).path, "version": version}


def _checkpoint_state(cfg: Config, query: str) -> dict[str, int]:
    """The last batch of the query checkpoint's offset log and of its commit log (-1: none)."""
    checkpoint = inputs.checkpoint_dir(cfg, query)
    return {"offsets": max(written_batches(checkpoint), default=-1),
            "commits": max(committed_batches(checkpoint), default=-1)}


class StreamCheck:
    """One available-now stream's source, described before the stream would start (pass no fingerprint where the
    driver cannot see what the stream reads: through Spark Connect the server may not share its files)."""

    def __init__(self, cfg: Config, query: str, fingerprint: Fingerprint | None) -> None:
        self.cfg, self.query, self.fingerprint = cfg, query, fingerprint
        self.step = f"stream-{query}"
        self.key = settings_key(query=query, checkpoint=str(inputs.checkpoint_dir(cfg, query)))

    def unchanged(self, on_progress: Callable[[str], None] | None = None) -> bool:
        """True (and said to `on_progress`) when the stream need not start: it last ended having read a source with
        this very fingerprint, and its checkpoint has not moved since."""
        if self.fingerprint is None:
            return False
        if on_progress is not None and self.fingerprint.get("unnamed"):
            on_progress(unreadable_line(self.fingerprint["unnamed"]))
        seen = last_seen(self.cfg, self.step)
        state = _checkpoint_state(self.cfg, self.query)
        if seen is None or seen.key != self.key or seen.versions != state or state["offsets"] != state["commits"] \
                or seen.detail != self.fingerprint:
            return False
        if on_progress is not None:
            on_progress(f"{self.query}: {_SOURCES.get(self.query, 'its source')} holds nothing the last run did not "
                        "read; the stream was not started")
        return True

    def moved_without_change(self, name: str, fingerprint: Fingerprint | None) -> None:
        """Table `name`, the source, now has `fingerprint`: when the stream's record says it had read all of the
        source as this check saw it, and every commit since is a compaction or a vacuum (which change no row, and
        which the stream skips), the record moves along, so the next run need not start the stream for them. A
        commit of another writer (two runs at once) leaves the record where it was."""
        seen = last_seen(self.cfg, self.step)
        if fingerprint is None or self.fingerprint is None or seen is None or seen.key != self.key \
                or seen.detail != self.fingerprint:
            return
        if lake.local_commits_change_no_row(self.cfg, name, int(self.fingerprint["version"]),
                                            int(fingerprint["version"])):
            remember(self.cfg, self.step, Seen(seen.key, seen.versions, fingerprint))

    def all_read(self) -> None:
        """The stream ended having read everything its source held when it started: keep the fingerprint taken
        before, with the checkpoint as the stream left it."""
        if self.fingerprint is not None:
            remember(self.cfg, self.step, Seen(self.key, _checkpoint_state(self.cfg, self.query), self.fingerprint))
