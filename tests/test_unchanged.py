"""A re-run with nothing new leaves a stream unstarted only when its source has the fingerprint it had when the
stream last read it all and the checkpoint stands where that run left it (pipelines/flow/unchanged.py). No Spark:
the checkpoint's logs and the table's log are files, laid out here as Spark and Delta write them."""

from __future__ import annotations

from pathlib import Path

from pipelines.flow.unchanged import StreamCheck, landing_fingerprint, table_fingerprint
from pipelines.storage import inputs, lake
from tests.conftest import make_config

INGEST = inputs.INGEST_QUERY


def _batch(cfg, batch_id: int, *, query: str = INGEST, committed: bool = True) -> None:
    checkpoint = inputs.checkpoint_dir(cfg, query)
    for log in ("offsets", "commits") if committed else ("offsets",):
        (checkpoint / log).mkdir(parents=True, exist_ok=True)
        (checkpoint / log / str(batch_id)).write_text("v1\n")


def _file(root: Path, relative: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("line\n")


def _landing(cfg) -> StreamCheck:
    return StreamCheck(cfg, INGEST, landing_fingerprint(cfg))


def _after_a_run(tmp_path):
    cfg = make_config(tmp_path)
    _file(cfg.landing, "broker-1/server.log")
    _file(cfg.landing, "app-1/app.log")
    _batch(cfg, 0)
    _landing(cfg).all_read()
    return cfg


def test_the_same_files_and_checkpoint_need_no_stream(tmp_path):
    cfg = _after_a_run(tmp_path)
    said: list[str] = []
    assert _landing(cfg).unchanged(said.append)
    assert said == ["ingest: the landing holds nothing the last run did not read; the stream was not started"]
    # Files being copied in (a name starting with `.` or `_`, at any depth) are not read by the stream either.
    _file(cfg.landing, "app-1/.app.log.partial")
    _file(cfg.landing, "_staging/app-2/app.log")
    assert _landing(cfg).unchanged()


def test_the_landing_is_listed_as_spark_lists_it(tmp_path):
    cfg = _after_a_run(tmp_path)
    # Spark reads these below the landing's own entries (a partition-like name, a file in a metadata folder): each one
    # makes the stream start. It leaves out a metadata-like file name and a copy in progress by Hadoop's naming.
    for name in ("app-1/_p=1/app.log", "app-1/_metadata/app.log", "app-1/_x=1.log"):
        _file(cfg.landing, name)
        assert not _landing(cfg).unchanged(), name
        _landing(cfg).all_read()
    for name in ("app-1/_metadata.log", "app-1/app.log._COPYING_", "app.log._COPYING_"):
        _file(cfg.landing, name)
        assert _landing(cfg).unchanged(), name
    # A linked folder is read through its link, and a second link to it again; a link back up is not followed.
    elsewhere = tmp_path / "elsewhere"
    _file(elsewhere, "broker-9/server.log")
    (cfg.landing / "linked").symlink_to(elsewhere / "broker-9", target_is_directory=True)
    assert not _landing(cfg).unchanged()
    _landing(cfg).all_read()
    (elsewhere / "broker-9" / "loop").symlink_to(elsewhere / "broker-9", target_is_directory=True)
    _file(elsewhere, "broker-9/server.log.1")
    assert landing_fingerprint(cfg)["files"] == 7
    (cfg.landing / "again").symlink_to(elsewhere / "broker-9", target_is_directory=True)
    assert landing_fingerprint(cfg)["files"] == 9
    # A file name that is not UTF-8 reaches the JVM mangled and is not read: it changes nothing, and the listing
    # names it as unreadable (`rebalance check` says so).
    before = landing_fingerprint(cfg)
    unnamed = cfg.landing / "app-1" / b"caf\xe9.log".decode("utf-8", "surrogateescape")
    unnamed.write_text("line\n")
    assert {**landing_fingerprint(cfg), "unnamed": 0} == before
    # Links that lead nowhere (dangling, to themselves, through a file) are passed over, as Hadoop's listing does.
    (cfg.landing / "app-1" / "self").symlink_to("self")
    (cfg.landing / "app-1" / "through").symlink_to(cfg.landing / "app-1" / "app.log" / "x")
    (cfg.landing / "app-1" / b"gone\xe9".decode("utf-8", "surrogateescape")).symlink_to(tmp_path / "nowhere")
    assert {**landing_fingerprint(cfg), "unnamed": 0} == before
    assert inputs.list_landing(cfg).unnamed == [unnamed]
    said: list[str] = []
    _landing(cfg).unchanged(said.append)
    assert said[0] == ("ingest: 1 landed file(s) or folder(s) have names that are not UTF-8, which Spark cannot "
                       "read; `rebalance check` lists them (rename them)"), said


def test_a_landing_nested_deeper_than_the_recursion_limit_is_listed(tmp_path):
    import sys

    cfg = make_config(tmp_path)
    limit = sys.getrecursionlimit()
    depth = 500  # deeper than the limit set below, and far below the system's longest path
    levels = [cfg.landing]
    sys.setrecursionlimit(300)
    try:
        for _ in range(depth):  # level by level: pathlib's `parents=True` recurses
            levels.append(levels[-1] / "d")
            levels[-1].mkdir(parents=len(levels) == 2)
        deep = levels[-1]
        (deep / "app.log").write_text("line\n")
        _file(cfg.landing, "app-1/app.log")
        assert inputs.landing_files(cfg) == [cfg.landing / "app-1" / "app.log", deep / "app.log"]
    finally:
        sys.setrecursionlimit(limit)
        # Removed here, deepest first: pytest's clean-up of old temporary folders recurses too, and would fail on it.
        (levels[-1] / "app.log").unlink(missing_ok=True)
        for level in reversed(levels[1:]):
            if level.is_dir():
                level.rmdir()


def test_a_continuous_run_says_unreadable_names_when_their_number_changes(tmp_path):
    from pipelines.flow.landing_names import NameWatch, name_loop, unreadable_line

    cfg = _after_a_run(tmp_path)
    said: list[str] = []
    watch = NameWatch(cfg, said.append)
    watch()
    assert said == []
    bad = [cfg.landing / "app-1" / b"caf\xe9-{n}.log".decode("utf-8", "surrogateescape").format(n=n) for n in (1, 2)]
    bad[0].write_text("line\n")
    watch(), watch()
    assert said == [unreadable_line(1)]
    bad[1].write_text("line\n")
    watch()
    assert said == [unreadable_line(1), unreadable_line(2)]
    for path in bad:
        path.unlink()
    watch()
    bad[0].write_text("line\n")
    watch()
    assert said == [unreadable_line(1), unreadable_line(2), unreadable_line(1)]
    # The line the available-now run says from the fingerprint is the same one.
    lines: list[str] = []
    _landing(cfg).unchanged(lines.append)
    assert lines[0] == unreadable_line(1)
    assert name_loop(cfg, on_progress=said.append) is not None
    kafka = make_config(tmp_path / "kafka", source="kafka",
                        kafka={"bootstrap_servers": "localhost:9092", "topics": ["logs"]})
    assert name_loop(kafka, on_progress=said.append) is None


def test_a_file_that_grew_starts_the_stream(tmp_path):
    cfg = _after_a_run(tmp_path)
    with (cfg.landing / "app-1" / "app.log").open("a") as log:
        log.write("one more line\n")
    assert not _landing(cfg).unchanged()


def test_a_new_removed_or_renamed_file_starts_the_stream(tmp_path):
    cfg = _after_a_run(tmp_path)
    _file(cfg.landing, "app-1/app.log.1")
    assert not _landing(cfg).unchanged()
    (cfg.landing / "app-1" / "app.log.1").unlink()
    assert _landing(cfg).unchanged()
    (cfg.landing / "app-1" / "app.log").rename(cfg.landing / "app-1" / "app.log.2")
    assert not _landing(cfg).unchanged()
    (cfg.landing / "app-1" / "app.log.2").unlink()
    assert not _landing(cfg).unchanged()


def test_a_checkpoint_that_moved_starts_the_stream(tmp_path):
    cfg = _after_a_run(tmp_path)
    _batch(cfg, 1, committed=False)  # a batch planned and never committed: the stream must finish it
    assert not _landing(cfg).unchanged()
    _batch(cfg, 1)  # committed since, by a run that kept no record of its landing
    assert not _landing(cfg).unchanged()
    _landing(cfg).all_read()
    assert _landing(cfg).unchanged()
    # A checkpoint deleted or rewound is not where the record left it.
    checkpoint = inputs.checkpoint_dir(cfg, INGEST)
    for log in ("offsets", "commits"):
        (checkpoint / log / "1").unlink()
    assert not _landing(cfg).unchanged()


def test_no_record_another_landing_or_source_or_session_starts_the_stream(tmp_path):
    cfg = make_config(tmp_path)
    _file(cfg.landing, "app-1/app.log")
    assert not _landing(cfg).unchanged()  # no run has kept a record
    cfg = _after_a_run(tmp_path / "kept")
    moved = make_config(tmp_path / "kept", landing=tmp_path / "other")
    _file(moved.landing, "broker-1/server.log")
    _file(moved.landing, "app-1/app.log")
    assert not _landing(moved).unchanged()
    # Auto Loader keeps its own state; through Spark Connect the caller gives no fingerprint (the server reads).
    assert landing_fingerprint(make_config(tmp_path / "kept", source_format="cloudFiles")) is None
    assert not StreamCheck(cfg, INGEST, None).unchanged()


def test_the_reconstruct_stream_waits_for_a_commit_to_silver_accounting(tmp_path):
    cfg = make_config(tmp_path)
    log = Path(lake.table(cfg, "silver_accounting").path) / "_delta_log"
    assert table_fingerprint(cfg, "silver_accounting") is None  # no table yet: the stream starts
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text("{}\n")
    _batch(cfg, 0, query="reconstruct")
    StreamCheck(cfg, "reconstruct", table_fingerprint(cfg, "silver_accounting")).all_read()
    said: list[str] = []
    assert StreamCheck(cfg, "reconstruct", table_fingerprint(cfg, "silver_accounting")).unchanged(said.append)
    assert said == ["reconstruct: silver_accounting holds nothing the last run did not read; the stream was not "
                    "started"]
    (log / f"{1:020d}.json").write_text("{}\n")
    assert not StreamCheck(cfg, "reconstruct", table_fingerprint(cfg, "silver_accounting")).unchanged()
    # The ingest stream's record is its own.
    assert not StreamCheck(cfg, INGEST, table_fingerprint(cfg, "silver_accounting")).unchanged()


def test_commits_that_change_no_row_move_the_record_of_a_stream_that_had_read_all(tmp_path):
    """A compaction or a vacuum right after the reconstruct stream read all of silver_accounting adds commits the
    stream would skip: its record moves past them. A record of a stream that had not read all, or a commit of
    another writer among them (two runs at once), leaves the record as it was."""
    import json

    cfg = make_config(tmp_path)
    log = Path(lake.table(cfg, "silver_accounting").path) / "_delta_log"
    log.mkdir(parents=True)

    def commit(version: int, operation: str, data_change: bool) -> None:
        actions = [{"commitInfo": {"operation": operation}},
                   {"add": {"path": f"p{version}", "dataChange": data_change}}]
        (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))

    def fingerprint():
        return table_fingerprint(cfg, "silver_accounting")

    commit(0, "WRITE", True)
    _batch(cfg, 0, query="reconstruct")
    StreamCheck(cfg, "reconstruct", fingerprint()).all_read()
    read = StreamCheck(cfg, "reconstruct", fingerprint())
    commit(1, "OPTIMIZE", False)
    commit(2, "VACUUM START", False)
    read.moved_without_change("silver_accounting", fingerprint())
    assert StreamCheck(cfg, "reconstruct", fingerprint()).unchanged()
    # Another run's append among the maintenance commits: the stream has not read it.
    read = StreamCheck(cfg, "reconstruct", fingerprint())
    commit(3, "WRITE", True)
    commit(4, "OPTIMIZE", False)
    read.moved_without_change("silver_accounting", fingerprint())
    assert not StreamCheck(cfg, "reconstruct", fingerprint()).unchanged()
    # A check that saw another version than the record's moves nothing: the stream had not read what it saw.
    stale = StreamCheck(cfg, "reconstruct", {"table": lake.table(cfg, "silver_accounting").path, "version": 3})
    commit(5, "OPTIMIZE", False)
    stale.moved_without_change("silver_accounting", fingerprint())
    assert not StreamCheck(cfg, "reconstruct", fingerprint()).unchanged()
