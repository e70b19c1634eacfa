"""Java and Kafka behaviours the logs depend on: String.hashCode, HashMap iteration order, ids, logger abbreviation."""

from __future__ import annotations

import base64
import random
import uuid
from collections.abc import Sequence

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 50


def to_int32(value: int) -> int:
    """Wrap an integer to Java's signed 32-bit int."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(1 << 31) else abs(n)


def offsets_partition(group_id: str) -> int:
    """The __consumer_offsets partition (and so the coordinator) of a group, as GroupMetadataManager.partitionFor."""
    return kafka_abs(string_hash(group_id)) % OFFSETS_PARTITIONS


def topic_partition_hash(topic: str, partition: int) -> int:
    """TopicPartition.hashCode."""
    return to_int32(31 * (31 + partition) + string_hash(topic))


def _table_size(n: int) -> int:
    # new HashMap/HashSet(collection): capacity max(n / 0.75 + 1, 16), rounded up to a power of two
    wanted = max(int(n / 0.75) + 1, 16)
    size = 1
    while size < wanted:
        size <<= 1
    return size


def hash_order(hashes: Sequence[int]) -> list[int]:
    """Indexes in the iteration order of a java.util.HashMap holding keys with these hashCodes (insertion order)."""
    mask = _table_size(len(hashes)) - 1

    def bucket(i: int) -> int:
        h = hashes[i] & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(range(len(hashes)), key=bucket)


def seeded_uuid(rng: random.Random) -> str:
    """A random (version 4) UUID drawn from the given generator."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def base64_id(rng: random.Random) -> str:
    """A 22-character url-safe base64 id, the shape of Kafka's cluster id."""
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")


def abbreviate_logger(name: str, target: int = 36) -> str:
    """Logback 1.2 `%logger{36}`: shorten package segments to initials, left to right, until the name fits."""
    if len(name) < target:
        return name
    parts = name.split(".")
    if len(parts) == 1:
        return name
    to_trim = len(name) - target
    out = []
    for part in parts[:-1]:
        if to_trim > 0 and part:
            out.append(part[0])
            to_trim -= len(part) - 1
        else:
            out.append(part)
    out.append(parts[-1])
    return ".".join(out)
