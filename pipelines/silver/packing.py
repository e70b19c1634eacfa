"""One regex pass per line: every group of an anchored pattern packed into an array, and constant lookups.

Spark evaluates `regexp_replace` with a literal pattern through one cached java.util.regex.Pattern, so matching a
big alternation once and reading which alternative matched, and its fields, from fixed slots keeps the generated
code small (one expression, not one `regexp_extract` or lookup per field and alternative; Java methods stop at
64 KB) and the work per line to one scan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

SEP = "\u0001"  # joins the groups of one match; strip_envelope removes it from every line first
MARKER = "\u0002"  # starts the packed text, so a match is told from an unchanged line without a second pass
CHOICE = "\u0005"  # follows each alternative's wrap group in a choice slot; strip_envelope removes it from every line


def pack_all(value: Column, pattern: str, slots: Sequence[Sequence[int]], choice: Sequence[int] = ()) -> Column:
    """The groups of an anchored regex packed into slots, as an array with one string per slot; null when the regex
    does not match. A slot concatenates its groups: give it one group per alternative of the regex that holds the
    same field, and only the alternative that matched contributes (groups that took no part are empty).

    `choice`, when given, is the group that wraps each alternative (non-empty exactly when it matched), in order:
    the array then starts with a choice slot, and `chosen` reads which alternative matched from it."""
    packed = ["".join(f"${group}{CHOICE}" for group in choice)] if choice else []
    packed += ["".join(f"${group}" for group in slot) for slot in slots]
    replaced = F.regexp_replace(value, pattern, MARKER + SEP.join(packed))
    return F.when(replaced.startswith(MARKER), F.split(F.substring(replaced, 2, 1 << 30), SEP))


def chosen(parts: Column, count: int) -> Column:
    """The 1-based number of the alternative that matched, of the `count` of a `pack_all` with `choice`; null when
    there was no match or no wrap group is non-empty (an empty match)."""
    # The choice slot is one CHOICE per alternative, the matched one's text before its own: the number of CHOICEs
    # it starts with tells the alternative in one string operation, where one slot per alternative made an array
    # of hundreds of strings per line, and finding the non-empty one cost more than the match.
    slot = F.get(parts, 0)
    index = F.length(slot) - F.length(F.ltrim(slot, F.lit(CHOICE))) + 1
    return F.when(index <= count, index)


def each_group(group_count: int) -> list[list[int]]:
    """One slot per group, in group order."""
    return [[group] for group in range(1, group_count + 1)]


def at(parts: Column, slot: int) -> Column:
    """Slot `slot` (1-based) of a packed match, null when empty or when there was no match."""
    return F.nullif(F.get(parts, slot - 1), F.lit(""))


def sql_literal(value: str | int) -> str:
    """A Spark SQL literal for a string or int."""
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal_map(pairs: Mapping[str, str] | Mapping[str, int]) -> Column:
    """A constant map column built in one call (one SQL literal instead of a py4j call per entry)."""
    if not pairs:
        return F.expr("map()")
    return F.expr("map(" + ", ".join(f"{sql_literal(k)}, {sql_literal(v)}" for k, v in pairs.items()) + ")")


def literal_array(values: list[str] | tuple[str, ...]) -> Column:
    """A constant array column built in one call."""
    return F.expr("array(" + ", ".join(sql_literal(v) for v in values) + ")")
