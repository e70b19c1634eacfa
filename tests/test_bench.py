"""The benchmark's quick mode end to end on tiny data: every results file is written with every figure.

No timing is asserted here (STYLE.md: speed is measured by `python -m bench`, as ratios, not guessed in tests)."""

from __future__ import annotations

import json
import math
import os
import signal
import time

import pytest

from bench.runner import Options, run_benchmark

FIGURES = {
    "parse_us_per_added_line", "parse_fixed_s",
    "spark_parse_vs_python_x4", "parse_vs_baseline", "floor_vs_baseline", "parse_vs_floor", "parse_vs_baseline_x4",
    "floor_vs_baseline_x4",
    "run_vs_count_x1", "spark_parse_vs_python", "spark_parse_vs_python_prefiltered", "scaling_4x_over_1x",
    "latency_p95_s", "latency_p50_s", "latency_one_vs_two_streams", "alert_latency_p95_s", "alert_latency_p50_s",
    "driver_memory_4x_over_1x",
    "run_us_per_added_line", "run_fixed_s",
}
SPARK_STAGES = {"baseline_count_x1", "baseline_count_x4", "warmup_pipeline_tiny", "parse_x1", "ingest_floor_x1",
                "parse_x4", "ingest_floor_x4", "latency_two_streams", "latency"}
PYTHON_STAGES = {"python_regex_x1", "python_regex_prefiltered_x1", "python_regex_x4"}
PROCESS_STAGES = {"count_process_x1", "pipeline_process_x1", "pipeline_process_x4"}
MACHINE = {"nproc", "memory_gb", "cpu_model", "python", "java", "pyspark", "delta_spark"}


@pytest.mark.slow
def test_quick_benchmark_writes_every_figure(spark, tmp_path):
    out = tmp_path / "results"
    opts = Options(lines=4_000, mode="quick", out=out, work=tmp_path / "work", groups=2, probes=2,
                   history=False)
    run_benchmark(opts, spark=spark, say=lambda _message: None)

    assert not spark.streams.active
    assert not (tmp_path / "work").exists()
    written = sorted(p.name for p in out.iterdir())
    assert "latest.json" in written and "latest.md" in written
    assert len([n for n in written if n.endswith("-quick.json")]) == 1
    assert len([n for n in written if n.endswith("-quick.md")]) == 1

    results = json.loads((out / "latest.json").read_text(encoding="utf-8"))
    assert {f["name"] for f in results["figures"]} == FIGURES
    for figure in results["figures"]:
        assert isinstance(figure["value"], (int, float)) and math.isfinite(figure["value"]), figure
        assert figure["met"] in (True, False, None)
    assert set(results["stages"]) == SPARK_STAGES | PYTHON_STAGES | PROCESS_STAGES
    for name in SPARK_STAGES:
        assert results["stages"][name]["memory"]["driver_mb"] > 0, name
        assert results["stages"][name]["memory"]["jvm_mb"] > 0, name
    for name in PYTHON_STAGES | PROCESS_STAGES:
        assert results["stages"][name]["memory"]["process_mb"] > 0, name
    for size in ("x1", "x4"):  # a whole run per size, on its own lakehouse: every step reported
        steps = results["stages"][f"pipeline_process_{size}"]["steps"]
        assert {"ingest", "reconstruct", "quality", "alerts"} <= set(steps), steps
    assert len(results["stages"]["latency"]["probes_s"]) == 2
    assert len(results["stages"]["latency"]["alert_probes_s"]) == 2
    for size in ("x1", "x4"):
        floor, parse = results["stages"][f"ingest_floor_{size}"], results["stages"][f"parse_{size}"]
        assert floor["lines_counted"] == results["datasets"][size]["lines"] == floor["lines"]  # it read every line
        assert parse["silver_events"] > 0, size
    assert {k for k, v in results["machine"].items() if v} >= MACHINE
    assert results["datasets"]["x4"]["lines"] > results["datasets"]["x1"]["lines"]

    page = (out / "latest.md").read_text(encoding="utf-8")
    for name in FIGURES | SPARK_STAGES | PYTHON_STAGES | PROCESS_STAGES:
        assert f"| {name} |" in page, name


def test_history_bench_reads_the_step_times_a_run_prints():
    from bench.history import run_steps
    from pipelines.flow.run import RunSummary

    summary = RunSummary(seconds={"spark start": 4.81, "setup": 16.56, "ingest": 28.3, "alerts": 6.2})
    output = f"[05:01:02] ingest batch 1: 7 files\nrun finished: nothing new to process\n{summary.time_line()}\n"
    assert run_steps(output) == {"spark start": 4.8, "setup": 16.6, "ingest": 28.3, "alerts": 6.2}
    assert run_steps("run finished: nothing new to process\n") == {}


def test_the_scaling_figures_are_the_fit_through_1x_and_4x_and_history_adds_its_targets():
    from bench.report import figures

    def stage(seconds, lines, **more):
        return {"seconds": seconds, "lines": lines, "lines_per_s": lines / seconds, **more}

    stages = {"baseline_count_x1": stage(1.0, 1000), "baseline_count_x4": stage(2.0, 4000),
              "parse_x1": stage(12.0, 1000), "parse_x4": stage(18.0, 4000), "ingest_floor_x1": stage(3.0, 1000),
              "ingest_floor_x4": stage(4.0, 4000), "count_process_x1": stage(6.0, 1000),
              "python_regex_x1": stage(0.5, 1000),
              "python_regex_prefiltered_x1": stage(0.2, 1000), "python_regex_x4": stage(2.0, 4000),
              "latency": {"p95_s": 9.0, "p50_s": 5.0, "probes": 3, "timeouts": 0, "trigger": "1 second",
                          "alert_p95_s": 12.0, "alert_p50_s": 7.0, "alert_timeouts": 0},
              "pipeline_process_x1": stage(60.0, 1000, memory={"process_mb": 1000.0}),
              "pipeline_process_x4": stage(66.0, 4000, memory={"process_mb": 1600.0})}
    found = {f.name: f for f in figures(stages)}
    # Memory is judged on a process per size, not on one session that ran the smaller size first.
    assert found["driver_memory_4x_over_1x"].value == pytest.approx(1.6)
    assert found["driver_memory_4x_over_1x"].met is False
    assert found["scaling_4x_over_1x"].value == pytest.approx(1.1)  # the two processes: 66 s / 60 s
    assert found["run_vs_count_x1"].value == pytest.approx(10.0) and found["run_vs_count_x1"].met is False
    assert found["run_fixed_s"].value == pytest.approx(58.0)
    assert found["run_us_per_added_line"].value == pytest.approx(2000.0)
    assert found["parse_us_per_added_line"].value == pytest.approx(2000.0)  # 6 s over 3,000 more lines
    assert found["parse_fixed_s"].value == pytest.approx(10.0)
    assert found["spark_parse_vs_python_x4"].met is False and found["parse_vs_baseline"].met is None
    assert "increment_vs_count_long" not in found
    assert found["alert_latency_p95_s"].value == 12.0 and found["alert_latency_p95_s"].met is False

    estate = {"hours": 4.0, "history_lines": 10, "increment_lines": 5}
    history = {"short": estate, "long": {**estate, "hours": 720.0},
               "figures": {"increment_vs_count_short": 2.5, "increment_vs_count_long": 3.5,
                           "increment_long_over_short": 1.1, "rerun_vs_count_long": 1.5, "memory_long_over_short": 1.0}}
    met = {f.name: f.met for f in figures(stages, history)}
    assert (met["increment_vs_count_short"], met["increment_vs_count_long"]) == (True, False)
    assert met["increment_long_over_short"] and met["rerun_vs_count_long"] and met["memory_long_over_short"] is None


def test_a_measured_command_counts_the_cpu_of_children_that_outlive_it(tmp_path):
    # A `rebalance run` leaves its JVM to end after it; nobody here reaps that JVM, so its CPU must be sampled, or
    # the benchmark would call its own work other processes' load.
    import sys

    from bench.history import measure_process

    orphan = ("import time\nstart = time.process_time()\nwhile time.process_time() - start < 0.6: pass\n"
              "time.sleep(1.5)\n")
    parent = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {orphan!r}])\ntime.sleep(2.5)\n"
    measured = measure_process([sys.executable, "-c", parent], cwd=tmp_path)
    assert measured.descendants_cpu_s >= 0.4  # sampled every 0.2 s until it ended


def test_a_process_tree_counts_pages_its_forks_share_once(tmp_path):
    # Spark's Python workers are forks of one daemon, and the JVM's shell commands start as images of the JVM:
    # summing each process's resident size counted the shared pages once per process.
    import subprocess
    import sys

    from bench.memory import MB, descendants, rss_bytes, tree_bytes

    ready = tmp_path / "ready"
    script = (
        "import os, sys, time\n"
        "block = bytearray(200 * 1024 * 1024)\n"
        "for i in range(0, len(block), 4096): block[i] = 1\n"
        "if os.fork() == 0:\n"
        "    time.sleep(30)\n"
        "    os._exit(0)\n"
        f"open({str(ready)!r}, 'w').close()\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 20
        while not (ready.exists() and descendants(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        summed = sum(rss_bytes(pid) for pid in {proc.pid} | descendants(proc.pid)) / MB
        counted = tree_bytes(proc.pid) / MB
        assert summed > 400  # the parent's 200 MB, and the child's view of the same pages
        assert 200 < counted < 300
    finally:
        for pid in descendants(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()


def _scale_run(lines: int, seconds: float, peak_mb: float, increment_s: float) -> dict:
    return {"files": 10, "lines": lines, "us_per_line": round(seconds * 1e6 / lines, 2),
            "work_us_per_line": round(seconds * 0.8e6 / lines, 2), "replay_share": 0.1,
            "day": {"seconds": seconds, "peak_mb": peak_mb}, "increment_files": 2, "increment_lines": 50,
            "increment": {"seconds": increment_s, "peak_mb": peak_mb}}


def test_the_scale_figures_compare_the_full_estate_with_its_quarter_and_the_hour():
    from bench.scale import markdown, parse_args, scale_figures

    runs = {"quarter": _scale_run(1_000_000, 100.0, 2_000.0, 60.0), "full": _scale_run(4_000_000, 520.0, 3_000.0,
                                                                                       75.0),
            "hour": _scale_run(200_000, 50.0, 1_800.0, 50.0)}
    figures = {**scale_figures(runs["quarter"], runs["full"]), "increment_day_over_hour": 1.5}
    assert figures == {"us_per_line_full_over_quarter": 1.3, "driver_memory_full_over_quarter": 1.5,
                       "increment_day_over_hour": 1.5}
    shape = {"groups": 300, "brokers": 50, "hours": 24.0, "increment_hour": "2026-11-21-05", "increment_rebalances": 7}
    table = markdown({"estates": {"quarter": shape, "full": shape}, "local": runs, "figures": figures})
    assert "| local us_per_line_full_over_quarter | 1.3 | <= 1.3 | yes |" in table
    assert "| local driver_memory_full_over_quarter | 1.5 | <= 1.3 | **no** |" in table
    assert table.count("| local | ") == 3
    assert "| local | hour: 300 groups, 50 brokers, 1 h of history | 10 | 200,000 | 50.0 | 250.0 (200.0) |" in table
    assert "| 2026-11-21-05, 7, 2, 50, 50.0 |" in table
    opts = parse_args(["--groups", "40", "--brokers", "4", "--no-cluster"])
    assert (opts.groups, opts.brokers, opts.cluster, opts.hours) == (40, 4, False, 24.0)
    with pytest.raises(SystemExit):
        parse_args(["--density", "0"])


def test_the_increment_after_an_hour_keeps_the_last_hour_of_history_and_the_gc_logs_that_reach_it(tmp_path):
    from bench.dataset import last_hours

    files = [tmp_path / "broker-1" / f"server.log.2026-11-20-{h:02d}" for h in (8, 9, 10)]
    files += [tmp_path / "svc-0" / f"consumer.log.2026-11-20-{h:02d}" for h in (9, 10)]
    gc = {"gc.log.0": "[2026-11-20T08:00:01.000+0000][0.009s][info][gc] Using G1\n"
                      "[2026-11-20T09:59:59.000+0000][7199s][info][gc] GC(9) Pause Young 10M->5M(64M) 3.0ms\n",
          "gc.log.1": "[2026-11-20T10:00:02.000+0000][0.009s][info][gc] Using G1\n",
          "gc.log.2": "0.009: [GC pause (G1 Evacuation Pause) (young) 10M->5M(64M), 0.003 secs]\n"}
    (tmp_path / "svc-0").mkdir()
    for name, text in gc.items():
        (tmp_path / "svc-0" / name).write_text(text)
        files.append(tmp_path / "svc-0" / name)
    kept = last_hours(files, 1)
    # The JVM run that ended before the kept hour is the older history's; a log without times is kept.
    assert [p.name for p in kept] == ["server.log.2026-11-20-10", "consumer.log.2026-11-20-10", "gc.log.1", "gc.log.2"]
    assert "gc.log.0" in {p.name for p in last_hours(files, 2)}


def test_the_increment_is_the_latest_hour_of_the_second_half_where_most_rebalances_start(tmp_path):
    import json

    from bench.dataset import increment_hour, split_at

    landing = tmp_path / "landing"
    for folder, name in [("broker-1", f"server.log.2026-11-20-{h:02d}") for h in range(8, 16)] + [
            ("svc-0", f"consumer.log.2026-11-20-{h:02d}") for h in range(8, 16)] + [("svc-0", "gc.log")]:
        (landing / folder).mkdir(parents=True, exist_ok=True)
        (landing / folder / name).write_text("x\n")
    truth = tmp_path / "rebalances.jsonl"
    # 09:00 is the busiest hour of all, but not in the second half (12-15); 12:00 and 13:00 tie: the later wins.
    starts = ["09:01", "09:02", "09:03", "12:10", "12:20", "13:05", "13:06", "15:59"]
    truth.write_text("".join(json.dumps({"started_at": f"2026-11-20T{s}:00.000Z"}) + "\n" for s in starts))
    assert increment_hour(truth, landing) == ("2026-11-20-13", 2)
    # Within the last hours only (the history benchmark: the estate's last incident cycles).
    assert increment_hour(truth, landing, within=2) == ("2026-11-20-15", 1)
    history, increment = split_at(landing, "2026-11-20-13")
    assert sorted(p.name for p in increment) == ["consumer.log.2026-11-20-13", "server.log.2026-11-20-13"]
    assert "gc.log" in {p.name for p in history} and "server.log.2026-11-20-12" in {p.name for p in history}
    assert not {p.name for p in history} & {"server.log.2026-11-20-14", "consumer.log.2026-11-20-15"}
    # A GC log of a JVM run that started at or after the increment is neither history nor increment.
    (landing / "svc-0" / "gc.log.3").write_text("[2026-11-20T14:10:00.000+0000][0.009s][info][gc] Using G1\n")
    (landing / "svc-0" / "gc.log.2").write_text("[2026-11-20T12:10:00.000+0000][0.009s][info][gc] Using G1\n"
                                                "[2026-11-20T14:05:00.000+0000][7000s][info][gc] GC(3) Pause\n")
    history, increment = split_at(landing, "2026-11-20-13")
    assert {"gc.log.2", "gc.log"} <= {p.name for p in history} and "gc.log.3" not in {p.name for p in history}
    # Leaving out the first hours: an increment needs hours before it (and an estate with none to time is an error).
    assert increment_hour(truth, landing, within=8, after=5) == ("2026-11-20-13", 2)
    with pytest.raises(ValueError):
        increment_hour(truth, landing, within=2, after=8)


def test_the_soak_compares_the_last_window_with_the_early_one_and_counts_a_lost_probe_as_its_wait():
    from bench.soak_report import soak_figures, soak_markdown

    # A 6-minute soak: latency windows are minutes 0-1 and 5-6, memory minutes 0.5-1.5 against 5-6.
    probes = [{"group": f"g{n}", "landed_s": n * 30.0, "row_s": 10.0, "alert_s": 12.0} for n in range(12)]
    probes[-1].update(row_s=None, alert_s=None)  # landed at 330 s, never seen: watched until 420 s, so 90 s
    memory = [(float(t), 1000.0 if t < 300 else 1300.0) for t in range(0, 360, 5)]
    sizes = [{"at_s": float(t), "checkpoints": {"ingest": (1024 * 1024 * (1 + t / 60), 10)},
              "delta_logs": {"gold_rebalances": (2048, 3)}, "tables": {"gold_rebalances": (4096, 5 + t)},
              "alert_feed_bytes": 0} for t in range(0, 360, 30)]
    found = {f["name"]: f for f in soak_figures(6.0, probes, memory, sizes, watched_s=420.0)}
    assert found["latency_p95_first_s"]["value"] == 10.0
    assert found["latency_p95_last_s"]["value"] == pytest.approx(86.0)  # 10 s and the lost probe's 90 s
    assert found["latency_p95_last_over_first"]["met"] is False
    assert found["memory_last_over_early"]["value"] == pytest.approx(1.3)
    assert found["memory_last_over_early"]["met"] is False
    assert (found["probes_without_row"]["value"], found["probes_without_row"]["met"]) == (1, False)
    assert found["checkpoints_mb_per_hour"]["value"] == pytest.approx(60.0)  # 1 MB a minute
    assert found["data_files_per_hour"]["value"] == 3600 and found["delta_log_files_per_hour"]["value"] == 0
    results = {"minutes": 6.0, "every_s": 30.0, "watched_s": 420.0, "probes": probes, "memory_mb": memory,
               "sizes": sizes,
               "started_at": "2026-12-05T15:00:00+00:00", "machine": {"nproc": 2}, "other_cpu_share": 0.0,
               "stop": {"exit_code": 0}, "figures": list(found.values())}
    page = soak_markdown(results)
    assert "| latency_p95_last_over_first | 8.6 | 1.2 | False |" in page
    assert page.count("\n| ") == 1 + len(found) + 1 + 10  # both tables: headers, figures, ten windows
    # The run's batch lines, with their seconds, placed on the soak's clock (started 15:00:00 local time): a tenth
    # of 6 minutes is 36 s.
    from bench.soak import batch_times
    log = ["[15:00:10] ingest batch 3: 2 files, 9 lines, 9 events, 0 quarantined in 4.0 s",
           "[15:00:20] reconstruct batch 2: 30 rebalances, 1 incidents rebuilt in 7.5 s",
           "[15:00:30] reconstruct batch 3: 50 rebalances, 1 incidents rebuilt in 8.5 s",
           "[15:05:50] reconstruct batch 9: 90 rebalances, 2 incidents rebuilt in 12.0 s",
           "[15:05:55] ingest batch 8: 1 files, 3 lines, 3 events, 0 quarantined"]  # an older run's line: no seconds
    results.update(batches=batch_times(log), clock_started="2026-12-05T15:00:00")
    assert results["batches"]["ingest"][1] == ("15:05:55", 8, 1, None)
    page = soak_markdown(results)
    assert "| 0-0.6 | 2 | 8 | 40 | 1 | 4 | 2 |" in page and "| 5.4-6 | 1 | 12 | 90 | 0 | - | - |" in page
    assert page.count("\n| ") == 1 + len(found) + 1 + 10 + 1 + 10


@pytest.mark.slow
def test_a_short_soak_writes_every_figure_and_stops_the_run_cleanly(tmp_path):
    from bench import soak

    out = tmp_path / "results"
    assert soak.main(["--minutes", "1", "--every", "5", "--out", str(out), "--work", str(tmp_path / "work"),
                      "--jobs"]) == 0
    [written] = out.glob("*-soak.json")
    results = json.loads(written.read_text(encoding="utf-8"))
    figures = {f["name"]: f for f in results["figures"]}
    assert {"latency_p95_last_over_first", "alert_latency_p95_last_over_first", "memory_last_over_early",
            "checkpoints_mb_per_hour", "data_files_per_hour", "delta_log_files_per_hour"} <= set(figures)
    assert len(results["probes"]) >= 11  # one a 5 s, for a minute (a stalled turn may land the last one late)
    assert figures["probes_without_row"]["value"] == figures["probes_without_alert"]["value"] == 0
    assert results["stop"]["exit_code"] == 0 and results["stop"]["seconds"] < 60
    assert "the same command resumes" in results["stop"]["stopped_line"] and not results["stop"]["jvm_killed"]
    assert results["batches"]["ingest"] and results["batches"]["reconstruct"]
    assert all(b[3] is not None and b[3] > 0 for step in results["batches"].values() for b in step)
    assert results["memory_mb"] and all(mb > 0 for _at, mb in results["memory_mb"])
    assert written.with_suffix(".md").exists()
    # --jobs: the run's event log, summarised per micro-batch (one stream: its batches run as the ingest query)
    ingest = results["jobs"]["streams"]["ingest"]
    assert ingest["batches"] >= 1 and ingest["jobs_mean"] > 0 and "merge: find touched files" in ingest["kinds"]
    assert "Spark jobs per micro-batch" in written.with_suffix(".md").read_text(encoding="utf-8")


def test_the_feed_watcher_reads_only_whole_lines_appended_since_it_last_looked(tmp_path):
    from bench.latency import FeedWatcher

    feed = tmp_path / "alerts.jsonl"
    feed.write_text('{"group_id": "before"}\n', encoding="utf-8")
    watcher = FeedWatcher(feed)  # what was there already is not new
    with feed.open("a", encoding="utf-8") as out:
        out.write('{"group_id": "a"}\n{"group_id": "b"')  # the second line is still being written
    assert watcher.new_groups() == {"a"}
    with feed.open("a", encoding="utf-8") as out:
        out.write('}\n')
    assert watcher.new_groups() == {"b"} and watcher.new_groups() == set()
    assert FeedWatcher(tmp_path / "not-yet.jsonl").new_groups() == set()
