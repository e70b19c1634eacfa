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


def pss_bytes(pid: int) -> int:
    """Proportional set size of one process (its resident pages, each shared page divided among the processes that
    map it), from /proc/<pid>/smaps_rollup; its RSS where the kernel has no rollup; 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return rss_bytes(pid)


def _statm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/statm").read_text()
    except OSError:
        return None


def tree_bytes(root: int, parents: dict[int, int] | None = None) -> int:
    """Memory of `root` and every process below it, each page once: the sum of their proportional set sizes,
    leaving out a child that is still an image of its parent (`parents`: a `process_parents()` taken already).

    The JVM starts each shell command Hadoop runs (hundreds per run) with a vfork: until the command's exec the child
    shares the JVM's memory and /proc shows it with the JVM's whole size, so summing sizes counted the JVM twice
    whenever a sample met one (the likely source of the 7-8 GB peaks recorded for runs with a 4 GB heap, among others
    of 4.5-5 GB). Spark's Python workers are forks of one daemon and share its pages: proportional sizes count
    those once."""
    parents = parents if parents is not None else process_parents()
    below = descendants(root, parents)
    total = pss_bytes(root)
    for pid in below:
        mine = _statm(pid)
        if mine is None or mine == _statm(parents[pid]):
            continue
        total += pss_bytes(pid)
    return total


def process_parents() -> dict[int, int]:
    """The parent id of every live process (from /proc/*/stat)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses; the parent id follows its closing parenthesis.
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def descendants(root: int, parents: dict[int, int] | None = None) -> set[int]:
    """Every live process below `root` (from the parent ids in /proc/*/stat, or `parents` when given)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in (parents if parents is not None else process_parents()).items():
        children.setdefault(ppid, []).append(pid)
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
        # Proportional: the workers are forks of one daemon and share most of its pages.
        worker_sum = sum(pss_bytes(pid) for pid in workers) / MB
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
