"""Receiving an uploaded file: streamed, refused (413) as soon as it passes the limit."""

from __future__ import annotations

from typing import Any

from litestar import Request

from service.errors import BadRequest, TooLarge


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
