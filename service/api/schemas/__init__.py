"""The API's typed contract: every request and response body as a msgspec Struct.

Request bodies refuse unknown fields (422 naming the field) and control characters in any text
(400 naming the field); PATCH bodies tell an absent field
(``UNSET``: left as it is) from ``null`` (cleared). Response bodies are converted from the use
cases' documents with :func:`out`, so a field the contract does not declare never leaks.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from service.formats.text import check_tree

S = TypeVar("S", bound=msgspec.Struct)
T = TypeVar("T")


class Request(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of request bodies: unknown fields are refused, and so is every text (a field, an
    item of a list, a key or value of a mapping) holding a control character or a bidirectional
    override (400 naming the field: :func:`service.formats.text.check_text`)."""

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            check_tree(name, getattr(self, name))


class Response(msgspec.Struct, kw_only=True):
    """Base of response bodies."""


class Items(Response, Generic[T], kw_only=True):
    """A list of things (every such answer is an object, so fields can be added later)."""

    items: list[T]


def out(schema: type[S], document: Any) -> S:
    """A use case's document as the response schema (raises on a contract mismatch: a bug)."""
    return msgspec.convert(document, schema, strict=False)


def present(body: msgspec.Struct) -> dict[str, Any]:
    """The fields a PATCH body actually carries (``UNSET`` ones left out; ``None`` kept)."""
    return {f: getattr(body, f) for f in body.__struct_fields__ if getattr(body, f) is not msgspec.UNSET}
