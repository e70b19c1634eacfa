"""The one place a streaming query is wired: a stream read, a foreachBatch function, a checkpoint and a trigger."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from pipelines.settings.config import Config
from pipelines.storage import inputs

# The trigger that processes what is there and stops; any other trigger is a processing-time interval ("5 seconds").
AVAILABLE_NOW = "available-now"

BatchFn = Callable[[DataFrame, int], None]


def start_stream(
    df: DataFrame,
    cfg: Config,
    name: str,
    batch_fn: BatchFn,
    trigger: str,
    *,
    checkpoint: Path | None = None,
) -> StreamingQuery:
    """Start the query `name` running `batch_fn` on each micro-batch of the streaming frame `df`.

    `trigger` is AVAILABLE_NOW or a processing-time interval such as "5 seconds". The checkpoint is
    `inputs.checkpoint_dir(cfg, name)` unless `checkpoint` is given (a query that resumes another's work under a
    different name, or one outside the pipeline's checkpoints)."""
    location = checkpoint if checkpoint is not None else inputs.checkpoint_dir(cfg, name)
    writer = df.writeStream.queryName(name).foreachBatch(batch_fn).option("checkpointLocation", str(location))
    if trigger == AVAILABLE_NOW:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=trigger)
    return writer.start()
