"""Typed configuration: YAML files under conf/ validated by pydantic, overridable from the command line."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from pipelines.settings.globs import glob_matches

# Re-exported: the configuration is imported from here.
from pipelines.settings.limits import AlertSettings as AlertSettings
from pipelines.settings.limits import FrozenModel as _Frozen
from pipelines.settings.limits import Thresholds as Thresholds

DEFAULT_CONF = Path(__file__).resolve().parents[2] / "conf" / "local.yml"


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key and what to change."""


class SourceRule(_Frozen):
    """How to read the files of the instance folders matching `instances` (a glob on the folder name)."""

    instances: str = "*"
    tz: str = "UTC"
    date: dt.date | None = Field(
        default=None,
        description="Date for layouts that print only the time of day, when the file name carries none.",
    )
    pattern: str | None = Field(
        default=None,
        description="This source's own line layout, tried before the built-in ones: a regex with named groups "
        "ts, level, thread, logger and msg (msg required), e.g. '^(?P<ts>\\S+ \\S+) (?P<level>\\w+) (?P<msg>.*)$'.",
    )

    ts_format: str | None = Field(
        default=None,
        description="How this source prints its time, as a Spark datetime pattern (e.g. 'yyyyMMdd HHmmss.SSS'), for "
        "a shape the built-in catalogue does not know, applied to the time the line's layout captured (the "
        "pattern's ts group). Without an offset in it, the time is wall-clock time in `tz`.",
    )

    @field_validator("pattern")
    @classmethod
    def _usable_pattern(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            compiled = re.compile(value)
        except re.error as exc:
            hint = "escape literal brackets as \\["
            raise ValueError(f"pattern {value!r} is not a valid regex ({exc}); {hint}") from None
        unknown = sorted(set(compiled.groupindex) - {"ts", "level", "thread", "logger", "msg"})
        if "msg" not in compiled.groupindex:
            raise ValueError(f"pattern {value!r} has no (?P<msg>...) group; name the message part msg")
        if unknown:
            raise ValueError(f"pattern {value!r} names unknown group(s) {unknown}; use ts, level, thread, logger, msg")
        if "(?P=" in value:
            raise ValueError(f"pattern {value!r} uses a back-reference (?P=...); Spark's Java regex cannot run it")
        return value

    @field_validator("tz")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            hint = _zone_hint(value)
            raise ValueError(f"'{value}' is not an IANA time zone{hint}") from None
        return value


class SparkSettings(_Frozen):
    """Settings of the local Spark session (ignored where a session is given, as on Databricks)."""

    master: str = "local[*]"
    shuffle_partitions: int = Field(default=4, ge=1, le=10_000)
    driver_memory: str = "4g"
    compiled_from_mb: float = Field(
        default=256, ge=0,
        description="an ingest batch of at least this many MB of landed files runs compiled (generated) code; "
                    "smaller batches and the other steps are interpreted, which spares a new JVM the compiling",
    )
    class_data_sharing: bool = Field(
        default=True,
        description="map an archive of the driver's loaded classes at start, recorded by the first session of the "
                    "same jars and JDK (pipelines/jvm/classdata.py; about 200 MB in the jar cache)",
    )
    conf: dict[str, str | int | float | bool] = Field(default_factory=dict, description=(
        "more Spark settings for the session this package starts, applied last (spark.executor.memory, ...)"))


class Privacy(_Frozen):
    """For teams that treat member ids and client hosts as personal data."""

    hash_ids: bool = Field(default=False, description="store member ids and client hosts as salted SHA-256 hashes")
    salt_env: str = Field(default="REBALANCE_HASH_SALT",
                          description="environment variable holding the hashing salt (a secret; never stored)")


Envelope = Literal["auto", "plain", "filebeat", "vector", "fluentbit", "logstash"]


class KafkaSource(_Frozen):
    """Where `source: kafka` reads: the topics that log shippers write to, and how their records are wrapped."""

    bootstrap_servers: str | None = Field(default=None, description="host:port[,host:port...] of the brokers")
    topics: tuple[str, ...] = Field(default=(), description="topics to subscribe to (one or more)")
    envelope: Envelope = Field(
        default="auto",
        description="auto: each record's own shape (a shipper's JSON, else a plain line); or one of plain, filebeat, "
        "vector, fluentbit, logstash, when a record of another shape is to be quarantined (unknown_envelope)",
    )
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    max_offsets_per_trigger: int | None = Field(default=None, ge=1, description="bounds one micro-batch")
    options: dict[str, str] = Field(
        default_factory=dict,
        description="more options of Spark's Kafka source, e.g. kafka.security.protocol (secrets from the "
        "environment, never from files)",
    )

    @field_validator("topics", mode="before")
    @classmethod
    def _split_topics(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(t.strip() for t in value.split(",") if t.strip())
        return value


class Config(_Frozen):
    """The whole configuration of one deployment of the pipeline."""

    landing: Path = Path("landing")
    lakehouse: Path = Path("lakehouse")
    checkpoints: Path | None = None
    catalog: str | None = None
    schema_name: str | None = Field(default=None, alias="schema")
    source_format: Literal["text", "cloudFiles"] = "text"
    max_files_per_trigger: int = Field(default=1000, ge=1)
    derived_every_s: float = Field(
        default=60, gt=0,
        description="a continuous run refreshes the derived gold tables (config advice, hourly stats, group health, "
        "estate incidents) this often; an available-now run refreshes them once, after its reconstruct step",
    )
    compact_every_s: float | None = Field(
        default=900, gt=0,
        description="the tables holding compact_min_files small files or more are compacted (Delta OPTIMIZE) this "
        "often: by a continuous run beside the streams, by an available-now run after its reconstruct step; the "
        "time of the last one is kept beside the checkpoints; null: never (a Databricks job's tables may have "
        "Databricks' own)",
    )
    vacuum_every_s: float | None = Field(
        default=21600, gt=0,
        description="the files that compactions and MERGEs replaced are deleted once older than each table's "
        "retention (Delta VACUUM, 7 days by default) this often, with a compaction (so never when compact_every_s "
        "is null); the time of the last one is kept beside the checkpoints, so restarts and scheduled runs keep "
        "the clock; null: never (then every replaced file stays on disk)",
    )
    compact_min_files: int = Field(default=50, ge=2, description="the files a table holds before it is compacted")
    source: Literal["files", "kafka"] = Field(default="files", description="landing files, or Kafka topics")
    kafka: KafkaSource = KafkaSource()
    sources: tuple[SourceRule, ...] = (SourceRule(),)
    spark: SparkSettings = SparkSettings()
    thresholds: Thresholds = Thresholds()
    alerts: AlertSettings = AlertSettings()
    privacy: Privacy = Privacy()

    @field_validator("landing", "lakehouse", "checkpoints", mode="before")
    @classmethod
    def _no_urls(cls, value: object) -> object:
        if isinstance(value, str) and "://" in value:
            raise ValueError(
                f"'{value}' is a URL; give a path: a local directory, or on Databricks a Unity Catalog volume "
                "such as /Volumes/<catalog>/<schema>/<volume>/landing"
            )
        return value

    @model_validator(mode="after")
    def _utf8_paths(self) -> Config:
        # The JVM takes paths as UTF-8, absolute and resolved: a name with other bytes anywhere on the way (the
        # path given, the working directory, a link's target) reaches it mangled, and the first call that carries
        # it fails deep in the Spark gateway.
        for key, value in (("landing", self.landing), ("lakehouse", self.lakehouse),
                           ("checkpoints", self.checkpoints)):
            if value is None:
                continue
            for form in _path_forms(value):
                try:
                    form.encode("utf-8")
                except UnicodeEncodeError:
                    shown = os.fsencode(form).decode("utf-8", "backslashreplace")
                    raise ValueError(f"{key}: '{shown}' is not UTF-8 (a folder's name holds other bytes), which "
                                     "Spark cannot use; rename the folder or give another path") from None
        return self

    @model_validator(mode="after")
    def _catalog_needs_schema(self) -> Config:
        if self.catalog is not None and self.schema_name is None:
            raise ValueError(f"catalog '{self.catalog}' is set but schema is not; set schema too (tables are "
                             "<catalog>.<schema>.<name>), or remove catalog to keep tables under the lakehouse path")
        return self

    @model_validator(mode="after")
    def _kafka_needs_topics(self) -> Config:
        if self.source == "kafka":
            if not self.kafka.bootstrap_servers:
                raise ValueError("source is kafka but kafka.bootstrap_servers is not set; pass --bootstrap-servers "
                                 "HOST:PORT (or set kafka.bootstrap_servers in the configuration)")
            if not self.kafka.topics:
                raise ValueError("source is kafka but no topic is set; pass --topic NAME (or set kafka.topics)")
        return self

    @property
    def checkpoint_root(self) -> Path:
        """Where the streaming checkpoints live (default: `<lakehouse>/_checkpoints`)."""
        return self.checkpoints if self.checkpoints is not None else self.lakehouse / "_checkpoints"

    @property
    def alerts_jsonl(self) -> Path:
        """Where the JSON-lines alert feed is written."""
        return self.alerts.jsonl_path or self.lakehouse / "_alerts" / "alerts.jsonl"

    @property
    def uses_catalog(self) -> bool:
        """True when tables are Unity Catalog names rather than paths under the lakehouse directory."""
        return self.catalog is not None

    def source_for(self, instance: str) -> SourceRule:
        """The first source rule whose glob matches an instance folder name."""
        for rule in self.sources:
            if glob_matches(rule.instances, instance):
                return rule
        return SourceRule()


def _path_forms(path: Path) -> list[str]:
    """A path as given, made absolute, and resolved through its links (when it can be)."""
    forms = [str(path)]
    # A loop of links, a working directory removed: the run reports them where the path is used.
    with contextlib.suppress(OSError, RuntimeError):
        forms.append(os.path.abspath(path))
        forms.append(str(path.resolve()))
    return forms


def _zone_hint(value: str) -> str:
    lowered = value.lower().replace(" ", "_")
    close = sorted(z for z in available_timezones() if lowered in z.lower())[:3]
    if close:
        return "; try " + " or ".join(f"'{z}'" for z in close)
    return "; use a name such as 'UTC' or 'Europe/Berlin'"


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "is not a known key; check its spelling (see conf/local.yml for every key)"
        lines.append(f"{key}: {message}")
    return "; ".join(lines)


def load_config(path: Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Read a YAML configuration (default conf/local.yml), apply command-line overrides, validate it."""
    source = path or DEFAULT_CONF
    raw: dict[str, Any] = {}
    if path is not None or source.exists():
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read configuration file {source}: {exc.strerror}") from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source} is not valid YAML: {exc}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{source} must hold a mapping of keys to values, not {type(loaded).__name__}")
        raw = loaded or {}
    for key, value in (overrides or {}).items():
        if isinstance(value, dict):  # a section: only the keys given override the file's
            given = {k: v for k, v in value.items() if v is not None}
            value = {**raw[key], **given} if isinstance(raw.get(key), dict) else (given or None)
        if value is not None:
            raw[key] = value
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from None
