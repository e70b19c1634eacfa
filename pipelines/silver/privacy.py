"""Pseudonymise member ids and client hosts for teams that treat them as personal data (`privacy.hash_ids`).

Each id becomes `h-` and the first 16 hex digits of SHA-256(salt + id), the same in every table and every batch, so
broker and client lines still join and a member is still one member. The salt comes from an environment variable (a
secret, never written anywhere). Free text is scrubbed too: the record's own ids are replaced by their hashes in the
message, reasons and raw line, and any remaining UUID-bearing id or IPv4 address is hashed by pattern, so a line no
template knows (quarantine) does not leak them either.
"""

from __future__ import annotations

import os

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.settings.config import Config

# Ids whose value is personal: member ids (client id + UUID, or a KIP-848 id) and the host a member connects from.
ID_COLUMNS = ("member_id", "old_member_id", "client_host")
# Free-text columns of a parsed record that may repeat those ids.
TEXT_COLUMNS = ("value", "body", "msg", "reason", "client_reason", "members", "continued")
# What is left after the exact replacement: `<client id>-<uuid>` member ids, bare UUIDs and IPv4 addresses.
UUID_ID = r"[\w.-]*-?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
IPV4 = r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])"


def salt(cfg: Config) -> str:
    """The hashing salt from the configured environment variable ('' when unset: hashes stay stable, but guessable)."""
    return os.environ.get(cfg.privacy.salt_env, "")


def hashed(value: Column, salt_value: str) -> Column:
    """`h-<16 hex>` of a string column (null stays null)."""
    digest = F.sha2(F.concat(F.lit(salt_value), value), 256)
    return F.when(value.isNotNull(), F.concat(F.lit("h-"), F.substring(digest, 1, 16)))


def _scrub_patterns(text: Column, salt_value: str) -> Column:
    """Hash what still looks like an id in free text; Spark has no replace-with-function, so matches are split out,
    hashed one by one and joined back."""
    pattern = f"({UUID_ID}|{IPV4})"
    parts = F.split(F.regexp_replace(text, pattern, "\u0000$1\u0000"), "\u0000")
    # After the split, odd positions hold the matches (the text between matches sits at even positions).
    rebuilt = F.transform(
        parts, lambda part, i: F.when((i % 2) == 1, hashed(part, salt_value)).otherwise(part)
    )
    return F.when(text.rlike(pattern), F.array_join(rebuilt, "")).otherwise(text)


def hash_salt(cfg: Config) -> str | None:
    """The salt to hash ids with when `privacy.hash_ids` is on, else None (ids are kept as logged)."""
    return salt(cfg) if cfg.privacy.hash_ids else None


def pseudonymise(parsed: DataFrame, *, salt_value: str | None) -> DataFrame:
    """Replace member ids and client hosts in a parsed batch (every column that reaches a table) by their salted
    hashes; a no-op when `salt_value` is None."""
    if salt_value is None:
        return parsed
    text_columns = [c for c in TEXT_COLUMNS if c in parsed.columns]
    id_columns = [c for c in ID_COLUMNS if c in parsed.columns]
    replaced: dict[str, Column] = {}
    for name in text_columns:
        text = F.col(name)
        for id_name in id_columns:
            value = F.col(id_name)
            usable = value.isNotNull() & (F.length(value) >= 4)
            text = F.when(usable, F.replace(text, value, hashed(value, salt_value))).otherwise(text)
        # Hosts are logged with a leading slash (`/10.1.2.3`); the id columns keep it, the text only shows the rest.
        replaced[name] = _scrub_patterns(text, salt_value)
    for name in id_columns:
        replaced[name] = hashed(F.col(name), salt_value)
    return parsed.withColumns(replaced)
