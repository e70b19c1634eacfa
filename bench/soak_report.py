"""The soak's figures and its markdown table: drift of latency and memory, and the growth of checkpoints and state."""

from __future__ import annotations

import datetime as dt
import statistics
from typing import Any

from bench.latency import percentile

DRIFT_BOUND = 1.2  # issue #52: the last window within 1.2x of the early one, for memory and for latency p95


def p95(values: list[float]) -> float | None:
    """The 95th percentile (inclusive interpolation); None for no value."""
    return percentile(values, 95) if values else None


def _latencies(probes: list[dict[str, Any]], key: str, start_s: float, end_s: float, watched_s: float) -> list[float]:
    # A probe never seen counts as the time it was watched for (never flatters a run that lost probes).
    return [p[key] if p[key] is not None else watched_s - p["landed_s"]
            for p in probes if start_s <= p["landed_s"] < end_s]


def _ratio(last: float | None, first: float | None) -> float | None:
    return round(last / first, 3) if last is not None and first else None


def _mb(sample: dict[str, Any], part: str) -> float:
    return round(sum(size for size, _files in sample[part].values()) / 1024 / 1024, 2)


def _files(sample: dict[str, Any], part: str = "tables") -> int:
    return sum(files for _size, files in sample[part].values())


def _sample_at(sizes: list[dict[str, Any]], at_s: float) -> dict[str, Any] | None:
    before = [s for s in sizes if s["at_s"] <= at_s]
    return before[-1] if before else None


def windows(minutes: float) -> dict[str, tuple[float, float]]:
    """The windows compared, in seconds of the run: first and last sixth (10 minutes of 60) for latency, minutes 5-15
    of 60 (scaled) against the last sixth for memory."""
    run_s, sixth = minutes * 60, minutes * 10
    return {"first": (0.0, sixth), "last": (run_s - sixth, run_s), "memory_early": (run_s / 12, run_s / 4)}


def soak_figures(minutes: float, probes: list[dict[str, Any]], memory: list[tuple[float, float]],
                 sizes: list[dict[str, Any]], *, watched_s: float | None = None) -> list[dict[str, Any]]:
    """Every figure of the soak with its bound (None: context); `watched_s`: until when the probes were watched
    (default the end of the landings)."""
    run_s, w = minutes * 60, windows(minutes)
    watched = watched_s if watched_s is not None else run_s
    figures: list[dict[str, Any]] = []

    def add(name: str, value: float | None, bound: float | None = None, note: str = "") -> None:
        met = None if bound is None or value is None else value <= bound
        figures.append({"name": name, "value": value, "bound": bound, "met": met, "note": note})

    for key, label in (("row_s", "latency"), ("alert_s", "alert_latency")):
        first = p95(_latencies(probes, key, *w["first"], watched))
        last = p95(_latencies(probes, key, *w["last"], watched))
        add(f"{label}_p95_first_s", first and round(first, 2), note="probes landed in the first window")
        add(f"{label}_p95_last_s", last and round(last, 2), note="probes landed in the last window")
        add(f"{label}_p95_last_over_first", _ratio(last, first), DRIFT_BOUND)
    early = [mb for at, mb in memory if w["memory_early"][0] <= at < w["memory_early"][1]]
    late = [mb for at, mb in memory if w["last"][0] <= at < w["last"][1]]  # not the wait for the last probes
    add("memory_peak_early_mb", max(early, default=None), note="process tree, proportional sizes")
    add("memory_peak_last_mb", max(late, default=None))
    add("memory_last_over_early", _ratio(max(late, default=None), max(early, default=None)), DRIFT_BOUND)
    add("probes_without_row", sum(1 for p in probes if p["row_s"] is None), 0)
    add("probes_without_alert", sum(1 for p in probes if p["alert_s"] is None), 0)
    early_size, last_size = _sample_at(sizes, w["memory_early"][1]), sizes[-1] if sizes else None
    if early_size is not None and last_size is not None:
        for part in ("checkpoints", "delta_logs", "tables"):
            add(f"{part}_mb_early", _mb(early_size, part))
            add(f"{part}_mb_last", _mb(last_size, part))
        span_h = (last_size["at_s"] - early_size["at_s"]) / 3600
        if span_h > 0:
            add("checkpoints_mb_per_hour", round((_mb(last_size, "checkpoints") - _mb(early_size, "checkpoints"))
                                                 / span_h, 2), note="growth after the early window")
            logs = _files(last_size, "delta_logs") - _files(early_size, "delta_logs")
            add("data_files_per_hour", round((_files(last_size) - _files(early_size) - logs) / span_h),
                note="on disk, every table: a file a MERGE replaced stays until a VACUUM")
            add("delta_log_files_per_hour", round(logs / span_h), note="commits, their checksums, checkpoints")
    return figures


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def batch_windows(results: dict[str, Any], step_s: float) -> list[dict[str, Any]]:
    """Per window of `step_s` seconds of the soak's clock, per step (ingest, reconstruct): the micro-batches that
    ended in it, their mean seconds and their mean files or rebalances; [] when the run's lines give no seconds or
    the results no clock start."""
    started = results.get("clock_started")
    batches = results.get("batches") or {}
    if not started or not any(len(b) > 3 and b[3] is not None for rows in batches.values() for b in rows):
        return []
    t0 = dt.datetime.fromisoformat(started)
    out: list[dict[str, Any]] = []
    for i in range(round(results["minutes"] * 60 / step_s)):
        window: dict[str, Any] = {"start_s": i * step_s}
        for step, rows in batches.items():
            mine = []
            for at, _, count, seconds, *_ in rows:
                ended = dt.datetime.combine(t0.date(), dt.time.fromisoformat(at))
                if ended < t0 - dt.timedelta(hours=1):
                    ended += dt.timedelta(days=1)  # the run went past midnight
                if seconds is not None and i * step_s <= (ended - t0).total_seconds() < (i + 1) * step_s:
                    mine.append((count, seconds))
            window[step] = {"batches": len(mine),
                            "mean_s": _rounded(statistics.mean(s for _, s in mine)) if mine else None,
                            "mean_rows": _rounded(statistics.mean(c for c, _ in mine)) if mine else None}
        out.append(window)
    return out


def soak_markdown(results: dict[str, Any]) -> str:
    """The figures, then one row per tenth of the run: probes, latency, memory and sizes."""
    minutes, probes = results["minutes"], results["probes"]
    lines = [f"# Soak: a continuous run for {minutes:g} minutes, a landing every {results['every_s']:g} s",
             "", f"Started {results['started_at']}; {results['machine'].get('nproc')} cores; other processes kept "
             f"{results['other_cpu_share']:.0%} of the cores busy. Stop: {results['stop']}", "",
             "| figure | value | bound | met | note |", "|---|---|---|---|---|"]
    for f in results["figures"]:
        lines.append(f"| {f['name']} | {_fmt(f['value'])} | {_fmt(f['bound'])} | {_fmt(f['met'])} | {f['note']} |")
    lines += ["", "| minutes | probes | row p50 / p95 s | alert p95 s | memory peak MB | checkpoints MB | "
              "Delta logs MB | tables MB | files (all tables, logs included) |",
              "|---|---|---|---|---|---|---|---|---|"]
    step, watched = minutes * 6, results.get("watched_s") or minutes * 60
    for start in [i * step for i in range(10)]:
        rows = _latencies(probes, "row_s", start, start + step, watched)
        alerts = _latencies(probes, "alert_s", start, start + step, watched)
        mem = [mb for at, mb in results["memory_mb"] if start <= at < start + step]
        size = _sample_at(results["sizes"], start + step)
        sizes = [_fmt(_mb(size, p)) for p in ("checkpoints", "delta_logs", "tables")] + [_fmt(_files(size))] \
            if size else ["-"] * 4
        median = _rounded(statistics.median(rows)) if rows else None
        lines.append(f"| {start / 60:g}-{(start + step) / 60:g} | {len(rows)} | {_fmt(median)} / "
                     f"{_fmt(_rounded(p95(rows)))} | {_fmt(_rounded(p95(alerts)))} | {_fmt(max(mem, default=None))} | "
                     + " | ".join(sizes) + " |")
    per_window = batch_windows(results, step)
    if per_window:
        lines += ["", "Micro-batches ending in each tenth: how many, their mean seconds, and their mean files (ingest) "
                  "or rebalances rebuilt (reconstruct). In a one-stream run each batch ingests, then rebuilds: its "
                  "two parts are counted and timed apart, and a batch lasts about their sum.", "",
                  "| minutes | reconstruct batches | mean s | rebalances per batch | ingest batches | mean s | "
                  "files per batch |", "|---|---|---|---|---|---|---|"]
        for w in per_window:
            r, i = w.get("reconstruct", {}), w.get("ingest", {})
            lines.append(f"| {w['start_s'] / 60:g}-{(w['start_s'] + step) / 60:g} | {r.get('batches', 0)} | "
                         f"{_fmt(r.get('mean_s'))} | {_fmt(r.get('mean_rows'))} | {i.get('batches', 0)} | "
                         f"{_fmt(i.get('mean_s'))} | {_fmt(i.get('mean_rows'))} |")
    return "\n".join(lines) + "\n"
