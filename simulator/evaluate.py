"""Accuracy against ground truth: match gold_rebalances to truth rows on (group_id, generation_after); rebalances
without a generation_after (still open) match the truth's open rows of their group in start order, and any left
over count as invented."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


@dataclass(frozen=True)
class Accuracy:
    """How the pipeline's rebalances compare with the truth."""

    truth: int
    found: int
    invented: int
    cause_right: int
    confusion: dict[tuple[str, str], int]

    @property
    def cause_accuracy(self) -> float:
        return self.cause_right / self.found if self.found else 0.0

    def line(self) -> str:
        return (
            f"{self.found}/{self.truth} true rebalances found, {self.invented} not in the truth, "
            f"cause right for {self.cause_right} ({self.cause_accuracy:.1%})"
        )


def match_truth(rebalances: DataFrame, truth: DataFrame) -> DataFrame:
    """Full outer match of pipeline rebalances and truth rows: `true_cause`, `cause` (null where one side lacks).

    Rows with a generation_after match on (group_id, generation_after); open rows (outcome `open`, no
    generation_after) match the truth's open rows of the same group, the n-th started with the n-th, so that a
    rebalance the pipeline left open and the truth does not have counts as invented."""
    generation = F.col("generation_after").cast("int").alias("generation_after")
    # A rebalance a coordinator move cut off (`superseded`) is the first part of the one that completed on the new
    # coordinator, not a rebalance of its own.
    ours = rebalances.filter(F.col("generation_after").isNotNull() | (F.col("outcome") == "open")).select(
        "group_id", generation, "cause", "cause_detail", "rebalance_id", "started_at")
    theirs = truth.select(
        "group_id", generation, F.col("cause").alias("true_cause"),
        F.col("cause_detail").alias("true_cause_detail"), F.col("started_at").cast("timestamp").alias("started_at"),
    )
    closed = ours.filter(F.col("generation_after").isNotNull()).drop("started_at").join(
        theirs.filter(F.col("generation_after").isNotNull()).drop("started_at"), ["group_id", "generation_after"],
        "full_outer")
    in_order = Window.partitionBy("group_id").orderBy("started_at")
    open_ours, open_theirs = (
        side.filter(F.col("generation_after").isNull()).withColumn("open_rank", F.row_number().over(in_order))
        .drop("started_at", "generation_after") for side in (ours, theirs)
    )
    opened = open_ours.join(open_theirs, ["group_id", "open_rank"], "full_outer").drop("open_rank")
    return closed.unionByName(opened.withColumn("generation_after", F.lit(None).cast("int")))


def accuracy(matched: DataFrame) -> Accuracy:
    """Counts and the confusion matrix (true cause, our cause) of a `match_truth` frame."""
    rows = matched.groupBy("true_cause", "cause").count().collect()
    confusion = {(r["true_cause"] or "-", r["cause"] or "-"): r["count"] for r in rows}
    truth = sum(n for (t, _), n in confusion.items() if t != "-")
    found = sum(n for (t, o), n in confusion.items() if t != "-" and o != "-")
    invented = sum(n for (t, o), n in confusion.items() if t == "-")
    right = sum(n for (t, o), n in confusion.items() if t == o and t != "-")
    return Accuracy(truth=truth, found=found, invented=invented, cause_right=right, confusion=confusion)


@dataclass(frozen=True)
class EstateAccuracy:
    """How the pipeline's estate incidents compare with truth/estate_incidents.jsonl: a true incident is found when
    one row has its root kind and exactly its groups; `overlapping` counts true incidents some row of the same root
    kind shares a group with (found with other groups); rows matching no true incident are invented."""

    truth: int
    found: int
    overlapping: int
    invented: int
    misses: tuple[str, ...] = ()

    def line(self) -> str:
        return (f"estate incidents: {self.found}/{self.truth} found with their root kind and groups "
                f"({self.overlapping} more with other groups), {self.invented} not in the truth")


def match_estates(found: list[dict], truth: list[dict]) -> EstateAccuracy:
    """Match gold_estate_incidents rows to truth rows on (root_kind, set of groups), as the contract says."""
    def key(r: dict) -> tuple[str, frozenset[str]]:
        return r["root_kind"], frozenset(r["groups"])

    ours = {key(r) for r in found}
    theirs = {key(t) for t in truth}
    exact = ours & theirs
    overlapping = [t for t in theirs - exact if any(k == t[0] and g & t[1] for k, g in ours)]
    misses = tuple(sorted(f"{k} {sorted(g)}" for k, g in theirs - exact))
    return EstateAccuracy(truth=len(theirs), found=len(exact), overlapping=len(overlapping),
                          invented=len(ours - theirs), misses=misses)
