"""Accuracy against ground truth: match gold_rebalances to truth rows on (group_id, generation_after)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
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
    """Full outer match of pipeline rebalances and truth rows: `true_cause`, `cause` (null where one side lacks)."""
    ours = rebalances.filter(F.col("generation_after").isNotNull()).select(
        "group_id", "generation_after", "cause", "cause_detail", "rebalance_id"
    )
    theirs = truth.select(
        "group_id", F.col("generation_after").cast("int").alias("generation_after"),
        F.col("cause").alias("true_cause"), F.col("cause_detail").alias("true_cause_detail"),
    )
    return ours.join(theirs, ["group_id", "generation_after"], "full_outer")


def accuracy(matched: DataFrame) -> Accuracy:
    """Counts and the confusion matrix (true cause, our cause) of a `match_truth` frame."""
    rows = matched.groupBy("true_cause", "cause").count().collect()
    confusion = {(r["true_cause"] or "-", r["cause"] or "-"): r["count"] for r in rows}
    truth = sum(n for (t, _), n in confusion.items() if t != "-")
    found = sum(n for (t, o), n in confusion.items() if t != "-" and o != "-")
    invented = sum(n for (t, o), n in confusion.items() if t == "-")
    right = sum(n for (t, o), n in confusion.items() if t == o and t != "-")
    return Accuracy(truth=truth, found=found, invented=invented, cause_right=right, confusion=confusion)
