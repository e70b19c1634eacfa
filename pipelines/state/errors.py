"""Errors the command line turns into exit code 2 with their message (the message names the problem and the fix)."""

from __future__ import annotations


class PipelineStateError(RuntimeError):
    """The tables and the checkpoints disagree, or were written by an incompatible release; continuing would lose or
    duplicate rows."""
