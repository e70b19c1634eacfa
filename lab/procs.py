"""Child processes of the lab: each in its own process group, all stopped on exit, error or signal."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType


class LabError(RuntimeError):
    """A lab step did not happen within its bounded wait, or a process failed."""


class ScenarioSkipError(LabError):
    """A scenario that cannot run here (a client library too old for what it provokes); the message says why."""


class UsageError(LabError):
    """A bad version or scenario name: the command line's fault (exit code 2)."""


class Proc:
    """One child process: its own process group, stdout lines kept (and copied to a file), stdin for commands."""

    def __init__(self, name: str, argv: Sequence[str], *, stdout_file: Path, cwd: Path | None = None,
                 env: dict[str, str] | None = None, stdin: bool = False, stderr_file: Path | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.lines: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        stdout_file.parent.mkdir(parents=True, exist_ok=True)
        self._out = stdout_file.open("a", encoding="utf-8")
        # Standard error goes with standard output unless it is a log of its own (a C library's default logger).
        err = stderr_file.open("ab") if stderr_file is not None else None
        try:
            self.popen = subprocess.Popen(
                self.argv, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=err if err is not None else subprocess.STDOUT,
                start_new_session=True, text=True, bufsize=1,
            )
        finally:
            if err is not None:
                err.close()  # the child holds its own descriptor
        self.pid = self.popen.pid
        self.started = time.time()
        REGISTRY.add(self)
        self._reader = threading.Thread(target=self._read, name=f"lab-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self._out.write(line)
            self._out.flush()
            with self._cond:
                self.lines.append((time.time(), line.rstrip("\n")))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def alive(self) -> bool:
        """True while the process has not exited."""
        return self.popen.poll() is None

    def send(self, command: str) -> None:
        """Write one command line to the process's standard input."""
        if self.popen.stdin is None or not self.alive():
            raise LabError(f"{self.name} is not running; cannot send {command!r}")
        self.popen.stdin.write(command + "\n")
        self.popen.stdin.flush()

    def wait_line(self, pattern: str, timeout: float, *, since: float = 0.0) -> re.Match[str]:
        """The first stdout line after `since` (epoch seconds) matching `pattern`; LabError after `timeout`."""
        regex = re.compile(pattern)
        deadline = time.time() + timeout
        with self._cond:
            while True:
                for ts, line in self.lines:
                    if ts >= since:
                        m = regex.search(line)
                        if m:
                            return m
                left = deadline - time.time()
                if left <= 0:
                    raise LabError(f"{self.name}: no line matching {pattern!r} within {timeout:.0f} s")
                if not self.alive() and self._reader_done():
                    raise LabError(f"{self.name} exited ({self.popen.returncode}) before printing {pattern!r}")
                self._cond.wait(min(left, 0.5))

    def _reader_done(self) -> bool:
        return not self._reader.is_alive()

    def signal(self, sig: int) -> None:
        """Send a signal to the whole process group (no-op once it has exited)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGCONT (a frozen process cannot exit), SIGTERM, then SIGKILL after `timeout`; returns the exit code."""
        if self.alive():
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.popen.wait(10)
        return self.finish()

    def kill(self) -> int | None:
        """SIGKILL the process group and reap it."""
        self.signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)
        return self.finish()

    def wait_exit(self, timeout: float) -> int:
        """Wait for the process to exit by itself; LabError after `timeout`."""
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise LabError(f"{self.name} did not exit within {timeout:.0f} s") from exc
        self.finish()
        return code

    def finish(self) -> int | None:
        """Close pipes and forget the process (after it exited)."""
        self._reader.join(5)
        if self.popen.stdin is not None:
            with contextlib.suppress(OSError):
                self.popen.stdin.close()
        self._out.close()
        REGISTRY.discard(self)
        return self.popen.returncode


class _Registry:
    """Every live child; `stop_all` runs at exit, on SIGINT/SIGTERM/SIGHUP and in the lab's finally blocks."""

    def __init__(self) -> None:
        self._procs: list[Proc] = []
        self._lock = threading.RLock()  # the signal handler may run while the main thread holds it

    def add(self, proc: Proc) -> None:
        with self._lock:
            self._procs.append(proc)

    def discard(self, proc: Proc) -> None:
        with self._lock:
            if proc in self._procs:
                self._procs.remove(proc)

    def live(self) -> list[Proc]:
        with self._lock:
            return list(self._procs)

    def stop_all(self) -> None:
        # Consumers first (they would log connection errors to stopped brokers), brokers before the controller.
        procs = self.live()
        order = sorted(procs, key=lambda p: (p.name.startswith("controller"), p.name.startswith("broker")))
        for proc in order:
            proc.signal(signal.SIGCONT)
            proc.signal(signal.SIGKILL if not proc.name.startswith(("broker", "controller")) else signal.SIGTERM)
        deadline = time.time() + 20
        for proc in order:
            try:
                proc.popen.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.signal(signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.popen.wait(5)
            proc.finish()


REGISTRY = _Registry()
_installed = False


def _on_signal(signum: int, frame: FrameType | None) -> None:
    print(f"lab: signal {signum}, stopping every lab process", file=sys.stderr, flush=True)
    REGISTRY.stop_all()
    raise KeyboardInterrupt(f"signal {signum}")


def install_cleanup() -> None:
    """Stop every child at interpreter exit and on SIGINT, SIGTERM and SIGHUP (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(REGISTRY.stop_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _on_signal)


def run_checked(argv: Sequence[str], *, timeout: float, cwd: Path | None = None, what: str) -> str:
    """Run a short command to completion in its own process group; its output, or LabError naming `what`."""
    proc = subprocess.Popen(list(argv), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise LabError(f"{what} did not finish within {timeout:.0f} s") from exc
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    if proc.returncode != 0:
        raise LabError(f"{what} failed (exit {proc.returncode}):\n{out[-3000:]}")
    return out
