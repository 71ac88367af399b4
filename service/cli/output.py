"""How the commands print: documents (``--format json``), and every line a terminal shows
made safe (standard library and the free-text rule only)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from service.formats.text import terminal_safe

__all__ = ["SafeOutput", "local_time", "say", "terminal_safe", "write_json"]


def write_json(doc: Any, out: TextIO) -> int:
    """``doc`` as indented JSON and a newline (the ``--format json`` of every command); returns 0,
    the exit code of a command that has printed its answer."""
    json.dump(doc, out, indent=1)
    out.write("\n")
    return 0


def local_time(iso: str | None) -> str:
    """A time the API gives in ISO 8601 (``2026-11-28T22:31:51.595008+00:00``), for a person: the
    minute in the user's local time zone (``TZ``), ``2026-11-28 23:31`` (issue 37: text views are
    for people, TSV, CSV and JSON keep the ISO value). A time without an offset is UTC, as the
    API's are; a date alone, or text that is not a time, is shown as it is; None as nothing."""
    if not iso:
        return ""
    try:
        when = datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return iso
    if len(iso) <= 10:  # a date (2026-11-20): no time of day to convert
        return iso
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone().strftime("%Y-%m-%d %H:%M")


class SafeOutput:
    """A text stream whose every write goes through :func:`terminal_safe`: text a server or a
    database holds (a judge's ``model``, a run's description, an error's message) is shown with
    its control characters and bidirectional overrides escaped, never acted on. ``main`` gives
    every command this stream as its ``out``; :func:`say` is the same for standard error."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(terminal_safe(text))

    def write_sanitised(self, text: str) -> int:
        """``text`` as it is, for text built only of pieces that went through :func:`terminal_safe`
        (and numbers): the same text :meth:`write` would send (the rule escapes character by
        character), without a second pass over the megabytes of a long table."""
        return self.stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, ...
        return getattr(self.stream, name)


def say(message: str, stream: TextIO | None = None) -> None:
    """``message`` and a newline on standard error (or ``stream``), made safe for a terminal."""
    print(terminal_safe(message), file=stream if stream is not None else sys.stderr)
