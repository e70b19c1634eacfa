"""bench.jobs: a run's Spark jobs per micro-batch and kind, read from an event log shaped as Spark 4 writes it."""

from __future__ import annotations

import json

from bench.jobs import batches_of, job_kind, log_files, main, summary

STREAM = "ingest\nid = a5c6676c-faff-4578-9597-489eea30049e\nrunId = 19fad4ac-dcc0-42be-bef6-e69ba9d34352\n"


def _job(job_id: int, start_ms: int, end_ms: int, description: str | None, stage: str,
         step: str | None = None) -> list[str]:
    """The start and end lines of one job, with the fields Spark's event log gives them (`step`: the pipeline's
    local property naming its step)."""
    properties = {"spark.job.description": description} if description is not None else {}
    if step is not None:
        properties["rebalance.step"] = step
    start = {"Event": "SparkListenerJobStart", "Job ID": job_id, "Submission Time": start_ms,
             "Stage Infos": [{"Stage ID": job_id, "Stage Name": stage}], "Properties": properties}
    end = {"Event": "SparkListenerJobEnd", "Job ID": job_id, "Completion Time": end_ms,
           "Job Result": {"Result": "JobSucceeded"}}
    return [json.dumps(start), json.dumps(end)]


LOG = [
    json.dumps({"Event": "SparkListenerApplicationStart", "App Name": "rebalance-run"}),
    *_job(1, 1_000, 1_050, STREAM + "batch = 15", "localCheckpoint at <unknown>:0", "reconstruct: replay"),
    *_job(2, 1_060, 1_100, STREAM + "batch = 15 - MERGE operation - scanning files for matches",
          "$anonfun$withThreadLocalCaptured$2 at CompletableFuture.java:1768", "reconstruct: merge gold_rebalances"),
    *_job(3, 1_100, 1_140, "Delta: " + STREAM + "batch = 15: Filtering files for query", "call at clientserver.py",
          "reconstruct: replay"),
    *_job(4, 1_150, 1_400, "Delta: Delta: " + STREAM + "batch = 15: Compute snapshot for version: 30", "x"),
    *_job(5, 2_000, 2_500, STREAM + "batch = 16", "save at <unknown>:0"),
    *_job(6, 3_000, 3_100, None, "$anonfun$recordDeltaOperationInternal$1 at DatabricksLogging.scala:128"),
]


def test_each_job_is_counted_in_its_batch_by_kind_and_the_rest_apart(tmp_path):
    batches, outside = batches_of(LOG)
    assert sorted(batches) == [("ingest", 15), ("ingest", 16)]
    b15 = batches[("ingest", 15)]
    assert dict(b15.jobs) == {"pin": 1, "merge: find touched files": 1, "delta file listing": 1, "delta snapshot": 1}
    assert b15.wall_s == 0.4
    assert dict(outside.jobs) == {"query": 1}
    result = summary(batches, outside)
    assert result["streams"]["ingest"]["batches"] == 2
    assert result["streams"]["ingest"]["jobs_mean"] == 2.5
    assert result["streams"]["ingest"]["kinds"]["append"] == {"jobs_mean": 0.5, "job_seconds_mean": 0.25}


def test_a_rolling_log_is_read_in_the_order_of_its_parts(tmp_path, capsys):
    folder = tmp_path / "events" / "eventlog_v2_local-1"
    folder.mkdir(parents=True)
    (folder / "events_10_local-1").write_text("\n".join(LOG[7:]) + "\n")
    (folder / "events_2_local-1").write_text("\n".join(LOG[:7]) + "\n")
    assert [p.name for p in log_files(tmp_path / "events")] == ["events_2_local-1", "events_10_local-1"]
    assert main([str(tmp_path / "events")]) == 0
    out = capsys.readouterr().out
    assert "## ingest: 2 micro-batches" in out
    assert "| delta snapshot | 0.5 | 0.125 |" in out


def test_a_log_without_batches_or_a_missing_path_says_so(tmp_path, capsys):
    empty = tmp_path / "app.log"
    empty.write_text(LOG[0] + "\n")
    assert main([str(empty)]) == 1
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_delta_names_its_own_jobs_and_the_first_stage_names_the_rest():
    assert job_kind(" - MERGE operation - materialize source", "") == "merge: materialize source"
    assert job_kind(": Writing modified data - MERGE operation - Rewriting 1 files", "") == "merge: rewrite files"
    assert job_kind("", "collectToPython at <unknown>:0") == "query"


def test_one_batch_is_listed_job_by_job_with_the_waits_between_them(tmp_path, capsys):
    """`--batch 15`: the four jobs in order, each with its start, length and the wait since the jobs before it had
    ended; the header sums the time some job ran and the time none did; a batch the log lacks is named."""
    log = tmp_path / "app.log"
    log.write_text("\n".join(LOG) + "\n")
    assert batches_of(LOG)[0][("ingest", 15)].busy_s() == 0.38
    assert main([str(log), "--batch", "15"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## ingest batch 15: 4 jobs, 0.40 s from first job to last, jobs running 0.38 s, "
                          "none running 0.02 s")
    rows = [line for line in out.splitlines() if line.startswith("| 0.")]
    assert rows == [
        "| 0.00 | 0.050 | 0.000 | reconstruct: replay | pin | localCheckpoint at <unknown>:0 |",
        "| 0.06 | 0.040 | 0.010 | reconstruct: merge gold_rebalances | merge: find touched files | "
        "MERGE operation - scanning files for matches |",
        "| 0.10 | 0.040 | 0.000 | reconstruct: replay | delta file listing | Filtering files for query |",
        "| 0.15 | 0.250 | 0.010 | (no step named) | delta snapshot | Compute snapshot for version: 30 |",
    ]
    assert main([str(log), "--batch", "99"]) == 1
    assert "no batch 99 in this log (it has ingest 15 to ingest 16)" in capsys.readouterr().err


def test_each_batch_is_split_by_the_step_that_started_its_jobs(tmp_path, capsys):
    """A step's jobs, their seconds and its span (first job's start to last job's end, the waits between its jobs
    included); the summary takes the mean over the stream's batches (a batch without the step counts as none) and
    prints the steps in the order they began."""
    batches, outside = batches_of(LOG)
    steps = batches[("ingest", 15)].by_step()
    assert list(steps) == ["reconstruct: replay", "reconstruct: merge gold_rebalances", "(no step named)"]
    assert steps["reconstruct: replay"] == {"jobs": 2, "job_seconds": 0.09, "span_s": 0.14}
    assert steps["reconstruct: merge gold_rebalances"] == {"jobs": 1, "job_seconds": 0.04, "span_s": 0.04}
    result = summary(batches, outside)
    assert result["streams"]["ingest"]["steps"]["reconstruct: replay"] == {
        "jobs_mean": 1.0, "job_seconds_mean": 0.045, "span_s_mean": 0.07}
    log = tmp_path / "app.log"
    log.write_text("\n".join(LOG) + "\n")
    assert main([str(log)]) == 0
    assert "| reconstruct: replay | 1.0 | 0.045 | 0.07 |" in capsys.readouterr().out
