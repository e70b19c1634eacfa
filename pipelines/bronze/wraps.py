"""Hard-wrapped records: one log record that a paste, a mail archive, a PDF or a narrow terminal broke over several
physical lines (`... Setting newly assigned ` / `partitions [t-2, t-3]`; a JSON object cut inside its message).

Bronze joins such a line to the record it continues when both sides show it: the line itself cannot start a record,
and the record is unfinished. A line cannot start a record when it is not blank, does not start the way a record
head does (a time or number after at most eight marks or blanks, `{`, a container prefix) and holds no time in its
first 80 characters and no level or `level=` key in its first 100. The record is unfinished when, from the strongest
sign to the weakest: the lines so far leave a bracket, brace, parenthesis or double quote open, or the last one ends
before its message (a layout's separator such as ` : ` or ` - `, a client's `[Consumer clientId=.., groupId=..]`
prefix, or a `(key=value,..):` context, with nothing after it); the last one ends with an opening bracket, a comma,
a colon or an equals sign; it ends with a blank (a wrap keeps the space it broke at, but so do some complete
lines). After a group line (a prefilter candidate) only the first sign counts, and a final comma before a line
that is no group line: Java ends `Adding newly assigned partitions: ` with an empty list, and librdkafka's example
callback its partition list with `, `. A line with a group wording of its own joins on the first sign only, and starts
afresh when nothing on the line before it continues: a stripped paste of bare messages, or one cut short with `...`,
keeps its lines apart. Indented lines under a head that ends with a colon are its list, not a wrap.

The physical lines stay in the bronze record, joined by WRAP (LF then CR; a file's line reader splits at LF, CR and
CRLF, so no line read from a file holds that pair; a Kafka value is one line as sent, where a CRLF blank line inside
it would read as a wrap); silver reads them as one line (`unwrapped`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

WRAP = "\n\r"
MAX_TAIL_CHARS = 2_000  # a longer line is a record (or noise) of its own, not the rest of a wrapped one

# A line that may continue a wrapped record: not blank, and none of the starts a record head has; nor a time, a
# level or a `level=` key near its start (a head behind a prefix of its own: `[Kafka Core Consumer] 15:47:05.148
# INFO ...`, kubectl's `[pod/<name>/<container>] 2026-..T13:50:29Z`, logfmt's `time=".." level=info`); nor a line
# that is only a logger in parentheses: log4j's `(%c)` printed after a message of several lines (Kafka's
# `ConsumerConfig values:` dump) ends that record and continues nothing.
MAY_CONTINUE_WRAP = (
    r"^(?!\s*$)(?!\W{0,8}\d)(?!\s*\{)(?!\s*[\w.-]+\s+\| )(?!\s*\((?:[\w$]+\.)+[\w$]+\)\s*$)"
    r"(?!.{0,80}(?<![\d:])\d\d?:\d\d:\d\d)"
    r"(?!.{0,100}\b(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE|CRITICAL)\b)(?!.{0,100}\blevel[\"']?\s*[=:])"
    rf".{{1,{MAX_TAIL_CHARS}}}$"
)
# How a line that the next one may continue ends: a blank, or a mark that cannot end a message.
ENDS_OPEN = r"[\s\[({,:=|>-]$"
_ENDS_STRONG = r"[\[({,:=]\s*$"
_ENDS_BLANK = r"\s$"
# A layout's separator, a client's `[key=value, ...]` prefix, or a context of key=value pairs in parentheses and a
# colon (brod's `Group member (<group>,coor=..,generation=N):` header) with nothing after it: the message is on the
# next line.
_ENDS_BEFORE_MESSAGE = r"(?:\s[:|>-]|\[[^\[\]]*(?:clientId|groupId)=[^\[\]]*\]|\([^()]*=[^()]*\):)\s*$"
_ELIDED = r"(?:\.\.\.|\u2026)\s*$"
# Colours pasted with or without their ESC (`^[[36m`, `[36m`) are not brackets a message opened.
_COLOURS = r"(?:\x1b|\^\[)\[[0-9;]*m|\[[0-9;]+m"


def _count(text: Column, chars: str) -> Column:
    return F.length(text) - F.length(F.translate(text, chars, ""))


def leaves_open(value: Column) -> Column:
    """Whether a line leaves a bracket, brace, parenthesis or double quote open (colours aside)."""
    text = F.regexp_replace(value, _COLOURS, "")
    return (_count(text, "[({") > _count(text, "])}")) | (_count(text, '"') % 2 == 1)


def kept_tails(kept: Column) -> Column:
    """A split's kept lines (structs of `split_stats`, sorted by scan id) without the possible wrap tails that cannot
    continue what is before them: a line kept only as a possible tail stays when the line just before it was kept
    for a reason of its own (a candidate, a continuation, a possible head: every line that ends open is one), or is
    itself such a tail that leaves a bracket or quote open. An application's plain prints (lines without a time,
    often most of a file) are dropped here, in the split's own array, before any sort."""
    def tail_only(x: Column) -> Column:
        return x["may_continue_wrap"] & ~(x["candidate"] | x["continuation"] | x["may_head"])

    # Each line beside the one before it, from a copy shifted by one: a lambda that indexed `kept` itself would make
    # Spark evaluate the expression behind it (the sort) once per element.
    # The first line is set beside itself, which no line follows.
    before = F.concat(F.slice(kept, 1, 1), F.slice(kept, 1, F.greatest(F.size(kept) - 1, F.lit(0))))
    pairs = F.arrays_zip(kept.alias("line"), before.alias("before"))

    def stays(pair: Column) -> Column:
        x, prev = pair["line"], pair["before"]
        follows = (prev["scan_id"] == x["scan_id"] - 1) & (~tail_only(prev) | prev["leaves_open"])
        return ~tail_only(x) | F.coalesce(follows, F.lit(False))

    return F.transform(F.filter(pairs, stays), lambda pair: pair["line"])


def with_wrap_flag(lines: DataFrame) -> DataFrame:
    """Add `_wrap` to kept lines (`value`, `line_no`, `candidate`, `continuation`, `may_continue_wrap`,
    `leaves_open`, ordered by `line_no` within a split): true for a line that continues the hard-wrapped record before
    it (see the module's docstring); and `_listed`, true for an indented line of a list under a head that ends with a
    colon (a continuation of its record, not a wrap). Helper columns start with `_`.

    Every window is the split's own order (the one `join_records` sorts by): what a chain holds before a line is a
    running total minus its value where the chain started, not a window per chain (each would sort the lines again)."""
    split = Window.partitionBy("source_file", "block_start").orderBy("line_no")
    upto = split.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # A split without a possible tail (`has_wrap_tails`, from kept_lines) has no wrap: its lines skip the regexes.
    value = F.when(F.col("has_wrap_tails"), F.coalesce(F.col("value"), F.lit("")))
    text = F.regexp_replace(value, _COLOURS, "")
    previous = F.lag(value).over(split)
    # Some sign on the line just before: it ends open or before its message, or leaves a bracket or quote open.
    # A line the author cut short (`...`) is closed, whatever it leaves open.
    before_message = F.coalesce(previous.rlike(_ENDS_BEFORE_MESSAGE), F.lit(False))
    cut = F.coalesce(previous.rlike(_ELIDED), F.lit(False))
    ends = F.coalesce(previous.rlike(ENDS_OPEN) | F.lag("leaves_open").over(split), F.lit(False))
    lines = lines.withColumns({
        "_adjacent": F.coalesce(F.col("line_no") - F.lag("line_no").over(split) == 1, F.lit(False)),
        "_before_message": before_message, "_cut": cut, "_sign": (before_message | ends) & ~cut,
        "_ends_strong": F.coalesce(previous.rlike(_ENDS_STRONG), F.lit(False)),
        "_comma": F.coalesce(previous.rlike(r",\s*$"), F.lit(False)),
        "_blank": F.coalesce(previous.rlike(_ENDS_BLANK), F.lit(False)),
        "_opened": _count(text, "[({") - _count(text, "])}"), "_quotes": _count(text, '"'),
        "_braces": _count(text, "{") - _count(text, "}"), "_cand": F.col("candidate").cast("int"),
        "_colon": F.coalesce(value.rlike(r":\s*$"), F.lit(False)),
    })
    # Totals of the lines before each one in its split.
    before = {name: F.sum(name).over(upto) - F.col(name) for name in ("_opened", "_quotes", "_braces", "_cand")}
    lines = lines.withColumns({f"{name}_before": total for name, total in before.items()})

    def since(name: str, start: Column) -> Column:
        """The total of `name` over the lines from the latest `start` line to the one before this."""
        base = F.last(F.when(start, F.col(f"{name}_before")), ignorenulls=True).over(upto)
        return F.col(f"{name}_before") - F.coalesce(base, F.lit(0))

    # Inside a JSON object still open since its `{` line, its braces are the record's own.
    json_start = F.coalesce(F.ltrim(value).startswith("{"), F.lit(False)) | ~F.col("_adjacent")
    lines = lines.withColumn("_in_json", since("_braces", json_start) > 0)
    # A chain is a line that starts one and the lines after it. A chain starts at a line that is no possible wrap
    # tail or continuation, after a gap, and at a line with a group wording of its own that nothing on the line before
    # it continues (a paste cut short with `...` leaves a bracket open for good: the next group line is still a
    # record of its own), unless a JSON object is still open.
    tail_like = F.col("may_continue_wrap") | F.col("continuation")
    starts = (~tail_like | ~F.col("_adjacent")
              | (F.col("candidate") & ~F.col("continuation") & ~F.col("_sign") & ~F.col("_in_json")))
    lines = lines.withColumn("_starts", starts)
    open_ = (since("_opened", F.col("_starts")) > 0) | (since("_quotes", F.col("_starts")) % 2 == 1)
    # A group line can end with a colon or a blank of its own (`Adding newly assigned partitions: ` with an empty
    # list): after one, the next line is another record (or noise), not the rest of this one. After a comma, a line
    # that is no group line goes on with it (Sarama's `... coroutine will exit,` / `topics [t]` at 120 columns).
    held_group_line = since("_cand", F.col("_starts")) > 0
    wrap = (F.col("has_wrap_tails") & F.col("may_continue_wrap") & ~F.col("continuation") & F.col("_adjacent")
            & ~F.col("_cut")
            & (open_ | F.col("_before_message")
               | (F.col("_ends_strong") & (~held_group_line | (F.col("_comma") & ~F.col("candidate"))))
               | (F.col("_blank") & ~F.col("candidate") & ~held_group_line)))
    # Indented lines under a head that ends with a colon are that record's list (Streams' `Handle new assignment
    # with:` and its tasks, tabs pasted as spaces), not a wrap of its message: they stay lines of their own.
    head_colon = F.coalesce(F.last(F.when(F.col("_starts"), F.col("_colon")), ignorenulls=True).over(upto),
                            F.lit(False))
    listed = F.coalesce(value.rlike(r"^\s"), F.lit(False)) & head_colon
    return lines.withColumns({"_wrap": wrap & ~listed, "_listed": F.col("may_continue_wrap") & F.col("_adjacent")
                              & ~F.col("continuation") & listed})


def unwrapped(value: Column) -> Column:
    """A record's text with its hard-wrapped lines read as one: a wrap right after an opening bracket or an opening
    quote (after a blank, a colon, a comma, `=` or a bracket) joins with nothing, any other with one space (the blanks
    around it are the one the wrap broke at)."""
    tight = F.regexp_replace(value, r"([\[({]|(?<=[:=\[({,\s])\")[ \t]*" + WRAP + r"[ \t]*", "$1")
    return F.regexp_replace(tight, r"[ \t\r]*" + WRAP + r"[ \t]*", " ")
