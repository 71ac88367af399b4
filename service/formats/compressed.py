"""Gzipped input: every run, qrels, label or probability file may come gzipped.

NIST publishes runs as ``input.<tag>.gz``. A file is gzip when it starts with the gzip magic
bytes ``1f 8b`` (its name does not matter: ``run.txt`` may be gzipped, ``run.gz`` may not be);
no run or qrels file starts with them (``0x8b`` is no byte of UTF-8 text's first character).

Decompression is streamed and bounded, in two passes (issue 34, item 2). The first inflates
the file and counts its bytes, keeping none: zlib's output comes a megabyte at a time
(``max_length``) and is dropped, and as soon as the count would pass ``limit`` the file is
refused (:class:`TooLarge`, HTTP 413). A gzip bomb (1 MB that expands to 1 GiB) therefore
costs a megabyte of memory and the time to inflate ``limit`` bytes, never its expansion, and
a refusal leaves nothing behind. Only a file within the limit is inflated again, into one
buffer of exactly its size (no buffer grown by reallocation, whose copies and holes were
most of a gzipped upload's peak). The limit is the one on an uploaded file's size
(``CRANFIELD_MAX_UPLOAD``, 256 MiB by default), applied to the *uncompressed* size; files read
locally (the CLI) have the same bound (:func:`local_limit`).

The work is linear in the input whatever it holds: zlib is fed :data:`INPUT` bytes at a time,
so the rest of the input it hands back at each member's end (``unused_data``, a copy) is
small, and every member after the first counts at least :data:`MEMBER_COST` bytes against the limit, so a
file of millions of empty members (20 bytes each) is refused after ``limit / MEMBER_COST`` of
them instead of costing a decompressor each (8 MB of them took 10 s in the API).

Several gzip members one after another (``cat a.gz b.gz``, what ``gzip`` itself reads as one
file) are read as one file; zero bytes after the last member (tape padding) are ignored, as
``gzip -d`` does; anything else after a member is an error. A truncated or corrupt file (a
bad header, a bad block, a CRC or length that does not match) is an :class:`InvalidInput`
naming the file.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from service.errors import InvalidInput, TooLarge

GZIP_MAGIC = b"\x1f\x8b"
#: Output taken from zlib, and a local file read, this many bytes at a time.
PIECE = 1 << 20
#: Input fed to zlib this many bytes at a time: at a member's end zlib copies what is left of
#: it (``unused_data``), so a file of many small members costs this much per member, not a megabyte.
INPUT = 1 << 14
#: Each gzip member after the first counts at least this many bytes against the limit (BGZF's
#: members hold 64 KiB).
MEMBER_COST = 1 << 12
#: ``CRANFIELD_MAX_UPLOAD``'s default (service/config.py): the largest uncompressed file.
DEFAULT_LIMIT = 256 * 1024 * 1024


def is_gzip(data: bytes | bytearray | memoryview) -> bool:
    """Whether ``data`` starts with the gzip magic bytes."""
    return bytes(data[:2]) == GZIP_MAGIC


#: The bound on a local file's uncompressed size; the CLI sets it from CRANFIELD_MAX_UPLOAD
#: (``service.config.max_upload``) before it reads anything: the core reads no settings.
_local_limit = DEFAULT_LIMIT


def set_local_limit(limit: int) -> None:
    global _local_limit
    if limit < 1:
        raise ValueError("the limit must be at least one byte")
    _local_limit = limit


def local_limit() -> int:
    """The bound on a local file's uncompressed size (:func:`set_local_limit`)."""
    return _local_limit


def gunzip(data: bytes | bytearray, source: str, limit: int) -> bytes | bytearray:
    """``data`` itself, or, when it is gzip, its decompressed bytes (at most ``limit``)."""
    if not is_gzip(data):
        return data
    view = memoryview(data)
    try:
        return inflate(lambda: (view[i:i + PIECE] for i in range(0, len(view), PIECE)), source, limit)
    finally:
        view.release()


def read_file(path: str | os.PathLike[str], limit: int | None = None) -> bytes | bytearray:
    """A local file's bytes, decompressed (bounded by ``limit``, default :func:`local_limit`)
    when it is gzip: the compressed file is read a piece at a time, never whole."""
    try:
        with Path(path).open("rb") as f:
            head = f.read(2)
            if head != GZIP_MAGIC:
                return head + f.read()

            def pieces() -> Iterator[bytes]:
                f.seek(0)
                while piece := f.read(PIECE):
                    yield piece

            return inflate(pieces, str(path), local_limit() if limit is None else limit)
    except OSError as exc:
        raise InvalidInput(str(path), None, f"cannot read the file: {exc.strerror or exc}") from None


Pieces = Iterable[bytes | memoryview]


def inflate(pieces: Pieces | Callable[[], Pieces], source: str, limit: int, *, zlib_stream: bool = False
            ) -> bytearray:
    """The gzip stream given in ``pieces`` (a sequence, or a function giving the pieces anew at
    each call: they are read twice), decompressed: one or more members, refused past ``limit``
    output bytes (:class:`TooLarge`) or when corrupt or cut short (:class:`InvalidInput`).
    The first pass counts, holding a megabyte of output at most; the second fills one buffer
    of exactly the counted size. ``zlib_stream``: one zlib stream (``zlib.compress``'s) instead."""
    if not callable(pieces) and iter(pieces) is pieces:  # an iterator: the second pass would find it empty
        raise TypeError("inflate reads its pieces twice: give a sequence or a function, not an iterator")
    again: Callable[[], Pieces] = pieces if callable(pieces) else lambda: pieces  # type: ignore[assignment]
    size = sum(len(chunk) for chunk in _inflated(again(), source, limit, zlib_stream))
    out = bytearray(size)
    at = 0
    with memoryview(out) as view:
        for chunk in _inflated(again(), source, limit, zlib_stream):
            end = at + len(chunk)
            if end > size:
                raise InvalidInput(source, None, "the file changed while it was read")
            view[at:end] = chunk
            at = end
    if at != size:
        raise InvalidInput(source, None, "the file changed while it was read")
    return out


def _inflated(pieces: Pieces, source: str, limit: int, zlib_stream: bool = False) -> Iterator[bytes]:
    """The decompressed bytes of the gzip stream in ``pieces``, a megabyte at most at a time;
    :class:`TooLarge` as soon as they (with :data:`MEMBER_COST` for each member of less) would
    pass ``limit``."""
    d: zlib._Decompress | None = None  # the member being read; None between members
    members = 0
    total = 0  # bytes given out
    charged = 0  # the shortfall of members smaller than MEMBER_COST, counted against the limit too
    member_from = 0  # ``total`` when the current member began

    def too_large() -> TooLarge:
        if charged:
            return TooLarge(f"{source}: the gzipped file's {members:,} members count more than {limit:,} bytes (each "
                            f"at least {MEMBER_COST:,}), the limit on a file's uncompressed size "
                            "(CRANFIELD_MAX_UPLOAD); refused without reading further")
        return TooLarge(f"{source}: the gzipped file expands to more than {limit:,} bytes, the limit on "
                        f"a file's uncompressed size (CRANFIELD_MAX_UPLOAD); refused without expanding it "
                        f"further")

    try:
        for piece in pieces:
            with memoryview(piece) as whole:
                for lo in range(0, len(whole), INPUT):
                    data = bytes(whole[lo:lo + INPUT])
                    while data:
                        if d is None:  # between members: another member, or zero padding
                            data = data.lstrip(b"\x00")
                            if not data:
                                break
                            if members and (zlib_stream or not data.startswith(GZIP_MAGIC[: len(data)])):
                                raise InvalidInput(source, None, f"data after gzip member {members} is not another "
                                                                 "gzip member (a corrupt file?)")
                            d = zlib.decompressobj(zlib.MAX_WBITS if zlib_stream else 16 + zlib.MAX_WBITS)
                            members += 1
                            member_from = total
                        chunk = d.decompress(data, PIECE)
                        total += len(chunk)
                        if d.eof:
                            if members > 1:  # (a file of one small member is a small file)
                                charged += max(0, MEMBER_COST - (total - member_from))
                            data, d = d.unused_data, None
                        else:
                            data = d.unconsumed_tail
                        if total + charged > limit:
                            raise too_large()
                        if chunk:
                            yield chunk
        while d is not None and not d.eof:  # output zlib holds back (a match cut by the last piece)
            chunk = d.decompress(b"", PIECE)
            if not chunk:
                break
            total += len(chunk)
            if total + charged > limit:
                raise too_large()
            yield chunk
    except zlib.error as exc:
        raise InvalidInput(source, None, f"not readable as gzip ({exc}): the file is corrupt") from None
    if d is not None and not d.eof:
        raise InvalidInput(source, None, "the gzipped file is cut short (it ends inside gzip member "
                                         f"{members}): the file is truncated")
