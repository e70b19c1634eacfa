"""One Spark session for the whole test run (local[2], 2 shuffle partitions, UI off, UTC, Delta configured)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines.config import Config, load_config

DATA = Path(__file__).parent / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def make_config(root: Path, **overrides) -> Config:
    """A test configuration whose landing and lakehouse live under `root`."""
    values = {
        "landing": root / "landing",
        "lakehouse": root / "lakehouse",
        "spark": {"master": "local[2]", "shuffle_partitions": 2, "driver_memory": "2g"},
    }
    values.update(overrides)
    return load_config(None, values)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from pipelines.spark import get_spark

    cfg = make_config(tmp_path_factory.mktemp("session"))
    session = get_spark(cfg, app_name="rebalance-tests")
    yield session
    session.stop()


@pytest.fixture
def workspace(tmp_path) -> Path:
    """An empty landing directory and lakehouse location for one test."""
    (tmp_path / "landing").mkdir()
    return tmp_path


def land(source: Path, landing: Path) -> None:
    """Copy instance folders into the landing directory, each file atomically (write then rename)."""
    for instance in sorted(p for p in source.iterdir() if p.is_dir()):
        target_dir = landing / instance.name
        target_dir.mkdir(parents=True, exist_ok=True)
        for file in sorted(instance.iterdir()):
            partial = target_dir / f".{file.name}.partial"
            shutil.copyfile(file, partial)
            partial.rename(target_dir / file.name)
