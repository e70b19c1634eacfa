"""What the configuration says about each source: the rule of an instance folder (matched by one glob
implementation), its time zone, the date for layouts that print only the time of day, and its own line layout.

Everything that decides how a source's lines are read is resolved here, once, into `Sources`; the bronze-to-silver
build takes a `Sources` and never reads the configuration itself.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.settings.globs import glob_regex

if TYPE_CHECKING:
    from pipelines.settings.config import Config, SourceRule


@dataclass(frozen=True)
class UserLayout:
    """A source's own layout: a pattern with named groups, tried first for instance folders matching a glob."""

    instances: str
    pattern: str


@dataclass(frozen=True)
class SourceSpec:
    """One configured source rule, as the parser needs it."""

    instances: str
    tz: str = "UTC"
    date: str | None = None  # yyyy-MM-dd
    pattern: str | None = None
    ts_format: str | None = None


# Letters of a Spark datetime pattern that print a zone or an offset (outside quoted literals).
_ZONE_LETTERS = re.compile(r"[XxZOVz]")


@dataclass(frozen=True)
class Sources:
    """The resolved source rules, in configuration order (the first rule whose glob matches a folder wins)."""

    rules: tuple[SourceSpec, ...] = ()

    def zone(self, instance: Column) -> Column:
        """The IANA time zone of each line's instance folder (UTC where no rule matches)."""
        return self._first(instance, {i: F.lit(r.tz) for i, r in enumerate(self.rules)}, F.lit("UTC"))

    def day(self, instance: Column, *, file_name: Column, modified: Column, tz: Column) -> Column:
        """The date for layouts without one: from the file name (rotated logs carry it), else the configured date,
        else the file's modification date in its zone."""
        configured = self._first(instance, {i: F.lit(r.date) for i, r in enumerate(self.rules) if r.date},
                                 F.lit(None).cast("string"))
        from_name = F.nullif(F.regexp_extract(file_name, r"(\d{4}-\d\d-\d\d)", 1), F.lit(""))
        from_mtime = F.date_format(F.from_utc_timestamp(modified, tz), "yyyy-MM-dd")
        return F.coalesce(from_name, configured, from_mtime)

    @property
    def user_layouts(self) -> tuple[UserLayout, ...]:
        """The sources' own line layouts, in configuration order."""
        return tuple(UserLayout(r.instances, r.pattern) for r in self.rules if r.pattern)

    def has_own_layout(self, instance: Column) -> Column:
        """Whether some source's own pattern applies to each line's instance folder."""
        rules = [instance.rlike("^" + glob_regex(u.instances) + "$") for u in self.user_layouts]
        return F.lit(False) if not rules else functools.reduce(lambda a, b: a | b, rules)

    def formatted_time(self, instance: Column, ts_text: Column, *, tz: Column) -> Column | None:
        """Each line's time read with its source's `ts_format` (UTC; a format without an offset is wall-clock time
        in the source's zone), null where the source sets none or the text does not fit; None if no rule sets one."""
        times: dict[int, Column] = {}
        for i, rule in enumerate(self.rules):
            if rule.ts_format:
                read = F.try_to_timestamp(ts_text, F.lit(rule.ts_format))
                zoned = _ZONE_LETTERS.search(re.sub(r"'[^']*'", "", rule.ts_format))
                times[i] = read if zoned else F.to_utc_timestamp(read, tz)
        return self._first(instance, times, F.lit(None).cast("timestamp")) if times else None

    def _first(self, instance: Column, values: dict[int, Column], default: Column) -> Column:
        # The first matching rule decides, even when it sets no value of its own (then the default applies).
        expr = None
        for i, rule in enumerate(self.rules):
            cond = instance.rlike("^" + glob_regex(rule.instances) + "$")
            value = values.get(i, default)
            expr = F.when(cond, value) if expr is None else expr.when(cond, value)
        return default if expr is None else expr.otherwise(default)


def resolve_sources(cfg: Config) -> Sources:
    """The configuration's source rules (`sources:`) as the parser needs them."""
    return sources_from(cfg.sources)


def sources_from(rules: Iterable[SourceRule]) -> Sources:
    """`Sources` from configured rules, in order."""
    return Sources(tuple(
        SourceSpec(r.instances, r.tz, r.date.isoformat() if r.date else None, r.pattern, r.ts_format) for r in rules
    ))
