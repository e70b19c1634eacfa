"""The driver's class data archive: the first session records it and keeps it when its process ends, the next one
maps it (HotSpot refuses to start with `-Xshare:on` unless it can), and a damaged archive is passed over silently."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from pipelines.jvm.classdata import _alive, archive_name, driver_options

ROOT = Path(__file__).resolve().parent.parent
SESSION = textwrap.dedent("""
    import sys
    from pathlib import Path
    import pipelines.session.spark as sessions
    from pipelines.settings.config import load_config

    sessions.JAR_CACHE = Path(sys.argv[1])  # the archive (and the project's jar) go to the test's folder
    cfg = load_config(None, {"lakehouse": Path(sys.argv[1]) / "lakehouse", "spark": {"master": "local[1]"}})
    spark = sessions.get_spark(cfg, app_name="class-data-test")
    assert spark.range(10).count() == 10
    bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    print("ARGS", " ".join(bean.getInputArguments()))
""")


def _session(cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # In the test's folder: a JVM that dies on a damaged archive writes its crash report (hs_err_pid*.log) there.
    return subprocess.run([sys.executable, "-c", SESSION, str(cache)], capture_output=True, text=True, cwd=cache,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=300, check=False)


def test_options_record_a_missing_archive_map_an_existing_one_and_drop_orphans(tmp_path):
    name = archive_name([])
    assert name is not None and name != archive_name([Path("spark-sql-kafka.jar")])
    assert archive_name([Path("/one/delta.jar")]) != archive_name([Path("/another/delta.jar")])
    orphan = tmp_path / f"{name}.999999999.partial"  # no such process
    mine = tmp_path / f"{name}.{os.getpid()}.partial"
    fresh = tmp_path / f"{name}.999999998.partial"  # its JVM may still be writing it
    for partial in (orphan, mine, fresh):
        partial.write_bytes(b"x")
    os.utime(orphan, (0, 0))
    os.utime(mine, (0, 0))
    options, recording = driver_options(tmp_path, [])
    assert recording == tmp_path / f"{name}.{os.getpid()}.partial"
    assert f"-XX:ArchiveClassesAtExit={recording}" in options
    assert not orphan.exists() and mine.exists() and fresh.exists()  # a live recorder's partial is left alone
    (tmp_path / name).write_bytes(b"x")
    assert driver_options(tmp_path, []) == (f"-XX:SharedArchiveFile={tmp_path / name} "
                                            "-Xlog:cds=off -Xlog:cds+dynamic=off", None)
    assert driver_options(tmp_path, [], enabled=False) == ("", None)


def _archive(cache: Path) -> Path:
    """The archive, once the keeper has renamed it (the JVM writes it after the session's process ended)."""
    deadline = time.monotonic() + 180
    while not list(cache.glob("rebalance-classes-*.jsa")) and time.monotonic() < deadline:
        time.sleep(0.5)
    [archive] = list(cache.glob("rebalance-classes-*.jsa"))
    return archive


def test_the_first_session_keeps_its_archive_the_next_maps_it_and_a_damaged_one_is_dropped(tmp_path):
    first = _session(tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    archive = _archive(tmp_path)
    assert "-XX:ArchiveClassesAtExit=" in first.stdout and archive.stat().st_size > 1_000_000
    assert not list(tmp_path.glob("*.partial"))

    # With -Xshare:on the JVM exits with an error unless it maps the archive.
    second = _session(tmp_path, JDK_JAVA_OPTIONS="-Xshare:on")
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"-XX:SharedArchiveFile={archive}" in second.stdout

    # HotSpot 17 dies at start on a truncated archive: the session starts without it and removes it.
    with archive.open("r+b") as damaged:
        damaged.truncate(4096)
    third = _session(tmp_path)
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"did not start with the class data archive {archive}; removed it" in third.stderr
    assert not archive.exists() and "SharedArchiveFile" not in third.stdout


def test_a_recording_jvm_that_exited_counts_as_gone_before_anyone_reaps_it():
    child = subprocess.Popen(["sleep", "0"])
    deadline = time.monotonic() + 10
    while _alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child.pid)  # a zombie: exited, not yet waited for
    assert child.wait() == 0
    assert _alive(os.getpid())
