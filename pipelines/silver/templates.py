"""Log templates as data: load templates.yml, compile each row to an anchored regex and a literal prefilter."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, field_validator

# What each {field} of a template may match. Lazy patterns stop at the next literal of the template.
FIELD_PATTERNS: dict[str, str] = {
    "group_id": r".+?",
    "member_id": r"\S+?",
    "old_member_id": r"\S+?",
    "group_instance_id": r".*?",
    "instance_id": r".*?",
    "client_id": r".*?",
    "client_host": r"\S*?",
    "generation": r"-?\d+",
    "offsets_partition": r"\d+",
    "member_count": r"\d+",
    "static_count": r"\d+",
    "state": r"\w+",
    "protocol": r"[^']*",
    "coordinator": r".+?",
    "error": r"\w+",
    "epoch": r".*?",
    "reason": r".*",
    "partitions": r".*",
    "topics": r".*",
    "members": r".*",
    "_": r".*?",
}
INT_FIELDS = frozenset({"generation", "offsets_partition", "member_count", "static_count"})
# Template field names that are stored under another column name in silver_events.
FIELD_COLUMNS = {"instance_id": "group_instance_id"}
EVENT_FIELDS = tuple(
    sorted({FIELD_COLUMNS.get(f, f) for f in FIELD_PATTERNS if f not in {"_", "instance_id"}})
)

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class Template(BaseModel):
    """One wording of one Kafka log message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: Literal["broker", "client"]
    event: str
    versions: str
    text: str

    @field_validator("text")
    @classmethod
    def _known_fields(cls, value: str) -> str:
        unknown = set(_PLACEHOLDER.findall(value)) - FIELD_PATTERNS.keys()
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}; known: {sorted(FIELD_PATTERNS)}")
        return value


class CompiledTemplate(BaseModel):
    """A template ready for Spark: its regex (Java-compatible), group index per field, and literal prefilter."""

    model_config = ConfigDict(frozen=True)

    template: Template
    pattern: str
    groups: dict[str, int]
    literal: str


def compile_template(template: Template) -> CompiledTemplate:
    """Turn `{field}` placeholders into regex groups; the longest literal piece becomes the prefilter."""
    text = template.text.rstrip()
    if text.endswith("."):
        text = text[:-1]
    pieces = _PLACEHOLDER.split(text)
    regex = ["^"]
    groups: dict[str, int] = {}
    literals = []
    index = 0
    for position, piece in enumerate(pieces):
        if position % 2 == 0:
            regex.append(re.escape(piece))
            literals.append(piece)
            continue
        pattern = FIELD_PATTERNS[piece]
        if piece == "_" or piece in groups:
            regex.append(f"(?:{pattern})")
            continue
        index += 1
        groups[piece] = index
        regex.append(f"({pattern})")
    regex.append(r"\.?\s*$")
    literal = max(literals, key=len).strip()
    return CompiledTemplate(template=template, pattern="".join(regex), groups=groups, literal=literal)


@lru_cache(maxsize=1)
def load_templates() -> tuple[CompiledTemplate, ...]:
    """All templates of the package's templates.yml, compiled, in match order."""
    text = resources.files("pipelines.silver").joinpath("templates.yml").read_text(encoding="utf-8")
    rows = yaml.safe_load(text)["templates"]
    templates = [Template.model_validate(row) for row in rows]
    ids = [t.id for t in templates]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"templates.yml: duplicate template ids {duplicates}")
    return tuple(compile_template(t) for t in templates)


class Alternation(BaseModel):
    """All templates as one anchored regex `^(?:(T1)|(T2)|...)$`: one pass finds the template and its fields.

    `wrap_groups[i]` is the group that wraps template i (non-empty exactly when it matched); `field_groups`
    maps template id -> field -> absolute group number.
    """

    model_config = ConfigDict(frozen=True)

    pattern: str
    template_ids: tuple[str, ...]
    wrap_groups: tuple[int, ...]
    field_groups: dict[str, dict[str, int]]
    group_count: int


def build_alternation(templates: tuple[CompiledTemplate, ...]) -> Alternation:
    """Combine compiled templates, in match order, into one regex with known group numbers."""
    branches, wraps, fields = [], [], {}
    next_group = 1
    for t in templates:
        inner = t.pattern.removeprefix("^").removesuffix(r"\.?\s*$")
        wraps.append(next_group)
        fields[t.template.id] = {name: next_group + index for name, index in t.groups.items()}
        next_group += 1 + len(t.groups)
        branches.append(f"({inner})")
    pattern = "^(?:" + "|".join(branches) + r")\.?\s*$"
    count = re.compile(pattern).groups
    if count != next_group - 1:
        raise ValueError(f"template groups miscounted: regex has {count}, expected {next_group - 1}")
    return Alternation(
        pattern=pattern, template_ids=tuple(t.template.id for t in templates), wrap_groups=tuple(wraps),
        field_groups=fields, group_count=count,
    )
