"""A one-pass test for "does the text contain any of these literals", run over Arrow batches in Python workers.

`contains_any` (pipelines/bronze/literals.py) costs one scan of the text per literal searched, and the prefilter
runs on every line of every file: about 30 scans of each line, seven times a bare count of the same lines. RE2
(through pyarrow's `match_substring_regex`) compiles an alternation of literals to one automaton that reads each
byte once, whatever the number of literals, and the batches reach it through Arrow as the other pandas UDFs do.

The text is matched as bytes (the column is cast to binary, and RE2 reads binary as Latin-1, one byte per
character), with every literal spelled byte by byte: the verdict is exactly Spark's byte-wise
`OR(contains(literal))`, also on lines that are not valid UTF-8 (a binary file landed by mistake).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import cast

import pandas as pd
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from pipelines.bronze.literals import minimal_literals


def byte_alternation(literals: Sequence[str]) -> str:
    """An RE2 pattern, read as Latin-1 over bytes, that finds any of `literals` (their UTF-8 bytes as they stand):
    letters, digits and spaces as themselves, every other byte as `\\xHH`."""
    def spelled(literal: str) -> str:
        return "".join(chr(b) if chr(b).isascii() and (chr(b).isalnum() or b == 0x20) else f"\\x{b:02x}"
                       for b in literal.encode("utf-8"))
    return "|".join(spelled(literal) for literal in minimal_literals(literals))


@cache
def _matcher(pattern: str) -> Callable[[Column], Column]:
    """The pandas UDF (binary -> boolean) for one pattern; one per pattern, so a plan reuses it."""

    def holds_literal(texts: pd.Series) -> pd.Series:
        import pyarrow as pa
        import pyarrow.compute as pc

        found = pc.match_substring_regex(pa.array(texts, type=pa.binary(), from_pandas=True), pattern)
        return cast(pd.Series, found.to_pandas())

    return cast(Callable[[Column], Column], F.pandas_udf(holds_literal, BooleanType()))  # type: ignore[call-overload]


def holds_any(text: Column, literals: Sequence[str]) -> Column:
    """True when `text` contains one of `literals` (null when `text` is null); false for an empty list.
    The same verdict as `contains_any`, in one pass over each text instead of one per literal."""
    if not literals:
        return F.lit(False)
    return _matcher(byte_alternation(literals))(text.cast("binary"))
