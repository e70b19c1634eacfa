"""Turns the simulated records into closed log files under landing/<instance>/ and the truth file."""

from __future__ import annotations

import gzip
import json
import random
import sys
import time
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from simulator.javautil import abbreviate_logger
from simulator.model import Instance, World
from simulator.noise import BrokerNoise
from simulator.render import (
    ABSTRACT_COORDINATOR,
    ASYNC_KAFKA_CONSUMER,
    CLASSIC_KAFKA_CONSUMER,
    COMMIT_REQUEST_MANAGER,
    CONSUMER_COORDINATOR,
    COORDINATOR_REQUEST_MANAGER,
    HB,
    HEARTBEAT_REQUEST_MANAGER,
    KAFKA_CONSUMER,
    LISTENER_INVOKER,
    MEMBERSHIP_MANAGER,
    METADATA,
    NETWORK_CLIENT,
)

HOUR = 3_600_000
MS = [f"{i:03d}" for i in range(1000)]
WORD = next(code for code in "IL" if array(code).itemsize == 4)
# loggers created through Kafka's LogContext carry the "[Consumer clientId=..., groupId=...] " prefix
LOG_CONTEXT = {ABSTRACT_COORDINATOR, CONSUMER_COORDINATOR, KAFKA_CONSUMER, METADATA, NETWORK_CLIENT,
               CLASSIC_KAFKA_CONSUMER, ASYNC_KAFKA_CONSUMER, LISTENER_INVOKER, MEMBERSHIP_MANAGER,
               COORDINATOR_REQUEST_MANAGER, HEARTBEAT_REQUEST_MANAGER, COMMIT_REQUEST_MANAGER}


PYTHON_LEVELS = {"WARN": "WARNING"}


def _utc(t_ms: int, fmt: str) -> str:
    return time.strftime(fmt, time.gmtime(t_ms // 1000))


def iso_utc(t_ms: int) -> str:
    """ISO-8601 UTC with milliseconds and Z."""
    return f"{_utc(t_ms, '%Y-%m-%dT%H:%M:%S')}.{MS[t_ms % 1000]}Z"


class Clock:
    """Cached renderings of each second, for the three timestamp layouts."""

    def __init__(self) -> None:
        self._cache: dict[str, dict[int, str]] = {}

    def second(self, t_ms: int, fmt: str) -> str:
        cache = self._cache.setdefault(fmt, {})
        second = t_ms // 1000
        text = cache.get(second)
        if text is None:
            text = cache[second] = _utc(t_ms, fmt)
        return text

    def log4j(self, t_ms: int) -> str:
        return f"{self.second(t_ms, '%Y-%m-%d %H:%M:%S')},{MS[t_ms % 1000]}"

    def logback(self, t_ms: int) -> str:
        return f"{self.second(t_ms, '%H:%M:%S')}.{MS[t_ms % 1000]}"

    def unified(self, t_ms: int) -> str:
        return f"{self.second(t_ms, '%Y-%m-%dT%H:%M:%S')}.{MS[t_ms % 1000]}+0000"


class Output:
    """Writes files (optionally gzip) and counts them."""

    def __init__(self, root: Path, gzip_files: bool, progress: Callable[[str], None] | None, total_hint: int) -> None:
        self.root = root
        self.gzip_files = gzip_files
        self.progress = progress
        self.files = 0
        self.lines = 0
        self.total_hint = max(total_hint, 1)
        self._next_report = 0.1

    def write(self, relative: str, lines: list[str]) -> None:
        if not lines:
            return
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n").encode("utf-8")
        if self.gzip_files:
            with open(str(path) + ".gz", "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                                      compresslevel=1) as gz:
                gz.write(data)
        else:
            path.write_bytes(data)
        self.files += 1
        self.lines += data.count(b"\n")  # a multi-line record (ConsumerConfig values) is several lines
        if self.progress and self.lines / self.total_hint >= self._next_report:
            self.progress(f"wrote {self.lines:,} lines in {self.files} files")
            while self._next_report <= self.lines / self.total_hint:
                self._next_report += 0.1


def random_words(rng: random.Random, n: int) -> array:
    """n uniformly random 32-bit words in one call (the noise lines are drawn by the million)."""
    words = array(WORD, rng.randbytes(4 * n))
    if sys.byteorder == "big":
        words.byteswap()
    return words


def hour_name(clock: Clock, t_ms: int) -> str:
    return clock.second(t_ms, "%Y-%m-%d-%H")


def source_line(logger: str) -> int:
    """A stand-in for the source line log4j's `%L` prints: fixed per logger (the parser reads none of it)."""
    return 100 + zlib.crc32(logger.encode()) % 1400


def client_line_renderer(inst: Instance, clock: Clock) -> Callable[[tuple[int, int, str, str, str, str]], str]:
    """The formatter of one instance's client log layout."""
    spec = inst.group
    prefix = f"[Consumer clientId={inst.client_id}, groupId={spec.group_id}] "
    if spec.layout == "logback":
        # the classic consumer's heartbeat thread; the KIP-848 consumer's background thread does that work
        hb_thread = ("consumer_background_thread" if spec.protocol == "consumer"
                     else f"kafka-coordinator-heartbeat-thread | {spec.group_id}")
        threads = {HB: hb_thread}
        short: dict[str, str] = {}

        def logback(rec: tuple[int, int, str, str, str, str]) -> str:
            t, _, level, logger, thread, message = rec
            name = short.get(logger) or short.setdefault(logger, abbreviate_logger(logger))
            body = prefix + message if logger in LOG_CONTEXT else message
            return f"{clock.logback(t)} [{threads.get(thread, inst.thread)}] {level:<5} {name} - {body}"

        return logback

    if spec.layout == "librdkafka":
        handle = f"{inst.client_id}#consumer-1"

        def librdkafka(rec: tuple[int, int, str, str, str, str]) -> str:
            t, _, level, logger, thread, message = rec
            if level.isdigit():  # librdkafka's own line on stderr: level, epoch seconds, facility, handle, thread
                return f"%{level}|{t // 1000}.{MS[t % 1000]}|{logger}|{handle}| [thrd:{thread}]: {message}"
            # the service's own logging (Python's `%(asctime)s %(levelname)s %(name)s: %(message)s`)
            return f"{clock.log4j(t)} {PYTHON_LEVELS.get(level, level)} {logger}: {message}"

        return librdkafka

    if spec.layout == "connect":
        context = f"[{spec.group_id.removeprefix('connect-')}|task-{inst.ordinal}] "

        def connect(rec: tuple[int, int, str, str, str, str]) -> str:
            t, _, level, logger, _thread, message = rec
            body = prefix + message if logger in LOG_CONTEXT else message
            return f"[{clock.log4j(t)}] {level} {context}{body} ({logger}:{source_line(logger)})"

        return connect

    def log4j(rec: tuple[int, int, str, str, str, str]) -> str:
        t, _, level, logger, _thread, message = rec
        body = prefix + message if logger in LOG_CONTEXT else message
        return f"[{clock.log4j(t)}] {level} {body} ({logger})"

    return log4j


def by_hour(records: Iterable[tuple[Any, ...]]) -> dict[int, list[tuple[Any, ...]]]:
    hours: dict[int, list[tuple[Any, ...]]] = {}
    for rec in records:
        hours.setdefault(rec[0] // HOUR, []).append(rec)
    return hours


def write_clients(out: Output, world: World, clock: Clock, app: dict[str, list[tuple[int, str, str]]],
                  until: int) -> None:
    """consumer.log.<yyyy-MM-dd-HH> per instance, hourly rotated like log4j's DailyRollingFileAppender."""
    for spec in world.groups:
        for inst in spec.instances:
            records = [r for r in inst.records if r[0] < until]
            records += [(t, -1, level, spec.app_logger, "poll", msg) for t, level, msg in app.get(inst.name, [])]
            records.sort(key=lambda r: (r[0], r[1]))
            render = client_line_renderer(inst, clock)
            for hour, recs in by_hour(records).items():
                out.write(f"{inst.name}/consumer.log.{hour_name(clock, hour * HOUR)}", [render(r) for r in recs])


def write_gc(out: Output, world: World, clock: Clock, gc: dict[tuple[str, int], list[tuple[int, str]]]) -> None:
    """One unified-logging file per JVM run: gc.log for the latest, gc.log.<n> for the ones it archived."""
    for spec in world.groups:
        for inst in spec.instances:
            runs = len(inst.procs)
            for proc in inst.procs:
                name = "gc.log" if proc.run == runs - 1 else f"gc.log.{proc.run}"
                events = gc.get((inst.name, proc.run), [])
                lines = [f"[{clock.unified(t)}][{(t - proc.start) / 1000:.3f}s][info][gc] {msg}" for t, msg in events]
                out.write(f"{inst.name}/{name}", lines)


def write_brokers(out: Output, world: World, clock: Clock, noise_per_hour: dict[tuple[int, int], int],
                  noise: dict[int, BrokerNoise], seed: int, until: int) -> None:
    """server.log.<yyyy-MM-dd-HH> per broker: coordinator lines merged into pre-rendered housekeeping noise."""
    first_hour = world.start // HOUR
    for broker, records in world.broker_records.items():
        grouped = by_hour(sorted(r for r in records if r[0] < until))
        for hour in range(first_hour, until // HOUR):
            rng = random.Random(f"{seed}:broker-noise:{broker}:{hour}")
            base = hour * HOUR
            lo = max(world.start, base) - base
            n = noise_per_hour.get((broker, hour), 0)
            offsets = sorted(lo + v % (HOUR - lo) for v in random_words(rng, n))
            pool = noise[broker].pool(rng, 1024) if n else []
            bodies = [pool[v & 1023] for v in random_words(rng, n)]
            prefixes = [f"[{clock.second(base + s * 1000, '%Y-%m-%d %H:%M:%S')}," for s in range(3600)]
            lines = [prefixes[o // 1000] + MS[o % 1000] + "]" + body for o, body in zip(offsets, bodies, strict=True)]
            merged: list[str] = []
            taken = 0
            for t, _, level, body in grouped.get(hour, []):
                at = bisect_right(offsets, t - base)
                merged.extend(lines[taken:at])
                taken = at
                merged.append(f"[{clock.log4j(t)}] {level} {body}")
            merged.extend(lines[taken:])
            out.write(f"broker-{broker}/server.log.{hour_name(clock, base)}", merged)


def write_truth(path: Path, rows: list[dict[str, Any]]) -> None:
    """truth/rebalances.jsonl sorted by (started_at, group_id)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ordered = sorted(rows, key=lambda r: (r["started_at"], r["group_id"]))
    with path.open("w", encoding="utf-8") as fh:
        for row in ordered:
            fh.write(json.dumps({**row, "started_at": iso_utc(row["started_at"])}) + "\n")


def write_estate_truth(path: Path, rows: list[dict[str, Any]]) -> None:
    """truth/estate_incidents.jsonl sorted by started_at."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in sorted(rows, key=lambda r: r["started_at"]):
            fh.write(json.dumps({**row, "started_at": iso_utc(row["started_at"])}) + "\n")
