"""JSON Lines read line by line, in bounded time and memory (the RAG files: answer runs,
nuggets, nugget assignments, citation-support judgments; docs/rag.md).

Each line is checked before it is decoded: its length against ``max_line_bytes`` (a 50 MB
sentence is refused by its length, never parsed), then strict UTF-8 (an invalid byte is
refused naming the line and the byte), then JSON. Python's decoder stops nesting at the
interpreter's recursion limit (a ``RecursionError``, refused here); what it does build is
then walked without recursion and refused deeper than ``max_depth``, so a reader further on
never meets a structure deeper than its format. The bare tokens ``NaN`` and ``Infinity``
(not JSON, but Python writes them) are refused unless ``allow_nan``: NIST's citation-support
files hold ``NaN`` where a sentence's text is missing. A number of more than 4,300 digits is
refused by Python itself (``sys.int_max_str_digits``), here as the line's error.

Memory: a decoded line's Python objects take up to about 12 times its bytes (10^5 empty
sentences, 3 MB of JSON, are 37 MB of dicts), so the line limit bounds a reader's peak to
that multiple of it, besides the file itself. The file's bytes come whole (gzip already undone by ``service.formats.compressed``, which
bounds them); lines are cut from them one at a time (no list of every line).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from service.errors import InvalidInput

#: The longest line read by default: an answer of 1,024 words with 100 references and its
#: prompt fits many times over; a line longer is refused before it is decoded.
MAX_LINE_BYTES = 4 * 1024 * 1024
#: The deepest nesting a line may have (an answer run needs 4: line, answer, sentence,
#: citations; a 2025 prompt given as chat messages a few more).
MAX_DEPTH = 16


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON value")


def json_lines(data: bytes | bytearray, source: str, *, max_line_bytes: int = MAX_LINE_BYTES,
               max_depth: int = MAX_DEPTH, allow_nan: bool = False, keep_going: bool = False
               ) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's number (1-based) and decoded value, in file order. An unreadable
    line is raised as :class:`InvalidInput`; with ``keep_going`` it is yielded as its value
    instead (a validator lists every line's problem), and the lines after it are read."""
    n = len(data)
    pos = 3 if bytes(data[:3]) == b"\xef\xbb\xbf" else 0  # a byte order mark
    number = 0
    while pos < n:
        end = data.find(b"\n", pos)
        if end < 0:
            end = n
        number += 1
        start, pos = pos, end + 1
        try:
            if end - start > max_line_bytes:
                raise InvalidInput(source, number, f"the line has {end - start:,} bytes, more than the "
                                                   f"{max_line_bytes:,} a line may hold")
            raw = bytes(data[start:end]).strip()
            if not raw:
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(source, number, f"not UTF-8 text (an invalid byte at column {exc.start + 1})"
                                   ) from None
            value = loads_line(text, source, number, max_depth=max_depth, allow_nan=allow_nan)
        except InvalidInput as exc:
            if not keep_going:
                raise
            value = exc
        yield number, value


def loads_line(text: str, source: str, line: int, *, max_depth: int = MAX_DEPTH, allow_nan: bool = False) -> Any:
    """One line's JSON value, refused (naming ``source`` and ``line``) when it is not JSON,
    nests deeper than ``max_depth`` or holds NaN/Infinity (unless ``allow_nan``)."""
    try:
        value = json.loads(text) if allow_nan else json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(source, line, f"not JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise InvalidInput(source, line, f"the JSON nests deeper than the {max_depth} levels a line may have") from None
    except ValueError as exc:  # NaN refused, a number of too many digits
        raise InvalidInput(source, line, f"not JSON: {exc}") from None
    if depth_of(value, max_depth) > max_depth:
        raise InvalidInput(source, line, f"the JSON nests deeper than the {max_depth} levels a line may have")
    return value


def depth_of(value: Any, stop: int) -> int:
    """The nesting depth of ``value`` (a scalar 0, ``[]`` 1, ``[[1]]`` 2), without recursion;
    the walk ends as soon as the depth passes ``stop``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > stop:
                return deepest
        stack.extend((c, depth) for c in children if isinstance(c, (dict, list)))
    return deepest
