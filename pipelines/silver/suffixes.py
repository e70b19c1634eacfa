"""What may follow a log message on its line once a layout has found it: a logger, a thread, an MDC tail, a paste's
marks. The general layouts and a source's own pattern strip it before the templates read the message."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

# What may follow a message found by a general layout: a log4j `(logger)` or `(logger:line)`, then a `[thread]` (or
# the logger alone in brackets, `[org.apache...WorkerCoordinator]`), then an MDC tail (` - app=kafka, server=0`);
# Python's `, %(module)s-%(funcName)s-%(lineno)d` after a message (with an underscore in its names,
# `base-__call__-633`: a group id `orders-group-1` ending a wording has the same shape), the `']` of a message logged
# as a list of its arguments; the entry's own fields as one flat JSON object after the message, opening with its
# `timestamp` or `logger` (KafkaJS through NestJS's text logger: `[Consumer] Stopped
# {"timestamp":..,"logger":"kafkajs","groupId":..}`, the group read from it beforehand; a payload the message itself
# prints, such as KafkaFlow's `Data: {..}`, stays); and quoting, markdown or HTML line breaks left from a paste. One
# separating blank is removed with them, never more: a message may end with an empty field (`partitions `); before a
# logger in brackets, the first blank stays.
MESSAGE_SUFFIX = (
    r"(?:\s\(([\w$]+(?:\.[\w$]+)+)(?::\d+)?\)(?:\s+\[[^\]]*\])?(?:\s+-\s+[\w.]+=.*)?"
    # log4j's `%m   [%c]` (the Debezium images' layout): the logger's class name in brackets after the blanks.
    r"|(?<= ) *\[((?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*)\])?"
    r"(?:,\s(?=[\w.<>-]*_)[\w.]+-[\w.<>]+-\d+)?(?:'\])?(?:\s\{\"(?:timestamp|logger)\"\s*:[^{}\n]*\})?"
    r"(?:\s*[*`]+)?(?:\s*<br\s*/?>\s*)*$"
)


def suffix_logger(msg: Column) -> Column:
    """The logger a message's suffix names (MESSAGE_SUFFIX: in parentheses or in brackets), null where none."""
    return F.coalesce(*[F.nullif(F.regexp_extract(msg, MESSAGE_SUFFIX, i), F.lit("")) for i in (1, 2)])
