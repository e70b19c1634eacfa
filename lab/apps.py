"""The lab's Kafka Streams instances and Kafka Connect workers: members of a group like the consumers, each in an
instance folder of its own with its client log (and its JVM's GC log), started and stopped the same ways."""

from __future__ import annotations

import json
import re
import signal
import time
import urllib.request
from pathlib import Path

from lab.cluster import CONF, free_port
from lab.members import Member
from lab.procs import LabError

# Kafka Streams' embedded consumer prints the member id the coordinator gave it when it joins (AbstractCoordinator,
# `Successfully joined group with generation Generation{generationId=N, memberId='...', protocol='stream'}`); so
# does a Connect worker's (protocol `sessioned`, `compatible` or `default`).
JOINED_MEMBER = re.compile(r"memberId='([^']+)'")


def _jvm(member: Member, log_conf_3x: str, log_conf_4x: str) -> list[str]:
    kit = member.cluster.kit
    s = member.spec
    log = (f"-Dlog4j2.configurationFile={CONF / log_conf_4x}" if kit.major >= 4
           else f"-Dlog4j.configuration=file:{CONF / log_conf_3x}")
    return ["java", "-Xms32m", s.heap, s.gc, *s.jvm_extra, "-XX:TieredStopAtLevel=1", "-Duser.timezone=UTC",
            f"-Xlog:gc*:file={member.folder / 'gc-%p.log'}:time,uptime,level,tags",
            f"-Dlab.log.file={member._client_log()}", log]


class StreamsMember(Member):
    """A Kafka Streams instance (lab/java/LabStreams.java): one stream thread counting its input topic into a state
    store, application.id = the group, client.id = the instance name (its member ids start with
    `<instance>-StreamThread-1-consumer-`). Commands: `slow MS`, `close`, `halt`; kill -9, SIGSTOP and SIGCONT as
    for a consumer. Its client log (`streams.log`) is in Kafka's layout."""

    def _client_log(self) -> Path:
        return self.folder / "streams.log"

    def _argv(self) -> list[str]:
        s = self.spec
        state = self.cluster.work / "aux" / "state" / s.instance
        state.mkdir(parents=True, exist_ok=True)
        conf = {
            "bootstrap.servers": self.cluster.bootstrap,
            "application.id": s.group,
            "client.id": s.instance,
            "state.dir": str(state),
            "num.stream.threads": "1",
            "session.timeout.ms": str(s.session_ms),
            "heartbeat.interval.ms": str(s.heartbeat_ms),
            "max.poll.interval.ms": str(s.max_poll_ms),
            "metadata.max.age.ms": "3000",
            "commit.interval.ms": "1000",
            # Every update reaches the changelog (no record cache), so a new instance lags behind by as many
            # records as were counted, more than the acceptable recovery lag: it warms up (KIP-441) and a probing
            # rebalance follows after probing.rebalance.interval.ms (60 s, the smallest Streams accepts).
            "statestore.cache.max.bytes": "0",
            "acceptable.recovery.lag": "50",
            "max.warmup.replicas": "3",  # the three tasks that move warm up together: one probing rebalance
            "probing.rebalance.interval.ms": "60000",
        }
        if s.protocol == "streams":  # KIP-1071 (4.1 early access, 4.2 GA): the broker assigns the tasks
            conf["group.protocol"] = "streams"
            for key in ("session.timeout.ms", "heartbeat.interval.ms"):  # broker-side settings of a streams group
                conf.pop(key)
        conf.update(s.extra)
        lab = {"lab.input": s.topics[0]}
        return [*_jvm(self, "client-log4j.properties", "client-log4j2.properties"), "-cp",
                self.cluster.kit.classpath("streams"), "LabStreams", *(f"{k}={v}" for k, v in {**conf, **lab}.items())]

    def _refresh_ids(self) -> None:
        log = self._client_log()
        if not log.exists():
            return
        prefix = f"{self.spec.instance}-StreamThread-"
        # The streams protocol (KIP-1071) has no JoinGroup: the client picks its member id and logs it with every
        # state transition of its membership (StreamsMembershipManager).
        chosen = re.compile(rf"clientId={re.escape(prefix)}\S+, groupId=[^\]]*\] Member (\S+) with epoch")
        text = log.read_text(errors="replace")
        for m in sorted([*JOINED_MEMBER.finditer(text), *chosen.finditer(text)], key=lambda m: m.start()):
            mid = m.group(1)
            if (mid.startswith(prefix) or m.re is chosen) and (not self.member_ids or self.member_ids[-1] != mid):
                self.member_ids.append(mid)

    def wait_assigned(self, timeout: float = 90.0, *, since: float | None = None) -> str:
        """Wait until the instance is RUNNING again (after `since`), and return its thread's member id."""
        assert self.proc is not None
        self.proc.wait_line(r"LAB assigned member=(\S+) ", timeout, since=since or self.started_at)
        mid = self.member_id
        if mid is None:
            raise LabError(f"{self.spec.instance} is RUNNING but its log names no member id ({self._client_log()})")
        return mid

    def gc(self, megabytes: int, timeout: float = 240.0) -> int:
        raise LabError(f"{self.spec.instance}: the Streams instance has no GC command")


class ConnectWorker(Member):
    """A Kafka Connect worker in distributed mode (`ConnectDistributed`, the runtime and the file connectors from
    Maven Central): group.id = the group, client.id = the instance name, its REST API on a free port of 127.0.0.1,
    its internal topics named after the group. Its log (`connect.log`) is in Connect's own layout; a clean stop is
    SIGTERM (the worker leaves the group), kill -9, SIGSTOP and SIGCONT as for a consumer."""

    def __init__(self, *args, **kwargs) -> None:
        self.rest_port = free_port()
        super().__init__(*args, **kwargs)

    def _client_log(self) -> Path:
        return self.folder / "connect.log"

    def _properties(self) -> Path:
        s = self.spec
        g = s.group
        conf = {
            "bootstrap.servers": self.cluster.bootstrap,
            "group.id": g,
            "client.id": s.instance,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": f"{g}-configs",
            "offset.storage.topic": f"{g}-offsets",
            "status.storage.topic": f"{g}-status",
            "config.storage.replication.factor": "2",
            "offset.storage.replication.factor": "2",
            "status.storage.replication.factor": "2",
            "offset.storage.partitions": "2",
            "status.storage.partitions": "2",
            "offset.flush.interval.ms": "2000",
            "listeners": f"http://127.0.0.1:{self.rest_port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.rest_port),
            "session.timeout.ms": str(s.session_ms),
            "heartbeat.interval.ms": str(s.heartbeat_ms),
            "metadata.max.age.ms": "3000",
            # A departed worker's connectors and tasks are reassigned at the next rebalance, not after the default
            # five-minute delay (which would schedule a rebalance of its own minutes later).
            "scheduled.rebalance.max.delay.ms": "0",
        }
        conf.update(s.extra)
        path = self.cluster.work / "aux" / "connect" / f"{s.instance}.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        return path

    def _argv(self) -> list[str]:
        return [*_jvm(self, "connect-log4j.properties", "connect-log4j2.properties"), "-cp",
                self.cluster.kit.classpath("connect"), "org.apache.kafka.connect.cli.ConnectDistributed",
                str(self._properties())]

    def _refresh_ids(self) -> None:
        if self.proc is None:
            return
        prefix = f"{self.spec.instance}-"
        for _, line in self.proc.lines:
            m = JOINED_MEMBER.search(line)
            if m and m.group(1).startswith(prefix) and (not self.member_ids or self.member_ids[-1] != m.group(1)):
                self.member_ids.append(m.group(1))

    def wait_assigned(self, timeout: float = 120.0, *, since: float | None = None) -> str:
        """Wait until the worker joined the group and started its assignment (after `since`); its member id."""
        assert self.proc is not None
        self.proc.wait_line(r"Finished starting connectors and tasks|Joined group at generation", timeout,
                            since=since or self.started_at)
        mid = self.member_id
        if mid is None:
            raise LabError(f"{self.spec.instance} joined but printed no member id")
        return mid

    def close(self, timeout: float = 60.0) -> None:
        """SIGTERM: the worker stops its connectors and tasks and leaves the group."""
        assert self.proc is not None
        self._refresh_ids()
        self.proc.signal(signal.SIGTERM)
        self.proc.wait_exit(timeout)

    def rest(self, method: str, path: str, body: dict | None = None, timeout: float = 30.0) -> object:
        """One call of the worker's REST API; the decoded JSON answer (None for an empty one)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.rest_port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - the lab's own loopback worker
                    text = resp.read().decode()
                return json.loads(text) if text.strip() else None
            except OSError as exc:
                # 409: a rebalance is in progress; connection refused: the REST server is not up yet.
                if time.time() > deadline:
                    raise LabError(f"{self.spec.instance}: {method} {path} failed: {exc}") from exc
                time.sleep(0.5)

    def gc(self, megabytes: int, timeout: float = 240.0) -> int:
        raise LabError(f"{self.spec.instance}: the Connect worker has no GC command")


class ShareMember(Member):
    """A share consumer (lab/java/LabShareConsumer.java, KIP-932): a member of a share group, client.id = the
    instance name, its client log (`consumer.log`) in Kafka's layout. It owns no partitions: joining or leaving
    stops nobody, so nothing it does is a rebalance. Its member id is the client's own, logged by its membership
    manager with every state transition. Commands: `close`, `halt`; kill -9, SIGSTOP and SIGCONT as for a consumer."""

    TRANSITION = re.compile(r"Member (\S+) with epoch -?\d+ transitioned from \S+ to STABLE")

    def _argv(self) -> list[str]:
        s = self.spec
        conf = {"bootstrap.servers": self.cluster.bootstrap, "group.id": s.group, "client.id": s.instance,
                "metadata.max.age.ms": "3000", **s.extra}
        return [*_jvm(self, "client-log4j.properties", "client-log4j2.properties"), "-cp",
                self.cluster.kit.classpath("kafka"), "LabShareConsumer",
                *(f"{k}={v}" for k, v in {**conf, "lab.topics": ",".join(s.topics)}.items())]

    def _refresh_ids(self) -> None:
        log = self._client_log()
        if not log.exists():
            return
        for m in self.TRANSITION.finditer(log.read_text(errors="replace")):
            if not self.member_ids or self.member_ids[-1] != m.group(1):
                self.member_ids.append(m.group(1))

    def wait_assigned(self, timeout: float = 60.0, *, since: float | None = None) -> str:
        """Wait until the share consumer polls and its membership is STABLE (after `since`); its member id."""
        assert self.proc is not None
        self.proc.wait_line(r"LAB polling", timeout, since=since or self.started_at)
        deadline = time.time() + timeout
        while (mid := self.member_id) is None:
            if time.time() > deadline:
                raise LabError(f"{self.spec.instance} polls but its log shows no STABLE membership "
                               f"({self._client_log()})")
            time.sleep(0.25)
        return mid

    def gc(self, megabytes: int, timeout: float = 240.0) -> int:
        raise LabError(f"{self.spec.instance}: the share consumer has no GC command")
