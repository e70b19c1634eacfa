"""A small KRaft cluster on 127.0.0.1: one controller and two brokers, free ports, temporary directories."""

from __future__ import annotations

import base64
import re
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lab.fetch import Kit
from lab.procs import LabError, Proc, run_checked

CONF = Path(__file__).parent / "conf"
CONTROLLER_ID = 3
BROKER_IDS = (1, 2)
BROKER_HEAP = "-Xmx320m"
STARTED = re.compile(r"Kafka Server started|Transition from STARTING to STARTED")

# Settings that make the lab run in minutes: no initial rebalance delay, short minimum session timeouts, few
# __consumer_offsets partitions replicated on both brokers (so a group's coordinator can move), few threads.
COMMON = {
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "num.replica.fetchers": "1",
    "log.cleaner.threads": "1",
    "auto.create.topics.enable": "false",
    "auto.leader.rebalance.enable": "false",
    "offsets.topic.replication.factor": "2",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    # A broker stalled past its members' session timeouts (the estate_stall scenario) keeps its partitions: the
    # controller fences a broker only after this long without its heartbeat (9 s by default).
    "broker.session.timeout.ms": "30000",
    "group.min.session.timeout.ms": "500",
    "group.max.session.timeout.ms": "60000",
    # The coordinator deletes an empty group with no committed offsets at its periodic cleanup (every 10 min by
    # default: GroupCoordinatorShard's `Generated N tombstone records while cleaning up group metadata`); a group
    # that empties and rejoins within one step then starts again at epoch 1. No cleanup during a run.
    "offsets.retention.check.interval.ms": "86400000",
}
# The new coordinator's consumer-protocol (KIP-848) groups: broker-side session and heartbeat settings.
KIP848 = {
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.streams.min.session.timeout.ms": "3000",
    "group.streams.session.timeout.ms": "6000",
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.heartbeat.interval.ms": "1000",
    "group.share.min.session.timeout.ms": "3000",
    "group.share.session.timeout.ms": "6000",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.heartbeat.interval.ms": "1000",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def random_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not starting with '-'."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class Cluster:
    """The controller and the brokers of one lab run; broker logs go to landing/broker-<id>/server.log."""

    def __init__(self, kit: Kit, *, landing: Path, work: Path, progress=print) -> None:
        self.kit = kit
        self.landing = landing
        self.work = work
        self.progress = progress
        self.controller_port = free_port()
        self.ports = {b: free_port() for b in BROKER_IDS}
        self.cluster_id = random_cluster_id()
        self.procs: dict[int, Proc] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    def instance(self, node: int) -> str:
        """The landing folder name of a node."""
        return f"controller-{node}" if node == CONTROLLER_ID else f"broker-{node}"

    def server_log(self, node: int) -> Path:
        return self.landing / self.instance(node) / "server.log"

    def _properties(self, node: int) -> Path:
        props = dict(COMMON)
        if self.kit.major >= 4:
            props.update(KIP848)
        props.update({
            "node.id": str(node),
            "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{self.controller_port}",
            "log.dirs": str(self.work / "data" / self.instance(node)),
        })
        if node == CONTROLLER_ID:
            props.update({"process.roles": "controller", "listeners": f"CONTROLLER://127.0.0.1:{self.controller_port}"})
        else:
            listener = f"PLAINTEXT://127.0.0.1:{self.ports[node]}"
            props.update({"process.roles": "broker", "listeners": listener, "advertised.listeners": listener,
                          "inter.broker.listener.name": "PLAINTEXT"})
        path = self.work / "config" / f"{self.instance(node)}.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in sorted(props.items())))
        return path

    def _jvm(self, node: int) -> list[str]:
        logs = self.landing / self.instance(node)
        aux = self.work / "aux" / self.instance(node)
        logs.mkdir(parents=True, exist_ok=True)
        aux.mkdir(parents=True, exist_ok=True)
        if self.kit.major >= 4:
            logging = f"-Dlog4j2.configurationFile={CONF / 'broker-log4j2.yaml'}"
        else:
            logging = f"-Dlog4j.configuration=file:{CONF / 'broker-log4j.properties'}"
        return ["java", "-Xms64m", BROKER_HEAP, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-XX:+ExitOnOutOfMemoryError",
                "-Djava.awt.headless=true", "-Duser.timezone=UTC", f"-Dkafka.logs.dir={logs}",
                f"-Dlab.aux.dir={aux}", logging, "-cp", self.kit.classpath("broker")]

    def _format(self, node: int) -> None:
        config = self._properties(node)
        argv = [*self._jvm(node), "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(config)]
        # StorageTool logs through the same configuration; keep its lines out of the landing folder.
        argv = [a.replace(f"-Dkafka.logs.dir={self.landing / self.instance(node)}",
                          f"-Dkafka.logs.dir={self.work / 'aux' / self.instance(node)}") for a in argv]
        run_checked(argv, timeout=120, what=f"formatting the storage of {self.instance(node)}")

    def start(self) -> None:
        """Format every node's storage, start the controller and the brokers, wait until both brokers serve."""
        self.progress(f"cluster {self.cluster_id}: controller 127.0.0.1:{self.controller_port}, brokers "
                      f"{self.bootstrap}")
        nodes = [CONTROLLER_ID, *BROKER_IDS]
        with ThreadPoolExecutor(len(nodes)) as pool:
            list(pool.map(self._format, nodes))
        for node in nodes:
            self.start_node(node)
        for node in nodes:
            self.wait_started(node, since=0)
        self.admin("brokers", str(len(BROKER_IDS)))

    def start_node(self, node: int) -> None:
        """Start one node (again) with its formatted storage."""
        config = self.work / "config" / f"{self.instance(node)}.properties"
        if not config.exists():
            config = self._properties(node)
        self.procs[node] = Proc(self.instance(node), [*self._jvm(node), "kafka.Kafka", str(config)],
                                stdout_file=self.work / "aux" / self.instance(node) / "stdout.log")

    def wait_started(self, node: int, *, since: int, timeout: float = 90.0) -> None:
        """Wait for the node's "started" line after byte offset `since` of its server.log."""
        deadline = time.time() + timeout
        log = self.server_log(node)
        while time.time() < deadline:
            if not self.procs[node].alive():
                raise LabError(f"{self.instance(node)} exited during start; see {log}")
            if log.exists():
                with log.open("rb") as f:
                    f.seek(since)
                    if STARTED.search(f.read().decode("utf-8", "replace")):
                        return
            time.sleep(0.3)
        raise LabError(f"{self.instance(node)} did not start within {timeout:.0f} s; see {log}")

    def stop_node(self, node: int, timeout: float = 60.0) -> None:
        """A clean stop (SIGTERM: controlled shutdown moves leadership first); SIGKILL after `timeout`."""
        proc = self.procs.get(node)
        if proc is not None:
            proc.stop(timeout)

    def restart_node(self, node: int) -> None:
        """Start a stopped node again and wait until it serves."""
        log = self.server_log(node)
        offset = log.stat().st_size if log.exists() else 0
        self.start_node(node)
        self.wait_started(node, since=offset)

    def stop(self) -> None:
        """Stop the brokers, then the controller."""
        for node in (*BROKER_IDS, CONTROLLER_ID):
            self.stop_node(node, timeout=30)

    def admin(self, *args: str, timeout: float = 90.0) -> str:
        """Run one LabAdmin command; its `LAB ...` result line."""
        aux = self.work / "aux" / "admin"
        aux.mkdir(parents=True, exist_ok=True)
        logging = (f"-Dlog4j2.configurationFile={CONF / 'client-log4j2.properties'}" if self.kit.major >= 4
                   else f"-Dlog4j.configuration=file:{CONF / 'client-log4j.properties'}")
        argv = ["java", "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Duser.timezone=UTC",
                f"-Dlab.log.file={aux / 'admin.log'}", logging, "-cp", self.kit.classpath("kafka"), "LabAdmin",
                self.bootstrap, *args]
        out = run_checked(argv, timeout=timeout, what=f"admin {' '.join(args)}")
        lines = [line for line in out.splitlines() if line.startswith("LAB ")]
        if not lines:
            raise LabError(f"admin {' '.join(args)} printed no result:\n{out[-2000:]}")
        return lines[-1][4:]

    def coordinator_of(self, group: str) -> int:
        """The broker id that coordinates `group` now."""
        return int(self.admin("coordinator", group).split()[-1])
