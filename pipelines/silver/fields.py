"""Typed event fields of a matched template, picked by group index from one packed match and merged with what the
Kafka prefix already said (group, client, static instance, broker, __consumer_offsets partition)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.silver.templates import INT_FIELDS, Alternation

# Scala's Option, Java's Optional and a null print around the value, or instead of it.
_ABSENT = ("None", "null", "Optional.empty", "OptionalInt.empty", "")


def template_field(parts: Column, alternation: Alternation, field: str) -> Column:
    """One field of the matched template (null when the template has no such field); ints are cast."""
    expr = F.nullif(F.trim(F.get(parts, alternation.field_slot(field) - 1)), F.lit(""))
    return expr.try_cast("int") if field in INT_FIELDS else expr


def _unwrap(value: Column) -> Column:
    """`Some(x)`, `Optional[x]` -> `x`; `None`, `null`, `Optional.empty` -> null."""
    inner = F.regexp_replace(value, r"^(?:Some\((.*)\)|Optional\[(.*)\]|OptionalInt\[(.*)\])$", "$1$2$3")
    return F.when(~inner.isin(*_ABSENT), inner)


# A Kafka Streams client id is `<application.id>-<process UUID>`, its threads' `...-StreamThread-<n>`, and the group
# of a Streams application is its application.id.
_STREAMS_CLIENT = (
    r"^(.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:-StreamThread-\d+)?"
    r"(?:-consumer|-restore-consumer)?$"
)


def streams_application(client_id: Column) -> Column:
    """The application.id in a Kafka Streams client or thread id (null for any other client id)."""
    return F.nullif(F.regexp_extract(client_id, _STREAMS_CLIENT, 1), F.lit(""))


def typed_fields(parts: Column, alternation: Alternation) -> dict[str, Column]:
    """Every typed column of silver_events that a template or the prefix fills, by column name (`parts` is the
    packed match of the alternation, null where no template matched)."""
    raw = {f: template_field(parts, alternation, f) for f in alternation.fields}
    reason = raw.pop("reason")
    out = dict(raw)
    out.pop("instance_id")
    out.pop("group_name")
    # A group printed in quotes by a wrapper (`"my-group"`) is the same group.
    group = F.regexp_replace(F.coalesce(raw["group_id"], raw["group_name"]), r'^"(.+)"$', "$1")
    out["group_id"] = F.coalesce(group, F.col("_prefix_group_id"), F.col("_json_group_id"),
                                 streams_application(raw["client_id"]), F.col("_thread_group_id"))
    out["member_id"] = F.when(raw["member_id"] != "<no ID>", raw["member_id"])
    out["group_instance_id"] = _unwrap(F.coalesce(raw["instance_id"], F.col("_prefix_instance_id")))
    out["client_id"] = F.coalesce(raw["client_id"], F.col("client_id_prefix"), F.col("client_handle"))
    out["offsets_partition"] = F.coalesce(raw["offsets_partition"], F.col("_prefix_partition").try_cast("int"))
    out["epoch"] = F.nullif(F.regexp_extract(raw["epoch"], r"(-?\d+)", 1), F.lit(""))
    out["broker_id"] = F.col("_broker_id").try_cast("int")
    # A broker reason carries the client's own reason after `; client reason: ` (Kafka 3.2+, KIP-800).
    out["reason"] = F.regexp_replace(reason, "; client reason: .*$", "")
    out["client_reason"] = F.coalesce(
        raw["client_reason"], F.nullif(F.regexp_extract(reason, "; client reason: (.*)$", 1), F.lit(""))
    )
    return out
