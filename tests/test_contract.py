"""The event contract: the pydantic model of a silver_events row agrees with the table's StructType, field by field,
and every event line `rebalance parse` prints validates against it."""

from __future__ import annotations

import json

from pyspark.sql.types import BooleanType, DataType, IntegerType, LongType, MapType, StringType, TimestampType

from jobs.cli import main
from jobs.commands import _PARSE_FIELDS
from schemas.events import SilverEvent, printed_event
from schemas.tables import SILVER_EVENTS
from tests.conftest import DATA

# The JSON schema pydantic states for each Spark type of the table.
INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
INT64 = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}


def json_type(dtype: DataType) -> dict[str, object]:
    """The JSON schema of one Spark column type, as pydantic writes it for the model's field."""
    if isinstance(dtype, MapType):
        return {"type": "object", "additionalProperties": json_type(dtype.valueType)}
    return {StringType(): {"type": "string"}, IntegerType(): INT32, LongType(): INT64,
            BooleanType(): {"type": "boolean"}, TimestampType(): {"type": "string", "format": "date-time"}}[dtype]


def model_columns() -> dict[str, tuple[dict[str, object], bool]]:
    """Each model field's JSON schema (without title and default) and whether it may be null."""
    schema = SilverEvent.model_json_schema()
    columns = {}
    for name, prop in schema["properties"].items():
        prop = {k: v for k, v in prop.items() if k not in ("title", "default")}
        variants = prop.get("anyOf", [prop])
        nullable = {"type": "null"} in variants
        (value,) = [v for v in variants if v != {"type": "null"}]
        assert nullable == (name not in schema.get("required", [])), name
        columns[name] = (value, nullable)
    return columns


def test_model_fields_are_the_table_columns_in_order():
    assert list(SilverEvent.model_fields) == SILVER_EVENTS.fieldNames()


def test_model_field_types_and_nullability_match_the_table():
    columns = model_columns()
    for field in SILVER_EVENTS.fields:
        assert columns[field.name] == (json_type(field.dataType), field.nullable), field.name


def test_parse_prints_only_contract_fields():
    assert set(_PARSE_FIELDS) <= set(SilverEvent.model_fields)


def test_parse_output_validates_against_the_contract(spark, tmp_path, capsys):
    conf = tmp_path / "test.yml"
    conf.write_text("spark:\n  master: local[2]\n  shuffle_partitions: 2\n  driver_memory: 2g\n")
    files = sorted(str(p) for p in (DATA / "landing").glob("*/*/*"))
    code = main(["parse", *files, "--kind", "auto", "--conf", str(conf)])
    # GC pause lines are silver_gc_pauses rows, not events.
    lines = [line for line in capsys.readouterr().out.splitlines() if json.loads(line)["event_type"] != "gc_pause"]
    assert code == 0 and lines
    printed = printed_event(_PARSE_FIELDS)
    for line in lines:
        printed.model_validate_json(line)
