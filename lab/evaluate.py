"""Cause accuracy of the pipeline on a lab corpus: run the whole pipeline on its landing folder, match
gold_rebalances to the truth on (group_id, generation_after), print a table per scenario.

    python -m lab.evaluate tests/data/kafka-lab/3.9.2 [tests/data/kafka-lab/4.1.2 ...] [--min-accuracy 0.95]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from simulator.evaluate import Accuracy


@dataclass(frozen=True)
class ScenarioScore:
    """One scenario's rebalances: in the truth, found by the pipeline, with the right cause."""

    scenario: str
    truth: int
    found: int
    cause_right: int
    wrong: str

    @property
    def accuracy(self) -> float:
        return self.cause_right / self.found if self.found else 0.0


def gold_for(spark: SparkSession, corpus: Path, work: Path) -> DataFrame:
    """Run the pipeline's ingest and reconstruct stages (available-now) on corpus/landing into a lakehouse under
    `work`; gold_rebalances. The quality and alert stages are left out: they do not change gold_rebalances, and a
    failed quality rule would hide the scores (tests/test_quality.py covers them)."""
    from pipelines.flow.run import run
    from pipelines.settings.config import load_config
    from pipelines.storage import lake

    cfg = load_config(None, {"landing": corpus / "landing", "lakehouse": work / "lakehouse"})
    run(spark, cfg, rebuild=True, stages=("ingest", "reconstruct"))
    return lake.read_table(spark, cfg, "gold_rebalances")


def score(spark: SparkSession, rebalances: DataFrame, truth_file: Path) -> tuple[list[ScenarioScore], Accuracy]:
    """Per-scenario scores, then one per client kind (`client: <kind>`), and the overall
    `simulator.evaluate.Accuracy`."""
    from simulator.evaluate import accuracy, match_truth

    truth = spark.read.json(str(truth_file))
    matched = match_truth(rebalances, truth)
    overall = accuracy(matched)
    kind = F.col("client_kind") if "client_kind" in truth.columns else F.lit("java")
    labels = truth.select("group_id", F.col("generation_after").cast("int").alias("generation_after"), "scenario",
                          F.concat(F.lit("client: "), F.coalesce(kind, F.lit("java"))).alias("client"))
    rows = matched.join(labels, ["group_id", "generation_after"], "left").collect()
    return _tally(rows, "scenario") + _tally(rows, "client"), overall


def _tally(rows: list[Any], key: str) -> list[ScenarioScore]:
    scores = []
    for name in sorted({r[key] for r in rows if r[key]}):
        mine = [r for r in rows if r[key] == name]
        found = [r for r in mine if r["cause"] is not None]
        right = [r for r in found if r["cause"] == r["true_cause"]]
        wrong = sorted({f"{r['true_cause']}->{r['cause']}" for r in found if r["cause"] != r["true_cause"]})
        scores.append(ScenarioScore(name, len(mine), len(found), len(right), ", ".join(wrong)))
    return scores


def print_scores(version: str, scores: list[ScenarioScore], overall: Accuracy) -> None:
    """The per-scenario table and the overall line."""
    print(f"\nKafka {version}")
    print(f"  {'scenario':20} {'truth':>5} {'found':>5} {'right':>5} {'accuracy':>8}  wrong (true->ours)")
    for s in scores:
        print(f"  {s.scenario:20} {s.truth:5} {s.found:5} {s.cause_right:5} {s.accuracy:8.0%}  {s.wrong}")
    print(f"  overall: {overall.line()}")


def evaluate(spark: SparkSession, corpus: Path) -> tuple[list[ScenarioScore], Accuracy]:
    """Run the pipeline on one corpus directory (landing/ + truth/) and score it."""
    work = Path(tempfile.mkdtemp(prefix="kafka-lab-eval-"))
    try:
        rebalances = gold_for(spark, corpus, work).cache()
        result = score(spark, rebalances, corpus / "truth" / "rebalances.jsonl")
        rebalances.unpersist()
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Evaluate each corpus given; exit 1 when an overall cause accuracy is below --min-accuracy."""
    parser = argparse.ArgumentParser(prog="python -m lab.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+", type=Path, help="lab corpus directories (with landing/ and truth/)")
    parser.add_argument("--min-accuracy", type=float, default=0.0, help="fail below this cause accuracy (0..1)")
    args = parser.parse_args(argv)
    from pipelines.session.spark import get_spark
    from pipelines.settings.config import load_config

    spark = get_spark(load_config(None, {"spark": {"master": "local[2]", "shuffle_partitions": 2}}),
                      app_name="kafka-lab-evaluate")
    ok = True
    for corpus in args.corpora:
        scores, overall = evaluate(spark, corpus)
        print_scores(corpus.name, scores, overall)
        ok = ok and overall.cause_accuracy >= args.min_accuracy
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
