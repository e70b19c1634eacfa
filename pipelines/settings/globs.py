"""Shell globs over instance folder names, as Python and Java regexes (no Spark here: the configuration reads
them too)."""

from __future__ import annotations

import re


def glob_regex(glob: str) -> str:
    """An unanchored regex (valid for Python and Java) for a shell glob over one folder name: `*` any run of
    characters, `?` one character, `[abc]`, `[a-z]` and `[!abc]` a character class; everything else is literal,
    including a `[` that opens no valid class (as `fnmatch` reads it)."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and (cls := _char_class(glob, i)) is not None:
            out.append(cls[0])
            i = cls[1]
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _char_class(glob: str, start: int) -> tuple[str, int] | None:
    """The regex of the class that opens at `start` and the index of its `]`, or None when none is valid there."""
    j = start + 1
    negate = glob[j:j + 1] == "!"
    j += negate
    j += glob[j:j + 1] == "]"  # a `]` first in the class is literal
    end = glob.find("]", j)
    if end < 0:
        return None
    body = glob[start + 1 + negate:end]
    regex = "[" + ("^" if negate else "") + "".join("\\" + c if c in "\\[]^&~" else c for c in body) + "]"
    try:
        re.compile(regex)
    except re.error:
        return None
    return regex, end


def glob_matches(glob: str, name: str) -> bool:
    """True when the whole of `name` matches `glob` (the same rule Spark applies through `glob_regex`)."""
    return re.fullmatch(glob_regex(glob), name, flags=re.DOTALL) is not None
