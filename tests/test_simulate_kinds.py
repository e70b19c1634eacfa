"""The frameworks a simulated group's consumers run in (simulator/frameworks.py): plain Java consumers, Kafka Streams
threads and Connect sink tasks, spread over the groups by share."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from simulator import simulate
from simulator.frameworks import kinds_for, parse_shares


def test_shares_spread_evenly_over_the_groups_in_order():
    kinds = kinds_for(10, {"java": 6, "streams": 3, "connect": 1})
    assert Counter(kinds) == {"java": 6, "streams": 3, "connect": 1}
    # every prefix keeps about the mix: the first four groups hold a Streams application already
    assert "streams" in kinds[:4]
    assert kinds_for(3, None) == ["java"] * 3


@pytest.mark.parametrize(("text", "message"), [
    ("java=1,rdkafka=1", "unknown client kind 'rdkafka'"),
    ("java=x", "share 'x' is not a number"),
    ("java=-1,streams=2", "is negative"),
    ("java=0", "add up to nothing"),
])
def test_bad_shares_are_refused_with_the_reason(text, message):
    with pytest.raises(ValueError, match=message):
        parse_shares(text)


@pytest.fixture(scope="module")
def kinds_run(tmp_path_factory):
    return simulate(tmp_path_factory.mktemp("kinds"), seed=21, groups=3, hours=2.0, kafka_version="3.6",
                    client_kinds={"java": 1, "streams": 1, "connect": 1})


def _lines(landing: Path, service: str) -> str:
    return "".join(p.read_text() for p in sorted(landing.glob(f"{service}-0/consumer.log.*")))


def test_each_framework_names_its_group_client_and_thread_as_kafka_does(kinds_run):
    assert kinds_run.groups == ["orders-processor", "payments-ledger", "connect-shipping-events"]
    streams = _lines(kinds_run.landing_dir, "payments-svc")
    thread = re.search(r"clientId=(payments-ledger-[0-9a-f-]{36}-StreamThread-1)-consumer, groupId=payments-ledger\]",
                       streams)
    assert thread, streams[:2000]
    assert f"stream-thread [{thread.group(1)}] State transition from STARTING to PARTITIONS_ASSIGNED" in streams
    assert f"stream-thread [{thread.group(1)}] State transition from PARTITIONS_ASSIGNED to RUNNING" in streams
    connect = _lines(kinds_run.landing_dir, "shipping-svc")
    assert re.search(r"^\[[\d-]+ [\d:,]+\] INFO \[shipping-events\|task-0\] \[Consumer "
                     r"clientId=connector-consumer-shipping-events-0, groupId=connect-shipping-events\] Subscribed to "
                     r"topic\(s\): shipments \(org\.apache\.kafka\.clients\.consumer\.KafkaConsumer:\d+\)$", connect,
                     re.M), connect[:2000]
    plain = _lines(kinds_run.landing_dir, "orders-svc")
    assert "clientId=consumer-orders-processor-1, groupId=orders-processor]" in plain
    assert "stream-thread" not in plain and "|task-" not in plain


def test_every_member_of_a_framework_group_is_named_by_its_framework_scaled_up_ones_too(kinds_run):
    landing = kinds_run.landing_dir
    streams = sorted(landing.glob("payments-svc-*"))
    connect = sorted(landing.glob("shipping-svc-*"))
    assert streams and connect
    for folder in streams:
        text = "".join(p.read_text() for p in folder.glob("consumer.log.*"))
        assert set(re.findall(r"clientId=([^,]+),", text)) == {f"{folder_thread}-consumer" for folder_thread in
                                                              set(re.findall(r"stream-thread \[([^\]]+)\]", text))}
        assert "stream-thread [main]" not in text
    for folder in connect:
        text = "".join(p.read_text() for p in folder.glob("consumer.log.*"))
        ordinal = folder.name.rsplit("-", 1)[1]
        assert set(re.findall(r"clientId=([^,]+),", text)) == {f"connector-consumer-shipping-events-{ordinal}"}
        assert f"[shipping-events|task-{ordinal}] " in text


@pytest.fixture(scope="module")
def rdkafka_run(tmp_path_factory):
    return simulate(tmp_path_factory.mktemp("rdkafka"), seed=23, groups=2, hours=4.0, kafka_version="3.6",
                    client_kinds={"librdkafka": 1})


_RDKAFKA_LINE = re.compile(r"^%([0-7])\|(\d{10})\.(\d{3})\|([A-Z]+)\|([\w.-]+)#consumer-1\| \[thrd:([^\]]+)\]: (.+)$")


def test_a_librdkafka_service_prints_only_its_warnings_and_its_own_lines(rdkafka_run):
    """At librdkafka's default log level a rebalance, a join or a close prints nothing; what goes wrong does
    (MAXPOLL, SESSTMOUT, FAIL), in its own stderr layout. The service's own lines are Python logging's."""
    landing = rdkafka_run.landing_dir
    facilities: Counter[str] = Counter()
    for folder in sorted(landing.glob("*-svc-*")):
        assert not list(folder.glob("gc.log*")), f"{folder.name}: a librdkafka service runs no JVM"
        for line in "".join(p.read_text() for p in folder.glob("consumer.log.*")).splitlines():
            found = _RDKAFKA_LINE.match(line)
            if found:
                facilities[found.group(4)] += 1
                assert found.group(5).startswith(folder.name.split("-svc-")[0]) or "-" in found.group(5)
                continue
            assert re.match(r"^[\d-]+ [\d:,]+ (INFO|WARNING|ERROR|DEBUG) com\.acme\.\S+: ", line), line
            assert "Consumer clientId=" not in line and "ConsumerConfig" not in line, line
    assert facilities["MAXPOLL"] >= 1 and set(facilities) <= {"MAXPOLL", "SESSTMOUT", "FAIL"}, facilities
    maxpoll = [line for p in sorted(landing.glob("*-svc-*/consumer.log.*")) for line in p.read_text().splitlines()
               if "|MAXPOLL|" in line]
    assert all(re.search(r"\[thrd:main\]: Application maximum poll interval \(300000ms\) exceeded by \d+ms \(adjust "
                         r"max\.poll\.interval\.ms for long-running message processing\): leaving group$", m)
               for m in maxpoll), maxpoll


def test_a_librdkafka_member_sends_the_broker_no_reason_and_has_no_gc_incident(rdkafka_run):
    broker = "".join(p.read_text() for p in sorted(rdkafka_run.landing_dir.glob("broker-*/server.log.*")))
    reasons = re.findall(r"client reason: ([^)(]*?)\)* \(kafka\.coordinator", broker)
    assert reasons and set(reasons) == {"not provided"}, Counter(reasons)
    assert re.search(r"Adding new member orders-processor-\d-[0-9a-f-]{36} with group instance id None", broker)
    assert "gc_pause" not in rdkafka_run.by_cause


def test_a_librdkafka_member_that_cannot_reach_its_new_coordinator_says_so_on_its_coordinator_handle(tmp_path):
    # librdkafka's logical `GroupCoordinator` handle follows the group's coordinator: a refused connection to that
    # broker prints a FAIL on the handle too (its nodename first), the line the replay reads the outage from
    sim = simulate(tmp_path, seed=27, groups=40, hours=6, kafka_version="2.4",
                   client_kinds={"java": 5, "librdkafka": 2, "streams": 2, "connect": 1})
    assert sim.by_cause.get("coordinator_change")
    lines = [line for p in sorted(tmp_path.glob("landing/*-svc-*/consumer.log.*")) for line in
             p.read_text().splitlines() if "|FAIL|" in line]
    refused = [line for line in lines if "[thrd:broker-" in line]
    handle = [line for line in lines if "[thrd:GroupCoordinator]" in line]
    assert refused and len(handle) == len(refused), (refused, handle)
    for broker_line, coordinator_line in zip(refused, handle, strict=True):
        when, broker = broker_line.split("|")[1], re.search(r"thrd:broker-(\d+):", broker_line).group(1)
        assert coordinator_line.split("|")[1] == when
        assert re.search(rf"\]: GroupCoordinator: broker-{broker}:9092: Connect to ipv4#[\d.]+:9092 failed: "
                         r"Connection refused \(after 0ms in state CONNECT\)$", coordinator_line), coordinator_line
