"""Receiving an uploaded file: streamed, refused (413) as soon as it passes the limit.

A raw body of a known length (``Content-Length``) is received into one buffer of that size,
the only copy of the file the process makes (the readers read it in place); memory that runs
short on the way is a 503 (or a 413, see :func:`service.evaluation.common.memory.refusal`), never a 500.

A gzipped file (magic bytes ``1f 8b``, whatever its name) is decompressed here, streamed and
bounded: its *uncompressed* size has the same limit as a body (413 past it, before it is
expanded further: a refused gzip bomb costs a megabyte of memory and the time to inflate the
limit), a corrupt or truncated one is a 422 naming the file (service/formats/compressed.py).
Every use case then reads plain text.

Once its body is received, an upload waits for one of the process's upload slots
(:func:`service.http.admission.upload_slot`), fairly shared between teams, and holds it until
the request ends: decompression, parse and store of a few uploads at once, never of a crowd.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import MutableMapping
from typing import Any

import anyio.to_thread
from litestar import Request

from service.errors import BadRequest, InvalidRequest, TooLarge
from service.evaluation.common.memory import RELEASE_FROM, refusal
from service.formats.compressed import gunzip, is_gzip
from service.http.admission import upload_slot
from service.runtime import release_memory

#: The request state's key for the size of the body an upload received (``release_after_upload``).
UPLOAD_BYTES = "upload_bytes"


async def release_after_upload(scope: MutableMapping[str, Any]) -> None:
    """Once a large upload's request is done (its answer sent, its slots given back), give the
    freed memory back to the kernel (:class:`service.http.admission.AdmissionGate`'s ``after``).
    A refused upload's buffers are held by its exception's traceback, a reference cycle (the
    exception, its frames, their locals) that only the cyclic collector frees, and that is
    unreachable only once the application has returned: without a collection here a 255 MiB
    upload refused with a 422 kept its 255 MB until the next full collection, which the startup
    heap's freeze makes rare (issue 34, item 2)."""
    if (scope.get("state") or {}).get(UPLOAD_BYTES, 0) >= RELEASE_FROM:
        await anyio.to_thread.run_sync(release_memory)  # an accepted upload's, at once
        # A refused one's a moment later: until the event loop has run the callbacks that delivered the worker
        # thread's exception (an asyncio handle holds its future), the cycle is still reachable.
        # One release at a time serves every upload that ended before it starts.
        loop = asyncio.get_running_loop()
        if loop not in _pending:
            _pending.add(loop)
            loop.call_later(_RELEASE_DELAY, _start_release)


_RELEASE_DELAY = 0.2  # seconds
_pending: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()  # loops with a release to come
_releasing: set[asyncio.Task[None]] = set()  # (a task the loop alone refers to may be collected unfinished)


def _start_release() -> None:
    _pending.discard(asyncio.get_running_loop())  # an upload ending from now on asks for the next one
    task = asyncio.ensure_future(anyio.to_thread.run_sync(_collect_and_release))
    _releasing.add(task)
    task.add_done_callback(_releasing.discard)


def _collect_and_release() -> None:
    """In a worker thread: the event loop goes on serving while the collector runs."""
    gc.collect()
    release_memory()


async def read_body(request: Request[Any, Any, Any], limit: int) -> bytes:
    """The raw body, or the file of a multipart form's ``file`` field, decompressed when it is
    gzip (its uncompressed size within ``limit``)."""
    body, name = await _read_body(request, limit)
    return await decompressed(request, body, name, limit)


async def decompressed(request: Request[Any, Any, Any], data: bytes, name: str, limit: int) -> bytes:
    """``data``, or its decompressed bytes when it is gzip (at most ``limit``, else 413; a corrupt
    file is a 422 naming ``name``), inflated in a worker thread. First the request waits for
    its upload slot (service/http/admission.py, :class:`UploadSlots`), held until it ends: a
    few uploads at once are decompressed, parsed and stored, fairly shared between callers."""
    await upload_slot(request)
    request.state[UPLOAD_BYTES] = max(request.state.get(UPLOAD_BYTES, 0), len(data))
    if not is_gzip(data):
        return data
    size = len(data)
    # a gzip is released after as a large upload is, refused or not: its pieces, the refusal's
    # traceback and the compressed body go back to the kernel (release_after_upload)
    request.state[UPLOAD_BYTES] = max(request.state.get(UPLOAD_BYTES, 0), RELEASE_FROM)
    try:
        out = await anyio.to_thread.run_sync(gunzip, data, name, limit)
    except MemoryError:
        out = None
    if out is None:  # the exception (and the part of the file it holds) has gone
        raise refusal(name, size)
    del data
    request.state[UPLOAD_BYTES] = max(request.state.get(UPLOAD_BYTES, 0), len(out))
    return out  # type: ignore[return-value]  # a bytearray: every reader and digest takes it


async def _read_body(request: Request[Any, Any, Any], limit: int) -> tuple[bytes, str]:
    """The raw body or the multipart ``file`` part as received, and a name for it."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form()
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise BadRequest("send the file as the form field 'file'")
        try:
            body: bytes | None = await upload.read()
        except MemoryError:
            body = None
        if body is None:  # ran short of memory reading the spooled part back
            raise refusal(upload.filename or "the upload", upload.file.seek(0, 2))
        request.state[UPLOAD_BYTES] = len(body)
        if len(body) > limit:
            raise TooLarge(f"the upload is larger than {limit} bytes")
        return body, upload.filename or "the upload"
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and 0 < int(declared) <= limit:
        request.state[UPLOAD_BYTES] = int(declared)
        try:
            return await _read_into(request, int(declared), limit), "the upload"
        except MemoryError:
            pass  # the exception (and what it holds) goes first
        raise refusal("the upload", int(declared))
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the upload is larger than {limit} bytes")
        chunks.append(chunk)
    request.state[UPLOAD_BYTES] = size
    try:
        return b"".join(chunks), "the upload"
    except MemoryError:
        chunks.clear()
    raise refusal("the upload", size)


async def _read_into(request: Request[Any, Any, Any], size: int, limit: int) -> bytes:
    """A body announced as ``size`` bytes, received into one ``bytearray`` of that size (no
    list of chunks joined into a second copy). A body that turns out longer (a middleware may
    have decoded it) grows the buffer; a shorter one is cut to what came."""
    body = bytearray(size)
    at = 0
    async for chunk in request.stream():
        end = at + len(chunk)
        if end > limit:
            raise TooLarge(f"the upload is larger than {limit} bytes")
        if end <= len(body):
            with memoryview(body) as view:  # (a bytearray's slice assignment copies bytes first)
                view[at:end] = chunk
        else:
            body[at:] = bytearray(chunk)  # longer than announced: the buffer grows
        at = end
    if at < len(body):
        del body[at:]
    return body  # type: ignore[return-value]  # bytes-like: every reader and digest takes it


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
            data: bytes = await decompressed(request, await value.read(), value.filename or key, limit)
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
