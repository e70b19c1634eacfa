"""What the end of a run says, from what its micro-batches recorded (no Spark: the rows as the batches collect them)."""

from __future__ import annotations

import datetime as dt

from pipelines.flow.found import Found, by_group_and_cause, findings, unread_lines

T0 = dt.datetime(2026, 11, 20, 8, 0)


def _found() -> Found:
    found = Found(first_batch=3)
    found.add_rows("gold_rebalances", [
        {"rebalance_id": f"r{i}", "group_id": g, "cause": c, "started_at": T0 + dt.timedelta(minutes=i),
         "duration_ms": ms, "incident_id": "i1" if g == "payments" else "i2"}
        for i, (g, c, ms) in enumerate((("payments", "membership_change", 9022),
                                        ("payments", "membership_change", 3000),
                                        ("payments", "poll_timeout", 2400), ("orders", "gc_pause", None)))])
    found.add_rows("gold_incidents", [
        {"incident_id": "i1", "group_id": "payments", "started_at": T0, "ended_at": T0 + dt.timedelta(seconds=182),
         "rebalances": 3, "unavailable_ms": 14422, "root_cause": "membership_change"},
        {"incident_id": "i2", "group_id": "orders", "started_at": T0, "ended_at": None, "rebalances": 1,
         "unavailable_ms": None, "root_cause": "gc_pause"}])
    found.unread = {"quarantined:no_template": 57, "quarantined:truncated_gzip": 1, "late_events": 4}
    return found


def test_the_table_sums_each_group_and_cause_in_readable_durations():
    assert by_group_and_cause(list(_found().rebalances.values())) == [
        ["orders", "gc_pause", 1, "-", "-", "2026-11-20 08:03:00"],
        ["payments", "membership_change", 2, "12.0 s", "9.0 s", "2026-11-20 08:00:00"],
        ["payments", "poll_timeout", 1, "2.4 s", "2.4 s", "2026-11-20 08:02:00"]]


def test_the_findings_name_the_causes_the_time_lost_and_the_worst_incident():
    assert findings(_found()) == [
        "This run added or changed 4 rebalances in 2 groups (membership_change 2, gc_pause 1, poll_timeout 1); "
        "14.4 s without consuming in all.",
        "Worst incident: 3 rebalances of payments in 3 min 2 s, 14.4 s without consuming; root cause "
        "membership_change, from 2026-11-20 08:00:00 UTC."]
    assert findings(Found()) == ["No new or changed rebalances in this run."]


def test_each_kind_of_unread_input_has_the_command_that_lists_it():
    sql = "rebalance sql --lakehouse /lake"
    assert unread_lines(_found(), sql=sql) == [
        f'4 events later than the allowed lateness (their groups were rebuilt): {sql} "SELECT source_file, '
        'late_events FROM silver_accounting WHERE late_events > 0 AND batch_id >= 3"',
        f"57 quarantined as no_template: {sql} \"SELECT source_file, line_no, raw FROM silver_quarantine WHERE "
        "reason = 'no_template' AND batch_id >= 3 ORDER BY source_file, line_no\"",
        f"1 quarantined as truncated_gzip: {sql} \"SELECT source_file, line_no, raw FROM silver_quarantine WHERE "
        "reason = 'truncated_gzip' AND batch_id >= 3 ORDER BY source_file, line_no\""]
