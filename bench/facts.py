"""Facts about the machine and the software a benchmark ran on, recorded next to its figures."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from importlib import metadata
from pathlib import Path

from bench.memory import descendants


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gb() -> float:
    try:
        found = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
    except OSError:
        return 0.0
    return round(int(found.group(1)) / 1024 / 1024, 1) if found else 0.0


def _java_version() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = done.stderr.strip().splitlines()
    return lines[0] if lines else "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (user, nice, system, irq, softirq), from /proc/stat."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / CLOCK_TICKS


def _cpu_ticks(pid: int) -> list[int]:
    """utime, stime, cutime and cstime of one process, in clock ticks (empty when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # Fields after the command name: state is field 3, utime..cstime are fields 14..17.
    return [int(x) for x in stat.rsplit(")", 1)[1].split()[11:15]]


def tree_cpu_s(root: int) -> float:
    """CPU seconds used by `root` and its live descendants, with those of the children they have reaped (the Spark
    JVM, its Python workers and the benchmark's subprocesses all count as this benchmark's own work)."""
    return sum(sum(_cpu_ticks(pid)) for pid in {root} | descendants(root)) / CLOCK_TICKS


def own_cpu_s(pid: int) -> float:
    """CPU seconds `pid` itself has used (user and system, not its children's); 0 when it is gone."""
    return sum(_cpu_ticks(pid)[:2]) / CLOCK_TICKS


class OtherWork:
    """Measures, between two calls of `share()`, the fraction of the machine's cores that processes outside this
    benchmark's process tree kept busy: a direct sign of a shared machine (the load average cannot tell, because
    Spark's own threads alone keep it above the core count)."""

    def __init__(self) -> None:
        self._mark = self._now()

    @staticmethod
    def _now() -> tuple[float, float, float]:
        return time.monotonic(), machine_cpu_s(), tree_cpu_s(os.getpid())

    def share(self, own_gone_cpu_s: float = 0.0) -> float:
        """Other processes' CPU / (elapsed x cores) since the previous call (or since creation), 0..1.
        `own_gone_cpu_s` is this benchmark's CPU that the tree no longer shows: a subprocess's own children that
        outlived it (the JVM of a `rebalance run` ends after its Python process, so nobody here reaps it)."""
        now = self._now()
        elapsed = now[0] - self._mark[0]
        other = (now[1] - self._mark[1]) - (now[2] - self._mark[2]) - own_gone_cpu_s
        self._mark = now
        if elapsed <= 0:
            return 0.0
        return round(min(1.0, max(0.0, other / (elapsed * (os.cpu_count() or 1)))), 3)


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (how busy the machine was, other work included)."""
    return [round(x, 2) for x in os.getloadavg()]


def machine_facts() -> dict[str, object]:
    """nproc, memory, CPU model, OS, python, java, pyspark and delta versions."""
    return {
        "nproc": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "cpu_model": _cpu_model(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": _java_version(),
        "pyspark": _version("pyspark"),
        "delta_spark": _version("delta-spark"),
    }
