"""The one place a streaming query is wired: a stream read, a foreachBatch function, a checkpoint and a trigger."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from pipelines.settings.config import Config
from pipelines.state.checkpoints import written_batches
from pipelines.storage import inputs

# The trigger that processes what is there and stops; any other trigger is a processing-time interval ("5 seconds").
AVAILABLE_NOW = "available-now"

# The query that rebuilds gold from silver_accounting (`pipelines.flow.reconstruct`), and the processing-time
# trigger of `--trigger continuous`.
RECONSTRUCT_QUERY = "reconstruct"
CONTINUOUS_INTERVAL = "5 seconds"

BatchFn = Callable[[DataFrame, int], None]

# The folders Spark (4.1 on) requires empty when a query starts with no batch written to its offset log.
_FIRST_BATCH_DIRS = ("offsets", "commits", "state")


def clear_unwritten_first_batch(checkpoint: Path) -> list[Path]:
    """Delete what a process stopped while writing its query's first batch left in `checkpoint`, and return it.

    Spark writes a batch's offsets to a temporary file and renames it into place; a driver killed between the two
    leaves the temporary file (and its checksum) behind with no batch in the log. From Spark 4.1 on, a query
    whose offset log holds no batch refuses to start over a non-empty offsets, commits or state folder, so every
    later run would fail on the same leftover. With no batch written, nothing in those folders is a record of
    work done: the first batch simply starts again. A checkpoint with a batch in its log is left untouched."""
    if written_batches(checkpoint):
        return []
    leftovers = [p for d in _FIRST_BATCH_DIRS if (checkpoint / d).is_dir()
                 for p in sorted((checkpoint / d).rglob("*")) if p.is_file()]
    for path in leftovers:
        path.unlink()
    return leftovers


def start_stream(
    df: DataFrame,
    cfg: Config,
    name: str,
    batch_fn: BatchFn,
    trigger: str,
    *,
    checkpoint: Path | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> StreamingQuery:
    """Start the query `name` running `batch_fn` on each micro-batch of the streaming frame `df`.

    `trigger` is AVAILABLE_NOW or a processing-time interval such as "5 seconds". The checkpoint is
    `inputs.checkpoint_dir(cfg, name)` unless `checkpoint` is given (a query that resumes another's work under a
    different name, or one outside the pipeline's checkpoints). What a run stopped while writing the query's
    first batch left in the checkpoint is cleared first (`clear_unwritten_first_batch`), and said to `on_progress`."""
    location = checkpoint if checkpoint is not None else inputs.checkpoint_dir(cfg, name)
    cleared = clear_unwritten_first_batch(location)
    if cleared and on_progress is not None:
        on_progress(f"{name}: cleared {len(cleared)} file(s) a run stopped while writing its first batch left in "
                    f"{location} ({', '.join(p.relative_to(location).as_posix() for p in cleared[:3])}"
                    f"{', ...' if len(cleared) > 3 else ''}); the first batch starts again")
    writer = df.writeStream.queryName(name).foreachBatch(batch_fn).option("checkpointLocation", str(location))
    if trigger == AVAILABLE_NOW:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=trigger)
    return writer.start()
