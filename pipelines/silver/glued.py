"""Records glued onto one line: a log pasted into a page that lost its line breaks, text extracted from a PDF, a chat
export. Each record still starts the way the line does (the same timestamp shape, then a level within the record's
head), so the line is cut before every such start and each piece is parsed as a record of its own.

A piece after the first gets an id of its own (the line's id and its place in the line) and shares the line's
number; silver_accounting counts the line once, as its best record (`line_disposition`), so lines read stay equal
to the lines counted; the tables of records (events, quarantine) hold each piece.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.bronze.lines import short_hash
from pipelines.silver.timestamps import SHAPES

# The dated shapes of the catalogue (a glue point needs a date: a time of day alone appears inside messages).
_DATED = SHAPES[:4]
# A level as the record heads of log4j, Logback and Python's logging print it, or bracketed in lower case.
_LEVEL = (r"(?:(?<![\w-])(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE)(?![\w-])"
          r"|\[(?:trace|debug|info|warning|error) {0,2}\])")
# How far into a record's head its level may sit (a thread name of a hundred characters comes before it).
_HEAD_CHARS = 240
# How long a glued record may be (a longer one is read with the next record glued to it).
_RECORD_CHARS = 4_000

# Ranks of a record's disposition: a line counts as its best record.
_RANKS = {"event": 4, "gc_pause": 3, "quarantine": 2, "noise": 1}


def _cut_before(shape: str) -> str:
    """The blanks before a record start of `shape` that is not the text's start, after a record that showed its own
    level: a container's or a platform's time before the record (`<RFC 3339> <record>`) is no record of its own."""
    # The head's level must come before the next time of the shape: a time a message quotes is no record start.
    head = rf"(?:(?!{shape})[^\n]){{0,{_HEAD_CHARS}}}?"
    return (rf"(?<=\S)[ \t]+(?=\[?(?:{shape})\]?[ \t,]{head}{_LEVEL})"
            rf"(?<={_LEVEL}[^\n]{{1,{_RECORD_CHARS}}})")


def glued_pieces(value: Column) -> Column:
    """The records of `value` (an array of one element, the text itself, when nothing is glued to it)."""
    pieces = F.array(value)
    for shape in reversed(_DATED):
        pieces = F.when(value.rlike(rf"^\[?(?:{shape})"), F.split(value, _cut_before(shape))).otherwise(pieces)
    return pieces


def split_glued(records: DataFrame) -> DataFrame:
    """One row per record of each bronze record (`value`, `line_id`, `line_length`): `record_part` is its place in
    the line (0 for the first, and for every line nothing is glued to); a later piece's `line_id` is the line's id
    hashed with its place. `line_length` of a piece is its own, the last one keeping what truncation cut off the
    line."""
    pieces = records.withColumn("_pieces", glued_pieces(F.col("value")))
    exploded = pieces.select("*", F.posexplode("_pieces").alias("record_part", "_piece"))
    parts = F.size("_pieces")
    cut_off = F.col("line_length") - F.length("value")
    own_id = short_hash(F.col("line_id"), F.lit("part"), F.col("record_part").cast("string"))
    return exploded.withColumns({
        "line_id": F.when(F.col("record_part") > 0, own_id).otherwise(F.col("line_id")),
        "line_length": F.when(parts > 1, F.length("_piece")
                              + F.when(F.col("record_part") == parts - 1, cut_off).otherwise(0))
        .otherwise(F.col("line_length")),
        "value": F.col("_piece"),
    }).drop("_piece", "_pieces")


def line_disposition(disposition: Column) -> Column:
    """The disposition of the whole line a record came from: the best of its records' (one record: its own)."""
    rank = F.element_at(F.create_map(*[F.lit(x) for kv in _RANKS.items() for x in kv]), disposition)
    best = F.max(rank).over(Window.partitionBy("source_file", "line_no"))
    names = F.create_map(*[F.lit(x) for kv in _RANKS.items() for x in reversed(kv)])
    return F.element_at(names, best)
