"""pipelines.session.steps: the step a job belongs to, as a local property the threads of a step carry."""

from __future__ import annotations

import pytest
from pyspark import TaskContext

from pipelines.session.steps import STEP_PROPERTY, as_step, step
from pipelines.session.together import run_together


def test_a_step_names_the_jobs_of_its_block_and_of_the_threads_it_starts(spark):
    context = spark.sparkContext

    def current() -> str | None:
        return context.getLocalProperty(STEP_PROPERTY)

    assert current() is None
    with step(spark, "reconstruct"):
        assert current() == "reconstruct"
        with step(spark, "reconstruct: replay"):
            assert current() == "reconstruct: replay"
            seen = run_together(spark, {"a": current, "b": current})
        assert seen == {"a": "reconstruct: replay", "b": "reconstruct: replay"}
        assert current() == "reconstruct"
        # A job started in the step carries it to its tasks (and into Spark's event log with the job).
        tasks = context.parallelize([0], 1).map(lambda _: TaskContext.get().getLocalProperty(STEP_PROPERTY))
        assert tasks.collect() == ["reconstruct"]
    assert current() is None
    with pytest.raises(ValueError), step(spark, "ingest: parse"):
        raise ValueError("a step that fails")
    assert current() is None


def test_a_function_made_a_step_names_its_jobs_wherever_it_is_called(spark):
    @as_step("quality")
    def inside(session, extra: int) -> tuple[str | None, int]:
        return session.sparkContext.getLocalProperty(STEP_PROPERTY), extra

    assert inside(spark, 2) == ("quality", 2)
    assert inside.__name__ == "inside"
    assert spark.sparkContext.getLocalProperty(STEP_PROPERTY) is None
