"""Which groups an ingest batch's files touch: the groups the reconstruct stream then rebuilds from their history."""

from __future__ import annotations

import datetime as dt

from pipelines.flow.reconstruct import touched_groups

EVENTS = ("event_id string, source_file string, instance string, source_kind string, group_id string, "
          "event_type string, event_ts timestamp, batch_id long")
FILES = "source_file string, instance string, event_lines long, gc_pause_lines long, batch_id long"
T = dt.datetime(2026, 11, 20, 10, 0, 0)


def _groups(spark, events, files, *, later: tuple[str, ...] = ()) -> list[str]:
    """touched_groups of `files` (ingest batch 1) over `events`: those of the files are batch 1's, those of the
    files in `later` batch 2's (landed, not yet reconstructed), the others earlier ones'."""
    names = {f[0] for f in files}
    batch = [(*e, 2 if e[1] in later else 1 if e[1] in names else 0) for e in events]
    touched = touched_groups(spark.createDataFrame([(*f, 1) for f in files], FILES),
                             spark.createDataFrame(batch, EVENTS))
    return sorted(r.group_id for r in touched.collect())


def _touched(spark, files) -> list[str]:
    return _groups(spark, [
        ("e1", "h1/app.log", "h1", "client", "orders", "member_joined", T),
        ("e2", "h2/app.log", "h2", "client", "billing", "member_joined", T),
        ("e3", "b1/server.log", "b1", "broker", "search", "rebalance_started", T),
    ], files)


def test_a_file_with_events_touches_their_groups(spark):
    assert _touched(spark, [("b1/server.log", "b1", 1, 0)]) == ["search"]


def test_a_gc_log_touches_the_groups_with_members_in_its_folder(spark):
    # A member's GC log names no group: its pauses explain the groups that member belongs to.
    assert _touched(spark, [("h1/gc.log", "h1", 0, 3)]) == ["orders"]


def test_a_file_that_typed_nothing_touches_no_group(spark):
    # Application lines in a member's folder cannot change gold: replaying the folder's groups would be for nothing.
    assert _touched(spark, [("h1/app-2.log", "h1", 0, 0), ("h2/app-2.log", "h2", 0, 0)]) == []


def _touched_with(spark, extra, files, *, later: tuple[str, ...] = ()) -> list[str]:
    return _groups(spark, [
        ("e1", "h1/app.log", "h1", "client", "orders", "member_joined", T),
        ("e3", "b1/server.log", "b1", "broker", "search", "rebalance_started", T),
        *extra,
    ], files, later=later)


def test_a_line_naming_no_group_touches_the_group_its_process_names(spark):
    bare = ("e4", "h1/app-2.log", "h1", "client", None, "client_partitions_assigned", T)
    assert _touched_with(spark, [bare], [("h1/app-2.log", "h1", 1, 0)]) == ["orders"]


def test_a_process_naming_no_group_touches_its_own_group_until_it_names_one(spark):
    # h3 names no group and no coordinator line is near its warning (an hour later than b1's line): its own group.
    later = T + dt.timedelta(hours=1)
    warning = ("e5", "h3/app.log", "h3", "client", None, "client_poll_timeout", later)
    assert _touched_with(spark, [warning], [("h3/app.log", "h3", 1, 0)]) == ["(group of h3)"]
    # Its first line naming a group: the warning moves there, and its own group is rebuilt (to nothing).
    named = ("e6", "h3/app-2.log", "h3", "client", "payments", "member_joined", later)
    assert _touched_with(spark, [warning, named], [("h3/app-2.log", "h3", 1, 0)]) == ["(group of h3)", "payments"]
    # A coordinator's line near the warning: the warning goes to the coordinator's group, its own group gives it up.
    near = ("e7", "b1/server.log.1", "b1", "broker", "payments", "rebalance_started", later)
    assert _touched_with(spark, [warning, near], [("b1/server.log.1", "b1", 1, 0)]) == ["(group of h3)", "payments"]


def test_a_process_new_bare_line_near_an_earlier_coordinator_line_rebuilds_its_own_group(spark):
    # h4's first warning, two hours before b1's line, made its own group; its new one comes five seconds before b1's
    # line (the coordinator acting on it): the coordinator's view replaces the own group, which must be rebuilt (to
    # nothing), and the warning goes to b1's group.
    old = ("e8", "h4/app.log", "h4", "client", None, "client_poll_timeout", T - dt.timedelta(hours=2))
    new = ("e9", "h4/app-2.log", "h4", "client", None, "client_session_timeout", T - dt.timedelta(seconds=5))
    assert _touched_with(spark, [old, new], [("h4/app-2.log", "h4", 1, 0)]) == ["(group of h4)", "search"]


def test_a_later_batch_already_in_silver_does_not_hide_the_own_group_this_batch_ends(spark):
    # h5 named no group until app-2 (batch 1); app-3 (batch 2, landed while the reconstruct stream is behind) names
    # one too. Rebuilding batch 1, h5's own group still ends here: app-3 is later, not earlier.
    warning = ("e10", "h5/app.log", "h5", "client", None, "client_poll_timeout", T + dt.timedelta(hours=3))
    named = ("e11", "h5/app-2.log", "h5", "client", "orders", "member_joined", T + dt.timedelta(hours=4))
    again = ("e12", "h5/app-3.log", "h5", "client", "orders", "member_joined", T + dt.timedelta(hours=5))
    assert _touched_with(spark, [warning, named, again], [("h5/app-2.log", "h5", 1, 0)],
                         later=("h5/app-3.log",)) == ["(group of h5)", "orders"]
