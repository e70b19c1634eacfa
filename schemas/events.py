"""The event contract: one `silver_events` row as a pydantic model (`SilverEvent`), beside its StructType
(schemas.tables.SILVER_EVENTS). `rebalance parse` prints a projection of it as JSON lines (`printed_event`)."""

from __future__ import annotations

import datetime as dt
from functools import cache
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, create_model

# Spark's IntegerType and LongType, told apart by their ranges.
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class SilverEvent(BaseModel):
    """One typed event of a log line (silver_events); a nullable column is an optional field, in table order."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    event_id: str
    event_ts: dt.datetime
    event_type: str
    template_id: str
    source_kind: str
    group_id: str | None = None
    member_id: str | None = None
    generation: Int32 | None = None
    state: str | None = None
    reason: str | None = None
    client_reason: str | None = None
    member_count: Int32 | None = None
    static_count: Int32 | None = None
    broker_id: Int32 | None = None
    offsets_partition: Int32 | None = None
    client_id: str | None = None
    group_instance_id: str | None = None
    old_member_id: str | None = None
    client_host: str | None = None
    protocol: str | None = None
    coordinator: str | None = None
    error: str | None = None
    epoch: str | None = None
    partitions: str | None = None
    topics: str | None = None
    members: str | None = None
    group_epoch: Int32 | None = None
    member_epoch: Int32 | None = None
    previous_member_epoch: Int32 | None = None
    target_epoch: Int32 | None = None
    previous_state: str | None = None
    group_protocol: str | None = None
    revoked_partitions: str | None = None
    level: str | None = None
    logger: str | None = None
    thread: str | None = None
    message: str | None = None
    instance: str | None = None
    source_file: str
    line_no: Int64
    record_lines: Int64 | None = None
    batch_id: Int64
    ingested_at: dt.datetime
    settings: dict[str, str] | None = None
    ts_inferred: bool | None = None
    ts_line_order: bool | None = None


@cache
def printed_event(fields: tuple[str, ...]) -> type[BaseModel]:
    """The model of one event line of `rebalance parse`: the `fields` of SilverEvent it prints, null ones left out,
    and `event_ts` optional (parse also shows records whose time is unknown, which the table keeps in quarantine)."""
    unknown = [name for name in fields if name not in SilverEvent.model_fields]
    if unknown:
        raise KeyError(f"{', '.join(unknown)} are not silver_events columns; print only fields of SilverEvent")
    definitions: dict[str, tuple[object, object]] = {}
    for name in fields:
        info = SilverEvent.model_fields[name]
        required = info.is_required() and name != "event_ts"
        annotation = info.rebuild_annotation()
        definitions[name] = (annotation, ...) if required else (annotation | None, None)
    return create_model("PrintedEvent", __config__=SilverEvent.model_config, **definitions)  # type: ignore[call-overload]
