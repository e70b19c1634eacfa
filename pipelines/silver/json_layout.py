"""JSON-lines logs: logstash-logback-encoder (`@timestamp`, `message`, `logger_name`, `thread_name`, `level`),
Elastic ECS (`@timestamp`, `message`, `log.level`, `log.logger`, `process.thread.name`, flat or nested) and structlog
(`timestamp`, `event`, `level`, `logger`); clients that log the group as a field of their own beside the message
(KafkaJS's `groupId`, franz-go's `group`)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

_S = StringType()
JSON_SCHEMA = StructType([
    StructField("@timestamp", _S), StructField("timestamp", _S), StructField("message", _S),
    # Other exporters' names: `ts`/`time`/`@t` (Serilog, zap, Loki and Datadog exports), `msg`/`content`/`@m`,
    # `severity`/`loglevel`/`@l`.
    StructField("ts", _S), StructField("time", _S), StructField("@t", _S), StructField("msg", _S),
    StructField("content", _S), StructField("@m", _S), StructField("severity", _S), StructField("loglevel", _S),
    StructField("@l", _S),
    # structlog's JSON renderer: the message is `event`, the logger `logger` (ECS's `event` is an object, and a
    # string field holds an object's text: `event` counts only as a string).
    StructField("event", _S), StructField("logger", _S),
    StructField("level", _S), StructField("logger_name", _S), StructField("thread_name", _S),
    StructField("log.level", _S), StructField("log.logger", _S), StructField("process.thread.name", _S),
    StructField("log", StructType([StructField("level", _S), StructField("logger", _S)])),
    StructField("process", StructType([StructField("thread", StructType([StructField("name", _S)]))])),
    # The group of a client line whose message does not name it: KafkaJS (`groupId`), franz-go's JSON loggers
    # (`group`).
    StructField("groupId", _S), StructField("group", _S),
    # The error of an entry, beside its message (KafkaJS's `[Connection] Response Heartbeat(..)` with `error: "The
    # group is rebalancing, so a rejoin is needed"`).
    StructField("error", _S),
])


def is_json(line: Column) -> Column:
    """True for lines that hold one JSON object (possibly cut short)."""
    return F.ltrim(line).startswith("{")


# A JSON object ending a line after a short prefix with no brace or quote of its own.
_EMBEDDED_JSON = r'^[^{"]{1,160}?(\{"[^"]+"\s*:[\s\S]*\})\s*$'


def json_text(line: Column) -> Column:
    """The JSON text of a line: the line itself when it starts with `{`, else the object that ends it after what a
    runtime or a paste put before it (a compose service with Docker Desktop's time, syslog's time and host, a dev
    tool's `[service] ` tag); null for other lines."""
    embedded = F.nullif(F.regexp_extract(line, _EMBEDDED_JSON, 1), F.lit(""))
    return F.when(is_json(line), line).when(line.contains('{"'), embedded)


def _unescape(text: Column) -> Column:
    # Enough of JSON's escapes to read a message out of a cut line; from_json handles whole lines exactly.
    for escaped, plain in ((r'\\"', '"'), (r"\\/", "/"), (r"\\t", "\t"), (r"\\n", "\n"), (r"\\\\", "\\")):
        text = F.regexp_replace(text, escaped, plain)
    return text


def _raw_string(line: Column, key: str) -> Column:
    """The string value of `key` found by regex, for lines from_json cannot read (cut, or with trailing junk)."""
    value = F.regexp_extract(line, '"' + key.replace(".", r"\.") + r'"\s*:\s*"((?:[^"\\]|\\.)*)"', 1)
    return F.nullif(_unescape(value), F.lit(""))


def _string_value(doc: Column, line: Column, key: str) -> Column:
    """The document's `key` when it holds a string: a string field of the schema holds an object's or a list's JSON
    text, and the line may give the key a string only deeper down (`"labels":{"event":"x"}`)."""
    value = doc[key]
    return F.when(line.rlike('"' + key + r'"\s*:\s*"') & ~value.rlike(r"^\s*[\[{]"), value)


def parse_json(line: Column) -> Column:
    """The JSON document of a line as a struct (JSON_SCHEMA); null fields where the line is no valid JSON."""
    return F.from_json(line, JSON_SCHEMA, {"mode": "PERMISSIVE"})


def json_fields(doc: Column, line: Column) -> dict[str, Column]:
    """`ts`, `level`, `thread`, `logger`, `msg` and `group` of a JSON log line from its parsed `doc` (null where
    absent), all but `group` read from the raw `line` when the document is cut short."""
    parsed = {
        "ts": F.coalesce(doc["@timestamp"], doc["timestamp"], doc["ts"], doc["time"], doc["@t"]),
        "level": F.coalesce(doc["level"], doc["log.level"], doc["log"]["level"], doc["severity"], doc["loglevel"],
                            doc["@l"]),
        "thread": F.coalesce(doc["thread_name"], doc["process.thread.name"], doc["process"]["thread"]["name"]),
        "logger": F.coalesce(doc["logger_name"], doc["log.logger"], doc["log"]["logger"],
                             _string_value(doc, line, "logger")),
        "msg": F.coalesce(doc["message"], doc["msg"], doc["content"], doc["@m"], _string_value(doc, line, "event")),
        "group": F.coalesce(doc["groupId"], doc["group"]),
    }
    whole = parsed["msg"].isNotNull()
    fallback = {
        "ts": F.coalesce(_raw_string(line, "@timestamp"), _raw_string(line, "timestamp"), _raw_string(line, "ts")),
        "level": F.coalesce(_raw_string(line, "level"), _raw_string(line, "log.level")),
        "thread": F.coalesce(_raw_string(line, "thread_name"), _raw_string(line, "process.thread.name")),
        "logger": F.coalesce(_raw_string(line, "logger_name"), _raw_string(line, "log.logger")),
        # A cut `message` (its closing quote gone) is no reason to take an `event` instead: the text layouts read it.
        # Nor is a whole document whose `event` is an object (its string `event` is deeper down).
        "msg": F.coalesce(_raw_string(line, "message"),
                          F.when(~line.rlike(r'"message"\s*:') & doc["event"].isNull(), _raw_string(line, "event"))),
    }
    out = {name: F.when(whole, expr).otherwise(fallback[name]) for name, expr in parsed.items() if name in fallback}
    # An entry's error field follows its message as a later line of the record (`error: <text>`): templates that
    # read it name that line, every other template ignores it as it ignores a stack trace.
    error = F.when(whole, doc["error"]).otherwise(_raw_string(line, "error"))
    out["msg"] = F.when(error.isNotNull() & out["msg"].isNotNull(),
                        F.concat(out["msg"], F.lit("\nerror: "), error)).otherwise(out["msg"])
    # A cut line keeps its message, not its group field: the file's other lines name the group.
    out["group"] = parsed["group"]
    return out
