"""Receiving an uploaded file: streamed, refused (413) as soon as it passes the limit."""

from __future__ import annotations

from typing import Any

from litestar import Request

from service.errors import BadRequest, InvalidRequest, TooLarge


async def read_body(request: Request[Any, Any, Any], limit: int) -> bytes:
    """The raw body, or the file of a multipart form's ``file`` field."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form()
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise BadRequest("send the file as the form field 'file'")
        body: bytes = await upload.read()
        if len(body) > limit:
            raise TooLarge(f"the upload is larger than {limit} bytes")
        return body
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the upload is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_run_form(request: Request[Any, Any, Any], limit: int, fields: tuple[str, ...]
                        ) -> tuple[bytes, dict[str, str], bytes | None, str]:
    """A run submission: the run (the raw body, or the multipart field ``file``), the text
    fields named in ``fields`` of a multipart form, and its ``ir_metadata`` (a file or a text
    field; None when absent) with the file's name. Any other form field is refused (422
    naming it), as unknown fields of JSON bodies are."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return await read_body(request, limit), {}, None, "ir_metadata"
    form = await request.form()
    texts: dict[str, str] = {}
    metadata: bytes | None = None
    name = "ir_metadata"
    for key, value in form.multi_items():
        if key == "file":
            continue
        if key == "ir_metadata":
            if isinstance(value, str):
                metadata = value.encode()
            else:
                metadata, name = await value.read(), value.filename or name
        elif key in fields and isinstance(value, str):
            if key in texts:
                raise InvalidRequest(f"{key}: given twice")
            texts[key] = value
        else:
            raise InvalidRequest(f"{key}: not a field of a run submission (file, ir_metadata, {', '.join(fields)})")
    return await read_body(request, limit), texts, metadata, name


async def read_qrels_form(request: Request[Any, Any, Any], limit: int
                          ) -> tuple[bytes, bytes | None, str | None, str | None]:
    """A qrels upload: the qrels (the raw body, or the multipart part ``qrels``, also read as
    ``file``) and, in a multipart form, an intent probability file (part ``probabilities``)
    and a ``format`` text field; returns (qrels, probabilities or None, format or None, the
    probability file's name). The parts together are refused (413) past ``limit``; any other
    field is refused (422 naming it)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return await read_body(request, limit), None, None, None
    form = await request.form()
    qrels: bytes | None = None
    probabilities: bytes | None = None
    fmt: str | None = None
    name: str | None = None
    size = 0
    for key, value in form.multi_items():
        if key in ("qrels", "file", "probabilities"):
            if isinstance(value, str):
                raise BadRequest(f"send {key} as a file part of the form")
            data: bytes = await value.read()
            size += len(data)
            if size > limit:
                raise TooLarge(f"the upload is larger than {limit} bytes")
            if key == "probabilities":
                if probabilities is not None:
                    raise InvalidRequest("probabilities: given twice")
                probabilities, name = data, value.filename or None
            else:
                if qrels is not None:
                    raise InvalidRequest(f"{key}: one qrels file per upload (as the part qrels)")
                qrels = data
        elif key == "format" and isinstance(value, str):
            if fmt is not None:
                raise InvalidRequest("format: given twice")
            fmt = value
        else:
            raise InvalidRequest(f"{key}: not a field of a qrels upload (qrels, probabilities, format)")
    if qrels is None:
        raise BadRequest("send the qrels file as the form field 'qrels'")
    return qrels, probabilities, fmt, name
