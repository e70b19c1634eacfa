"""Records glued onto one line (pipelines/silver/glued.py): a page that lost its line breaks, a PDF's text, a chat
export. Each record is parsed on its own, with its own time and id; the line is counted once. Lines that only quote
a time keep their text whole. One staged batch serves every test of the module."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines.silver.outputs import accounting
from tests.conftest import staged_files

JAVA = "{ts} [] [kafka-coordinator-heartbeat-thread | billing-consumers] {level} o.a.k.c.c.i.AbstractCoordinator " \
       "[markCoordinatorUnknown,780] [] - [Consumer clientId=consumer-41, groupId=billing-consumers] {msg}"
FILES = {
    # A Java consumer's log flattened into one line, one blank between records (an incident write-up's paste).
    "flattened.log": [" ".join([
        JAVA.format(ts="2026-04-10 14:36:59.291", level="INFO",
                    msg="Group coordinator 10.0.0.108:9092 (id: 2147483645 rack: null) is unavailable or invalid, "
                        "will attempt rediscovery"),
        JAVA.format(ts="2026-04-10 14:51:29.286", level="WARN",
                    msg="consumer poll timeout has expired. This means the time between subsequent calls to poll() "
                        "was longer than the configured max.poll.interval.ms."),
        JAVA.format(ts="2026-04-10 15:11:30.780", level="INFO", msg="(Re-)joining group"),
    ])],
    # Python's logging, two records on one line after a PDF's text extraction, then a line on its own.
    "python.log": ["2017-06-29 08:50:11,407 WARNING kafka.coordinator Heartbeat failed for group billing because it "
                   "is rebalancing 2017-06-29 08:50:11,508 INFO kafka.coordinator (Re-)joining group billing",
                   "2017-06-29 08:50:12,001 INFO kafka.coordinator Successfully joined group billing with "
                   "generation 7"],
    # A record whose message quotes a time of the same shape, then the next record glued to it: the cut falls
    # before the next record only (the level after the quoted time belongs to that record, not to the quote).
    "quoted.log": ["[2024-05-14 10:21:07,482] INFO [GroupCoordinator 1]: Preparing to rebalance group billing in "
                   "state PreparingRebalance with old generation 6 (__consumer_offsets-3) (reason: member left at "
                   "2024-05-14 10:21:05,000 by request) (kafka.coordinator.group.GroupCoordinator) "
                   "[2024-05-14 10:21:07,500] INFO [GroupCoordinator 1]: Stabilized group billing generation 7 "
                   "(__consumer_offsets-3) with 1 members (kafka.coordinator.group.GroupCoordinator)"],
}


@pytest.fixture(scope="module")
def staged(spark, tmp_path_factory):
    result = staged_files(spark, tmp_path_factory.mktemp("glued") / "instance-1", FILES)
    yield result
    result.unpersist()


def _rows(staged, name):
    parsed = staged.parsed.filter(F.element_at(F.split("source_file", "/"), -1) == name)
    return [(r.line_no, r.record_part, r.disposition, r.event_type, r.group_id,
             r.event_ts.strftime("%H:%M:%S") if r.event_ts else None)
            for r in parsed.orderBy("line_no", "record_part").collect()]


def test_a_flattened_log_is_read_record_by_record_each_with_its_time(staged):
    assert _rows(staged, "flattened.log") == [
        (1, 0, "event", "client_coordinator_lost", "billing-consumers", "14:36:59"),
        (1, 1, "event", "client_poll_timeout", "billing-consumers", "14:51:29"),
        (1, 2, "event", "client_joining", "billing-consumers", "15:11:30"),
    ]


def test_glued_python_records_are_cut_and_a_line_on_its_own_is_not(staged):
    rows = _rows(staged, "python.log")
    assert [(line, part) for line, part, *_ in rows] == [(1, 0), (1, 1), (2, 0)]
    assert [r[5] for r in rows] == ["08:50:11", "08:50:11", "08:50:12"]
    assert all(r[2] == "event" and r[4] == "billing" for r in rows), rows


def test_a_time_a_message_quotes_is_no_record_start(staged):
    assert [r[:4] for r in _rows(staged, "quoted.log")] == [(1, 0, "event", "rebalance_started"),
                                                             (1, 1, "event", "group_stabilized")]
    first = staged.parsed.filter(F.col("source_file").endswith("quoted.log") & (F.col("record_part") == 0)).first()
    assert first is not None and first.reason.endswith("by request")


def test_every_record_has_an_id_of_its_own_and_each_line_counts_once(staged):
    ids = [r.line_id for r in staged.parsed.select("line_id").collect()]
    assert len(ids) == len(set(ids)) == 8
    acct = accounting(staged.parsed, staged.files, batch_id=0, ingested_at=F.current_timestamp())
    totals = {r.file: (r.lines_read, r.event_lines, r.noise_lines + r.event_lines + r.quarantined_lines)
              for r in acct.select(F.element_at(F.split("source_file", "/"), -1).alias("file"), "lines_read",
                                   "noise_lines", "event_lines", "quarantined_lines").collect()}
    assert totals == {"flattened.log": (1, 1, 1), "python.log": (2, 2, 2), "quoted.log": (1, 1, 1)}
