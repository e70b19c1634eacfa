"""Entry points of the scheduled Databricks job (python_wheel_task `rebalance-job`): one per task of databricks.yml.

    rebalance-job ingest      --catalog C --schema S --landing PATH --checkpoints PATH
    rebalance-job reconstruct --catalog C --schema S --landing PATH --checkpoints PATH
    rebalance-job quality     --catalog C --schema S --landing PATH --checkpoints PATH
    rebalance-job alerts      --catalog C --schema S --landing PATH --checkpoints PATH

The ingest task reads Kafka topics instead of the landing path with `--source kafka --bootstrap-servers HOST:PORT
--topic NAME` (Databricks runtimes ship Spark's Kafka source).

Each builds the configuration from its parameters (Auto Loader, Unity Catalog names) and calls `pipelines.flow.run.run`
with the session Databricks provides, a classic one on a job cluster or a Spark Connect one on serverless (the
pipeline uses only what both support: no RDDs, no JVM calls, Delta through SQL). A failed quality rule fails the
`quality` task (exit 1, the rules named); the `alerts` task runs after it all the same and delivers the quality alert.
"""

from __future__ import annotations

import argparse
import sys

from pipelines.settings.config import ConfigError, load_config

TASKS = ("ingest", "reconstruct", "quality", "alerts")


def build_parser() -> argparse.ArgumentParser:
    """Arguments shared by every task."""
    parser = argparse.ArgumentParser(prog="rebalance-job", description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=TASKS)
    parser.add_argument("--catalog", required=True, help="Unity Catalog catalog of the tables")
    parser.add_argument("--schema", required=True, help="Unity Catalog schema of the tables")
    parser.add_argument("--landing", required=True, help="landing path (a volume or cloud storage URL)")
    parser.add_argument("--checkpoints", required=True, help="checkpoint root (a volume or cloud storage URL)")
    parser.add_argument("--source-format", choices=["cloudFiles", "text"], default="cloudFiles")
    parser.add_argument("--conf", help="optional YAML with sources, time zones and thresholds")
    parser.add_argument("--source", default=None, help="files (the landing path, default) or kafka (the topics)")
    parser.add_argument("--bootstrap-servers", default=None, help="Kafka brokers (with --source kafka)")
    parser.add_argument("--topic", default=None, help="Kafka topic(s), comma-separated (with --source kafka)")
    parser.add_argument("--envelope", default=None, help="auto, plain, filebeat, vector, fluentbit or logstash")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one task of the scheduled job; exit 2 on bad parameters, 1 on failure."""
    args = build_parser().parse_args(argv)
    try:
        cfg = load_config(
            args.conf,
            {"catalog": args.catalog, "schema": args.schema, "landing": args.landing,
             "checkpoints": args.checkpoints, "source_format": args.source_format, "source": args.source or None,
             "kafka": {"bootstrap_servers": args.bootstrap_servers or None, "topics": args.topic or None,
                       "envelope": args.envelope or None}},
        )
    except ConfigError as exc:
        print(f"rebalance-job {args.task}: configuration error: {exc}", file=sys.stderr)
        return 2
    from pipelines.flow.run import run
    from pipelines.quality.stage import QualityError
    from pipelines.session.spark import get_spark

    spark = get_spark(cfg, app_name=f"rebalance-{args.task}")
    try:
        summary = run(spark, cfg, stages=(args.task,), on_progress=lambda m: print(m, flush=True))
    except QualityError as exc:
        print(f"rebalance-job {args.task}: {exc}", file=sys.stderr)
        return 1
    print(f"{args.task}: {summary.line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
