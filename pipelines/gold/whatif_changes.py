"""The settings the what-if weighs: how a `--set setting=value` is read, the values the broker accepts, and the
values it advises from an observed pause or poll gap."""

from __future__ import annotations

import math
from dataclasses import dataclass

# The broker's default bounds on a session timeout (group.min/max.session.timeout.ms): the standard changes stay
# within them; a value given by hand is weighed as given (a broker may be configured otherwise).
SESSION_BOUNDS_MS = (6000, 1800000)
STATIC, COOPERATIVE = "static", "cooperative-sticky"
SUPPORTED = {
    "session.timeout.ms": "milliseconds (a broker accepts 6000-1800000 by default)",
    "max.poll.interval.ms": "milliseconds",
    "group.instance.id": f"'{STATIC}' (every member gets a stable instance id)",
    "partition.assignment.strategy": f"'{COOPERATIVE}'",
}


@dataclass(frozen=True)
class Change:
    """One setting and the value it would have had."""

    setting: str
    value: str

    @property
    def label(self) -> str:
        return f"{self.setting}={self.value}"

    @property
    def ms(self) -> int:
        return int(self.value)


def parse_change(spec: str) -> Change:
    """A `setting=value` of the what-if's `--set` (ValueError naming the supported settings otherwise)."""
    setting, sep, value = (part.strip() for part in spec.partition("="))
    supported = "; ".join(f"{k} ({v})" for k, v in SUPPORTED.items())
    if not sep or setting not in SUPPORTED:
        raise ValueError(f"cannot weigh {spec!r}: give setting=value, one of: {supported}")
    if setting.endswith(".ms"):
        if not value.isdigit() or int(value) <= 0:
            raise ValueError(f"{setting} takes a positive number of milliseconds, not {value!r}")
    elif setting == "group.instance.id" and value != STATIC:
        raise ValueError(f"group.instance.id takes '{STATIC}' (each member keeps its own id), not {value!r}")
    elif setting == "partition.assignment.strategy" and value != COOPERATIVE:
        raise ValueError(f"partition.assignment.strategy takes '{COOPERATIVE}', not {value!r}")
    return Change(setting, value)


def advised_session_ms(silence_ms: float) -> int:
    """The session timeout advised for a member silent `silence_ms` (a pause plus a heartbeat interval): a fifth
    more, rounded up to 5 s, within the broker's default bounds."""
    return min(max(_round_up(silence_ms * 1.2, 5000), SESSION_BOUNDS_MS[0]), SESSION_BOUNDS_MS[1])


def advised_poll_interval_ms(gap_ms: float) -> int:
    """The max.poll.interval.ms advised for a consumer that went `gap_ms` without polling: a fifth more, rounded up
    to a minute."""
    return _round_up(gap_ms * 1.2, 60000)


def _round_up(value: float, step: int) -> int:
    return int(math.ceil(value / step) * step)
