"""One KRaft broker (broker and controller in one process) on 127.0.0.1 and free ports, for the Kafka-source tests.

The distribution comes from the lab's cache (~/.cache/kafka-rebalance/lab/<version>), fetched from Maven Central by
the lab's own code when missing."""

from __future__ import annotations

import os
import time
from pathlib import Path

from lab.cluster import COMMON, CONF, STARTED, free_port, random_cluster_id
from lab.fetch import fetch_broker
from lab.procs import LabError, Proc, run_checked

VERSION = os.environ.get("REBALANCE_KAFKA_SOURCE_VERSION", "3.9.2")


class Broker:
    """A single-node KRaft cluster; `start()` returns when it serves, `stop()` always ends the process."""

    def __init__(self, work: Path, *, version: str = VERSION) -> None:
        self.work = work
        self.version, jars = fetch_broker(version, progress=lambda _m: None)
        self.classpath = os.pathsep.join(str(p) for p in jars)
        self.port, self.controller_port = free_port(), free_port()
        self.proc: Proc | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _properties(self) -> Path:
        props = {
            **COMMON,
            "process.roles": "broker,controller", "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "offsets.topic.replication.factor": "1",
            "log.dirs": str(self.work / "data"),
        }
        path = self.work / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in sorted(props.items())))
        return path

    def _jvm(self) -> list[str]:
        logs = self.work / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        if int(self.version.split(".")[0]) >= 4:
            logging = f"-Dlog4j2.configurationFile={CONF / 'broker-log4j2.yaml'}"
        else:
            logging = f"-Dlog4j.configuration=file:{CONF / 'broker-log4j.properties'}"
        return ["java", "-Xms64m", "-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Duser.timezone=UTC",
                f"-Dkafka.logs.dir={logs}", f"-Dlab.aux.dir={logs}", logging, "-cp", self.classpath]

    def start(self, timeout: float = 90.0) -> None:
        """Format the storage, start the process, wait for its "started" line."""
        self.work.mkdir(parents=True, exist_ok=True)
        config = self._properties()
        run_checked([*self._jvm(), "kafka.tools.StorageTool", "format", "-t", random_cluster_id(), "-c", str(config)],
                    timeout=120, what="formatting the test broker's storage")
        self.proc = Proc("broker-1", [*self._jvm(), "kafka.Kafka", str(config)], stdout_file=self.work / "stdout.log")
        log = self.work / "logs" / "server.log"
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.proc.alive():
                raise LabError(f"the test broker exited during start; see {log}")
            if log.exists() and STARTED.search(log.read_text(errors="replace")):
                return
            time.sleep(0.3)
        raise LabError(f"the test broker did not start within {timeout:.0f} s; see {log}")

    def stop(self) -> None:
        """Stop the broker (SIGTERM, SIGKILL after 20 s); safe to call when it never started."""
        if self.proc is not None:
            self.proc.stop(20)
