"""databricks.yml: typed models of every resource (strict), the official JSON schema, and entry points that exist."""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from jobs.databricks import TASKS, build_parser
from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = SHARED / "databricks" / "bundle-jsonschema.json"


def _bundle() -> dict:
    bundle = yaml.safe_load((ROOT / "databricks.yml").read_text())
    for pattern in bundle.get("include", []):
        for path in sorted(ROOT.glob(pattern)):
            included = yaml.safe_load(path.read_text())
            for kind, items in included.get("resources", {}).items():
                bundle.setdefault("resources", {}).setdefault(kind, {}).update(items)
    return bundle


def _jobs(bundle: dict) -> dict:
    return bundle.get("resources", {}).get("jobs", {})


def test_every_job_passes_the_typed_models():
    from databricks.bundles.jobs import Job

    jobs = _jobs(_bundle())
    assert jobs, "the bundle declares no job"
    for job in jobs.values():
        Job.from_dict(job)


def test_typed_models_reject_an_unknown_field():
    from databricks.bundles.jobs import Job

    job = dict(next(iter(_jobs(_bundle()).values())))
    job["taskz"] = job.pop("tasks")
    with pytest.raises(ValueError, match="taskz"):
        Job.from_dict(job)


@pytest.mark.skipif(not SCHEMA.exists(), reason="../shared/databricks is not present")
def test_bundle_matches_the_official_json_schema():
    import jsonschema

    # Python's re lacks Unicode property classes; these replacements keep the patterns' meaning.
    text = SCHEMA.read_text().replace(r"\\p{L}", r"[^\\W\\d_]").replace(r"\\p{N}", r"\\d")
    validator = jsonschema.Draft7Validator(json.loads(text))
    errors = sorted(validator.iter_errors(_bundle()), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    broken = _bundle()
    broken["resources"]["jobs"]["rebalance_pipeline"]["taskz"] = []
    assert list(validator.iter_errors(broken)), "the schema check cannot fail"


def test_tasks_name_entry_points_and_parameters_that_exist():
    scripts = {ep.name: ep.value for ep in metadata.entry_points(group="console_scripts")}
    parser = build_parser()
    declared = set(re.sub(r"[-_.]+", "_", metadata.metadata("kafka-rebalance-analytics")["Name"]).split())
    for job in _jobs(_bundle()).values():
        for task in job["tasks"]:
            wheel = task["python_wheel_task"]
            assert wheel["package_name"] in declared
            assert wheel["entry_point"] in scripts, wheel["entry_point"]
            parameters = [p if not p.startswith("${var.") else "x" for p in wheel["parameters"]]
            args = parser.parse_args(parameters)
            assert args.task in TASKS
