"""Kafka from Maven Central: resolve a version, copy the broker's and the clients' runtime jars with Maven into a
cache, and compile the lab's Java programs against the matching kafka-clients jar."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from lab.procs import LabError, UsageError, run_checked

MAVEN_REPO = os.environ.get("REBALANCE_MAVEN_REPO", "https://repo1.maven.org/maven2")
CACHE = Path(os.environ.get("REBALANCE_LAB_CACHE", Path.home() / ".cache" / "kafka-rebalance" / "lab"))
JAVA_SOURCES = Path(__file__).parent / "java"

# The lines the lab covers by default: the last 3.x (classic Scala coordinator), and two 4.x (new coordinator; 4.2 with
# streams groups, KIP-1071).
DEFAULT_LINES = ("3.9", "4.1", "4.2")
# Logging bindings for the consumers. slf4j 1.7 (kafka-clients' own) binds to reload4j, log4j 2 or logback 1.2;
# the 4.x clients also run under slf4j 2 with logback 1.5, as a current Spring Boot service would.
SLF4J2 = "2.0.17"
LOGBACK_SLF4J1 = "1.2.13"
LOGBACK_SLF4J2 = "1.5.18"
RELOAD4J = "1.2.25"  # what Kafka 3.9's own distribution ships


@dataclass(frozen=True)
class Kit:
    """Everything needed to run one Kafka version: classpaths and the compiled lab programs."""

    version: str
    home: Path
    broker_cp: tuple[Path, ...]
    client_kafka_cp: tuple[Path, ...]
    client_logback_cp: tuple[Path, ...]
    classes: Path
    streams_cp: tuple[Path, ...] = ()
    connect_cp: tuple[Path, ...] = ()

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def release(self) -> tuple[int, int]:
        """(major, minor): behaviour differs between minor releases too."""
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    def classpath(self, which: str) -> str:
        """`broker`, `kafka` (clients with Kafka's layout), `logback` (clients with a Logback layout), `streams`
        (Kafka Streams with Kafka's layout) or `connect` (a Connect worker with the file connectors)."""
        jars = {"broker": self.broker_cp, "kafka": self.client_kafka_cp, "logback": self.client_logback_cp,
                "streams": self.streams_cp, "connect": self.connect_cp}[which]
        extra = [] if which in ("broker", "connect") else [self.classes]
        return os.pathsep.join(str(p) for p in [*extra, *jars])


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def available_versions(timeout: float = 30.0) -> list[str]:
    """Release versions of org.apache.kafka:kafka_2.13 listed in Maven Central's metadata (cached for a day)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = CACHE / "kafka_2.13-maven-metadata.xml"


    if not cached.exists() or time.time() - cached.stat().st_mtime > 86_400:
        url = f"{MAVEN_REPO}/org/apache/kafka/kafka_2.13/maven-metadata.xml"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - fixed https Maven URL
                data = resp.read()
            tmp = cached.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(cached)
        except OSError as exc:
            if not cached.exists():
                raise LabError(f"cannot read {url} ({exc}); set REBALANCE_MAVEN_REPO to a Maven mirror") from exc
    root = ElementTree.fromstring(cached.read_bytes())
    return [v.text for v in root.iter("version") if v.text and re.fullmatch(r"\d+\.\d+\.\d+", v.text)]


def resolve_version(spec: str) -> str:
    """`3.9` -> the newest 3.9.x release on Maven Central; a full `x.y.z` must exist there."""
    if re.fullmatch(r"\d+\.\d+\.\d+", spec):
        cached = CACHE / spec / ".complete"
        if cached.exists():
            return spec
        if spec not in available_versions():
            raise UsageError(f"Kafka {spec} is not on Maven Central (org.apache.kafka:kafka_2.13)")
        return spec
    if not re.fullmatch(r"\d+\.\d+", spec):
        raise UsageError(f"bad Kafka version {spec!r}: use x.y (newest patch) or x.y.z")
    try:
        matches = [v for v in available_versions() if v.startswith(spec + ".")]
    except LabError:
        matches = [p.name for p in CACHE.glob(spec + ".*") if (p / ".complete").exists()]
    if not matches:
        raise UsageError(f"no Kafka {spec}.x release found on Maven Central")
    return max(matches, key=_version_key)


def _pom(artifact: str, deps: list[tuple[str, str, str]]) -> str:
    items = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    repos = ""
    if "REBALANCE_MAVEN_REPO" in os.environ:
        repos = (f"  <repositories><repository><id>mirror</id><url>{MAVEN_REPO}</url></repository>"
                 "</repositories>\n")
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n'
        f"  <groupId>kafka-rebalance-lab</groupId><artifactId>{artifact}</artifactId><version>1</version>\n"
        f"  <packaging>pom</packaging>\n{repos}  <dependencies>\n{items}\n  </dependencies>\n</project>\n"
    )


def _copy_dependencies(home: Path, name: str, deps: list[tuple[str, str, str]]) -> tuple[Path, ...]:
    """`mvn dependency:copy-dependencies` of a generated pom into home/name (redone only when the pom changes)."""
    target = home / name
    pom = home / f"pom-{name}.xml"
    text = _pom(name, deps)
    stamp = target / ".pom-sha1"
    digest = hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - a change stamp, not a security check
    if not (stamp.exists() and stamp.read_text() == digest):
        shutil.rmtree(target, ignore_errors=True)
        pom.write_text(text)
        if shutil.which("mvn") is None:
            raise LabError("Maven (mvn) is not installed; the lab fetches Kafka with it (apt-get install maven)")
        run_checked(
            ["mvn", "-B", "-q", "-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime",
             f"-DoutputDirectory={target}"],
            timeout=900, what=f"mvn copy-dependencies for {name}",
        )
        stamp.write_text(digest)
    return tuple(sorted(target.glob("*.jar")))


def _jar_version(jars: tuple[Path, ...], artifact: str) -> str | None:
    for jar in jars:
        m = re.fullmatch(re.escape(artifact) + r"-(\d[\w.-]*)\.jar", jar.name)
        if m:
            return m.group(1)
    return None


def _compile(home: Path, client_cp: tuple[Path, ...]) -> Path:
    """javac the lab's Java sources against this version's kafka-clients and kafka-streams (redone when a source
    changes)."""
    sources = sorted(JAVA_SOURCES.glob("*.java"))
    digest = hashlib.sha1(b"".join(s.read_bytes() for s in sources)).hexdigest()  # noqa: S324 - a change stamp
    classes = home / "classes"
    stamp = classes / ".sources-sha1"
    if stamp.exists() and stamp.read_text() == digest:
        return classes
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    cp = os.pathsep.join(str(p) for p in client_cp)
    run_checked(["javac", "-nowarn", "--release", "11", "-cp", cp, "-d", str(classes), *map(str, sources)],
                timeout=300, what="javac of the lab programs")
    stamp.write_text(digest)
    return classes


def _broker_binding(core: tuple[Path, ...]) -> list[tuple[str, str, str]]:
    """The logging jars a broker of this distribution runs with (its core jars tell log4j 2 from reload4j)."""
    log4j2 = _jar_version(core, "log4j-core")
    if log4j2:  # 4.x brokers log through log4j 2 (KIP-653)
        return [("org.apache.logging.log4j", "log4j-slf4j-impl", log4j2)]
    slf4j = _jar_version(core, "slf4j-api") or "1.7.36"
    return [("org.slf4j", "slf4j-reload4j", slf4j), ("ch.qos.reload4j", "reload4j", RELOAD4J)]


def fetch_broker(version: str, *, progress=print) -> tuple[str, tuple[Path, ...]]:
    """Only what a broker needs (for tests that need a broker and no lab programs): the resolved version and the
    broker's classpath, from the same cache as `fetch`."""
    version = resolve_version(version)
    home = CACHE / version
    home.mkdir(parents=True, exist_ok=True)
    progress(f"kafka {version}: resolving the broker's jars with Maven into {home}")
    kafka = ("org.apache.kafka", "kafka_2.13", version)
    core = _copy_dependencies(home, "core", [kafka])
    return version, _copy_dependencies(home, "broker", [kafka, *_broker_binding(core)])


def fetch(version: str, *, progress=print) -> Kit:
    """Resolve `version`, fetch its jars (cached under ~/.cache/kafka-rebalance/lab/<version>) and compile."""
    version = resolve_version(version)
    home = CACHE / version
    home.mkdir(parents=True, exist_ok=True)
    progress(f"kafka {version}: resolving jars with Maven into {home}")
    kafka = ("org.apache.kafka", "kafka_2.13", version)
    clients = ("org.apache.kafka", "kafka-clients", version)
    core = _copy_dependencies(home, "core", [kafka])
    log4j2 = _jar_version(core, "log4j-core")
    broker_binding = _broker_binding(core)
    if log4j2:
        kafka_layout = [*broker_binding, ("org.apache.logging.log4j", "log4j-core", log4j2)]
    else:  # 3.x ships reload4j behind slf4j 1.7
        kafka_layout = broker_binding
    if _version_key(version) >= (4, 0, 0):
        logback = [("org.slf4j", "slf4j-api", SLF4J2), ("ch.qos.logback", "logback-classic", LOGBACK_SLF4J2)]
    else:
        logback = [clients, ("ch.qos.logback", "logback-classic", LOGBACK_SLF4J1)]
    broker_cp = _copy_dependencies(home, "broker", [kafka, *broker_binding])
    kafka_cp = _copy_dependencies(home, "client-kafka", [clients, *kafka_layout])
    logback_cp = _copy_dependencies(home, "client-logback", list(dict.fromkeys([*logback, clients])))
    # Kafka Streams in Kafka's layout; a Connect worker (runtime, the file connectors) with the broker's binding.
    streams_cp = _copy_dependencies(home, "streams", [("org.apache.kafka", "kafka-streams", version), *kafka_layout])
    try:
        connect_cp = _copy_dependencies(home, "connect", [("org.apache.kafka", "connect-runtime", version),
                                                          ("org.apache.kafka", "connect-file", version),
                                                          *kafka_layout])
    except LabError as exc:  # not every release's Connect artifacts reach Maven Central (connect-file 4.2.2 did not)
        progress(f"kafka {version}: no Connect workers ({str(exc).splitlines()[0]})")
        connect_cp = ()
    classes = _compile(home, tuple(dict.fromkeys([*kafka_cp, *streams_cp])))
    (home / ".complete").write_text(version)
    return Kit(version=version, home=home, broker_cp=broker_cp, client_kafka_cp=kafka_cp,
               client_logback_cp=logback_cp, classes=classes, streams_cp=streams_cp, connect_cp=connect_cp)
