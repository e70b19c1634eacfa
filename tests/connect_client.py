"""The Spark Connect side of the `connect` tier, run as its own process: PySpark 4.0 switches a whole process to
Connect's Column functions once a Connect session exists there, so it cannot share the test run's classic session.

    python -m tests.connect_client URL ROOT RUN_TS PARSE_FILE

runs the pipeline over ROOT/landing into ROOT/lakehouse (run_ts fixed, as the classic run has it), writes
ROOT/report.html, and the stdout of `rebalance sql --remote` and `rebalance parse --remote` under ROOT/cli/.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import sys
from pathlib import Path

from jobs.cli import main as cli
from jobs.commands import write_report
from pipelines.flow.run import run
from pipelines.session.spark import get_spark
from tests.conftest import make_config

SQL = "SELECT cause, count(*) AS n, sum(duration_ms) AS ms FROM gold_rebalances GROUP BY cause ORDER BY cause"


def _cli_output(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(argv)
    if code != 0:
        raise SystemExit(f"rebalance {' '.join(argv)} exited {code}")
    return out.getvalue()


def main(url: str, root: Path, run_ts: dt.datetime, parse_file: Path) -> None:
    """Run everything the tier compares through the Spark Connect server at `url`."""
    cfg = make_config(root, landing=root / "landing")
    spark = get_spark(cfg, remote=url)
    summary = run(spark, cfg, run_ts=run_ts)
    print(f"run: {summary.line()}; batches {summary.batches}")
    write_report(spark, cfg, root / "report.html")
    cli_dir = root / "cli"
    cli_dir.mkdir(exist_ok=True)
    (cli_dir / "sql.jsonl").write_text(
        _cli_output(["sql", SQL, "--lakehouse", str(cfg.lakehouse), "--format", "json", "--remote", url]))
    (cli_dir / "parse.jsonl").write_text(_cli_output(["parse", str(parse_file), "--remote", url]))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), dt.datetime.fromisoformat(sys.argv[3]), Path(sys.argv[4]))
