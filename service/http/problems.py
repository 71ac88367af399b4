"""Any exception raised while serving a request, as the problem the caller sees.

Domain errors go through the one table in :mod:`service.errors`. A few errors from the
framework and the database driver are translated to domain errors here (a body that does not
match the schema, an unknown path, a concurrent insert that lost a race). Everything else is a
bug: a 500 whose message hides the details, logged with a request id the caller can quote.
"""

from __future__ import annotations

import logging
import uuid

from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from sqlalchemy.exc import DataError, IntegrityError

from service.errors import (
    BadRequest,
    Conflict,
    CranfieldError,
    ErrorKind,
    InvalidRequest,
    NotFound,
    Problem,
    TooLarge,
    problem_for,
)

log = logging.getLogger("cranfield.http")


def as_domain_error(exc: BaseException) -> BaseException:
    """Framework and driver errors that have a domain meaning, as that domain error."""
    if isinstance(exc, CranfieldError):
        return exc
    if isinstance(exc, ValidationException):
        return InvalidRequest(_validation_message(exc))
    if isinstance(exc, NotFoundException):
        return NotFound(str(exc.detail) or "no such path")
    if isinstance(exc, HTTPException) and exc.status_code == 413:
        return TooLarge(str(exc.detail))
    if isinstance(exc, (DataError, OverflowError)):
        # A value the database cannot hold (a number past 64 bits, a NUL character, a string
        # past its column): the request's fault, not the server's.
        return BadRequest("a value in the request is out of range or not storable")
    if isinstance(exc, IntegrityError):
        # Two requests raced for one unique key (a team or tag created twice at once).
        return Conflict("a concurrent change got there first; try again")
    return exc


def problem_of(exc: BaseException) -> Problem:
    """The problem to show for ``exc``; a 500 is logged here with its request id."""
    exc = as_domain_error(exc)
    if isinstance(exc, HTTPException):  # the framework's own refusals (405, 400 on a bad multipart body...)
        code = {405: "method_not_allowed", 400: "bad_request"}.get(exc.status_code, "http_error")
        return Problem(ErrorKind(exc.status_code, code, "Request not accepted"), str(exc.detail))
    if isinstance(exc, CranfieldError):
        return problem_for(exc)
    request_id = uuid.uuid4().hex[:16]
    log.error("request %s failed", request_id, exc_info=exc)
    return problem_for(exc, request_id)


def _validation_message(exc: ValidationException) -> str:
    """Litestar's message plus the fields it names (msgspec names unknown and bad fields)."""
    parts = [str(exc.detail)]
    extra = exc.extra if isinstance(exc.extra, list) else [exc.extra] if exc.extra else []
    for item in extra:
        if isinstance(item, dict):
            message, key = item.get("message"), item.get("key")
            parts.append(f"{key}: {message}" if key else str(message))
    return " - ".join(p for p in parts if p)
