"""`python -m bench`: the benchmark of issues #4 and #20 (see bench/README.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import scale, soak
from bench.report import markdown
from bench.runner import DEFAULT_LINES, DEFAULT_PROBES, QUICK_LINES, QUICK_PROBES, Options, run_benchmark


def parse_options(argv: list[str] | None = None) -> Options:
    """Command-line arguments to Options (`--quick` changes the defaults of --lines and --probes)."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     epilog="python -m bench --scale [--help]: a simulated day of a large estate "
                                            "(50 brokers, 300 groups) on local[*] and a standalone cluster, "
                                            "about 55 minutes on 2 cores (bench/scale.py); python -m bench --soak "
                                            "[--help]: a continuous run kept busy for an hour, whether memory, "
                                            "latency and state stay flat (bench/soak.py)")
    parser.add_argument("--lines", type=int, help=f"lines of the 1x dataset (default {DEFAULT_LINES:,}; "
                        f"--quick: {QUICK_LINES:,}); the 4x dataset has four times as many")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run of about seven minutes on tiny data, without the history comparison")
    parser.add_argument("--no-history", action="store_true",
                        help="leave out the history comparison (an hour's increment after 4 hours and after "
                             "--history-days of history, each run a whole process: about 6 of the 13 to 16 "
                             "minutes on 2 cores)")
    parser.add_argument("--history-days", type=float, default=30.0,
                        help="span of the long history (default 30 days)")
    parser.add_argument("--out", type=Path, default=Path("bench/results"), help="results directory")
    parser.add_argument("--work", type=Path, help="scratch directory for data and tables (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--probes", type=int,
                        help=f"latency probes (default {DEFAULT_PROBES}; --quick: {QUICK_PROBES})")
    parser.add_argument("--latency-trigger", default="1 second", help="processingTime of the latency run")
    parser.add_argument("--latency-every", type=float, default=10.0,
                        help="seconds between two latency probe files (default 10: a steady trickle)")
    parser.add_argument("--seed", type=int, default=7, help="simulation seed")
    parser.add_argument("--groups", type=int, default=8, help="consumer groups to simulate")
    parser.add_argument("--conf", type=Path, help="pipeline configuration file (default conf/local.yml)")
    args = parser.parse_args(argv)
    lines = args.lines or (QUICK_LINES if args.quick else DEFAULT_LINES)
    probes = args.probes or (QUICK_PROBES if args.quick else DEFAULT_PROBES)
    if lines < 1 or probes < 1 or args.latency_every <= 0 or args.history_days * 24 <= 4:
        parser.error("--lines and --probes must be at least 1, --latency-every above 0, --history-days above 4 "
                     "hours (the short history)")
    return Options(lines=lines, mode="quick" if args.quick else "default", out=args.out, work=args.work,
                   keep=args.keep, seed=args.seed, groups=args.groups, probes=probes,
                   latency_trigger=args.latency_trigger, latency_every_s=args.latency_every, conf=args.conf,
                   history=not (args.quick or args.no_history), history_days=args.history_days)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the markdown table and which targets are met; `--scale` runs the scale benchmark
    instead (bench/scale.py, its own options: `python -m bench --scale --help`), `--soak` the soak (bench/soak.py,
    `python -m bench --soak --help`)."""
    args = sys.argv[1:] if argv is None else argv
    if "--scale" in args:
        return scale.main(scale.parse_args([a for a in args if a != "--scale"]))
    if "--soak" in args:
        return soak.main([a for a in args if a != "--soak"])
    results = run_benchmark(parse_options(args))
    print(markdown(results))
    print(results["verdict"])
    print("results: " + ", ".join(results["files"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
