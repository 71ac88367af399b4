"""Any exception raised while serving a request, as the problem the caller sees.

Domain errors go through the one table in :mod:`service.errors`. A few errors from the
framework and the database driver are translated to domain errors here (a body that does not
match the schema, an unknown path, a concurrent insert that lost a race). Everything else is a
bug: a 500 whose message hides the details, logged with its traceback and a request id the
caller can quote. That includes the framework's own 5xx refusals (their text can name internals:
a template, a configuration) and a :class:`~service.errors.CranfieldError` outside the error
table (a :class:`~service.config.SettingsError`).
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
    Unavailable,
    kind_of,
    problem_for,
)
from service.store.db import is_retryable, is_unavailable

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
    if isinstance(exc, MemoryError):
        # The process ran short of memory (numpy's _ArrayMemoryError included): uploads say which
        # file (service.evaluation.common.memory); anything else is answered here, and retried later.
        log.warning("a request ran short of memory: %s", type(exc).__name__)
        return Unavailable("the server ran short of memory for this request; send it again in a minute",
                           retry_after=30)
    if is_retryable(exc):
        # A deadlock victim or serialization failure the use case did not retry itself: the
        # transaction was undone whole, so the client may simply send it again.
        log.warning("a transaction was undone by the database: %s", type(getattr(exc, "orig", exc)).__name__)
        return Unavailable("the database undid this change to resolve a conflict with another one; send it again",
                           retry_after=1)
    if is_unavailable(exc):
        log.warning("the database is unreachable or this process's pool is exhausted: %s", exc)
        return Unavailable("the database is unreachable or busy; try again shortly", retry_after=2)
    return exc


def problem_of(exc: BaseException) -> Problem:
    """The problem to show for ``exc``; a 500 is logged here with its request id."""
    exc = as_domain_error(exc)
    # the framework's own refusals (405, 400 on a bad multipart body...); its 5xx are bugs like any other
    if isinstance(exc, HTTPException) and exc.status_code < 500:
        code = {405: "method_not_allowed", 400: "bad_request"}.get(exc.status_code, "http_error")
        return Problem(ErrorKind(exc.status_code, code, "Request not accepted"), str(exc.detail))
    if isinstance(exc, CranfieldError) and kind_of(exc) is not None:
        return problem_for(exc)
    request_id = uuid.uuid4().hex[:16]
    log.error("request %s failed: %s", request_id, type(exc).__name__, exc_info=exc)
    return problem_for(exc, request_id)


#: The framework's headers an error answer keeps: a 405 says which methods the path takes.
KEPT_HEADERS = ("allow",)


def headers_of(exc: BaseException, problem: Problem) -> dict[str, str]:
    """The headers of the answer showing ``problem``: ``Retry-After`` of an unavailable
    service, and ``Allow`` of a method the path does not take (RFC 9110 requires it on a 405)."""
    headers = {"Retry-After": str(problem.details["retry_after"])} if "retry_after" in problem.details else {}
    if isinstance(exc, HTTPException) and exc.headers:
        headers.update({k.title(): v for k, v in exc.headers.items() if k.lower() in KEPT_HEADERS})
    return headers


def _validation_message(exc: ValidationException) -> str:
    """Litestar's message plus the fields it names (msgspec names unknown and bad fields)."""
    parts = [str(exc.detail)]
    extra = exc.extra if isinstance(exc.extra, list) else [exc.extra] if exc.extra else []
    for item in extra:
        if isinstance(item, dict):
            message, key = item.get("message"), item.get("key")
            parts.append(f"{key}: {message}" if key else str(message))
    return " - ".join(p for p in parts if p)
