"""ir_metadata: a run's PRIMAD description, read and checked before the run is stored.

ir_metadata (Breuer et al., "ir_metadata: An Extensible Metadata Schema for IR Experiments",
SIGIR 2022; schema version 0.1) is a YAML mapping with general keys (``schema-version``,
``run-version``, ``tag``) and one section per PRIMAD component: ``platform``, ``research
goal``, ``implementation``, ``method``, ``actor``, ``data``. Each section is a mapping whose
documented sub-components have the types of the schema's checklists (``method → automatic``
a boolean, ``method → retrieval`` a list of mappings, ``actor → fields`` a list...); further
sub-components may be added (the schema is extensible), further top-level keys may not.

The YAML may carry the schema's ``ir_metadata.start`` / ``ir_metadata.end`` marker lines, and
may be the comment header of a run file (``# ir_metadata.start`` ... ``# ir_metadata.end``,
as repro_eval writes it): :func:`embedded_in_run` finds it there.

Reading is bounded: at most :data:`MAX_BYTES`, ``yaml.safe_load``'s constructors only, no
aliases (an alias bomb expands exponentially when the mapping is walked), at most
:data:`MAX_NESTING` levels. Errors name the line (:class:`InvalidInput`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any, ClassVar

import yaml

from service.errors import InvalidInput
from service.formats.text import described, find_unsafe

MAX_BYTES = 256 * 1024
MAX_NESTING = 32

GENERAL = ("schema-version", "run-version", "tag")
SECTIONS = ("platform", "research goal", "implementation", "method", "actor", "data")

_SCALAR: dict[str, Any] = {"type": ["string", "number", "boolean"]}
_SCALARS: dict[str, Any] = {"type": "array", "items": _SCALAR}
_MAPPINGS: dict[str, Any] = {"type": "array", "items": {"type": "object"}}
_COUNT: dict[str, Any] = {"type": ["integer", "string"]}


def _section(**members: dict[str, Any]) -> dict[str, Any]:
    """A PRIMAD section or sub-component: a mapping (empty: null) with documented members."""
    return {"type": ["object", "null"], "properties": members}


#: The schema's checklists (ir_metadata v0.1) as a JSON Schema: the types of the documented
#: sub-components; undocumented ones are allowed inside a section, not at the top level.
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "schema-version": _SCALAR,
        "run-version": _SCALAR,
        "tag": _SCALAR,
        "platform": _section(
            hardware=_section(cpu=_section(**{"model": _SCALAR, "architecture": _SCALAR, "operation mode": _SCALAR,
                                              "number of cores": _COUNT}),
                              gpu=_section(**{"architecture": _SCALAR, "number of cores": _COUNT, "ram": _SCALAR}),
                              ram=_SCALAR),
            **{"operating system": _section(kernel=_SCALAR, distribution=_SCALAR),
               "software": _section(**{"libraries": {"type": ["object", "array"]}, "retrieval toolkit": _SCALARS})}),
        "research goal": _section(
            venue=_section(name=_SCALAR, year={"type": ["integer", "string"]}),
            publication=_section(dblp=_SCALAR, doi=_SCALAR, arxiv=_SCALAR, url=_SCALAR, abstract=_SCALAR),
            evaluation=_section(**{"reported measures": _SCALARS, "reported_measures": _SCALARS,
                                   "baseline": {"type": ["array", "string"], "items": _SCALAR},
                                   "significance test": _MAPPINGS})),
        "implementation": _section(
            executable=_section(cmd=_SCALAR),
            source=_section(lang={"type": ["array", "string"], "items": _SCALAR}, repository=_SCALAR,
                            commit=_SCALAR)),
        "method": _section(**{
            "automatic": {"type": "boolean"}, "score ties": _SCALAR,
            "indexing": _section(tokenizer=_SCALAR, stemmer=_SCALAR, stopwords=_SCALAR),
            "retrieval": _MAPPINGS}),
        "actor": _section(name=_SCALAR, orcid=_SCALAR, team=_SCALAR, fields=_SCALARS, mail=_SCALAR, role=_SCALAR,
                          degree=_SCALAR, github=_SCALAR, twitter=_SCALAR),
        "data": _section(**{"test collection": {"type": ["object", "null"]}, "training data": _MAPPINGS,
                            "other": _MAPPINGS}),
    },
}

_MARKER = re.compile(r"^\s*(#\s?)?ir_metadata\.(start|end)\s*$")


def read(data: bytes, source: str = "ir_metadata") -> str:
    """The ir_metadata text, checked: valid UTF-8 YAML within the bounds, a mapping of the
    schema's keys with the documented types. Raises :class:`InvalidInput` naming the line."""
    if len(data) > MAX_BYTES:
        raise InvalidInput(source, None, f"ir_metadata is larger than {MAX_BYTES // 1024} KB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(source, data[: exc.start].count(b"\n") + 1, "ir_metadata is not UTF-8") from None
    if not text.strip():
        raise InvalidInput(source, None, "ir_metadata is empty")
    found = find_unsafe(text, multiline=True)  # the free-text rule: it is shown again
    if found is not None:
        raise InvalidInput(source, text.count("\n", 0, found.start()) + 1,
                           f"ir_metadata holds {described(found.group())}: control characters, DEL and "
                           "bidirectional overrides are refused")
    check(_without_markers(text), source)
    return text


def check(text: str, source: str = "ir_metadata") -> None:
    """Check YAML text (no markers) against :data:`SCHEMA`; the first problem, with its line."""
    node, value = _load(text, source)
    if node is None:
        raise InvalidInput(source, None, "ir_metadata is empty")
    if not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(node, yaml.SequenceNode) else "a single value"
        raise InvalidInput(source, _line(node), f"ir_metadata is a mapping of PRIMAD sections "
                           f"({', '.join(SECTIONS)}), not {kind}")
    _check_keys(node, source)
    errors = sorted(_validator().iter_errors(value), key=lambda e: (_line(_node_at(node, e.absolute_path)),
                                                                    list(map(str, e.absolute_path))))
    if errors:
        first = errors[0]
        where = " → ".join(str(p) for p in first.absolute_path) or "the document"
        raise InvalidInput(source, _line(_node_at(node, first.absolute_path)), f"ir_metadata {where}: {first.message}")


#: A run file's comment header is searched for an ir_metadata block in this many bytes of its
#: start: the block (at most MAX_BYTES) must end within them. Reading lines one at a time is
#: Python's work per line, so the whole file was read so when it held only blank or comment
#: lines (255 MiB of blank lines: 51 s of the API's CPU before its 422; issue 34, item 3).
HEADER_BYTES = 4 * MAX_BYTES


def embedded_in_run(run: bytes, source: str = "run") -> bytes | None:
    """The ir_metadata block of a run file's comment header (``# ir_metadata.start`` to
    ``# ir_metadata.end``), its ``#`` taken off and the lines before it blank (so line numbers
    are the run file's); None when the header has none. Only the leading comment lines of the
    file's first :data:`HEADER_BYTES` are read: a block that begins there and does not end
    there is refused (:class:`InvalidInput` naming ``source`` and the block's first line)."""
    lines: list[bytes] = []
    start = None
    head = run[:HEADER_BYTES]
    cut = len(run) > len(head)
    if cut:  # whole lines only (a marker cut in two is no marker)
        head = head[:max(head.rfind(b"\n"), head.rfind(b"\r")) + 1]
    for number, raw in enumerate(_lines(head)):
        line = raw.strip()
        if line and not line.startswith(b"#"):
            return None  # the data lines begin: no (complete) block
        text = line.lstrip(b"#").strip()
        if start is None:
            if text == b"ir_metadata.start":
                start = number
                lines = [b""] * (number + 1)
            continue
        if text == b"ir_metadata.end":
            return b"\n".join(lines) + b"\n"
        body = raw.lstrip()[1:]  # the '#'
        lines.append(body[1:] if body.startswith(b" ") else body)
    if cut and start is not None:
        raise InvalidInput(source, start + 1, f"the ir_metadata block of the comment header does not end within the "
                                              f"file's first {HEADER_BYTES // 1024} KB (ir_metadata is at most "
                                              f"{MAX_BYTES // 1024} KB)")
    return None


def _lines(data: bytes, piece: int = 1 << 16) -> Iterator[bytes]:
    """``data.splitlines()``, a piece at a time: the lines are made as they are read, so a
    reader that stops at the first data line never splits (or holds) the whole file. A piece
    ends after a line end (a CR followed by an LF ends after the LF), so each piece splits into
    the lines a split of the whole file gives."""
    n = len(data)
    at = 0
    size = piece
    while at < n:
        chunk = bytes(data[at:at + size])
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
        if at + len(chunk) >= n:
            end = len(chunk)
        elif end == 0:  # no line end in the piece: a longer one
            size *= 2
            continue
        elif chunk[end - 1] == 13 and data[at + end: at + end + 1] == b"\n":
            end += 1  # the LF of a CRLF (past the piece's end)
        yield from chunk[:end].splitlines()
        at += end
        size = piece


# ------------------------------------------------------------------------------ reading
class _Loader(yaml.SafeLoader):
    """``safe_load``'s loader without aliases, with a nesting bound, and dates kept as text
    (a ``2022-07-11`` is a string to the schema, as in JSON)."""

    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, Any]]]] = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text)
        self.source = source
        self.nesting = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise InvalidInput(self.source, event.start_mark.line + 1,
                               f"ir_metadata: aliases (*{event.anchor}) are not allowed")
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise InvalidInput(self.source, self.peek_event().start_mark.line + 1,
                               f"ir_metadata is nested more than {MAX_NESTING} levels deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self.nesting -= 1


def _load(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    """The document's node tree (for line numbers) and its value."""
    loader = _Loader(text, source)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InvalidInput(source, mark.line + 1 if mark else None,
                           f"ir_metadata is not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise InvalidInput(source, None, f"ir_metadata is not valid YAML: {exc}") from None
    finally:
        loader.dispose()


def _without_markers(text: str) -> str:
    """The text with the ``ir_metadata.start`` / ``.end`` marker lines blanked (line numbers stay)."""
    return "\n".join("" if _MARKER.match(line) else line for line in text.split("\n"))


def _check_keys(node: yaml.MappingNode, source: str) -> None:
    """Top-level keys: known ones, each once (YAML would silently keep the last of two)."""
    seen: set[str] = set()
    for key, _ in node.value:
        name = key.value if isinstance(key, yaml.ScalarNode) else None
        if name not in (*GENERAL, *SECTIONS):
            raise InvalidInput(source, _line(key), f"ir_metadata has an unknown section {name!r}: its sections are "
                               f"{', '.join(SECTIONS)} (and {', '.join(GENERAL)})")
        if name in seen:
            raise InvalidInput(source, _line(key), f"ir_metadata has the section {name!r} twice")
        seen.add(name)


def _node_at(node: yaml.Node, path: Any) -> yaml.Node:
    """The node a validation error's path leads to (as far as it can be followed)."""
    for step in path:
        if isinstance(node, yaml.MappingNode):
            found = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(step)]
            if not found:
                break
            node = found[-1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
        else:
            break
    return node


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


@cache
def _validator() -> Any:
    import jsonschema  # imported on first use: only submissions with ir_metadata need it

    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)
