"""Consumer JVMs of the lab: one instance folder each under landing/, with the client log and the GC log."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from lab.cluster import CONF, Cluster
from lab.procs import LabError, Proc

# How a member's client log is written: Kafka's own layout (log4j), Spring Boot's (Logback), Logback's TTLL.
LAYOUTS = ("kafka", "spring", "ttll")
# A librdkafka member (MemberSpec.client == "librdkafka"): confluent-kafka's Consumer in a process of its own.
RDKAFKA_MEMBER = Path(__file__).parent / "rdkafka_member.py"
# librdkafka's client log: its default logger's lines on standard error, as a container or a service unit keeps them.
RDKAFKA_LOG = "stderr.log"


@dataclass
class MemberSpec:
    """What one consumer JVM is: its group, topics, protocol, timeouts and how it logs."""

    instance: str
    group: str
    topics: list[str]
    client: str = "java"
    layout: str = "kafka"
    protocol: str = "classic"
    instance_id: str | None = None
    session_ms: int = 6000
    heartbeat_ms: int = 1000
    max_poll_ms: int = 20000
    heap: str = "-Xmx96m"
    gc: str = "-XX:+UseSerialGC"
    jvm_extra: list[str] = field(default_factory=list)
    calibrate_gc_mb: int = 0
    session_from_gc: float = 0.0
    extra: dict[str, str] = field(default_factory=dict)
    debug: str | None = None  # librdkafka's `debug` contexts (None: its default log level)
    # The landing folder of a host that runs several consumer processes (each logs to <instance>.log there); None:
    # the member's own folder, named after its instance.
    host: str | None = None



def membership_settings(s: MemberSpec, *, range_assignor: str) -> dict[str, str]:
    """The group settings every lab member gets, whatever its client: session and heartbeat with the range assignor
    (classic protocol) or group.protocol=consumer, and its static instance id."""
    conf = ({"session.timeout.ms": str(s.session_ms), "heartbeat.interval.ms": str(s.heartbeat_ms),
             "partition.assignment.strategy": range_assignor} if s.protocol == "classic"
            else {"group.protocol": "consumer"})
    if s.instance_id:
        conf["group.instance.id"] = s.instance_id
    return conf


class Member:
    """A running consumer JVM (or the last one that ran in this instance folder)."""

    def __init__(self, cluster: Cluster, spec: MemberSpec) -> None:
        self.cluster = cluster
        self.spec = spec
        self.folder = cluster.landing / (spec.host or spec.instance)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.runs = 0
        self.proc: Proc | None = None
        self.member_ids: list[str] = []
        self.session_ms = spec.session_ms
        self.gc_pauses_ms: list[int] = []
        self.start()

    @property
    def member_id(self) -> str | None:
        """The member id of the latest assignment (KIP-848: the client-chosen id)."""
        self._refresh_ids()
        return self.member_ids[-1] if self.member_ids else None

    def _refresh_ids(self) -> None:
        if self.proc is None:
            return
        for _, line in self.proc.lines:
            m = re.search(r"LAB assigned member=(\S+) ", line)
            if m and m.group(1) and (not self.member_ids or self.member_ids[-1] != m.group(1)):
                self.member_ids.append(m.group(1))

    def _client_log(self) -> Path:
        if self.spec.layout == "ttll":  # time of day only: the date goes into the file name, as rotation does
            return self.folder / f"app.{datetime.now(timezone.utc):%Y-%m-%d}.log"
        if self.spec.host:
            return self.folder / f"{self.spec.instance}.log"
        return self.folder / ("application.log" if self.spec.layout == "spring" else "consumer.log")

    def _argv(self) -> list[str]:
        kit = self.cluster.kit
        s = self.spec
        jvm = ["java", "-Xms32m", s.heap, s.gc, *s.jvm_extra, "-XX:TieredStopAtLevel=1", "-Duser.timezone=UTC",
               f"-Xlog:gc*:file={self.folder / 'gc-%p.log'}:time,uptime,level,tags",
               f"-Dlab.log.file={self._client_log()}"]
        if s.layout == "kafka":
            cp = kit.classpath("kafka")
            jvm.append(f"-Dlog4j2.configurationFile={CONF / 'client-log4j2.properties'}" if kit.major >= 4
                       else f"-Dlog4j.configuration=file:{CONF / 'client-log4j.properties'}")
        else:
            cp = kit.classpath("logback")
            generation = "3" if kit.major >= 4 else "2"  # Spring Boot 3.2+ and Logback 1.5 with the 4.x clients
            name = f"client-logback-spring{generation}.xml" if s.layout == "spring" else (
                "client-logback-ttll15.xml" if kit.major >= 4 else "client-logback-ttll12.xml")
            jvm.append(f"-Dlogback.configurationFile={CONF / name}")
        conf = {
            "bootstrap.servers": self.cluster.bootstrap,
            "group.id": s.group,
            "auto.offset.reset": "earliest",
            "max.poll.interval.ms": str(s.max_poll_ms),
            "metadata.max.age.ms": "3000",
            "reconnect.backoff.max.ms": "1000",
            "retry.backoff.max.ms": "1000",
        }
        conf.update(membership_settings(s, range_assignor="org.apache.kafka.clients.consumer.RangeAssignor"))
        conf.update(s.extra)
        lab = {"lab.topics": ",".join(s.topics)}
        if s.calibrate_gc_mb:
            lab.update({"lab.calibrate.gc.mb": str(s.calibrate_gc_mb), "lab.session.from.gc": str(s.session_from_gc)})
        return [*jvm, "-cp", cp, "LabConsumer", *(f"{k}={v}" for k, v in {**conf, **lab}.items())]

    def start(self) -> None:
        """Start (again) a JVM in this instance folder."""
        if self.proc is not None and self.proc.alive():
            raise LabError(f"{self.spec.instance} is already running")
        self.runs += 1
        self.started_at = time.time()
        self.proc = self._spawn()
        if self.spec.calibrate_gc_mb:
            m = self.proc.wait_line(r"LAB calibrated pause_ms=(\d+) session_ms=(\d+)", 180)
            self.gc_pauses_ms.append(int(m.group(1)))
            self.session_ms = int(m.group(2))

    def _spawn(self) -> Proc:
        return Proc(self.spec.instance, self._argv(), stdout_file=self.cluster.work / "aux" / "members" /
                    f"{self.spec.instance}.out", stdin=True)

    def wait_assigned(self, timeout: float = 60.0, *, since: float | None = None) -> str:
        """Wait until the member has an assignment (after `since`), and return its member id."""
        assert self.proc is not None
        m = self.proc.wait_line(r"LAB assigned member=(\S+) ", timeout, since=since or self.started_at)
        self._refresh_ids()
        if not self._client_log().exists():
            raise LabError(f"{self.spec.instance} wrote no client log ({self._client_log().name}); its output: "
                           f"{self.cluster.work / 'aux' / 'members' / (self.spec.instance + '.out')}")
        return m.group(1)

    def send(self, command: str) -> None:
        """A command for the consumer's poll loop or its control thread (see LabConsumer.java)."""
        assert self.proc is not None
        self.proc.send(command)

    def gc(self, megabytes: int, timeout: float = 240.0) -> int:
        """Build `megabytes` of live heap and run one full GC; the measured pause in ms."""
        assert self.proc is not None
        since = time.time()
        self.send(f"gc {megabytes}")
        m = self.proc.wait_line(r"LAB gc-done mb=\d+ ms=(\d+)", timeout, since=since)
        self.gc_pauses_ms.append(int(m.group(1)))
        return int(m.group(1))

    def close(self, timeout: float = 60.0) -> None:
        """A clean close: the consumer leaves its group (a static member does not) and the JVM exits."""
        assert self.proc is not None
        self._refresh_ids()
        self.send("close")
        self.proc.wait_exit(timeout)

    def kill9(self) -> None:
        """SIGKILL: no leave, the coordinator finds out by session expiry."""
        assert self.proc is not None
        self._refresh_ids()
        self.proc.kill()

    def freeze(self) -> None:
        """SIGSTOP the JVM: every thread stops, heartbeats too, and no GC pause is logged."""
        assert self.proc is not None
        self._refresh_ids()
        self.proc.signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT after a freeze."""
        assert self.proc is not None
        self.proc.signal(signal.SIGCONT)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()


class RdMember(Member):
    """A librdkafka consumer process (confluent-kafka): same commands and status lines as LabConsumer, its
    librdkafka log (standard error) in <instance>/stderr.log, no GC log (there is no JVM)."""

    def _client_log(self) -> Path:
        return self.folder / RDKAFKA_LOG

    def _argv(self) -> list[str]:
        s = self.spec
        if s.calibrate_gc_mb:
            raise LabError(f"{s.instance}: a librdkafka member has no JVM to pause")
        conf = {
            "bootstrap.servers": self.cluster.bootstrap,
            "group.id": s.group,
            "auto.offset.reset": "earliest",
            "max.poll.interval.ms": str(s.max_poll_ms),
            "topic.metadata.refresh.interval.ms": "3000",
            "reconnect.backoff.max.ms": "1000",
            "retry.backoff.max.ms": "1000",
            "enable.partition.eof": "false",
        }
        conf.update(membership_settings(s, range_assignor="range"))
        if s.debug:
            conf["debug"] = s.debug
        conf.update(s.extra)
        lab = {"lab.topics": ",".join(s.topics)}
        return [sys.executable, "-u", str(RDKAFKA_MEMBER), *(f"{k}={v}" for k, v in {**conf, **lab}.items())]

    def _spawn(self) -> Proc:
        return Proc(self.spec.instance, self._argv(), stdout_file=self.cluster.work / "aux" / "members" /
                    f"{self.spec.instance}.out", stdin=True, stderr_file=self._client_log(),
                    env={**os.environ, "TZ": "UTC"})

    def gc(self, megabytes: int, timeout: float = 240.0) -> int:
        raise LabError(f"{self.spec.instance}: a librdkafka member has no garbage collector to pause")
