"""The Spark lines this package supports, and the Maven jars (Delta's, the Kafka source's) that go with each one.

The default is Spark 4.1 (4.1.4), the Spark of Databricks Runtime 18 LTS, with the Spark-4.1 build of Delta 4.4.0
(`delta-spark_4.1_2.13`). By its features Runtime 18 matches the Delta 4.3 line (the last whose default build is
Spark 4.1), but no Delta before 4.4 runs on the newest 4.1 patch: the Spark-4.1 jar of Delta 4.1.0 calls
`IgnoreCachedData`, a class Spark removed in 4.1.2 (`ALTER TABLE ... ADD COLUMNS` fails with NoClassDefFoundError),
and the Python packages of Delta 4.2.0 and 4.3.1 require pyspark<=4.1.1. Delta 4.4.0's package accepts pyspark
4.0.1-4.2.0 and its Spark-4.1 jar does not use that class.

`make test-compat` runs the lowest supported line (Spark 4.0.1, Delta 4.0.1: Databricks Runtime 17.3 LTS) and the
newest with a Delta build (Spark 4.2.0, Delta 4.4.0). Spark 4.3 has no Delta build on Maven Central yet, so it is
refused like any other version outside the range.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import pyspark

# The range pyproject.toml states. Lower bound included, upper bound excluded; compared on (major, minor, patch).
LOWEST = (4, 0, 1)
BEYOND = (4, 3, 0)
SUPPORTED_RANGE = ">=4.0.1,<4.3"

Artifact = tuple[str, str, str]

# Per Spark line: the Kafka source's runtime dependencies outside Spark itself (kafka-clients, commons-pool2, from
# the Spark parent pom of that line), and the spark-sql-kafka / spark-token-provider versions to fall back to when
# Maven Central lacks the exact patch (it has no spark-sql-kafka 4.1.4, and spark-token-provider only 4.0.0 of the
# 4.0 line and 4.1.1 of the 4.1 line).
KAFKA_LINES: dict[tuple[int, int], dict[str, str]] = {
    (4, 0): {"sql": "4.0.1", "token": "4.0.0", "kafka-clients": "3.9.1", "commons-pool2": "2.12.0"},
    (4, 1): {"sql": "4.1.3", "token": "4.1.1", "kafka-clients": "3.9.1", "commons-pool2": "2.12.1"},
    (4, 2): {"sql": "4.2.0", "token": "4.2.0", "kafka-clients": "3.9.2", "commons-pool2": "2.13.1"},
}


class UnsupportedSparkError(RuntimeError):
    """The installed pyspark (or delta-spark) is outside the range this package is tested on."""


def parse(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a version string such as 4.1.4, 4.2.0.dev1 or 4.0.1+local."""
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def spark_version() -> str:
    """The installed pyspark's version."""
    return str(pyspark.__version__)


def delta_version() -> str:
    """The installed delta-spark's version (the Python package; its jars are fetched to match)."""
    try:
        return version("delta-spark")
    except PackageNotFoundError as exc:
        raise UnsupportedSparkError("delta-spark is not installed: pip install -e . installs the one that matches "
                                    f"pyspark {spark_version()}") from exc


def check_spark(found: str | None = None) -> None:
    """Refuse a pyspark outside SUPPORTED_RANGE with one line that names the range and the version found."""
    found = found or spark_version()
    if not LOWEST <= parse(found) < BEYOND:
        raise UnsupportedSparkError(f"pyspark {found} is not supported: this package needs pyspark{SUPPORTED_RANGE} "
                                    "(4.1.x is the default; pip install -e . installs it)")


def delta_artifacts(spark: str | None = None, delta: str | None = None) -> tuple[Artifact, ...]:
    """Delta's jars for the installed Spark and delta-spark: the Spark-suffixed build from Delta 4.1 on (plus the
    Delta Kernel jars it needs from 4.2 on), the unsuffixed one of Delta 4.0 with its ANTLR runtime before."""
    spark, delta = spark or spark_version(), delta or delta_version()
    major, minor, _ = parse(spark)
    dv = parse(delta)
    if dv < (4, 1, 0):
        return (("io.delta", "delta-spark_2.13", delta), ("io.delta", "delta-storage", delta),
                ("org.antlr", "antlr4-runtime", "4.13.1"))
    jars: tuple[Artifact, ...] = (("io.delta", f"delta-spark_{major}.{minor}_2.13", delta),
                                  ("io.delta", "delta-storage", delta))
    if dv >= (4, 2, 0):
        jars += tuple(("io.delta", f"delta-kernel-{part}", delta) for part in ("api", "defaults", "unitycatalog"))
    return jars


def kafka_artifacts(spark: str | None = None) -> tuple[Artifact, ...]:
    """Spark's Kafka source and its runtime dependencies outside Spark, for the installed Spark's line."""
    spark = spark or spark_version()
    major, minor, _ = parse(spark)
    line = KAFKA_LINES[(major, minor)]
    return (
        ("org.apache.spark", "spark-sql-kafka-0-10_2.13", _first(spark, line["sql"])),
        ("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", _first(spark, line["token"])),
        ("org.apache.kafka", "kafka-clients", line["kafka-clients"]),
        ("org.apache.commons", "commons-pool2", line["commons-pool2"]),
    )


def _first(exact: str, fallback: str) -> str:
    """The exact version, then the line's fallback (the `a|b` form maven_jars tries in order)."""
    return exact if exact == fallback else f"{exact}|{fallback}"
