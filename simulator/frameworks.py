"""The Java frameworks a simulated group may run on: a plain consumer, a Kafka Streams thread or a Kafka Connect sink
task. Their consumers log the same lines; what differs is how the group, the client and the thread are named, the
layout a framework's own log4j configuration gives (Connect's connector context and `(logger:line)`), and the lines
a Streams thread adds around its consumer's rebalance (its state transitions, the revocation's duration).

Shapes as Kafka's own code prints them (3.x-4.x): a Streams thread's consumer is `<application.id>-<process
uuid>-StreamThread-<n>-consumer` in group `<application.id>`, on thread `<application.id>-<process
uuid>-StreamThread-<n>`, and StreamThread prefixes its lines `stream-thread [<thread>] `; a sink task's consumer is
`connector-consumer-<connector>-<task>` in group `connect-<connector>`, on thread `task-thread-<connector>-<task>`,
and Connect's log4j layout is `[%d] %p %X{connector.context}%m (%c:%L)%n` with the context `[<connector>|task-<n>] `.

A librdkafka consumer (a Python, Go or .NET service over librdkafka 2.x, classic protocol) is another matter: at its
default log level it prints nothing about a normal rebalance, a join, a sync, a heartbeat error or a close (all of
that is debug output), only what goes wrong: `MAXPOLL` (level 4) when max.poll.interval.ms runs out, after which it
leaves the group and rejoins silently once the application polls again; `SESSTMOUT` (level 4) when its own session
timer runs out with no answer from the coordinator; `FAIL` (level 3) when a broker connection fails. Its lines read
`%<level>|<epoch seconds>.<ms>|<FACILITY>|<client.id>#consumer-<n>| [thrd:<thread>]: <message>` on stderr. It sends
JoinGroup up to v5 and LeaveGroup up to v1, neither with KIP-800's reason, so a 3.2+ broker prints `client reason:
not provided`; the member ids the broker gives it are `<client.id>-<uuid>`. Its process is no JVM: no GC log.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from simulator.javautil import seeded_uuid

KINDS = ("java", "streams", "connect", "librdkafka")
# What a 3.2+ broker prints for a request that carries no KIP-800 reason (librdkafka's never do).
NO_REASON = "not provided"
STREAM_THREAD = "org.apache.kafka.streams.processor.internals.StreamThread"
# A framework line a consumer's line brings: (milliseconds after it, level, logger, message).
Echo = tuple[int, str, str, str]


def kinds_for(count: int, shares: Mapping[str, float] | None) -> list[str]:
    """The framework of each of `count` groups: `shares` (kind -> weight; None: all plain Java consumers) spread
    evenly over the groups in order, so every prefix of the estate holds about the same mix."""
    if not shares:
        return ["java"] * count
    unknown = sorted(set(shares) - set(KINDS))
    if unknown:
        raise ValueError(f"client kinds {unknown} are not simulated; choose among {list(KINDS)}")
    total = sum(shares.values())
    kinds, given = [], dict.fromkeys(shares, 0)
    for i in range(count):
        # the kind furthest below its share so far
        kind = max(shares, key=lambda k: (shares[k] / total * (i + 1) - given[k], -KINDS.index(k)))
        given[kind] += 1
        kinds.append(kind)
    return kinds


def parse_shares(text: str) -> dict[str, float]:
    """`java=6,streams=2,connect=1` as a dict of kind -> share; ValueError names what is wrong."""
    shares: dict[str, float] = {}
    for part in text.split(","):
        kind, _, share = (x.strip() for x in part.partition("="))
        if kind not in KINDS:
            raise ValueError(f"unknown client kind {kind!r}; choose among {', '.join(KINDS)}")
        try:
            shares[kind] = float(share)
        except ValueError:
            raise ValueError(f"{kind}: share {share!r} is not a number") from None
        if not shares[kind] >= 0:
            raise ValueError(f"{kind}: share {share!r} is negative")
    if not sum(shares.values()) > 0:
        raise ValueError("the shares add up to nothing")
    return shares


def group_id(kind: str, base: str) -> str:
    """The group a framework's consumers join: the application id, or `connect-<connector>`."""
    return f"connect-{base}" if kind == "connect" else base


def client_id(kind: str, group: str, base: str, ordinal: int, rng: random.Random) -> tuple[str, str]:
    """The client id and poll thread of one member: (`consumer-<group>-<n>`, `main`) for a plain consumer."""
    if kind == "streams":
        thread = f"{group}-{seeded_uuid(rng)}-StreamThread-1"
        return f"{thread}-consumer", thread
    if kind == "connect":
        return f"connector-consumer-{base}-{ordinal}", f"task-thread-{base}-{ordinal}"
    if kind == "librdkafka":
        return f"{base}-{ordinal + 1}", "main"  # client.id set by the service, as operators do
    return f"consumer-{group}-{ordinal + 1}", "main"


def sent_reason(kind: str, reason: str) -> str:
    """The reason a member's JoinGroup or LeaveGroup carries to the broker: its own, or none (librdkafka)."""
    return NO_REASON if kind == "librdkafka" else reason


def writes_java_lines(kind: str) -> bool:
    """Whether a framework's consumer prints the Java client's lines (a librdkafka one prints its own, see above)."""
    return kind != "librdkafka"


def rdkafka_line(level: int, facility: str, message: str, thread: str = "main") -> tuple[str, str, str, str]:
    """A librdkafka log line as the simulator's (level, logger, thread, message) record: the syslog level as digits
    and the facility in the logger's place (the writer's librdkafka layout prints them)."""
    return str(level), facility, thread, message


def rdkafka_max_poll(exceeded_ms: int, max_poll_ms: int) -> tuple[str, str, str, str]:
    """What librdkafka prints when the application did not poll within max.poll.interval.ms."""
    return rdkafka_line(4, "MAXPOLL", f"Application maximum poll interval ({max_poll_ms}ms) exceeded by "
                                      f"{exceeded_ms}ms (adjust max.poll.interval.ms for long-running message "
                                      "processing): leaving group")


def rdkafka_session_timeout(after_ms: int, broker: int, last_error: str) -> tuple[str, str, str, str]:
    """What librdkafka prints when its own session timer runs out without a coordinator's answer."""
    return rdkafka_line(4, "SESSTMOUT", f"Consumer group session timed out (in join-state steady) after {after_ms} "
                                        "ms without a successful response from the group coordinator (broker "
                                        f"{broker}, last error was {last_error}): revoking assignment and rejoining "
                                        "group")


def rdkafka_connect_failed(broker: int, ip: str) -> tuple[str, str, str, str]:
    """What librdkafka prints when a connection to a broker is refused (on that broker's thread)."""
    name = f"broker-{broker}:9092/{broker}"
    return rdkafka_line(3, "FAIL", f"{name}: Connect to ipv4#{ip}:9092 failed: Connection refused (after 0ms in "
                                   "state CONNECT)", thread=name)


def rdkafka_coordinator_connect_failed(broker: int, ip: str) -> tuple[str, str, str, str]:
    """The same refusal on the consumer's logical coordinator handle (`GroupCoordinator`, pointed at that broker)."""
    return rdkafka_line(3, "FAIL", f"GroupCoordinator: broker-{broker}:9092: Connect to ipv4#{ip}:9092 failed: "
                                   "Connection refused (after 0ms in state CONNECT)", thread="GroupCoordinator")


def echoes(kind: str, message: str, rng: random.Random, *, first_assignment: bool) -> list[Echo]:
    """The lines a Streams thread prints around one of its consumer's lines (none for the other kinds)."""
    if kind != "streams":
        return []
    if message.startswith("Revoke previously assigned partitions"):
        return [(rng.randint(0, 3), "INFO", STREAM_THREAD, f"partition revocation took {rng.randint(0, 40)} ms.")]
    if message.startswith("Lost previously assigned partitions"):
        return [(rng.randint(0, 3), "INFO", STREAM_THREAD, f"partitions lost took {rng.randint(0, 40)} ms.")]
    if message.startswith("Adding newly assigned partitions"):
        before = "STARTING" if first_assignment else "RUNNING"
        restored = rng.randint(20, 900)
        return [(1, "INFO", STREAM_THREAD, f"State transition from {before} to PARTITIONS_ASSIGNED"),
                (restored, "INFO", STREAM_THREAD, "State transition from PARTITIONS_ASSIGNED to RUNNING")]
    return []


def stream_thread_prefix(thread: str) -> str:
    """What StreamThread's log context puts before each of its messages."""
    return f"stream-thread [{thread}] "
