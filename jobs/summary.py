"""The end of `rebalance run` and `rebalance demo`: what the run found, in a table and a few lines."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from pipelines.flow.found import SUMMARY_COLUMNS, by_group_and_cause, findings, unread_lines

if TYPE_CHECKING:
    from pipelines.flow.run import RunSummary


def print_found(summary: RunSummary, *, sql: str, out: TextIO = sys.stdout) -> None:
    """Print the rebalances the run added or changed by group and cause, the sentence that sums them up with the
    worst incident, and one line per kind of input it could not read with the command that lists those lines
    (`sql`: the command that opens this lakehouse)."""
    from jobs.commands import print_table

    found = summary.found
    rows = by_group_and_cause(list(found.rebalances.values()))
    if rows:
        out.write("\nRebalances by group and cause (without consuming = time the group could not consume)\n\n")
        print_table(SUMMARY_COLUMNS, rows, out=out)
        out.write("\n")
    for line in findings(found):
        out.write(line + "\n")
    unread = unread_lines(found, sql=sql)
    if unread:
        out.write("Input not read as events, and how to list it:\n")
        for line in unread:
            out.write(f"  {line}\n")
