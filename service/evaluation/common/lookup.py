"""Finding a row by id, and checking a new unique name: the two steps most use cases begin with."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import InstrumentedAttribute, Session

from service.errors import BadRequest, Conflict, NotFound
from service.formats.text import check_text

T = TypeVar("T")


def existing(s: Session, model: type[T], key: Any, what: str) -> T:
    """The row of ``model`` with primary key ``key``, or NotFound naming ``what``."""
    row = s.get(model, key)
    if row is None:
        raise NotFound(f"no {what} {key}")
    return row


def new_name(s: Session, column: InstrumentedAttribute[str], name: str, what: str) -> str:
    """``name`` stripped, if it is not empty, is plain text (:func:`check_text`) and no row has
    it yet (400 or 409 otherwise)."""
    name = check_text("name", name.strip())
    if not name:
        raise BadRequest(f"a {what} needs a name")
    if s.scalar(select(column).where(column == name)) is not None:
        raise Conflict(f"{what} {name!r} exists")
    return name
