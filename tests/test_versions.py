"""The supported Spark range: stated in pyproject.toml, refused outside it in one line, and the jars of each line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobs.cli import main
from pipelines.session import versions
from pipelines.session.versions import (
    SUPPORTED_RANGE,
    UnsupportedSparkError,
    check_spark,
    delta_artifacts,
    kafka_artifacts,
    parse,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_spark_is_in_the_range():
    check_spark()


@pytest.mark.parametrize("found", ["3.5.6", "4.0.0", "4.3.0", "5.0.0.dev0"])
def test_a_spark_outside_the_range_is_refused_in_one_line_naming_it(found):
    with pytest.raises(UnsupportedSparkError) as info:
        check_spark(found)
    message = str(info.value)
    assert "\n" not in message
    assert f"pyspark {found} is not supported" in message and SUPPORTED_RANGE in message


@pytest.mark.parametrize("found", ["4.0.1", "4.1.4", "4.2.0", "4.2.1+local"])
def test_each_supported_line_passes(found):
    check_spark(found)


def test_the_cli_prints_the_refusal_as_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(versions, "spark_version", lambda: "3.5.6")
    (tmp_path / "landing" / "broker-1").mkdir(parents=True)
    code = main(["run", "--landing", str(tmp_path / "landing"), "--lakehouse", str(tmp_path / "lake")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert err[-1] == (f"rebalance run: pyspark 3.5.6 is not supported: this package needs pyspark{SUPPORTED_RANGE} "
                       "(4.1.x is the default; pip install -e . installs it)")


def test_pyproject_states_the_range_and_pins_a_spark_inside_it():
    text = (ROOT / "pyproject.toml").read_text()
    assert f"Spark {SUPPORTED_RANGE}" in text
    pins = set(re.findall(r'"pyspark(?:\[connect\])?==([^"]+)"', text))
    assert len(pins) == 1, pins  # the base dependency and the connect extras name the same Spark
    check_spark(pins.pop())


def test_parse_reads_dev_and_local_versions():
    assert parse("4.2.0.dev1") == (4, 2, 0)
    assert parse("4.1.4+db") == (4, 1, 4)
    assert parse("4.1") == (4, 1, 0)


def test_each_line_fetches_its_own_delta_and_kafka_jars():
    assert delta_artifacts("4.0.1", "4.0.1")[0] == ("io.delta", "delta-spark_2.13", "4.0.1")
    assert delta_artifacts("4.1.4", "4.1.0")[:2] == (("io.delta", "delta-spark_4.1_2.13", "4.1.0"),
                                                     ("io.delta", "delta-storage", "4.1.0"))
    newest = [a for _, a, _ in delta_artifacts("4.2.0", "4.4.0")]
    assert newest[0] == "delta-spark_4.2_2.13" and "delta-kernel-defaults" in newest
    assert kafka_artifacts("4.1.4")[0] == ("org.apache.spark", "spark-sql-kafka-0-10_2.13", "4.1.4|4.1.3")
    assert kafka_artifacts("4.0.1")[1][2] == "4.0.1|4.0.0"
    assert kafka_artifacts("4.2.0")[2] == ("org.apache.kafka", "kafka-clients", "3.9.2")
