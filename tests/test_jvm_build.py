"""The project's jar: compiled once per source version into the cache, and a clear fallback without a JDK."""

from __future__ import annotations

import zipfile

from pipelines.jvm import build


def test_the_jar_is_compiled_once_and_holds_the_matcher(tmp_path):
    jar = build.project_jar(tmp_path)
    assert jar is not None and jar.name == build.jar_name()
    with zipfile.ZipFile(jar) as archive:
        assert "rebalance/spark/AnyLiteral.class" in archive.namelist()
    stamp = jar.stat().st_mtime_ns
    assert build.project_jar(tmp_path) == jar and jar.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert [p.name for p in tmp_path.iterdir()] == [jar.name]  # no partial file left behind


def test_without_a_jdk_there_is_no_jar_and_one_line_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(build, "_tool", lambda name: None)
    assert build.project_jar(tmp_path) is None
    assert "Spark's contains" in capsys.readouterr().err


def test_a_session_that_forbids_py4j_gets_the_fallback(monkeypatch):
    """A Databricks cluster in shared access mode raises on any py4j access: the literal search must then take the
    Spark-only path (None here), not fail the job."""
    from pyspark import SparkContext

    from pipelines.jvm import matcher

    class Forbidden:
        _gateway = object()

        @property
        def _jvm(self):
            raise RuntimeError("py4j.security.Py4JSecurityException: not whitelisted")

    class ClassicColumn:
        _jc = object()

    monkeypatch.setattr(SparkContext, "_active_spark_context", Forbidden())
    monkeypatch.setattr(matcher, "_loaded", {})
    assert matcher.any_literal(ClassicColumn(), ["Pause "]) is None


def test_a_spark_connect_column_gets_the_fallback(spark):
    """A Connect column has no JVM handle (asking for it raises): the matcher must not be built for it."""
    from pyspark.sql.connect.column import Column as ConnectColumn
    from pyspark.sql.connect.expressions import ColumnReference

    from pipelines.jvm import matcher

    assert matcher.any_literal(ConnectColumn(ColumnReference("value")), ["Pause "]) is None
