"""Log templates as data: load the wordings/*.yml files, compile each row to an anchored regex and a literal
prefilter, and combine all rows into one alternation evaluated once per line."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, field_validator

# What each {field} of a template may match. Lazy patterns stop at the next literal of the template; no pattern
# crosses a line break, so a multi-line record's later lines are matched only by literals that name them.
FIELD_PATTERNS: dict[str, str] = {
    "group_id": r".+?",
    # A group id that ends at the first blank or colon, for wordings that start with the group (Spring's
    # `<group>: partitions revoked: ..`): searched anywhere in a line, `.+?` would take the text before it along.
    "group_name": r"[^\s:\"'\[\]]+",
    # KIP-848 clients print `<no ID>` before their first heartbeat response (4.0).
    # A member id is the client id, a dash and a UUID; a client id may hold spaces ("ClickHouse 19.11.0.830").
    "member_id": r"<no ID>|\S*?|[^\s'{}=,][^\n'{}=,]*?-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "old_member_id": r"\S+?",
    "instance_id": r".*?",
    "client_id": r".*?",
    "client_host": r"\S*?",
    "generation": r"-?\d+",
    "group_epoch": r"-?\d+",
    "member_epoch": r"-?\d+",
    "previous_member_epoch": r"-?\d+",
    "target_epoch": r"-?\d+",
    "offsets_partition": r"\d+",
    "member_count": r"\d+",
    "static_count": r"\d+",
    # librdkafka's states hold hyphens (`query-coord`, `wait-assign-rebalance_cb`).
    "state": r"[\w-]+",
    "previous_state": r"[\w-]+",
    "protocol": r"[^'\n]*",
    "group_protocol": r"\w+",
    "coordinator": r".+?",
    "error": r"\w+",
    "epoch": r"\S+?",
    "reason": r".*",
    "client_reason": r".*",
    "partitions": r".*",
    "revoked_partitions": r".*",
    "topics": r".*",
    "members": r".*",
    "_": r".*?",
    # A number a wording prints and no column keeps (zio-kafka's `2 partitions are revoked`).
    "_count": r"\d+",
    # The rest of the Java client's node id for its coordinator, Integer.MAX_VALUE - broker id (`2147` + six digits).
    "_node_tail": r"\d{6}(?!\d)",
    # The group-protocol requests a client's protocol debug lines name (librdkafka's `Sent JoinGroupRequest (..)`,
    # KafkaJS's `Request Heartbeat(key: 12, ..)`): matched, never stored.
    "_group_api": r"(?:JoinGroup|SyncGroup|Heartbeat|LeaveGroup|FindCoordinator|GroupCoordinator"
                  r"|ConsumerGroupHeartbeat|ShareGroupHeartbeat|StreamsGroupHeartbeat)",
    # The requests a Java client sends to its group coordinator alone, as its NetworkClient names them (the ApiKeys
    # names): matched, never stored.
    "_group_request": r"(?:HEARTBEAT|JOIN_GROUP|SYNC_GROUP|LEAVE_GROUP|OFFSET_COMMIT|OFFSET_FETCH"
                      r"|CONSUMER_GROUP_HEARTBEAT|SHARE_GROUP_HEARTBEAT|STREAMS_GROUP_HEARTBEAT)",
    # Anything, across lines: for wordings that sit in a later line of the record (an exception under a log line).
    "_lines": r"[\s\S]*?",
}
INT_FIELDS = frozenset({"generation", "group_epoch", "member_epoch", "previous_member_epoch", "target_epoch",
                        "offsets_partition", "member_count", "static_count"})
# Template field names that are stored under another column name in silver_events.
FIELD_COLUMNS = {"instance_id": "group_instance_id", "group_name": "group_id"}
EVENT_FIELDS = tuple(sorted({FIELD_COLUMNS.get(f, f) for f in FIELD_PATTERNS if not f.startswith("_")}))

# Component files, in match order (first matching row wins across all of them).
COMPONENTS = ("broker_classic", "broker_new", "broker_groups_4x", "client_classic", "client_kip848", "client_debug",
              "client_librdkafka", "client_streams", "client_connect", "client_kafka_python", "client_aiokafka",
              "client_kafkajs", "client_kafka_go", "client_sarama", "client_sarama_cluster", "client_franz_go",
              "client_ruby_kafka", "client_brod", "client_callbacks", "client_errors")
# Fields that hold a list, printed empty as nothing at all.
LIST_FIELDS = frozenset({"partitions", "revoked_partitions", "topics", "members"})
# After a template: an optional final period, trailing blanks, and any later lines of the record (a stack trace).
TAIL = r"\.?\s*(?:\n[\s\S]*)?$"
# After a template that ends with its own words (not a field): the quote that closed a message an application
# logged as a string (`"..."`, a `KafkaError{..,str="..."}` repr, a `('...')` argument) and the brackets after it,
# or the brackets alone of an error printed inside its wrappers (Rust's `Kafka { source: KafkaError (...: PollExceeded
# (Local: ... exceeded)) }`). A field at the end keeps such a quote (a quoted group id is unquoted with the fields).
CLOSING_QUOTE = r"(?:\.?[\"'][)}\]]*|[)}\]](?: ?[)}\]])*)?"
# After such a template, too: the error code symbol rdkafka-ruby (Racecar, Karafka) prints after librdkafka's error
# string, and the client instance after it (`Local: ... exceeded (max_poll_exceeded) [rdkafka#consumer-1]`).
ERROR_CODE = r"(?: \([a-z][a-z0-9_]*\)(?: \[[^\]\s]*\])?)?"

# Starts a text whose templates may sit anywhere in it (a control character no cleaned line holds).
SEARCH_MARK = "\u0004"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# A row that opens with a logger's namespace in brackets (`[ConsumerGroup] `), no field inside.
_NAMESPACE = re.compile(r"^(\[[A-Z][A-Za-z]*\] )(.+)$", re.S)
_VERSION = r"\d+\.\d+(?:\.\d+)?"
_VERSIONS = re.compile(rf"^(?:all|{_VERSION}(?:-{_VERSION})?(?:, {_VERSION}(?:-{_VERSION})?)*)$")
# libyaml's loader where PyYAML has it (its wheels do): 0.02-0.03 s instead of the 0.23 s each parsing process spent
# reading the wordings; both loaders read them alike (tests/test_templates.py).
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


class Template(BaseModel):
    """One wording of one Kafka log message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: Literal["broker", "client"]
    event: str
    versions: str
    text: str
    # Only lines printed at this level take this template (for catch-all wordings such as `[GroupId g] {error}.`).
    level: Literal["INFO", "WARN", "ERROR"] | None = None

    @field_validator("text")
    @classmethod
    def _known_fields(cls, value: str) -> str:
        unknown = set(_PLACEHOLDER.findall(value)) - FIELD_PATTERNS.keys()
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}; known: {sorted(FIELD_PATTERNS)}")
        return value

    @field_validator("versions")
    @classmethod
    def _version_ranges(cls, value: str) -> str:
        if not _VERSIONS.match(value):
            raise ValueError(f"versions {value!r} must look like '2.1-4.0', '0.10.0' or '1.0-2.3, 3.7-3.9'")
        for part in value.split(", "):
            low, _, high = part.partition("-")
            if high and _version_key(low) > _version_key(high):
                raise ValueError(f"versions {value!r}: range {part} runs backwards")
        return value


class CompiledTemplate(BaseModel):
    """A template ready for Spark: its regex (Java-compatible), group index per field, and literal prefilter."""

    model_config = ConfigDict(frozen=True)

    template: Template
    pattern: str
    groups: dict[str, int]
    literal: str


def compile_template(template: Template) -> CompiledTemplate:
    """Turn `{field}` placeholders into regex groups; the longest literal piece becomes the prefilter.

    A final period is optional, except right after a field (`because {reason}.`): there it is what ends the field,
    so a value that itself ends with a period (`the member session expired..`) keeps its own.
    """
    text = template.text.rstrip()
    required_period = text.endswith("}.")
    text = text.removesuffix(".")
    namespace = _NAMESPACE.match(text)
    regex = []
    if namespace and len(_PLACEHOLDER.sub("", namespace.group(2)).split()) >= 3:
        # A logger that prints the namespace before the message (KafkaJS's default `[Runner] ...`) is one layout;
        # an application's own log creator prints the bare message. Rows of three words or more are read either way.
        regex.append(f"(?:{re.escape(namespace.group(1))})?")
        text = namespace.group(2)
    pieces = _PLACEHOLDER.split(text)
    groups: dict[str, int] = {}
    literals = []
    index = 0
    for position, piece in enumerate(pieces):
        if position % 2 == 0:
            regex.append(re.escape(piece))
            literals.append(piece)
            continue
        pattern = FIELD_PATTERNS[piece]
        if piece == "_" and position == 1 and not pieces[0]:
            # A row that may sit anywhere in its message (`{_}` first): at the start of the text the prefix spans
            # what comes before the wording; where the text is searched (a line no layout knows), the row starts
            # where its wording does, so it competes for the earliest start like a row without the prefix.
            regex.append(r"(?:^.*?)?")
            continue
        if piece == "_" and position == len(pieces) - 2 and regex[-1].endswith(re.escape(". ")):
            # A wording whose first sentence says it all (`... has expired. {_}`): the advice after it is often cut
            # by a wrap or a paste, so the text may end at the sentence's period.
            regex[-1] = regex[-1].removesuffix(re.escape(" "))
            regex.append(f"(?: (?:{pattern}))?")
            continue
        if piece.startswith("_") or piece in groups:
            regex.append(f"(?:{pattern})")
            continue
        index += 1
        groups[piece] = index
        if position == len(pieces) - 2 and not pieces[-1] and piece in LIST_FIELDS and regex[-1].endswith(" "):
            # A list at the very end printed empty (`Adding newly assigned partitions: `) loses its trailing blank
            # to an editor or a paste: the record may end right before it (only there: a list on the record's next
            # lines is not an empty one).
            regex[-1] = regex[-1].removesuffix(re.escape(" "))
            regex.append(f"(?: ({pattern})|(?=[ \\t]*$))")
            continue
        if piece == "coordinator" and regex[-1].endswith(re.escape(" ")):
            # A paste often drops the coordinator's address (`... to coordinator due to ...`): the line still reads
            # as its wording, without that field.
            regex[-1] = regex[-1].removesuffix(re.escape(" "))
            regex.append(f"(?: ({pattern}))?")
            continue
        regex.append(f"({pattern})")
    if required_period:
        regex.append(r"\.")
    elif pieces[-1]:
        regex.append(ERROR_CODE + CLOSING_QUOTE)
    literal = max(literals, key=len).strip()
    return CompiledTemplate(template=template, pattern="^" + "".join(regex) + TAIL, groups=groups, literal=literal)


def load_rows(component: str) -> list[Template]:
    """The template rows of one component file (wordings/<component>.yml), in file order."""
    text = resources.files("pipelines.silver.wordings").joinpath(f"{component}.yml").read_text(encoding="utf-8")
    return [Template.model_validate(row) for row in yaml.load(text, Loader=YAML_LOADER)["templates"]]


@lru_cache(maxsize=1)
def load_templates() -> tuple[CompiledTemplate, ...]:
    """All templates of all component files, compiled, in match order."""
    templates = [t for component in COMPONENTS for t in load_rows(component)]
    ids = [t.id for t in templates]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"wordings: duplicate template ids {duplicates}")
    return tuple(compile_template(t) for t in templates)


class Alternation(BaseModel):
    """All templates as one anchored regex `^(?:(T1)|(T2)|...)<tail>`: one pass finds the template and its fields.
    `searching` is the same regex (same groups) that also finds the templates anywhere in a text that starts with
    SEARCH_MARK; on any other text it is the anchored regex.

    `wrap_groups[i]` is the group that wraps template i (non-empty exactly when it matched); `field_groups`
    maps template id -> field -> absolute group number. A packed match (`packing.pack_all` with `choice=wrap_groups`)
    holds the choice slot first (which template matched, `packing.chosen`), then one slot per field of
    FIELD_PATTERNS (`slots`) that concatenates that field's group of every template (only the matched template's
    group is non-empty).
    """

    model_config = ConfigDict(frozen=True)

    pattern: str
    searching: str
    template_ids: tuple[str, ...]
    wrap_groups: tuple[int, ...]
    field_groups: dict[str, dict[str, int]]
    group_count: int
    # Per template, in order: its literal (a match holds it), and its own branch as a searching regex
    # `^(?:SEARCH_MARK[\s\S]*?)?(branch)<tail>` (group 1 wraps the branch): matched one by one by
    # `branch_slot_groups`, the same result as `searching` (the JVM matcher's path).
    literals: tuple[str, ...]
    branch_patterns: tuple[str, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for f in FIELD_PATTERNS if not f.startswith("_"))

    @property
    def slots(self) -> list[list[int]]:
        return [[g[f] for g in self.field_groups.values() if f in g] for f in self.fields]

    def field_slot(self, field: str) -> int:
        """The 1-based slot of a field in a packed match (the choice slot is the first)."""
        return self.fields.index(field) + 2

    @property
    def branch_slot_groups(self) -> list[list[int]]:
        """Per template, the group of each field slot in its branch pattern (0: the template has no such field)."""
        out = []
        for template_id, wrap in zip(self.template_ids, self.wrap_groups, strict=True):
            groups = self.field_groups[template_id]
            out.append([groups[f] - wrap + 1 if f in groups else 0 for f in self.fields])
        return out


def build_alternation(templates: tuple[CompiledTemplate, ...]) -> Alternation:
    """Combine compiled templates, in match order, into one regex with known group numbers."""
    branches, wraps, fields = [], [], {}
    next_group = 1
    for t in templates:
        inner = t.pattern.removeprefix("^").removesuffix(TAIL)
        wraps.append(next_group)
        fields[t.template.id] = {name: next_group + index for name, index in t.groups.items()}
        next_group += 1 + len(t.groups)
        branches.append(f"({inner})")
    pattern = "^(?:" + "|".join(branches) + ")" + TAIL
    # Each group is a wrap or a field (text is escaped, FIELD_PATTERNS use `(?:`): tests/test_templates.py compiles
    # the regex to check it, which here cost every parsing process 0.16 s.
    search = "^(?:" + SEARCH_MARK + "[\\s\\S]*?)?(?:"
    return Alternation(
        pattern=pattern, searching=pattern.replace("^(?:", search, 1),
        template_ids=tuple(t.template.id for t in templates), wrap_groups=tuple(wraps),
        field_groups=fields, group_count=next_group - 1, literals=tuple(t.literal for t in templates),
        branch_patterns=tuple(search + branch + ")" + TAIL for branch in branches),
    )
