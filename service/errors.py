"""Domain errors and the one table that gives each its HTTP status and stable code.

The core and the use cases raise these; every front end maps them in one place: the CLI to
exit codes and messages, the JSON API to problem documents, the portal to HTML error pages
(both through :func:`problem_for`). They carry enough context to fix the input without a
traceback: file, line and what is wrong.

Anything that is not a :class:`CranfieldError` (a bare ``ValueError``, a ``KeyError``...) is a
bug: the web layers answer 500 and log it with a request id; they never guess a 400 for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class CranfieldError(Exception):
    """Base class of every error Cranfield reports to a user."""


class BadRequest(CranfieldError):
    """The request itself is wrong: a parameter out of range, a malformed value (HTTP 400)."""


class InvalidInput(CranfieldError, ValueError):
    """A qrels or run file that cannot be used as it is (HTTP 422).

    ``source`` names the file (or upload), ``line`` is 1-based (``None`` when
    the problem concerns the file as a whole), ``reason`` says what is wrong.
    """

    def __init__(self, source: str, line: int | None, reason: str) -> None:
        self.source = source
        self.line = line
        self.reason = reason
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:  # pickled as it was made (a worker process sends it back)
        return (type(self), (self.source, self.line, self.reason))


class InvalidRequest(CranfieldError):
    """A request body or parameter that does not match the API's schema: an unknown field, a
    wrong type, a value out of its range (HTTP 422). The message names the field."""


class InvalidMeasure(BadRequest, ValueError):
    """A metric name that does not parse or names no known metric/parameter (HTTP 400)."""


class Unauthenticated(CranfieldError):
    """No valid credentials (HTTP 401)."""


class Forbidden(CranfieldError):
    """Valid credentials, but not allowed (HTTP 403)."""


class NotFound(CranfieldError):
    """No such object, or one the caller may not know about (HTTP 404)."""


class Conflict(CranfieldError):
    """The request contradicts the current state (HTTP 409)."""


class TooLarge(CranfieldError):
    """The upload is larger than the configured limit (HTTP 413)."""


class Unavailable(CranfieldError):
    """A service the request needs is down or overloaded; try again later (HTTP 503)."""

    def __init__(self, message: str, retry_after: int = 5) -> None:
        self.retry_after = retry_after
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.retry_after))


@dataclass(frozen=True)
class ErrorKind:
    """How one domain error is shown: HTTP status, stable machine-readable code, short title."""

    status: int
    code: str
    title: str


# THE error table: every domain error, its status and its stable code. Subclasses inherit
# their nearest listed ancestor's row (InvalidMeasure is a BadRequest).
ERROR_TABLE: dict[type[CranfieldError], ErrorKind] = {
    BadRequest: ErrorKind(400, "bad_request", "Bad request"),
    InvalidInput: ErrorKind(422, "invalid_input", "Invalid upload"),
    InvalidRequest: ErrorKind(422, "invalid_request", "Invalid request"),
    Unauthenticated: ErrorKind(401, "unauthenticated", "Sign-in required"),
    Forbidden: ErrorKind(403, "forbidden", "Not allowed"),
    NotFound: ErrorKind(404, "not_found", "Not found"),
    Conflict: ErrorKind(409, "conflict", "Conflict"),
    TooLarge: ErrorKind(413, "too_large", "Upload too large"),
    Unavailable: ErrorKind(503, "unavailable", "Service unavailable"),
}
INTERNAL = ErrorKind(500, "internal_error", "Internal error")


def kind_of(exc: BaseException) -> ErrorKind | None:
    """The table's row for ``exc`` (its nearest listed class), or None for a non-domain error."""
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls]  # type: ignore[index]
    return None


@dataclass(frozen=True)
class Problem:
    """An error as shown to a caller (RFC 9457 problem details plus Cranfield's fields).

    ``details`` holds the extra members of one kind of error (``source`` and ``line`` of an
    invalid upload, ``retry_after`` of an unavailable service, ``request_id`` of a 500).
    """

    kind: ErrorKind
    detail: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> int:
        return self.kind.status

    def document(self) -> dict[str, Any]:
        """The JSON body: problem-details members, and under ``error`` the shape clients of
        earlier versions read (``error.code``, ``error.message``, ``error.line``...)."""
        return {"type": f"urn:cranfield:error:{self.kind.code}", "title": self.kind.title,
                "status": self.kind.status, "detail": self.detail, "code": self.kind.code, **self.details,
                "error": {"code": self.kind.code, "message": self.detail, **self.details}}


def problem_for(exc: BaseException, request_id: str | None = None) -> Problem:
    """The problem a caller sees for ``exc``; a non-domain error is an internal error whose
    message is not shown (it is logged with ``request_id`` by the caller)."""
    kind = kind_of(exc)
    if kind is None:
        return Problem(INTERNAL, "an internal error occurred; it has been logged"
                       + (f" with request id {request_id}" if request_id else ""),
                       {"request_id": request_id} if request_id else {})
    details: dict[str, Any] = {}
    detail = str(exc)
    if isinstance(exc, InvalidInput):
        details = {"source": exc.source, "line": exc.line}
        detail = exc.reason
    elif isinstance(exc, Unavailable):
        details = {"retry_after": exc.retry_after}
    return Problem(kind, detail, details)
