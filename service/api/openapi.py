"""The OpenAPI document and its docs page, served with no internet access.

Every operation declares its error responses with :func:`errors`: each one the problem document
of :mod:`service.errors` (``application/problem+json``, one ``ProblemDocument`` component), never
Litestar's own error schema, which the server never sends. Upload operations describe their
bodies with :func:`upload_body`. The document generates a client with ``openapi-python-client``
without a warning (tests/integration/test_generated_client.py). The Swagger UI page at ``/schema`` loads its script and style sheet from this app (the
``swagger-ui-bundle-v2`` package ships them), never from a CDN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Components, Operation, RequestBody, Schema, SecurityScheme, Tag
from litestar.openapi.spec import OpenAPIMediaType as MediaType
from litestar.router import Router
from litestar.static_files import create_static_files_router
from msgspec import Meta

import service
from service.errors import ERROR_TABLE, INTERNAL

ASSETS = "/schema-assets"


class ErrorBody(msgspec.Struct, kw_only=True):
    """Kept for clients of earlier versions: the same facts as the problem members."""

    code: str
    message: str


class ProblemDocument(msgspec.Struct, kw_only=True):
    """An error (RFC 9457 problem details). ``code`` is stable: clients branch on it."""

    type: Annotated[str, Meta(examples=["urn:cranfield:error:invalid_input"])]
    title: str
    status: int
    detail: Annotated[str, Meta(description="What is wrong, for a person to read.")]
    code: Annotated[str, Meta(description="Stable machine-readable code (docs/api.md lists them).")]
    source: Annotated[str | None, Meta(description="Invalid uploads: the file.")] = None
    line: Annotated[int | None, Meta(description="Invalid uploads: the 1-based line (null: the whole file).")] = None
    retry_after: Annotated[int | None, Meta(description="Unavailable: seconds to wait.")] = None
    request_id: Annotated[str | None, Meta(description="Internal errors: quote it when reporting.")] = None
    error: ErrorBody


_CODES = {kind.status: kind for kind in ERROR_TABLE.values()} | {500: INTERNAL}


def errors(*statuses: int) -> dict[int, ResponseSpec]:
    """The error responses an operation may give, each documented as a problem document (every
    operation may also answer 500: a bug, with a request id).

    An operation that reads parameters or a body (422: the request does not match its schema)
    may also answer 400 (a value the database cannot hold, a body that is not JSON or not a
    form), so 422 brings 400 with it. Litestar would otherwise declare that 400 itself, with
    the schema of its own validation error (``status_code``, ``extra``) as ``application/json``:
    a body this server never sends, since every error goes through ``service.http.problems``."""
    declared = (*statuses, 400) if 422 in statuses else statuses
    return {status: ResponseSpec(data_container=ProblemDocument, media_type="application/problem+json",
                                 description=f"{_CODES[status].title} (code {_CODES[status].code})"
                                 if status in _CODES else "Error", generate_examples=False)
            for status in sorted({*declared, 500})}


# The errors every authenticated operation on a resource may give.
READ_ERRORS = (401, 403, 404)
WRITE_ERRORS = (400, 401, 403, 404, 409, 422)


def upload_body(description: str, *, form_fields: dict[str, Schema] | None = None,
                file_field: str = "file") -> type[Operation]:
    """An Operation class whose request body is a file, sent either as the raw body or as the
    part ``file_field`` of a multipart form with the optional ``form_fields`` (service/api/uploads.py
    reads both).

    The raw body is declared ``application/octet-stream``: the server reads the bytes whatever
    the request's content type (anything but ``multipart/form-data``; ``text/plain`` as before),
    a gzip file included. ``text/plain`` is not declared: openapi-python-client cannot generate a
    call with such a body, and the upload is bytes, not text, when it is compressed."""
    properties = {file_field: Schema(type="string", format="binary"), **(form_fields or {})}  # type: ignore[arg-type]
    content = {
        "application/octet-stream": MediaType(schema=Schema(type="string", format="binary")),  # type: ignore[arg-type]
        "multipart/form-data": MediaType(schema=Schema(
            type="object", properties=properties, required=[file_field])),  # type: ignore[arg-type]
    }

    @dataclass
    class UploadOperation(Operation):
        def __post_init__(self) -> None:
            self.request_body = RequestBody(content=content, description=description, required=True)

    return UploadOperation


TAGS = [
    Tag(name="health", description="Liveness and readiness."),
    Tag(name="teams and tokens", description="Teams, API tokens and enrolment of teams in collections."),
    Tag(name="collections", description="Collections and their settings."),
    Tag(name="qrels", description="Relevance judgments: versions and diffs."),
    Tag(name="runs", description="Submitted runs."),
    Tag(name="boards", description="Leaderboards, significance, snapshots, meta-evaluation."),
    Tag(name="results", description="Per-run results: per-topic scores, comparisons, curves."),
    Tag(name="judging", description="Pools, assessors and judgments."),
    Tag(name="analyses", description="Analyses the workers compute on request."),
    Tag(name="jobs", description="Evaluation jobs and their progress."),
]


def openapi_config() -> OpenAPIConfig:
    swagger = SwaggerRenderPlugin(
        path="/", js_url=f"{ASSETS}/swagger-ui-bundle.js", css_url=f"{ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS}/favicon-32x32.png'>")
    bearer: Any = SecurityScheme(type="http", scheme="bearer", description="An API token: `cranfield token create` "
                                 "or POST /api/tokens.")
    return OpenAPIConfig(
        title="Cranfield", version=service.__version__, path="/schema", render_plugins=[swagger],
        description="Evaluation service for shared tasks: collections, qrels, runs, leaderboards with "
                    "significance. Errors are problem documents (application/problem+json) with a stable `code`.",
        tags=TAGS, components=Components(security_schemes={"bearer": bearer}), security=[{"bearer": []}],
        use_handler_docstrings=True)


def assets_router() -> Router:
    """Swagger UI's files, from the installed package (no CDN)."""
    from swagger_ui_bundle import swagger_ui_path

    return create_static_files_router(path=ASSETS, directories=[str(swagger_ui_path)], include_in_schema=False)
