"""Facts about the machine and the software a benchmark ran on, recorded next to its figures."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path


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
