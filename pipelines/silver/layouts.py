"""Line layouts (how a logging framework wraps a message) as data, and the transform that applies them.

Each layout is a regex with named groups: `ts` (timestamp text), `level`, `thread`, `logger`, `msg`. A source may
bring its own pattern (config `sources[].pattern`), tried first for its instance folders; then JSON lines; then the
built-in layouts, the first that matches winning. Patterns are written in Python syntax and stripped of group names
for Java (both number groups the same way).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.settings.globs import glob_regex
from pipelines.settings.sources import UserLayout
from pipelines.silver.json_layout import is_json, json_fields, json_text, parse_json
from pipelines.silver.packing import at, literal_array, pack_all
from pipelines.silver.suffixes import MESSAGE_SUFFIX, suffix_logger
from pipelines.silver.timestamps import find_level, find_time

_ISO = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
_TIME = r"\d\d:\d\d:\d\d(?:[.,]\d{1,9})?"
# What a CloudWatch export appends after the logger: `,<ingest timestamp>`.
_CLOUDWATCH = r"(?:,\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})?"
_KAFKA_PREFIX_START = (
    r"(?:\[(?:Consumer |ShareConsumer |Worker |Schema registry |GroupCoordinator |GroupMetadataManager "
    r"|Group Metadata Manager |GroupId |(?:Share)?Consumer(?=[cC]lientId=))"
    r"|stream-(?:thread|client) \[)"
)
# The broker connection a librdkafka line is about (`GroupCoordinator/3: `, `sasl_ssl://b-1:9092/1: `), its node id
# also as a paste redacted it (`GroupCoordinator/<broker-1>: `).
_RDKAFKA_BROKER = r"(?:\S+?/(?:-?\d+|internal|bootstrap|<[^<>\s]+>): )?"
_RDKAFKA_TAG = rf"^\[thrd:[^\]]*\]: *{_RDKAFKA_BROKER}"
FIELDS = ("ts", "level", "thread", "logger", "msg", "pre")
# Layouts that find the message wherever it sits: their time and level are searched in `pre`, the text before it.
GENERAL = ("anywhere", "librdkafka", "librdkafka_bare")


@dataclass(frozen=True)
class Layout:
    """One way a line can wrap a Kafka message."""

    name: str
    pattern: str

    @property
    def java_pattern(self) -> str:
        return re.sub(r"\(\?P<\w+>", "(", self.pattern)

    def group(self, name: str) -> int:
        return re.compile(self.pattern).groupindex.get(name, 0)


LAYOUTS: tuple[Layout, ...] = (
    # Kafka's own log4j layout `[%d] %p %m (%c)%n` (broker server.log, Kafka tools, many clients).
    Layout(
        "kafka_log4j",
        r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (?P<level>[A-Z]+) (?P<msg>.*?)"
        rf"(?: \((?P<logger>[\w.$-]+)(?::\d+)?\)(?: - [\w.]+=.*)?)?{_CLOUDWATCH}\s*$",
    ),
    # Strimzi's broker layout `%d{yyyy-MM-dd HH:mm:ss,SSS} %p %m (%c) [%t]`.
    Layout(
        "strimzi",
        r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<level>[A-Z]+) (?P<msg>.*) \((?P<logger>[\w.$-]+)\) "
        r"\[(?P<thread>[^\]]*)\]\s*$",
    ),
    # Spring Boot 1.x to 3.2+: `%d %5p PID --- [app] [thread] [correlation] logger : msg` (app since 3.2).
    Layout(
        "spring_boot",
        rf"^(?P<ts>{_ISO})\s+(?P<level>[A-Z]+) +\d+ --- (?:\[[^\]]*\] )?\[\s*(?P<thread>[^\]]*)\] "
        rf"(?:\[[^\]]*\] )?(?P<logger>\S+)\s+: (?P<msg>.*?){_CLOUDWATCH}$",
    ),
    # Logback/log4j with a full date: `%d [%thread] %-5level %logger - %msg`, `%d %-5p %c{1}:%L - %m` (no thread).
    Layout(
        "logback_dated",
        rf"^(?P<ts>{_ISO})\s+(?:\[(?P<thread>[^\]]*)\]\s+)?(?P<level>[A-Z]+)\s+(?P<logger>[\w.$]+)(?::\d+)? -{{1,2}} "
        r"(?P<msg>.*)$",
    ),
    # Logback's defaults (BasicConfigurator and 1.3+ TTLL): time of day only, the date comes from elsewhere.
    Layout(
        "logback_time",
        rf"^(?P<ts>{_TIME}) \[(?P<thread>[^\]]*)\] (?P<level>[A-Z]+)\s+(?P<logger>\S+) -{{1,2}} (?P<msg>.*)$",
    ),
    # Any other wrapping of a Kafka-prefixed message (a platform's columns, a container or compose prefix, quoting,
    # indentation, a layout without a timestamp): the message starts at its Kafka prefix, wherever that is.
    Layout("anywhere", rf"^(?P<pre>.*?)(?P<msg>{_KAFKA_PREFIX_START}.*)$"),
    # librdkafka's log line in any wrapper (stderr `%7|<epoch>|FAC|name| `, `RDKAFKA-7-FAC: name: `, a logging
    # callback): the message follows `[thrd:<thread>]: ` and, for lines about one broker connection, `<broker>/<id>: `.
    Layout(
        "librdkafka",
        rf"^(?P<pre>.*?)\[thrd:(?P<thread>[^\]]*)\]: *{_RDKAFKA_BROKER}(?P<msg>.*)$",
    ),
    # librdkafka before 1.0 printed no thread: `%7|<epoch>|FAC|name| msg`, and .NET's `7|<time>|name|FAC| msg`.
    Layout("librdkafka_bare", rf"^(?P<pre>.*?\|[A-Z][A-Z_]{{2,}}\|(?:[^|]*\|)?) {_RDKAFKA_BROKER}(?P<msg>.*)$"),
    # Ruby's default Logger formatter (ruby-kafka, Karafka): `I, [2019-08-09T07:47:21.123456 #1234]  INFO -- app: msg`.
    # After the librdkafka layouts: the librdkafka lines Karafka and rdkafka-ruby forward (`rdkafka: [thrd:main]: ..`)
    # are theirs.
    Layout(
        "ruby_logger",
        rf"^[DIWEFA], \[(?P<ts>{_ISO}) #\d+\] +(?P<level>[A-Z]+) -- (?P<logger>[^:]*): (?P<msg>.*)$",
    ),
    # Anything else: the whole line is the message.
    Layout("plain", r"^(?P<msg>[\s\S]*)$"),
)

# Envelopes that wrap a layout, removed from every line of a record: CRI container logs, docker-compose service
# prefixes, ANSI colours, other control characters (a stray SEP or MARKER would shift packed groups).
_CRI = r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) [FP] "
_COMPOSE = r"(?m)^[\w.-]+\s+\| "
# JSON lines pasted into a reply as a Markdown quote (`> {"level":...}`): the marks before the object. (Quoted text
# lines keep theirs: the layouts already find a message after them, and the file's kind is read with them.)
_QUOTE = r"(?m)^(?:> ?)+(?=\{)"
_ANSI_AND_CONTROLS = r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
# A terminal pane's borders (k9s, tmux, a TUI's log view) copied with its lines: a box-drawing bar before and after.
_PANE_BARS = "\u2502\u2503\u2551"
_PANE = rf"(?m)^[{_PANE_BARS}] ?|[ \t]*[{_PANE_BARS}][ \t]*$"
# A log pasted into a Markdown table, or a page that renders a file as one (a gist: a cell of line numbers, a cell
# of text): the row's closing bars, after a blank, and its opening bar when it has closing ones. No Kafka, client or
# GC wording ends with a blank and a bar.
_TABLE_ROW = r"(?m)^\|[ \t]+(?=.*[ \t]\|[ \t]*$)|[ \t]+\|(?:[ \t]*\|)*[ \t]*$"
# Every line that _CRI, _COMPOSE, _QUOTE, _PANE or _TABLE_ROW changes holds one of these (a row's opening bar only
# goes with closing ones).
_ENVELOPE_LITERALS = (" stdout ", " stderr ", "| ", " |", "\t|", ">{", "> {", *_PANE_BARS)
_DOCKER_START = '{"log":"'


def strip_envelope(value: Column) -> Column:
    """The application's own text: docker json-file lines unwrapped, container prefixes, Markdown quote marks,
    terminal pane and table borders, colours and control characters removed (on every line of a multi-line record)."""
    cleaned = F.regexp_replace(docker_unwrapped(value), _CRI, "")
    cleaned = F.regexp_replace(cleaned, _COMPOSE, "")
    cleaned = F.regexp_replace(cleaned, _QUOTE, "")
    cleaned = F.regexp_replace(cleaned, _PANE, "")
    cleaned = F.regexp_replace(cleaned, _TABLE_ROW, "")
    # Most lines carry no envelope: a line that holds none of the literals every envelope's match holds is left as
    # it is without running the five regexes (a docker line is unwrapped first, and its escapes may hide them).
    wrapped = value.startswith(_DOCKER_START)
    for literal in _ENVELOPE_LITERALS:
        wrapped = wrapped | value.contains(literal)
    return F.regexp_replace(F.when(wrapped, cleaned).otherwise(value), _ANSI_AND_CONTROLS, "")


def docker_unwrapped(value: Column) -> Column:
    """The `log` text of a docker json-file line (its trailing newline removed); any other line as it is."""
    # A json-file line that is no valid JSON (cut, or hard-wrapped by a terminal) still yields its `log` text.
    raw_log = F.regexp_extract(value, r'^\{"log":"((?:[^"\\]|\\.)*?)(?:\\n)?(?:"|$)', 1)
    docker = F.when(value.startswith(_DOCKER_START), F.coalesce(
        F.regexp_replace(F.get_json_object(value, "$.log"), r"\n$", ""), F.regexp_replace(raw_log, r'\\"', '"')))
    return F.coalesce(docker, value)


def _inner(pattern: str) -> str:
    """A layout pattern without its anchors (the alternation anchors every branch)."""
    return pattern.removeprefix("^").removesuffix("$")


@dataclass(frozen=True)
class LayoutAlternation:
    """The user layouts and the built-in ones as one anchored regex over `<instance>\x03<line>`: a user layout's
    branch starts with its instance glob, the built-in branches accept any instance. Slots: ts, level, thread,
    logger, msg, then one wrap slot per layout (`names`), non-empty for the layout that matched."""

    pattern: str
    slots: list[list[int]]
    names: tuple[str, ...]


def layout_alternation(user_layouts: Sequence[UserLayout] = ()) -> LayoutAlternation:
    """Combine the sources' layouts (first, each for its instances) and LAYOUTS (in order) into one regex."""
    branches: list[str] = []
    wraps: list[int] = []
    fields: dict[str, list[int]] = {name: [] for name in FIELDS}
    names: list[str] = []
    group = 1
    layouts: list[tuple[str, str, str | None]] = [
        (f"user_{i}", u.pattern, glob_regex(u.instances)) for i, u in enumerate(user_layouts)
    ]
    layouts += [(lay.name, lay.pattern, None) for lay in LAYOUTS]
    builtin: list[str] = []
    for name, pattern, glob in layouts:
        compiled = re.compile(_inner(pattern))
        names.append(name)
        wraps.append(group)
        for field, index in compiled.groupindex.items():
            fields[field].append(group + index)
        body = "(" + Layout(name, _inner(pattern)).java_pattern + ")"
        if glob is None:
            builtin.append(body)
        else:
            branches.append(glob + _INSTANCE_END + body)
        group += 1 + compiled.groups
    branches.append(f"[^{_INSTANCE_END}]*{_INSTANCE_END}(?:" + "|".join(builtin) + ")")
    pattern = "^(?:" + "|".join(branches) + ")$"
    return LayoutAlternation(pattern, [fields[f] for f in FIELDS] + [[w] for w in wraps], tuple(names))


_INSTANCE_END = "\u0003"


def with_layout(
    df: DataFrame, *, line_col: str = "line", user_layouts: Sequence[UserLayout] = (), skip: Column | None = None
) -> DataFrame:
    """Add `layout`, `ts_text`, `level` (upper case), `thread`, `logger`, `msg` from the first layout matching
    `line_col` (JSON lines are read as JSON); `user_layouts` apply to rows whose `instance` matches their glob.
    Rows where `skip` is true are not matched at all (layout `plain`, empty `msg`): the caller has parsed them."""
    line = F.col(line_col)
    matched = F.lit(True) if skip is None else ~F.coalesce(skip, F.lit(False))
    df = df.withColumn("_json_text", F.when(matched, json_text(line)))
    text = F.col("_json_text")
    json_line = text.isNotNull()
    alternation = layout_alternation(user_layouts)
    keyed = F.concat(F.coalesce(F.col("instance"), F.lit("")), F.lit("\u0003"), line)
    df = df.withColumn("_json", F.when(json_line, parse_json(text)))
    json = json_fields(F.col("_json"), text)
    # A JSON line whose message sits under a key the JSON layout does not know is read like any other line; so is
    # a line that merely ends with a JSON object (a payload, a framework's data) holding no log entry's time or level.
    # A CASE, not an AND: Spark hoists a subexpression that several columns share out of an AND, and evaluates it
    # for every row. Here that was the message's expression, whose fallback runs six regexes over the raw line.
    entry = json["msg"].isNotNull() & (is_json(line) | json["ts"].isNotNull() | json["level"].isNotNull())
    json_line = F.when(json_line, entry).otherwise(F.lit(False))
    df = df.withColumn(
        "_layout_parts", F.when(matched & ~json_line, pack_all(keyed, alternation.pattern, alternation.slots))
    )
    parts = F.col("_layout_parts")
    # One slot per layout (nine) is cheap to search; the templates' choice slot (`packing.chosen`) here made the
    # compiled stage's code pass the JVM's 64 KB method limit (tests/test_caching.py).
    wraps = F.slice(parts, len(FIELDS) + 1, len(alternation.names))
    position = F.array_position(F.transform(wraps, lambda x: x != F.lit("")), True)
    # An empty line matches `plain` with an empty wrap group: no position, and so no layout name.
    regex_layout = F.when(position > 0, F.element_at(literal_array(alternation.names), position.cast("int")))
    fields = {
        name: F.when(json_line, json.get(name, F.lit(None))).otherwise(at(parts, index))
        for index, name in enumerate(FIELDS, start=1)
    }
    level = F.upper(F.trim(fields["level"]))
    layout = F.when(json_line, "json").otherwise(F.coalesce(regex_layout, F.lit("plain")))
    df = df.select(
        *[c for c in df.columns if c not in ("_layout_parts", "_json", "_json_text")],
        layout.alias("layout"),
        fields["ts"].alias("ts_text"),
        F.when(level == "WARNING", "WARN").otherwise(level).alias("level"),
        F.trim(fields["thread"]).alias("thread"),
        fields["logger"].alias("logger"),
        # A JSON log callback's message may still carry librdkafka's thread tag (and broker) before the text.
        F.when(json_line, F.regexp_replace(F.coalesce(fields["msg"], F.lit("")), _RDKAFKA_TAG, ""))
        .otherwise(F.coalesce(fields["msg"], F.lit(""))).alias("msg"),
        fields["pre"].alias("_pre"),
        # The group a JSON line carries as a field of its own (for templates whose text names none); null for other
        # lines (`_json` is null for them). Not behind `json_line`: each use of it repeats the message's expression.
        json["group"].alias("_json_group_id"),
    )
    return _read_general(df)


_RDKAFKA_HANDLE = r"([^\s|\[\]:]+#(?:consumer|producer)-\d+)"

_LOGGER_IN_PREFIX = r"((?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*)"


def _read_general(df: DataFrame) -> DataFrame:
    """For lines read by a general layout: the time and level searched in the text before the message, the logger
    from the message's end or its prefix, and the message without what a platform or a paste put around it."""
    general = F.col("layout").isin(*GENERAL)
    pre, msg = F.coalesce(F.col("_pre"), F.lit("")), F.col("msg")
    # A message that opened a quoted column or JSON string ends at the first unescaped quote; one that opened a
    # pipe- or tab-separated column (`a|b`, `a | b`), at the next separator.
    quoted = F.regexp_extract(msg, r'^((?:[^"\\]|\\.)*)"', 1)
    msg = (F.when(pre.endswith('"') & msg.contains('"'), quoted)
           .when(pre.endswith("|"), F.substring_index(msg, "|", 1))
           .when(pre.endswith("| ") & msg.contains(" | "), F.substring_index(msg, " | ", 1))
           .when(pre.endswith("\t"), F.substring_index(msg, "\t", 1)).otherwise(msg))
    cleaned = F.regexp_replace(msg, MESSAGE_SUFFIX, "")
    logger = F.coalesce(suffix_logger(msg),
                        F.nullif(F.regexp_extract(pre, _LOGGER_IN_PREFIX, 1), F.lit("")))
    # A source's own pattern is the user's reading of the line, not a promise that its `msg` group stops where the
    # message does: what it captured gets the same clean-up as a found message (a log4j logger, a thread, an MDC
    # tail), so that a pattern never reads a line worse than the built-in layouts would.
    own = F.col("layout").startswith("user_")
    own_msg = F.col("msg")
    return df.withColumns({
        "ts_text": F.when(general, F.coalesce(F.col("ts_text"), find_time(pre))).otherwise(F.col("ts_text")),
        "level": F.when(general, F.coalesce(F.col("level"), find_level(pre))).otherwise(F.col("level")),
        "logger": F.when(general, F.coalesce(F.col("logger"), logger))
        .when(own, F.coalesce(F.col("logger"), suffix_logger(own_msg)))
        .otherwise(F.col("logger")),
        "msg": F.when(general, cleaned).when(own, F.regexp_replace(own_msg, MESSAGE_SUFFIX, ""))
        .otherwise(F.col("msg")),
        # librdkafka's handle name before the message (`%4|<epoch>|MAXPOLL|rdkafka#consumer-1| `): its client id.
        "client_handle": F.nullif(F.regexp_extract(pre, _RDKAFKA_HANDLE, 1), F.lit("")),
    }).drop("_pre")

