"""`make test-compat`: the ends of the supported Spark range, each in its own venv, through a compact set of tests
that covers the whole flow (ingest, reconstruct, quality, alerts, the Connect path, the Kafka source, an upgrade).

    python -m tests.compat                 # both lines
    python -m tests.compat --line 4.2      # one

Each venv (.venv-compat/<line>) gets this checkout in editable mode and the dependencies of pyproject.toml with the
line's pyspark and delta-spark in place of the default's; the Maven jars follow the installed versions
(pipelines/session/versions.py) and share the default's cache.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / ".venv-compat"
# The lowest supported Spark (Databricks Runtime 17.3 LTS's line) and the newest with a Delta build on Maven Central
# (delta-spark 4.4.0's Python package accepts pyspark<=4.2.0; Spark 4.3.0 has no Delta build).
LINES = {"4.0": ("4.0.1", "4.0.1"), "4.2": ("4.2.0", "4.4.0")}
SELECTION = [
    "tests/test_versions.py",
    "tests/test_pipeline.py::test_two_drops_then_a_rerun",
    "tests/test_quality.py::test_the_simulated_estate_passes_every_rule",
    "tests/test_alerts.py::test_planted_storm_alerts_once_however_often_the_pipeline_runs",
    "tests/test_connect.py::test_every_stream_and_step_wrote_through_spark_connect",
    "tests/test_connect.py::test_gold_tables_are_the_same_through_spark_connect",
    "tests/test_kafka_source.py::test_every_envelope_gives_the_gold_tables_of_the_files",
    "tests/test_survival.py::test_todays_code_continues_a_previous_release_lakehouse",
]


def requirements(spark: str, delta: str) -> list[str]:
    """pyproject.toml's dependencies and dev extra, with this line's pyspark and delta-spark."""
    text = (ROOT / "pyproject.toml").read_text()
    block = text[text.index("dependencies = [") : text.index("[project.scripts]")]
    found = re.findall(r'^\s*"([^"]+)",', block, re.M)
    swapped = []
    for req in found:
        req = re.sub(r"^pyspark(\[connect\])?==[\w.]+", lambda m: f"pyspark{m.group(1) or ''}=={spark}", req)
        swapped.append(re.sub(r"^delta-spark==[\w.]+", f"delta-spark=={delta}", req))
    return sorted(set(swapped))


def install(line: str) -> Path:
    """The line's venv, created and filled once (again when pyproject.toml is newer than it)."""
    spark, delta = LINES[line]
    venv = VENVS / line
    python = venv / "bin" / "python"
    stamp = venv / ".installed-stamp"
    if stamp.exists() and stamp.stat().st_mtime >= (ROOT / "pyproject.toml").stat().st_mtime:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *requirements(spark, delta)], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
    stamp.touch()
    return python


def run(line: str, pytest_args: list[str]) -> tuple[int, float, str]:
    """Install the line's venv if needed, run the selection in it; (exit code, seconds of the tests, versions)."""
    python = install(line)
    probe = "import pyspark, importlib.metadata as m; print(pyspark.__version__, m.version('delta-spark'))"
    found = subprocess.run([str(python), "-c", probe], check=True, capture_output=True, text=True).stdout.split()
    started = time.monotonic()
    code = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", *SELECTION, *pytest_args],
                          cwd=ROOT).returncode
    return code, time.monotonic() - started, f"pyspark {found[0]}, delta-spark {found[1]}"


def main(argv: list[str] | None = None) -> int:
    """Run the compat tier on the chosen lines; one summary line per line, non-zero if any failed."""
    parser = argparse.ArgumentParser(prog="python -m tests.compat", description=__doc__.splitlines()[0])
    parser.add_argument("--line", choices=sorted(LINES), action="append", help="a Spark line (default: all)")
    args, pytest_args = parser.parse_known_args(argv)
    results = [(line, *run(line, pytest_args)) for line in args.line or sorted(LINES)]
    for line, code, seconds, found in results:
        print(f"compat {line}: {found}: {'passed' if code == 0 else f'FAILED (exit {code})'} in {seconds:.0f} s")
    return max(code for _, code, _, _ in results)


if __name__ == "__main__":
    sys.exit(main())
