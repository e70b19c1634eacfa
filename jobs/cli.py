"""The `rebalance` command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import NoReturn

from pipelines.settings.config import ConfigError

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 on usage errors; keep its message, add the hint
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")


def _progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _add_remote(p: argparse.ArgumentParser) -> None:
    p.add_argument("--remote", metavar="sc://HOST:PORT",
                   help="run through this Spark Connect server (Databricks Connect, serverless, start-connect-server) "
                   "instead of a local Spark; default: the SPARK_REMOTE environment variable, else local")


def _add_storage(p: argparse.ArgumentParser) -> None:
    p.add_argument("--conf", type=Path, help="configuration YAML (default: conf/local.yml of the project)")
    p.add_argument("--lakehouse", type=Path, help="directory of the Delta tables (overrides the configuration)")


_PROTOCOL_HELP = ("consumer-group protocol: classic (JoinGroup/SyncGroup generations), consumer (KIP-848 group "
                  "epochs, Kafka 4.x only) or mixed (both, alternating groups) (default: classic)")
_VERSION_HELP = ("wording of the broker and client logs: 2.4, 2.8, 3.6 or 4.1 (default: 3.6, or 4.1 with "
                 "--group-protocol consumer or mixed)")


def _client_kinds(text: str) -> dict[str, float]:
    """`java=6,streams=2,connect=1` as shares (argparse type: a bad value is a usage error)."""
    from simulator.frameworks import parse_shares

    try:
        return parse_shares(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_simulation(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kafka-version", default=None, help=_VERSION_HELP)
    p.add_argument("--group-protocol", choices=["classic", "consumer", "mixed"], default="classic", help=_PROTOCOL_HELP)
    p.set_defaults(simulation_parser=p)  # usage errors of these flags print this sub-command's usage


def _resolve_simulation(args: argparse.Namespace) -> None:
    """Default the Kafka version from the group protocol; refuse the consumer protocol before 4.0 as a usage error."""
    if getattr(args, "simulation_parser", None) is None:
        return
    from simulator import check_group_protocol

    if args.kafka_version is None:
        args.kafka_version = "3.6" if args.group_protocol == "classic" else "4.1"
    try:
        check_group_protocol(args.group_protocol, args.kafka_version)
    except ValueError as exc:
        args.simulation_parser.error(str(exc))


def _add_kafka_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", choices=["files", "kafka"], help="read the landing directory (files, the default) or "
                   "Kafka topics that log shippers write to (kafka)")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT[,...]", help="Kafka brokers to read from (--source kafka)")
    p.add_argument("--topic", action="append", metavar="NAME",
                   help="topic to read (repeat, or comma-separate, for several; --source kafka)")
    p.add_argument("--envelope", choices=["auto", "plain", "filebeat", "vector", "fluentbit", "logstash"],
                   help="how records wrap each line (default auto: each record's own shape)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = _Parser(
        prog="rebalance",
        description="Rebalance incident analytics for Apache Kafka: which consumer group rebalanced, when, for how "
        "long, and why, from broker, consumer and GC logs.",
        epilog="Start with `rebalance demo`. Exit codes: 0 success, 2 bad usage or configuration, 1 anything else.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    demo = sub.add_parser("demo", help="simulate a cluster's logs, analyse them locally, print a summary")
    demo.add_argument("--workdir", type=Path, default=Path("demo"), help="where logs and tables go (default: demo)")
    demo.add_argument("--seed", type=int, default=7, help="simulation seed (default: 7)")
    demo.add_argument("--groups", type=int, default=4, help="consumer groups to simulate (default: 4)")
    demo.add_argument("--hours", type=float, default=2.0, help="simulated hours (default: 2)")
    _add_remote(demo)
    _add_simulation(demo)

    sim = sub.add_parser("simulate", help="write realistic broker, client and GC logs with their ground truth")
    sim.add_argument("--out", type=Path, required=True, help="output directory (landing/ and truth/ go under it)")
    sim.add_argument("--seed", type=int, default=7)
    sim.add_argument("--groups", type=int, default=4)
    sim.add_argument("--hours", type=float, default=2.0)
    sim.add_argument("--lines", type=int, help="target total number of lines (adds broker noise and time)")
    sim.add_argument("--noise-density", type=float, metavar="D",
                     help="keep this share (0-1] of the application, GC and broker housekeeping lines, all group "
                          "activity: weeks of history in a small estate (with --hours; not with --lines)")
    sim.add_argument("--cycle-every-hours", type=float, default=2.0, metavar="H",
                     help="plan one cycle of incidents (every kind once) per H hours of span (default 2); above 2, "
                          "spread them evenly over the span")
    sim.add_argument("--client-kinds", type=_client_kinds, metavar="KIND=SHARE[,...]",
                     help="frameworks of the classic groups' consumers, as shares: java (a plain consumer), streams "
                          "(a Kafka Streams thread), connect (a Connect sink task), librdkafka (a non-Java service "
                          "over librdkafka at its default log level: only its warnings, no GC log); e.g. "
                          "java=5,librdkafka=2,streams=2,connect=1 (default: all java)")
    _add_simulation(sim)
    sim.add_argument("--gzip", action="store_true", help="gzip the log files")

    run = sub.add_parser("run", help="run the pipeline over the landing directory (new files only)")
    _add_storage(run)
    run.add_argument("--landing", type=Path, help="landing directory: <landing>/<instance>/<file>")
    run.add_argument("--trigger", choices=["available-now", "continuous"], default="available-now",
                     help="available-now: process what is new and stop (default; with nothing new since the "
                          "last complete run, it says so without starting Spark); continuous: keep running as "
                          "one stream (each ingest batch rebuilds its groups and evaluates their alerts), with all "
                          "alerts also every alerts.evaluate_every_s seconds, until Ctrl-C or SIGTERM (the batch "
                          "under way finishes, up to 20 s; exit 0)")
    _add_remote(run)
    run.add_argument("--rebuild", action="store_true", help="drop every table and checkpoint first, then rebuild")
    _add_kafka_source(run)

    parse = sub.add_parser("parse", help="parse log files in batch; JSON events on stdout, accounting on stderr")
    parse.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parse.add_argument("--kind", choices=["auto", "broker", "client", "gc"], default="auto",
                       help="only events of this kind (default: auto, every kind recognised from the content)")
    parse.add_argument("--tz", default=None, help="IANA time zone of timestamps without an offset (default UTC)")
    _add_remote(parse)
    parse.add_argument("--conf", type=Path, help="configuration YAML (sources and time zones)")

    check = sub.add_parser(
        "check", help="what the tool can and cannot read in your landing directory (writes no table)",
        description="Parse a landing directory (<landing>/<instance>/<file>) exactly as `rebalance run` would, write "
        "nothing, and say per instance folder: lines read, lines typed (events and GC pauses), lines that look "
        "group-related but match no known wording (counts by shape, a few samples), lines with no usable time, the "
        "time span and the clock offset against the coordinator; per group: whether the coordinator's (broker) log "
        "is there, how many member processes are tied to member ids, which members have GC logs, and which causes "
        "the rule book can decide at full confidence and which only from partial evidence. Files that cannot be "
        "read as logs (empty, binary, a truncated gzip) get one line each. Exit 0 on any input.",
        epilog="Examples: rebalance check ./landing; rebalance check ./landing --conf conf/mine.yml --format html "
        "> check.html. Run it first on your own logs, then `rebalance run`.")
    check.add_argument("landing", type=Path, metavar="LANDING", help="landing directory: <landing>/<instance>/<file>")
    check.add_argument("--conf", type=Path, help="configuration YAML: its sources (time zones, dates, own layouts) "
                       "are applied as a run applies them (default: conf/local.yml of the project)")
    check.add_argument("--format", choices=["text", "json", "html"], default="text",
                       help="text (default), json, or one self-contained HTML page (on stdout)")
    _add_remote(check)

    sql = sub.add_parser(
        "sql", help="ad-hoc SQL (Spark SQL dialect); every table is a view of its own name; no query opens a prompt",
        description="Ad-hoc SQL over the tables, each a view of its own name (SHOW TABLES lists them). On the local "
        "default (tables under --lakehouse) the fast engine answers: Delta tables read by delta-rs, the query "
        "translated from Spark SQL and run by DuckDB, no JVM started. Spark answers with --engine spark, --remote "
        "(or SPARK_REMOTE), on Databricks and for Unity Catalog tables, and for any query the fast engine rejects "
        "(one line on stderr says so, then Spark's answer). Without a query, a prompt opens: end a query with ';', "
        ".tables, .schema NAME, .quit; history in ~/.rebalance_sql_history.",
        epilog='Example: rebalance sql --lakehouse demo/lakehouse "SELECT cause, count(*) AS n FROM gold_rebalances '
        'GROUP BY cause"')
    sql.add_argument("query", nargs="?", help='for example "SELECT cause, count(*) FROM gold_rebalances GROUP BY '
                     'cause"; none: open the prompt')
    _add_storage(sql)
    _add_remote(sql)
    sql.add_argument("--format", choices=["table", "json", "csv"], default="table")
    sql.add_argument("--limit", type=int, default=1000, help="at most this many rows (default 1000)")
    sql.add_argument("--engine", choices=["auto", "spark"], default="auto",
                     help="auto: the fast engine on the local default, Spark where it cannot answer (default); "
                     "spark: always Spark")
    whatif = sub.add_parser(
        "whatif", help="weigh a group's observed rebalances under changed client settings",
        description="Replay a group's history (its GC pauses, poll gaps, restarts, leaves and partition moves) under "
        "changed client settings and say, per rebalance, whether it would have been avoided, happened later, or "
        "stopped fewer partitions. Without --set, the changes its own history suggests (also in gold_whatif).",
        epilog="Example: rebalance whatif --group orders --set session.timeout.ms=45000 --set group.instance.id=static")
    whatif.add_argument("--group", required=True, help="the consumer group")
    whatif.add_argument("--set", action="append", dest="changes", metavar="SETTING=VALUE",
                        help="a changed setting (repeat to weigh several, each on its own): session.timeout.ms=MS, "
                        "max.poll.interval.ms=MS, group.instance.id=static, "
                        "partition.assignment.strategy=cooperative-sticky")
    whatif.add_argument("--format", choices=["table", "json"], default="table")
    _add_storage(whatif)
    _add_remote(whatif)

    explain = sub.add_parser(
        "explain", help="why a rebalance got its cause: the rule trace, the deciding rule, its lines",
        description="Replay the rebalance's group from the stored events with the rule trace on and print: the "
        "group's states around it, every rule of the rule book that bears on it in the book's order (applied or "
        "not, and why), the rule that decided, the raw log lines it rests on, and the thresholds used with where "
        "they came from. The rules are listed in docs/causes.md.",
        epilog="Examples: rebalance explain 3f2a9c0e1b7d4a5e6f708192 --lakehouse demo/lakehouse; "
        "rebalance explain --group orders --at 2026-11-20T08:12:00Z")
    explain.add_argument("rebalance_id", nargs="?", metavar="REBALANCE_ID",
                         help="a gold_rebalances.rebalance_id (or use --group with --at)")
    explain.add_argument("--group", help="the group whose rebalance under way at --at to explain")
    explain.add_argument("--at", metavar="TIME", help="ISO-8601 time (UTC unless it has an offset)")
    explain.add_argument("--format", choices=["text", "json"], default="text")
    _add_storage(explain)
    _add_remote(explain)

    report = sub.add_parser(
        "report", help="write the local dashboard as one self-contained HTML file",
        description="Write the dashboard as one self-contained HTML file. On the local default the tables are read "
        "by the fast engine of `rebalance sql` (no JVM); with --remote (or SPARK_REMOTE), on Databricks and for "
        "Unity Catalog tables, by Spark.")
    _add_storage(report)
    _add_remote(report)
    report.add_argument("--out", type=Path, default=Path("rebalance-report.html"),
                        help="output file (default: rebalance-report.html)")
    report.add_argument("--group-type", action="append", choices=("consumer", "streams", "connect", "share"),
                        help="only groups of this type (repeat for several; default: all)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rebalance` console script."""
    args = build_parser().parse_args(argv)
    _resolve_simulation(args)
    try:
        from jobs import commands

        return getattr(commands, f"cmd_{args.command}")(args, progress=_progress)
    except ConfigError as exc:
        print(f"rebalance {args.command}: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as exc:  # noqa: BLE001 - the last line of defence prints one line, not a JVM trace
        from pipelines.quality.stage import QualityError
        from pipelines.session.remote import RemoteSessionError
        from pipelines.session.spark import SparkSetupError
        from pipelines.session.versions import UnsupportedSparkError
        from pipelines.state.errors import PipelineStateError

        if isinstance(exc, PipelineStateError):
            print(f"rebalance {args.command}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if isinstance(exc, (RemoteSessionError, SparkSetupError, UnsupportedSparkError)):  # the message is the fix
            print(f"rebalance {args.command}: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        if isinstance(exc, QualityError):  # every failed rule on its own line, not only the first
            print(f"rebalance {args.command}: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        print(f"rebalance {args.command}: failed: {type(exc).__name__}: {_first_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else ""




if __name__ == "__main__":
    sys.exit(main())
