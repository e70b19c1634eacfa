"""Landed files no run can read because their names are not UTF-8: the JVM gets such a name mangled and Spark's
listing leaves the entry out without a word, so the run says how many there are (`rebalance check` names them).

An available-now run says it from the landing's fingerprint (`pipelines.flow.unchanged`); a continuous run from
`NameWatch`, on the derived refresh's clock, since files keep landing while it runs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

from pipelines.settings.config import Config
from pipelines.storage import inputs

if TYPE_CHECKING:
    from pipelines.alerts.loop import AlertLoop


def landing_listable(cfg: Config) -> bool:
    """Whether the source is files Spark's text source reads from the landing (not Auto Loader, not Kafka), which
    this process can list as the stream does (`inputs.list_landing`)."""
    return cfg.source == "files" and cfg.source_format == "text"


def unreadable_line(count: int) -> str:
    """What a run says about `count` landed entries whose names Spark cannot read."""
    return (f"{inputs.INGEST_QUERY}: {count} landed file(s) or folder(s) have names that are not UTF-8, which Spark "
            "cannot read; `rebalance check` lists them (rename them)")


class NameWatch:
    """Lists the landing when called (as the alert loops call: with the time) and says `unreadable_line` when the
    number of entries with unreadable names is not zero and not the number it found the last time (0 before the
    first). A landing that cannot be listed now is passed over: the stream's own listing reports it."""

    def __init__(self, cfg: Config, on_progress: Callable[[str], None] | None) -> None:
        self.cfg, self.on_progress = cfg, on_progress
        self.seen = 0

    def __call__(self, now: dt.datetime | None = None) -> None:
        try:
            count = len(inputs.list_landing(self.cfg).unnamed)
        except OSError:
            return
        if count != self.seen and count and self.on_progress is not None:
            self.on_progress(unreadable_line(count))
        self.seen = count


def name_loop(cfg: Config, *, on_progress: Callable[[str], None] | None) -> AlertLoop | None:
    """A continuous run's `NameWatch` as a loop (not started) on the derived refresh's clock; None for a source
    this process cannot list (`landing_listable`)."""
    from pipelines.alerts.loop import AlertLoop  # here: the idle check imports this module without Spark's loops

    if not landing_listable(cfg):
        return None
    return AlertLoop(NameWatch(cfg, on_progress), every_s=cfg.derived_every_s, on_progress=on_progress,
                     name="rebalance-landing-names")
