"""databricks.yml: typed models of every resource (strict), the official JSON schema, entry points that exist, and a
dashboard whose queries run against the declared table schemas."""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from jobs.databricks import TASKS, build_parser
from schemas.tables import TABLES
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


def _dashboards() -> dict:
    """Each dashboard resource with its .lvdash.json (file_path is relative to the resource file that names it)."""
    found = {}
    for path in sorted(ROOT.glob("resources/*.yml")):
        for key, resource in yaml.safe_load(path.read_text()).get("resources", {}).get("dashboards", {}).items():
            found[key] = (resource, json.loads((path.parent / resource["file_path"]).read_text()))
    return found


_TABLE_REF = re.compile(r"\b(?:FROM|JOIN)\s+([\w.`]+)", re.I)
_AGGREGATE = re.compile(r"^\s*(SUM|COUNT|AVG|MIN|MAX|MEDIAN|COUNT_IF)\s*\(", re.I)


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


def test_the_job_runs_quality_between_reconstruct_and_alerts_and_alerts_run_anyway():
    tasks = {t["task_key"]: t for t in _jobs(_bundle())["rebalance_pipeline"]["tasks"]}
    assert list(tasks) == ["ingest", "reconstruct", "quality", "alerts"]
    assert [d["task_key"] for d in tasks["quality"]["depends_on"]] == ["reconstruct"]
    assert [d["task_key"] for d in tasks["alerts"]["depends_on"]] == ["quality"]
    assert tasks["alerts"]["run_if"] == "ALL_DONE"  # a failed quality rule is still alerted


def test_every_dashboard_passes_the_typed_models():
    from databricks.bundles.dashboards import Dashboard

    dashboards = _dashboards()
    assert dashboards, "the bundle declares no dashboard"
    for resource, _ in dashboards.values():
        Dashboard.from_dict(resource)
        assert resource["warehouse_id"].startswith("${var.")
        assert (resource["dataset_catalog"], resource["dataset_schema"]) == ("${var.catalog}", "${var.schema}")
    broken = dict(resource, datasets_catalog="x")
    with pytest.raises(ValueError, match="datasets_catalog"):
        Dashboard.from_dict(broken)


def test_dashboard_queries_run_against_the_declared_tables(spark):
    # A session of its own: the empty views below must not shadow the tables other tests register.
    session = spark.newSession()
    for name, schema in TABLES.items():
        session.createDataFrame([], schema).createOrReplaceTempView(name)
    for _, board in _dashboards().values():
        datasets = {d["name"]: "".join(d["queryLines"]) for d in board["datasets"]}
        for query in datasets.values():
            # Unqualified names only: the bundle's dataset_catalog/dataset_schema say where the tables are.
            assert {ref.strip("`") for ref in _TABLE_REF.findall(query)} <= set(TABLES), query
            session.sql(query).collect()
        widgets = [item["widget"] for page in board["pages"] for item in page["layout"]]
        assert {w["spec"]["widgetType"] for w in widgets if "spec" in w} >= {"counter", "bar", "table"}
        for widget in (w for w in widgets if "queries" in w):
            query = widget["queries"][0]["query"]
            fields = {f["name"]: f["expression"] for f in query["fields"]}
            encodings = widget["spec"]["encodings"]
            named = [e["fieldName"] for e in encodings.get("columns", [])] + [
                e["fieldName"] for key, e in encodings.items() if isinstance(e, dict) and "fieldName" in e]
            assert set(named) <= set(fields), widget["name"]
            select = ", ".join(f"{expr} AS `{name}`" for name, expr in fields.items())
            keys = [expr for expr in fields.values() if not _AGGREGATE.match(expr)]
            group = f" GROUP BY {', '.join(keys)}" if keys and not query["disaggregated"] else ""
            session.sql(f"SELECT {select} FROM ({datasets[query['datasetName']]}){group}").collect()


# Serverless environment versions and the Spark line of their Databricks Connect (Databricks' release notes:
# environment 4 is Databricks Connect 17, Databricks Runtime 17's Spark 4.0; environment 5 is Databricks Connect 18,
# Databricks Runtime 18 LTS's Spark 4.1).
ENVIRONMENT_SPARK = {"4": (4, 0), "5": (4, 1)}


def test_the_serverless_environment_runs_the_spark_line_the_wheel_pins():
    from pipelines.session.versions import parse

    pins = {r.split("==")[1] for r in metadata.requires("kafka-rebalance-analytics") or [] if r.startswith("pyspark==")}
    assert len(pins) == 1, pins
    spark_line = parse(pins.pop())[:2]
    for job in _jobs(_bundle()).values():
        for environment in job["environments"]:
            spec = environment["spec"]
            assert "client" not in spec, "`client` is deprecated: environment_version names the environment"
            assert ENVIRONMENT_SPARK[spec["environment_version"]] == spark_line, environment
