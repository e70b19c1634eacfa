"""HTML tables of the report: escaped cells, lists joined, times in UTC. Each cell carries its column's title, so
that on a phone a row reads as a card of `title: value` lines (the page's style) instead of squeezed columns."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pipelines.report.text import esc, ts


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], css: str, *,
          raw: tuple[str, ...] = ()) -> str:
    """A table of `rows` with `columns` (key, title); the keys in `raw` hold HTML made (and escaped) by the caller."""
    if not rows:
        return "<p>None.</p>"
    head = "".join(f"<th>{esc(title)}</th>" for _, title in columns)
    body = []
    for row in rows:
        cells = []
        for key, title in columns:
            value = row.get(key)
            if isinstance(value, list):
                value = ", ".join(str(v) for v in value)
            text = value if key in raw else ts(value) if isinstance(value, dt.datetime) else esc(value)
            cells.append(f'<td data-label="{esc(title)}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="{css}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')
