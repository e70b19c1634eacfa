"""Instance globs (pipelines.settings.globs.glob_regex): for generated globs of the documented grammar and generated
names, they match as `fnmatch.fnmatchcase` does."""

from __future__ import annotations

import fnmatch

from hypothesis import example, given
from hypothesis import strategies as st

from pipelines.settings.globs import glob_matches

# Characters that mean something to a regex (or to Java's character classes), besides plain ones.
LITERALS = "ab0-._]!^$\\(){}+|&~ "
CLASS_CHARS = "abcz0.^\\&~["


@st.composite
def class_items(draw) -> str:
    """The inside of a character class: single characters and ordered ranges, at least one, and a literal `-`
    first or last (a `-` anywhere else would make a range of its neighbours)."""
    items = draw(st.lists(st.one_of(
        st.sampled_from(CLASS_CHARS),
        st.tuples(st.sampled_from(CLASS_CHARS), st.sampled_from(CLASS_CHARS)).map(sorted).map("-".join),
    ), min_size=1, max_size=4))
    dash = draw(st.sampled_from(["", "-"]))
    return "".join(items) + dash if draw(st.booleans()) else dash + "".join(items)


tokens = st.one_of(
    st.sampled_from(LITERALS),
    st.just("*"),
    st.just("?"),
    st.builds(lambda negate, body: "[" + ("!" if negate else "") + body + "]", st.booleans(), class_items()),
)


@st.composite
def glob_and_name(draw) -> tuple[str, str]:
    """A glob of the supported grammar, and a name: one it matches (each token filled in) or any other text."""
    parts = draw(st.lists(tokens, max_size=6))
    glob = "".join(parts)
    if draw(st.booleans()):
        return glob, draw(st.text(alphabet=LITERALS + CLASS_CHARS + "xyz", max_size=8))
    name = ""
    for part in parts:
        if part == "*":
            name += draw(st.text(alphabet=LITERALS + "xyz", max_size=3))
        elif part == "?":
            name += draw(st.sampled_from(LITERALS + "xyz"))
        elif part.startswith("["):
            name += draw(st.sampled_from(CLASS_CHARS + "-xyz"))
        else:
            name += part
    return glob, name


@given(glob_and_name())
@example(("broker-*", "broker-1"))
@example(("orders-[0-9]?", "orders-7a"))
@example(("[!a]*", "abc"))
def test_glob_matches_as_fnmatch_does(case):
    glob, name = case
    assert glob_matches(glob, name) == fnmatch.fnmatchcase(name, glob)
