"""A transform built once per process and repeated from its noted steps (pipelines/session/recipes.py): the repeat
gives the rows a fresh build gives, a new schema or key builds anew, and a step that cannot be repeated is refused."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import pipelines.session.recipes as recipes
from pipelines.session.recipes import UnrecordableStepError, recorded
from pipelines.settings.config import load_config
from pipelines.settings.sources import resolve_sources
from pipelines.silver.build import _parsed, parse_records

BRONZE_SCHEMA = ("line_id string, source_file string, instance string, file_name string, file_modified_at timestamp, "
                 "line_no long, value string, line_length long, batch_id long")
BROKER = ("[2024-05-14 12:00:01,123] INFO [GroupCoordinator 1]: Preparing to rebalance group g1 in state "
          "PreparingRebalance with old generation 3 (__consumer_offsets-12) (reason: Adding new member c-1) "
          "(kafka.coordinator.group.GroupCoordinator)")
CLIENT = ("2024-05-14 12:00:02.000  INFO 1 --- [main] o.a.k.c.c.i.ConsumerCoordinator : [Consumer clientId=c-1, "
          "groupId=g1] Successfully joined group with generation Generation{generationId=4, memberId='c-1-abc', "
          "protocol='range'}")
GC = "2024-05-14T12:00:03.000+0000: 1.234: [GC pause (G1 Evacuation Pause) (young) 100M->50M(200M), 2.0123456 secs]"


def _bronze(spark, lines: list[str], instance: str = "app-1") -> DataFrame:
    return spark.createDataFrame(
        [(f"{instance}-{i}", f"file:/landing/{instance}/app.log", instance, "app.log", dt.datetime(2024, 5, 14, 12), i,
          line, len(line), 0) for i, line in enumerate(lines, start=1)], BRONZE_SCHEMA)


def _rows(df: DataFrame) -> list[dict]:
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: (r["line_no"], r["record_part"]))


def test_a_repeated_parse_gives_the_rows_of_a_fresh_build(spark):
    recipes._recipes.clear()
    sources = resolve_sources(load_config())
    parse_records(_bronze(spark, [CLIENT, "noise"]), sources)  # builds and notes the steps
    later = _bronze(spark, [BROKER, CLIENT, GC, "noise", "hello\nworld"], instance="broker-1")
    repeated = parse_records(later, sources)
    assert len(recipes._recipes) == 1, "the second frame of the same schema built anew"
    fresh = _parsed(later, sources)
    rows = _rows(repeated)
    assert rows == _rows(fresh)
    assert [(r["disposition"], r["event_type"]) for r in rows] == [
        ("event", "rebalance_started"), ("event", "client_joined"), ("gc_pause", None), ("noise", None),
        ("noise", None)]


def test_another_schema_or_key_builds_anew(spark):
    recipes._recipes.clear()
    built: list[str] = []

    def add_one(frame: DataFrame) -> DataFrame:
        built.append("built")
        return frame.withColumn("plus", F.col("n") + 1).select(*frame.columns, "plus")

    one = spark.createDataFrame([(1,)], "n long")
    assert recorded(one, add_one, key="k").collect()[0]["plus"] == 2
    assert recorded(spark.createDataFrame([(5,)], "n long"), add_one, key="k").collect()[0]["plus"] == 6
    assert built == ["built"]
    assert recorded(spark.createDataFrame([(5, "x")], "n long, s string"), add_one, key="k").columns == \
        ["n", "s", "plus"]
    recorded(one, add_one, key="other")
    assert built == ["built"] * 3


def test_a_new_python_session_over_the_same_jvm_repeats_the_recipe(spark):
    # Each foreachBatch call hands the batch function a new Python session over the stream's JVM session.
    recipes._recipes.clear()
    built: list[str] = []

    def doubled(frame: DataFrame) -> DataFrame:
        built.append("built")
        return frame.withColumn("twice", F.col("n") * 2)

    recorded(spark.createDataFrame([(1,)], "n long"), doubled, key="k")
    other = spark.newSession()
    assert other is not spark
    assert recorded(other.createDataFrame([(4,)], "n long"), doubled, key="k").collect()[0]["twice"] == 8
    assert built == ["built"]


def test_a_step_that_cannot_be_repeated_is_refused(spark):
    recipes._recipes.clear()
    frame = spark.createDataFrame([(1,)], "n long")
    with pytest.raises(UnrecordableStepError, match="`filter`"):
        recorded(frame, lambda df: df.filter(F.col("n") > 0), key="filter")
    with pytest.raises(UnrecordableStepError, match="must return the frame"):
        recorded(frame, lambda df: spark.createDataFrame([(2,)], "n long"), key="elsewhere")

    def branches(df: DataFrame) -> DataFrame:
        df.withColumn("a", F.lit(1))
        return df.withColumn("b", F.lit(2))  # on the frame before `a`: repeated in a line, it would keep `a`

    with pytest.raises(UnrecordableStepError, match="earlier frame"):
        recorded(frame, branches, key="branches")
    assert not recipes._recipes
