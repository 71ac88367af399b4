"""Free text: the characters no text field holds, refused where text comes in and escaped
where it is printed on a terminal.

Names, descriptions, provenance, notes, reasons, labels, titles and metadata are shown again:
on the portal's pages, in the API's answers and by ``cranfield`` on a terminal, where an ESC or
OSC sequence (or a C1 control such as U+009B, a CSI on many terminals) in a judge's ``model``
would move the cursor, rewrite lines or retitle the window, and a bidirectional override
would show text in another order than the one it is stored in ("Trojan Source",
CVE-2021-42574). So every free-text field refuses, with a 400 naming the field
(:func:`check_text`):

- the C0 controls U+0000-U+001F, but for TAB, LF and CR in a multi-line field
  (:data:`MULTILINE_FIELDS`: a description, a prompt, notes);
- DEL (U+007F) and the C1 controls U+0080-U+009F;
- the bidirectional embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069.

Text stored before the rule is escaped on output (:func:`terminal_safe`), which every line
``cranfield`` prints goes through (``service.cli.output``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from service.errors import BadRequest

_ALWAYS = r"\x7f-\x9f\u202a-\u202e\u2066-\u2069"
#: What a one-line field refuses.
UNSAFE_IN_LINE = re.compile(rf"[\x00-\x1f{_ALWAYS}]")
#: What a multi-line field refuses (TAB, LF and CR allowed).
UNSAFE_IN_TEXT = re.compile(rf"[\x00-\x08\x0b\x0c\x0e-\x1f{_ALWAYS}]")
#: What a terminal is never sent (TAB and LF are the output's own layout).
UNSAFE_ON_TERMINAL = re.compile(rf"[\x00-\x08\x0b-\x1f{_ALWAYS}]")

#: The fields that are several lines of text wherever they occur (API bodies, forms, use cases).
MULTILINE_FIELDS = frozenset({"description", "prompt", "notes"})


def described(char: str) -> str:
    """A refused character in words: ``U+001B (a control character)``."""
    point = ord(char)
    if 0x202A <= point <= 0x202E or 0x2066 <= point <= 0x2069:
        kind = "a bidirectional formatting character"
    else:
        kind = "DEL" if point == 0x7F else "a control character"
    return f"U+{point:04X} ({kind})"


def find_unsafe(value: str, *, multiline: bool) -> re.Match[str] | None:
    """The first refused character of ``value`` (TAB, LF and CR allowed if ``multiline``), or None."""
    return (UNSAFE_IN_TEXT if multiline else UNSAFE_IN_LINE).search(value)


def check_text(field: str, value: str, *, multiline: bool | None = None) -> str:
    """``value`` if it holds none of the refused characters, else a 400 naming ``field``, the
    character and where it is. ``multiline`` (default: ``field`` is one of
    :data:`MULTILINE_FIELDS`) allows TAB, LF and CR."""
    if multiline is None:
        multiline = field.rsplit(".", 1)[-1].split("[", 1)[0] in MULTILINE_FIELDS
    found = find_unsafe(value, multiline=multiline)
    if found is not None:
        allowed = "; tab and line ends are allowed" if multiline else ""
        raise BadRequest(f"{field}: {described(found.group())} at character {found.start() + 1} is not allowed "
                         f"in text (control characters, DEL and bidirectional overrides are refused{allowed})")
    return value


def check_tree(field: str, value: Any, *, multiline: bool | None = None) -> None:
    """:func:`check_text` on every text in ``value``: a string, or the keys and values of
    mappings and the items of lists and tuples, at any depth (metadata, lists of ids); other
    values are left alone. A refusal names the path (``metadata.platform[2]``)."""
    if isinstance(value, str):
        check_text(field, value, multiline=multiline)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                check_text(f"{field} key", key, multiline=False)
            check_tree(f"{field}.{key}", item, multiline=multiline)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_tree(f"{field}[{i}]", item, multiline=multiline)


def _escaped(found: re.Match[str]) -> str:
    point = ord(found.group())
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every character a terminal would act on (but TAB and LF) written as a
    visible escape (ESC as ``\\x1b``, U+202E as ``\\u202e``): what was stored, shown, never run."""
    return UNSAFE_ON_TERMINAL.sub(_escaped, text) if UNSAFE_ON_TERMINAL.search(text) else text


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun in agreement, for text read by people: "1 topic", "3 topics", "0 runs"
    (``plural``: an irregular plural, "1 loss" / "2 losses")."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def nouned(n: int, noun: str, plural: str | None = None) -> str:
    """The noun alone, in agreement with ``n``: "level" for one, "levels" for several."""
    return noun if n == 1 else plural or noun + "s"
