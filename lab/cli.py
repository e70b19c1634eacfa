"""The lab's command line: `python -m lab run --version 3.9|4.1|all [--short] [--commit-corpus]`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from lab.fetch import CACHE, DEFAULT_LINES, fetch
from lab.procs import LabError, UsageError

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "kafka-lab"


def _progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `python -m lab`."""
    parser = argparse.ArgumentParser(
        prog="python -m lab",
        description="A real Kafka lab: KRaft brokers and Java consumers on 127.0.0.1, every rebalance cause "
        "provoked, logs in the landing layout and the confirmed truth.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the scenarios against real brokers for one or all versions")
    run.add_argument("--version", default="all",
                     help="Kafka version: x.y (newest x.y.z on Maven Central), x.y.z, "
                          f"or all ({', '.join(DEFAULT_LINES)})")
    run.add_argument("--out", type=Path, default=CACHE / "out",
                     help="output directory; each version writes <out>/<version>/landing and truth "
                          "(default: %(default)s)")
    run.add_argument("--scenario", action="append", dest="scenarios", help="run only this scenario (repeatable)")
    run.add_argument("--short", action="store_true", help="the short scenario set (what the kafka test tier runs)")
    run.add_argument("--client", choices=("java", "librdkafka", "streams", "connect", "share"),
                     help="only the scenarios whose members run this client (java: LabConsumer, librdkafka: "
                          "confluent-kafka, streams: a Kafka Streams application, connect: Connect workers, share: "
                          "share consumers)")
    corpus = run.add_mutually_exclusive_group()
    corpus.add_argument("--commit-corpus", action="store_true",
                        help=f"replace {CORPUS.relative_to(REPO)}/<version>/ with this run's trimmed logs and truth "
                             "(needs a clean run)")
    corpus.add_argument("--merge-corpus", action="store_true",
                        help=f"add this run's scenarios to {CORPUS.relative_to(REPO)}/<version>/, keeping the other "
                             "scenarios' logs and truth (needs a clean run of groups the corpus does not have)")
    run.add_argument("--keep-work", action="store_true", help="keep the brokers' data and side logs")
    fetch_p = sub.add_parser("fetch", help="only fetch and compile (Maven Central into the cache)")
    fetch_p.add_argument("--version", default="all")
    sub.add_parser("list", help="list the scenarios")
    return parser


def _versions(spec: str) -> list[str]:
    return list(DEFAULT_LINES) if spec == "all" else [spec]


def main(argv: list[str] | None = None) -> int:
    """Entry point; exit 0 when every chosen scenario passed, 1 otherwise, 2 on bad usage, 130 when interrupted."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            from lab.catalog import SCENARIOS

            for s in SCENARIOS:
                majors = ",".join(f"{m}.x" for m in s.majors)
                summary = " ".join((s.run.__doc__ or "").split())
                print(f"{s.name:22} {majors:8} {s.client:11} {'short ' if s.short else '      '}{summary}")
            return 0
        if args.command == "fetch":
            for v in _versions(args.version):
                kit = fetch(v, progress=_progress)
                _progress(f"kafka {kit.version} ready in {kit.home}")
            return 0
        from lab.corpus import commit_corpus, merge_corpus
        from lab.runner import run_version

        ok = True
        for v in _versions(args.version):
            result = run_version(v, out=args.out, names=args.scenarios, short=args.short, client=args.client,
                                 keep_work=args.keep_work, progress=_progress)
            _progress(f"kafka {result.version}: {len(result.passed)} scenario(s) passed, {len(result.failed)} failed, "
                      f"{result.truth_rows} truth rows, {result.seconds:.0f} s; output in {result.out}")
            for name, why in result.failed.items():
                _progress(f"  FAILED {name}: {why}")
            if result.unlabelled:
                _progress(f"  rebalances without a truth row: {result.unlabelled}")
            ok = ok and result.ok
            if args.commit_corpus or args.merge_corpus:
                if not result.ok:
                    _progress("  corpus NOT committed: the run was not clean")
                elif args.merge_corpus:
                    size = merge_corpus(Path(result.out), CORPUS / result.version)
                    _progress(f"  run merged into {CORPUS / result.version} (+{size / 1e6:.2f} MB)")
                else:
                    size = commit_corpus(Path(result.out), CORPUS / result.version)
                    _progress(f"  corpus written to {CORPUS / result.version} ({size / 1e6:.2f} MB)")
        return 0 if ok else 1
    except UsageError as exc:
        _progress(f"usage: {exc}")
        return 2
    except LabError as exc:
        _progress(f"lab error: {exc}")
        return 1
    except KeyboardInterrupt:
        _progress("interrupted; every lab process was stopped")
        return 130
