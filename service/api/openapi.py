"""The OpenAPI document and its docs page, served with no internet access.

Every operation declares its error responses with :func:`errors` (the problem document of
:mod:`service.errors`), upload operations describe their raw bodies with :func:`upload_body`,
and the Swagger UI page at ``/schema`` loads its script and style sheet from this app (the
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
    operation may also answer 500: a bug, with a request id)."""
    return {status: ResponseSpec(data_container=ProblemDocument, media_type="application/problem+json",
                                 description=f"{_CODES[status].title} (code {_CODES[status].code})"
                                 if status in _CODES else "Error", generate_examples=False)
            for status in (*statuses, 500)}


# The errors every authenticated operation on a resource may give.
READ_ERRORS = (401, 403, 404)
WRITE_ERRORS = (400, 401, 403, 404, 409, 422)


def upload_body(description: str, *, multipart: bool = False,
                form_fields: dict[str, Schema] | None = None, file_field: str = "file") -> type[Operation]:
    """An Operation class whose request body is a raw text file (and, if ``multipart``, also a
    multipart form with the file in field ``file_field`` and the optional ``form_fields``)."""
    content = {"text/plain": MediaType(schema=Schema(type="string", format="binary"))}  # type: ignore[arg-type]
    if multipart:
        properties = {file_field: Schema(type="string", format="binary"), **(form_fields or {})}  # type: ignore[arg-type]
        content["multipart/form-data"] = MediaType(schema=Schema(
            type="object", properties=properties, required=[file_field]))  # type: ignore[arg-type]

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
