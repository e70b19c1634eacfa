from __future__ import annotations

from pathlib import Path

import pytest

from jobs.cli import main
from pipelines.settings.config import ConfigError, load_config


def test_defaults_need_no_editing():
    cfg = load_config()
    assert cfg.landing == Path("landing")
    assert cfg.checkpoint_root == Path("lakehouse") / "_checkpoints"
    assert cfg.source_for("broker-1").tz == "UTC"


def test_unknown_key_is_named(tmp_path):
    conf = tmp_path / "bad.yml"
    conf.write_text("landing: x\nlakehose: y\n")
    with pytest.raises(ConfigError, match=r"lakehose: is not a known key"):
        load_config(conf)


def test_bad_time_zone_names_key_and_fix(tmp_path):
    conf = tmp_path / "bad.yml"
    conf.write_text("sources:\n  - instances: 'broker-*'\n    tz: Berlin\n")
    with pytest.raises(ConfigError, match=r"sources\.0\.tz: 'Berlin' is not an IANA time zone; try 'Europe/Berlin'"):
        load_config(conf)


def test_first_matching_source_rule_wins():
    cfg = load_config(None, {"sources": [{"instances": "broker-*", "tz": "Europe/Berlin"}, {"instances": "*"}]})
    assert cfg.source_for("broker-2").tz == "Europe/Berlin"
    assert cfg.source_for("orders-svc-0").tz == "UTC"


def test_cli_bad_configuration_value_exits_2(tmp_path, capsys):
    conf = tmp_path / "bad.yml"
    conf.write_text("spark:\n  shuffle_partitions: 0\n")
    code = main(["run", "--conf", str(conf), "--landing", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "spark.shuffle_partitions" in err and "greater than or equal to 1" in err


def test_cli_missing_landing_exits_2(tmp_path, capsys):
    code = main(["run", "--landing", str(tmp_path / "nope"), "--lakehouse", str(tmp_path / "lake")])
    err = capsys.readouterr().err
    assert code == 2
    assert "landing directory" in err and "does not exist" in err and "--landing" in err


def test_cli_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--trigger", "sometimes"])
    assert stop.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_storage_locations_are_paths_not_urls():
    with pytest.raises(ConfigError, match=r"landing: 's3://bucket/logs' is a URL; give a path.*\/Volumes\/"):
        load_config(None, {"landing": "s3://bucket/logs"})


def test_a_storage_path_that_is_not_utf8_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """The JVM takes paths as UTF-8: a folder name with other bytes used to fail the run deep in the Spark gateway
    (a page of tracebacks, then `Py4JError`); the configuration refuses it, showing the bytes as escapes."""
    import os

    landing = tmp_path / os.fsdecode(b"land\xe9")
    landing.mkdir()
    for key in ("landing", "lakehouse", "checkpoints"):
        with pytest.raises(ConfigError, match=rf"{key}: '.*land\\xe9' is not UTF-8.*rename the folder"):
            load_config(None, {key: landing})
    # A relative path (the default `landing`) in a working directory whose name is not UTF-8 is refused too.
    monkeypatch.chdir(landing)
    with pytest.raises(ConfigError, match=r"lakehouse: '.*land\\xe9/lakehouse' is not UTF-8"):
        load_config(None, {"landing": tmp_path})
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--landing", str(landing), "--lakehouse", str(tmp_path / "lh")]) == 2
    err = capsys.readouterr().err
    assert "land\\xe9' is not UTF-8" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
