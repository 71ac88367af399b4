"""The portal's forms: the sign-in cookie, the CSRF token of state-changing forms, and what a
handler reads from a posted form.

A visitor signs in with an API token; the portal opens a server-side session for it
(:func:`service.evaluation.permissions.access.open_session`) and keeps only the session's secret in an
HttpOnly, SameSite=Strict cookie, never the token. Signing out ends the session on the server,
so a copy of the cookie stops working too. Every form that changes state carries ``csrf``, an
HMAC of a fixed label under the session's secret: the ``form``
dependency (:func:`provide_form`) refuses a post whose ``csrf`` does not match before the
handler runs, so another site cannot post on the visitor's behalf even where SameSite is not
honoured. The sign-in form itself has no session to derive a token from; it checks the
``Origin`` header instead (:func:`check_same_origin`).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from litestar import Request
from litestar.datastructures import Cookie, UploadFile

from service.api.uploads import decompressed
from service.errors import BadRequest, Forbidden, InvalidInput
from service.formats.compressed import DEFAULT_LIMIT
from service.http.admission import upload_slot

COOKIE = "cranfield_session"
LEGACY_COOKIE = "cranfield_token"  # earlier versions kept the API token itself here: expired at sign-in and sign-out


def csrf_for(secret: str) -> str:
    """The form token of a signed-in visitor: an HMAC of a fixed label under their session's secret."""
    return hmac.new(secret.encode(), b"cranfield portal form", hashlib.sha256).hexdigest()[:32]


def secret_of(request: Request[Any, Any, Any]) -> str:
    """The session secret in the visitor's sign-in cookie ("" when signed out)."""
    return request.cookies.get(COOKIE, "")


def check_csrf(request: Request[Any, Any, Any], token: str) -> None:
    secret = secret_of(request)
    if not secret or not hmac.compare_digest(token, csrf_for(secret)):
        raise Forbidden("the form is stale or from another site: reload the page and try again")


def check_same_origin(request: Request[Any, Any, Any]) -> None:
    """Refuse a sign-in posted by another site (login CSRF would sign the visitor in as the attacker).

    A browser sends ``Origin`` with every POST: this site's own form sends this site's origin. A
    page of another site sends its own origin, or ``null`` (a page whose referrer policy is
    ``no-referrer``, a sandboxed frame, a ``data:`` page): both refused. Without ``Origin`` the
    ``Referer``, when there is one, must be this site's. A request with neither comes from no
    browser of today (curl, scripts, the test client: they hold the token already, so signing
    them in as anyone else gains nothing) and is let through (docs/portal.md)."""
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin is not None:
        if origin == "null" or urlsplit(origin).netloc != host:
            raise Forbidden("sign in from this site's own form")
        return
    referer = request.headers.get("referer")
    if referer is not None and urlsplit(referer).netloc != host:
        raise Forbidden("sign in from this site's own form")


@dataclass(frozen=True)
class Upload:
    """A file of a posted form: its name (as the visitor's browser gave it) and its bytes."""

    name: str
    body: bytes

    def required(self) -> bytes:
        """The bytes, refused as an invalid upload (422, naming the file) when there are none."""
        if not self.body:
            raise InvalidInput(self.name, None, "choose a file to upload (it is empty or missing)")
        return self.body


@dataclass(frozen=True)
class PostedForm:
    """A state-changing form whose CSRF token has been checked: text fields and files."""

    fields: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, Upload] = field(default_factory=dict)

    def text(self, name: str) -> str:
        """A text field, stripped ("" when absent)."""
        return self.fields.get(name, "").strip()

    def optional(self, name: str) -> str | None:
        """A text field, None when absent or blank (forms send "" for a default choice)."""
        return self.text(name) or None

    def whole_number(self, name: str, what: str) -> int | None:
        """A positive whole number, None when blank; anything else is a bad request naming ``what``."""
        return whole_number(self.text(name), what)

    def upload(self, name: str, what: str) -> Upload:
        """The file field ``name``; a missing one is an empty upload named after ``what``."""
        found = self.files.get(name)
        return Upload(found.name or f"{what} file", found.body) if found else Upload(f"{what} file", b"")


async def provide_form(request: Request[Any, Any, Any]) -> PostedForm:
    """The ``form`` dependency of every state-changing handler: the posted form, read whole,
    after its CSRF token is checked (403 otherwise, before the handler runs)."""
    raw = await request.form()
    check_csrf(request, str(raw.get("csrf") or ""))
    if raw.get("staged"):  # a previewed qrels file posted back (unstaged by its handler): an upload
        await upload_slot(request)
    fields: dict[str, str] = {}
    files: dict[str, Upload] = {}
    for key, value in raw.multi_items():
        if isinstance(value, UploadFile):
            files[key] = Upload(value.filename or "", await _plain(request, await value.read(), value.filename or key))
        else:
            fields[key] = str(value)
    return PostedForm(fields, files)


async def _plain(request: Request[Any, Any, Any], data: bytes, name: str) -> bytes:
    """A file part as text: decompressed when it is gzip, within the body limit on its uncompressed
    size (413 past it, 422 naming the file when corrupt; service/formats/compressed.py), once
    the request holds an upload slot, as the API's uploads (service/api/uploads.py)."""
    if not data:  # an empty file input: no upload
        return data
    return await decompressed(request, data, name, upload_limit(request))


def upload_limit(request: Request[Any, Any, Any]) -> int:
    """The application's body limit, which also bounds a gzipped file's uncompressed size."""
    return int(request.app.state.get("max_body") or DEFAULT_LIMIT)


def whole_number(text: str | None, what: str) -> int | None:
    """``text`` as a positive whole number, None when blank (selectors send "" for a default)."""
    if text is None or not text.strip():
        return None
    if not (text.strip().isascii() and text.strip().isdigit()) or not 1 <= int(text) < 2**31:
        raise BadRequest(f"{what} is a positive whole number, not {text.strip()[:40]!r}")
    return int(text)


def local(target: str) -> str:
    """Only same-site paths as redirect targets (no open redirect through ?next=)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def sign_in_cookie(request: Request[Any, Any, Any], secret: str, lifetime: int) -> Cookie:
    secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
    return Cookie(key=COOKIE, value=secret, httponly=True, samesite="strict", secure=secure, path="/",
                  max_age=lifetime)


def expired_cookie(name: str) -> Cookie:
    return Cookie(key=name, value="", max_age=0, path="/", httponly=True, samesite="strict")


def sign_out_cookies() -> list[Cookie]:
    """The sign-in cookie expired (and the cookie of earlier versions, which held an API token)."""
    return [expired_cookie(COOKIE), expired_cookie(LEGACY_COOKIE)]
