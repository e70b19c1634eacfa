"""Hard-wrapped records: one log record that a paste, a mail archive, a PDF or a narrow terminal broke over several
physical lines (`... Setting newly assigned ` / `partitions [t-2, t-3]`; a JSON object cut inside its message).

Bronze joins such a line to the record it continues when both sides show it: the line before it is unfinished, and
the line itself cannot start a record. Unfinished means, from the strongest sign to the weakest: the record so far
leaves a bracket, brace, parenthesis or double quote open, or its last line ends before its message (a layout's
separator such as ` : ` or ` - `, or a client's `[Consumer clientId=.., groupId=..]` prefix, with nothing after it);
its last line ends with an opening bracket, a comma, a colon or an equals sign; its last line ends with a blank (a
wrap keeps the space it broke at, but so do some complete lines). A line that holds a group wording of its own (a
prefilter candidate) is joined on the first sign, or on the second when the record so far holds no group wording
(Java ends `Adding newly assigned partitions: ` with an empty list): a stripped paste of bare messages keeps its
lines apart. A line cannot start a record when it is not blank, does not start the way a record head does (a time or
number after at most eight marks or blanks, `{`, a container prefix), and holds no time in its first 40 characters
and no level in its first 60. Indented lines under a head that ends with a colon are its list, not a wrap.

The physical lines stay in the bronze record, joined by WRAP (LF then CR: a line reader never leaves that pair, as
it splits at LF, CR and CRLF); silver reads them as one line (`unwrapped`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

WRAP = "\n\r"
MAX_TAIL_CHARS = 2_000  # a longer line is a record (or noise) of its own, not the rest of a wrapped one

# A line that may continue a wrapped record: not blank, and none of the starts a record head has; nor a time or a
# level near its start (a head behind a prefix of its own: `[Kafka Core Consumer] 15:47:05.148  INFO ...`).
MAY_CONTINUE_WRAP = (
    r"^(?!\s*$)(?!\W{0,8}\d)(?!\s*\{)(?!\s*[\w.-]+\s+\| )(?!.{0,40}\b\d\d?:\d\d:\d\d)"
    r"(?!.{0,60}\b(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE|CRITICAL)\b)"
    rf".{{1,{MAX_TAIL_CHARS}}}$"
)
# How a line that the next one may continue ends: a blank, or a mark that cannot end a message.
ENDS_OPEN = r"[\s\[({,:=|>-]$"
_ENDS_STRONG = r"[\[({,:=]\s*$"
_ENDS_BLANK = r"\s$"
# A layout's separator or a client's `[key=value, ...]` prefix with nothing after it: the message is on the next line.
_ENDS_BEFORE_MESSAGE = r"(?:\s[:|>-]|\[[^\[\]]*=[^\[\]]*\])\s*$"
# Colours pasted with or without their ESC (`^[[36m`, `[36m`) are not brackets a message opened.
_COLOURS = r"(?:\x1b|\^\[)?\[[0-9;]*m"


def _count(text: Column, chars: str) -> Column:
    return F.length(text) - F.length(F.translate(text, chars, ""))


def with_wrap_flag(lines: DataFrame) -> DataFrame:
    """Add `_wrap` to kept lines (`value`, `line_no`, `candidate`, `continuation`, `may_continue_wrap`, ordered by
    `line_no` within a split): true for a line that continues the hard-wrapped record before it (see the module's
    docstring); and `_listed`, true for an indented line of a list under a head that ends with a colon (a
    continuation of its record, not a wrap). Helper columns start with `_`."""
    split = Window.partitionBy("source_file", "block_start").orderBy("line_no")
    upto = split.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    chain = Window.partitionBy("source_file", "block_start", "_chain").orderBy("line_no").rowsBetween(
        Window.unboundedPreceding, -1)
    adjacent = F.coalesce(F.col("line_no") - F.lag("line_no").over(split) == 1, F.lit(False))
    text = F.regexp_replace(F.coalesce(F.col("value"), F.lit("")), _COLOURS, "")
    opened = _count(text, "[({") - _count(text, "])}")
    # A chain is a line that starts one (not a possible wrap tail or continuation, or after a gap) and the lines
    # after it: how open the record is before a line is summed over its chain.
    tail_like = F.col("may_continue_wrap") | F.col("continuation")
    starts = ~tail_like | ~F.col("_adjacent")
    previous = F.lag("value").over(split)
    open_ = (F.sum("_opened").over(chain) > 0) | (F.sum("_quotes").over(chain) % 2 == 1)
    ends_strong = F.coalesce(previous.rlike(_ENDS_STRONG), F.lit(False))
    blank = F.coalesce(previous.rlike(_ENDS_BLANK), F.lit(False))
    before_message = F.coalesce(previous.rlike(_ENDS_BEFORE_MESSAGE), F.lit(False))
    # A group line can end with a colon or a blank of its own (`Adding newly assigned partitions: ` with an empty
    # list): after one, a line with a group wording of its own is the next record, not the rest of this one.
    held_group_line = F.coalesce(F.max(F.col("candidate").cast("int")).over(chain) == 1, F.lit(False))
    wrap = (F.col("may_continue_wrap") & ~F.col("continuation") & F.col("_adjacent")
            & (open_ | before_message | (ends_strong & ~(F.col("candidate") & held_group_line))
               | (blank & ~F.col("candidate"))))
    lines = lines.withColumns({"_adjacent": adjacent, "_opened": opened, "_quotes": _count(text, '"')})
    lines = lines.withColumn("_chain", F.max(F.when(starts, F.col("line_no"))).over(upto))
    # Indented lines under a head that ends with a colon are that record's list (Streams' `Handle new assignment
    # with:` and its tasks, tabs pasted as spaces), not a wrap of its message: they stay lines of their own.
    listed = F.col("value").rlike(r"^\s") & F.coalesce(
        F.first("value").over(chain.rowsBetween(Window.unboundedPreceding, Window.currentRow)).rlike(r":\s*$"),
        F.lit(False))
    return lines.withColumns({"_wrap": wrap & ~listed, "_listed": F.col("may_continue_wrap") & F.col("_adjacent")
                              & ~F.col("continuation") & listed})


def unwrapped(value: Column) -> Column:
    """A record's text with its hard-wrapped lines read as one: a wrap right after an opening bracket or quote joins
    with nothing, any other with one space (the blanks around it are the one the wrap broke at)."""
    tight = F.regexp_replace(value, r"([\[({\"])[ \t]*" + WRAP + r"[ \t]*", "$1")
    return F.regexp_replace(tight, r"[ \t\r]*" + WRAP + r"[ \t]*", " ")
