"""A Spark Connect session (`--remote sc://host:port`, or SPARK_REMOTE): a Spark Connect server, Databricks Connect,
or Databricks serverless run the pipeline; this process holds only the client."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pyspark
from pyspark.sql import SparkSession

from pipelines.settings.config import ConfigError

REMOTE_ENV = "SPARK_REMOTE"
REACH_TIMEOUT_S = 10
# The client of the installed pyspark's own version (a Connect client and the server it talks to share a line).
CONNECT_EXTRAS_HINT = (f"pip install 'pyspark[connect]=={pyspark.__version__}' "
                       "(or pip install -e '.[dev]' in a checkout)")


class RemoteSessionError(RuntimeError):
    """A Spark Connect session could not be opened; the message says what to do."""


def is_connect(spark: SparkSession) -> bool:
    """True for a Spark Connect client session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _check_client() -> None:
    try:
        # Each `require_minimum_*` check of the installed pyspark's Connect client (grpcio, pandas, pyarrow, ...; the
        # list and the helper that calls them both changed between Spark lines, so the checks are found by name).
        from pyspark.sql.connect import utils

        for name in sorted(dir(utils)):
            if name.startswith("require_minimum_"):
                getattr(utils, name)()
    except ImportError as exc:
        raise RemoteSessionError(
            f"--remote needs the Spark Connect client packages ({exc}); {CONNECT_EXTRAS_HINT}") from None


def _check_reachable(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme != "sc" or not parts.hostname:
        raise ConfigError(f"--remote {url!r} is not a Spark Connect URL; use sc://host:port (for example "
                          "sc://localhost:15002)")
    port = parts.port or 15002
    try:
        with socket.create_connection((parts.hostname, port), timeout=REACH_TIMEOUT_S):
            pass
    except OSError as exc:
        raise RemoteSessionError(
            f"cannot reach the Spark Connect server at {parts.hostname}:{port} ({exc.strerror or exc}); "
            f"start it, or check --remote / {REMOTE_ENV}") from None



def connect_session(url: str) -> SparkSession:
    """A Spark Connect session to `url`, with the session time zone UTC (every timestamp of the tables is UTC).

    Raises RemoteSessionError, with the fix, when the client packages are missing or the server cannot be reached,
    and ConfigError when `url` is not an sc:// URL."""
    _check_client()
    _check_reachable(url)
    spark = SparkSession.builder.remote(url).getOrCreate()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark
