"""Domain errors shared by every layer.

The core raises these; front ends (CLI, API) map them to exit codes or HTTP
responses in one place. They carry enough context to fix the input without a
traceback: file, line and what is wrong.
"""

from __future__ import annotations


class CranfieldError(Exception):
    """Base class of every error Cranfield reports to a user."""


class InvalidInput(CranfieldError, ValueError):
    """A qrels or run file that cannot be used as it is.

    ``source`` names the file (or upload), ``line`` is 1-based (``None`` when
    the problem concerns the file as a whole), ``reason`` says what is wrong.
    """

    def __init__(self, source: str, line: int | None, reason: str) -> None:
        self.source = source
        self.line = line
        self.reason = reason
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {reason}")


class InvalidMeasure(CranfieldError, ValueError):
    """A metric name that does not parse or names no known metric/parameter."""
