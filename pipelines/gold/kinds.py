"""What kind of group a group is (`consumer`, `streams`, `connect`, `share`) and which client each of its members
runs (`java`, `librdkafka`, `streams`, `connect`, `kafka-python`, `aiokafka`, `kafkajs`, `kafka-go`, `sarama`,
`franz-go`, `ruby-kafka`, `brod`), from the lines they print.

A broker's classic-protocol lines never say a group's protocol type, so the type comes from the wordings: a
streams-group or share-group line of a 4.x coordinator, or the members' own Kafka Streams or Connect lines. The
client kind of a process comes from the wordings of its own lines (the catalogue component of their template), else
from the member id a default librdkafka client gets (`rdkafka-<uuid>`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipelines.gold.records import TimelineEvent

# Template id prefix -> the client that prints it (pipelines/silver/wordings: client_*.yml).
_CLIENT_OF_TEMPLATE = {"r_": "librdkafka", "s_": "streams", "w_": "connect", "c_": "java", "k_": "java",
                       "p_": "kafka-python", "a_": "aiokafka", "j_": "kafkajs", "g_": "kafka-go", "m_": "sarama",
                       "f_": "franz-go", "y_": "ruby-kafka", "o_": "brod"}
# A Streams or Connect process also prints its embedded Java consumer's lines: its own kind wins. kafka-python prints
# some of the Java client's 0.10 wordings (typed by Java rows): its own rows win over them. aiokafka prints many of
# kafka-python's wordings (typed by kafka-python rows): its own rows win over those.
_PRECEDENCE = ("connect", "streams", "librdkafka", "aiokafka", "kafka-python", "kafkajs", "kafka-go", "sarama",
               "franz-go", "ruby-kafka", "brod", "java")


def group_type(events: list[TimelineEvent]) -> str:
    """The group's type: share (any share-group line), streams (a KIP-1071 streams-group line or a Kafka Streams
    member), connect (a Connect worker's lines), else consumer."""
    kinds = {str(e.get("event_type") or "").split("_", 1)[0] for e in events}
    templates = {str(e.get("template_id") or "") for e in events}
    if "share" in kinds:
        return "share"
    if "streams" in kinds or any(t.startswith(("x_streams", "s_")) for t in templates):
        return "streams"
    if "connect" in kinds or any(t.startswith("w_") for t in templates):
        return "connect"
    return "consumer"


def client_kinds(events: list[TimelineEvent]) -> dict[str, str]:
    """Instance folder -> the client kind its process's lines show."""
    seen: dict[str, Counter[str]] = {}
    for event in events:
        instance, template = event.get("instance"), str(event.get("template_id") or "")
        kind = _CLIENT_OF_TEMPLATE.get(template[:2]) if event.get("source_kind") == "client" else None
        if instance and kind:
            seen.setdefault(instance, Counter())[kind] += 1
    return {instance: next(k for k in _PRECEDENCE if k in counts) for instance, counts in seen.items()}


def client_kind_of(session: dict[str, Any], by_instance: dict[str, str], group: str) -> str | None:
    """The client kind of one member session: its process's lines, else its member id, else the group's type
    (every member of a Connect or Streams group runs that client); None when nothing tells."""
    instance = session.get("instance")
    if instance and instance in by_instance:
        return by_instance[instance]
    if str(session.get("member_id") or "").startswith("rdkafka-"):
        return "librdkafka"
    if group in ("streams", "connect"):
        return group
    return None
