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
