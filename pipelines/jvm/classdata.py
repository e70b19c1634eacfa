"""A class-data-sharing archive for the local driver JVM: the classes a run loads, read and verified once.

A new JVM spends seconds loading, parsing and verifying the thousands of Spark and Delta classes every run needs.
HotSpot can record them in an archive at exit (`-XX:ArchiveClassesAtExit`) and map it at the next start
(`-XX:SharedArchiveFile`): a cold `rebalance run` of a one-hour increment took 62.3-68.2 s with the archive against
67.6-69.6 s without, alternating (Spark start 5.0-5.7 -> 3.0-3.2 s). The first local session of a class path and JDK
records the archive (5-8 s more, once); as its JVM exits it writes the archive, and a detached keeper renames
it into the jar cache once a JVM starts with it. Every later session of the same class path and JDK maps it. A JVM
that cannot use an archive (another JDK, changed jars) starts without it, silently (the `-Xlog` options keep
HotSpot's warnings off the user's terminal); one that cannot start with it (a truncated file) is handled by
`pipelines.session.spark.get_spark`.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyspark

SPARK_JARS = Path(pyspark.__file__).resolve().parent / "jars"
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
SUFFIX = ".jsa"
ORPHAN_AFTER_S = 600


def _java_home() -> Path | None:
    """The JDK Spark's launcher will run: JAVA_HOME if set, else the `java` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return Path(home).resolve()
    java = shutil.which("java")
    return Path(java).resolve().parent.parent if java else None


def archive_name(jars: list[Path]) -> str | None:
    """The archive's file name for a session with `jars` on this JDK and this Spark (None without a JDK): any change
    of the JDK (its module image), of Spark's jars or of the session's own jars, or of where they are, names another
    archive."""
    home = _java_home()
    if home is None:
        return None
    digest = hashlib.sha256(pyspark.__version__.encode())
    modules = home / "lib" / "modules"
    stamp = modules.stat() if modules.exists() else None
    digest.update(f"{home}\0{stamp.st_size if stamp else 0}\0{stamp.st_mtime_ns if stamp else 0}".encode())
    # Paths, not names: HotSpot checks the class path it recorded, so another virtualenv needs its own archive.
    for jar in sorted(str(p) for p in SPARK_JARS.glob("*.jar")) + [str(p.resolve()) for p in jars]:
        digest.update(b"\0" + jar.encode())
    return f"rebalance-classes-{digest.hexdigest()[:12]}{SUFFIX}"


def _alive(pid: int) -> bool:
    """True while process `pid` runs. An exited process that nobody has reaped yet (a zombie: in a container whose
    first process does not reap orphans, the recording JVM stays one) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # /proc/<pid>/stat: "pid (command) state ...", and the command may itself contain spaces or parentheses.
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def _drop_orphans(cache: Path, name: str) -> None:
    """Remove partial archives whose recording process is gone and that no JVM has written for ORPHAN_AFTER_S (the
    JVM writes on after its Python process ends; a killed one leaves its partial behind)."""
    for partial in cache.glob(f"{name}.*.partial"):
        pid = partial.name.removesuffix(".partial").rsplit(".", 1)[-1]
        with contextlib.suppress(OSError):
            if time.time() - partial.stat().st_mtime < ORPHAN_AFTER_S:
                continue
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                partial.unlink()


def mapped(cache: Path, jars: list[Path], *, enabled: bool = True) -> Path | None:
    """The archive a session with `jars` maps (None when there is none yet, or sharing is off)."""
    name = archive_name(jars) if enabled else None
    return cache / name if name is not None and (cache / name).exists() else None


def driver_options(cache: Path, jars: list[Path], *, enabled: bool = True) -> tuple[str, Path | None]:
    """The driver JVM options for the archive of `jars`, and the partial archive this session records (None when
    it maps an existing one, or when sharing is off or impossible)."""
    name = archive_name(jars) if enabled else None
    if name is None:
        return "", None
    archive = cache / name
    if archive.exists():
        return f"-XX:SharedArchiveFile={archive} {QUIET}", None
    cache.mkdir(parents=True, exist_ok=True)
    _drop_orphans(cache, name)
    partial = cache / f"{name}.{os.getpid()}.partial"
    return f"-XX:ArchiveClassesAtExit={partial} {QUIET}", partial


def maps(archive: Path) -> bool:
    """True when a JVM starts with `archive` mapped or passed over. HotSpot 17 dies of SIGBUS on a truncated
    archive (it maps the regions the header promises), so an archive is tried once before it is kept."""
    home = _java_home()
    if home is None:
        return False
    try:
        tried = subprocess.run([str(home / "bin" / "java"), f"-XX:SharedArchiveFile={archive}", *QUIET.split(),
                                "-version"], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return tried.returncode == 0


def discard(archive: Path) -> None:
    """Remove an archive the JVM could not start with (next session records a new one)."""
    with contextlib.suppress(OSError):
        archive.unlink()


def keep_at_exit(partial: Path) -> None:
    """When this process ends, stop Spark and leave the JVM to write `partial` as it exits; a detached keeper waits
    for it, tries the archive and renames it into place. The command returns at once: the recording session pays
    only the recording (5-8 s), and later sessions map the archive."""
    def finish() -> None:
        from pyspark import SparkContext

        proc = getattr(SparkContext._gateway, "proc", None)
        active = SparkContext._active_spark_context
        if active is not None:
            active.stop()
        if proc is None or proc.stdin is None:
            return
        subprocess.Popen([sys.executable, "-m", __name__, str(partial), str(proc.pid)], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The gateway JVM exits when its stdin closes, and writes the archive as it exits.
        with contextlib.suppress(OSError):
            proc.stdin.close()

    atexit.register(finish)


def keep(partial: Path, jvm_pid: int, *, timeout_s: float = 600) -> bool:
    """Wait for the recording JVM to exit, then keep `partial` as the archive if a JVM starts with it; remove it
    otherwise. True when kept."""
    deadline = time.monotonic() + timeout_s
    while _alive(jvm_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not _alive(jvm_pid) and partial.exists() and maps(partial):
        partial.replace(partial.with_name(partial.name.split(SUFFIX)[0] + SUFFIX))
        return True
    with contextlib.suppress(OSError):
        partial.unlink()
    return False


if __name__ == "__main__":
    keep(Path(sys.argv[1]), int(sys.argv[2]))
