"""Whether the landing holds a file the ingest stream has not read, told without starting the stream.

A scheduled run with nothing new otherwise spends about 2 s of a new JVM creating and starting the file stream to
find that out (issue #52: a re-run with nothing new is measured against a count of the same files). Before each
available-now ingest the landing's files are listed; once the stream has ended, having read every file there was
when it started, that listing is kept with where the ingest checkpoint stands (`pipelines.state.seen`). The next run
leaves the stream unstarted when the landing lists exactly those files and the checkpoint stands where it was left:
no batch planned and not committed, no batch removed or added since. Any doubt (no record, another release, another
landing, a file added, removed or renamed) starts the stream as before. Local text landings only: Auto Loader and
Kafka keep their own state.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipelines.settings.config import Config
from pipelines.state.checkpoints import written_batches
from pipelines.state.seen import Seen, last_seen, remember, settings_key
from pipelines.storage import inputs
from pipelines.storage.inputs import INGEST_QUERY

STEP = "ingest"


@dataclass(frozen=True)
class Listing:
    """The files the landing stream would read: how many, and a digest of their paths below the landing."""

    files: int
    digest: str


def landing_listing(cfg: Config) -> Listing:
    """The landing's files as the stream reads them: at any depth, names starting with `.` or `_` (files being
    copied in) left out, with every folder below them."""
    names: list[str] = []
    for folder, dirs, files in os.walk(cfg.landing):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        relative = Path(folder).relative_to(cfg.landing).as_posix()
        names += [f"{relative}/{f}" for f in files if not f.startswith((".", "_"))]
    names.sort()
    return Listing(len(names), hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest())


def applies(cfg: Config) -> bool:
    """Whether the ingest reads a local landing with Spark's text file source (the only one this can vouch for)."""
    return cfg.source == "files" and cfg.source_format == "text"


def _key(cfg: Config) -> str:
    return settings_key(landing=str(cfg.landing.resolve()), checkpoint=str(inputs.checkpoint_dir(cfg, INGEST_QUERY)))


def _checkpoint_state(cfg: Config) -> dict[str, int]:
    """The last batch of the ingest checkpoint's offset log and of its commit log (-1: none)."""
    checkpoint = inputs.checkpoint_dir(cfg, INGEST_QUERY)
    commits = checkpoint / "commits"
    committed = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.is_dir() else []
    return {"offsets": max(written_batches(checkpoint), default=-1), "commits": max(committed, default=-1)}


def nothing_new(cfg: Config, listing: Listing) -> bool:
    """True when the last available-now ingest ended having read exactly the files `listing` names, and the ingest
    checkpoint has not moved since."""
    if not applies(cfg):
        return False
    seen = last_seen(cfg, STEP)
    state = _checkpoint_state(cfg)
    return (seen is not None and seen.key == _key(cfg) and seen.versions == state
            and state["offsets"] == state["commits"]
            and seen.detail == {"files": listing.files, "digest": listing.digest})


def remember_listing(cfg: Config, listing: Listing) -> None:
    """Keep `listing` (taken before the stream started) as what the ingest stream has read, with the checkpoint's
    state now that it has ended."""
    if applies(cfg):
        remember(cfg, STEP, Seen(_key(cfg), _checkpoint_state(cfg), {"files": listing.files,
                                                                      "digest": listing.digest}))


class LandingCheck:
    """One available-now ingest's view of the landing: listed before the stream would start (a classic session's
    driver sees the landing and checkpoint the stream uses; through Spark Connect the server may not share them)."""

    def __init__(self, cfg: Config, *, classic: bool) -> None:
        self.cfg = cfg
        self.listing = landing_listing(cfg) if classic and applies(cfg) else None

    def unchanged(self, on_progress: Callable[[str], None] | None = None) -> bool:
        """True (and said to `on_progress`) when the stream need not start: the last run read these very files."""
        if self.listing is None or not nothing_new(self.cfg, self.listing):
            return False
        if on_progress is not None:
            on_progress(f"ingest: the landing holds the same {self.listing.files:,} files the last run read; "
                        "the stream was not started")
        return True

    def all_read(self) -> None:
        """The stream ended having read every file of the listing: keep it for the next run."""
        if self.listing is not None:
            remember_listing(self.cfg, self.listing)
