"""Lines of a UTF-16 file read as UTF-8 (PowerShell's `>` writes a redirect as UTF-16LE with a BOM and CRLF ends):
each ASCII character has a NUL beside it, the BOM is two replacement characters, and the line reader ends each line
twice, at the CR and again at the LF after its NUL, which leaves a row holding that lone NUL."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

NUL = "\u0000"
# The BOM (FF FE or FE FF) read as UTF-8: two replacement characters, or U+FEFF.
_UTF16_TEXT = "^(?:\ufffd\ufffd|\ufeff)|\u0000"


def utf16_as_text(value: Column) -> Column:
    """A line of a UTF-16 file read as UTF-8, with the NUL beside each ASCII character and the BOM removed (its text,
    as far as it is ASCII: other characters stay garbled); a line without a NUL is left as it is."""
    return F.when(F.instr(value, NUL) > 0, F.regexp_replace(value, _UTF16_TEXT, "")).otherwise(value)
