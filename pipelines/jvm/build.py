"""Compile the project's Java sources into one jar, once per source version, and find it again."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyspark

SOURCES = tuple(sorted(Path(__file__).resolve().parent.glob("*.java")))
SPARK_JARS = Path(pyspark.__file__).resolve().parent / "jars"
JAVA_RELEASE = "17"  # Spark 4's lowest Java


def _tool(name: str) -> str | None:
    """`name` (javac, jar) from JAVA_HOME if set, else from PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    return shutil.which(name)


def jar_name() -> str:
    """The jar's file name: it changes with the sources and with the Spark they compile against."""
    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in SOURCES:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return f"rebalance-jvm-{digest.hexdigest()[:12]}.jar"


def project_jar(cache: Path) -> Path | None:
    """The compiled jar in `cache`, built now if missing; None (with one line on stderr) when it cannot be built."""
    target = cache / jar_name()
    if target.exists():
        return target
    javac, jar = _tool("javac"), _tool("jar")
    if javac is None or jar is None:
        print("no javac/jar on this machine: the literal prefilter uses Spark's contains (same result, slower)",
              file=sys.stderr)
        return None
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rebalance-jvm-") as work:
        classes = Path(work) / "classes"
        compiled = subprocess.run(
            [javac, "--release", JAVA_RELEASE, "-nowarn", "-cp", str(SPARK_JARS / "*"), "-d", str(classes),
             *map(str, SOURCES)],
            capture_output=True, text=True, check=False,
        )
        if compiled.returncode != 0:
            print(f"could not compile {', '.join(s.name for s in SOURCES)} (the literal prefilter uses Spark's "
                  f"contains: same result, slower):\n{compiled.stderr.strip()}", file=sys.stderr)
            return None
        partial = Path(work) / target.name
        subprocess.run([jar, "--create", "--file", str(partial), "-C", str(classes), "."], check=True)
        # The rename is atomic, so two sessions that build at once both end with a whole jar.
        staged = cache / f"{target.name}.{os.getpid()}.part"
        shutil.move(str(partial), staged)
        staged.replace(target)
    return target
