"""Peak resident memory of the driver (this Python process plus its Spark JVM) per stage, sampled in a thread."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MB = 1024 * 1024


def rss_bytes(pid: int) -> int:
    """Resident set size of one process from /proc (0 when it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return 0


def descendants(root: int) -> set[int]:
    """Every live process below `root` (from the parent ids in /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses; the parent id follows its closing parenthesis.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def python_workers(jvm: int) -> set[int]:
    """Spark's Python worker processes below the JVM (the daemon and its forks).

    Other children, such as the short-lived forks Hadoop makes to run shell commands, are left out: for a moment
    after fork they show the JVM's whole RSS.
    """
    found = set()
    for pid in descendants(jvm):
        try:
            if b"pyspark" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
        except OSError:
            continue
    return found


@dataclass
class Peak:
    """Peak memory of one stage, in MB: the driver (python + jvm, sampled together) and Spark's Python workers."""

    driver_mb: float = 0.0
    python_mb: float = 0.0
    jvm_mb: float = 0.0
    workers_mb: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """The peaks rounded to 0.1 MB."""
        return {k: round(v, 1) for k, v in vars(self).items()}


class MemorySampler:
    """Samples RSS every `interval` seconds; `stage(name)` records the peaks seen while its block runs."""

    def __init__(self, interval: float = 0.2, workers_every: int = 5) -> None:
        self.interval = interval
        self.workers_every = workers_every
        self.jvm_pid: int | None = None
        self.peaks: dict[str, Peak] = {}
        self._current = Peak()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-memory", daemon=True)

    @contextmanager
    def running(self) -> Iterator[MemorySampler]:
        """Sample in a background thread for the duration of the block."""
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()

    def _loop(self) -> None:
        tick = 0
        workers: set[int] = set()
        while not self._stop.is_set():
            # The process scan is the costly part; Spark's Python workers live long, so a slower scan finds them.
            if self.jvm_pid is not None and tick % self.workers_every == 0:
                workers = python_workers(self.jvm_pid)
            self.sample(workers)
            tick += 1
            self._stop.wait(self.interval)

    def sample(self, workers: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        """Take one sample now and raise the current stage's peaks."""
        python = rss_bytes(os.getpid()) / MB
        jvm = rss_bytes(self.jvm_pid) / MB if self.jvm_pid else 0.0
        worker_sum = sum(rss_bytes(pid) for pid in workers) / MB
        with self._lock:
            peak = self._current
            peak.driver_mb = max(peak.driver_mb, python + jvm)
            peak.python_mb = max(peak.python_mb, python)
            peak.jvm_mb = max(peak.jvm_mb, jvm)
            peak.workers_mb = max(peak.workers_mb, worker_sum)

    @contextmanager
    def stage(self, name: str) -> Iterator[Peak]:
        """Track peaks for the duration of the block under `name` (the yielded Peak fills in as it runs)."""
        with self._lock:
            self._current = Peak()
            peak = self._current
        self.sample()
        try:
            yield peak
        finally:
            self.sample()
            with self._lock:
                self.peaks[name] = peak
                self._current = Peak()
