"""Gzipped input: every run, qrels, label or probability file may come gzipped.

NIST publishes runs as ``input.<tag>.gz``. A file is gzip when it starts with the gzip magic
bytes ``1f 8b`` (its name does not matter: ``run.txt`` may be gzipped, ``run.gz`` may not be);
no run or qrels file starts with them (``0x8b`` is no byte of UTF-8 text's first character).

Decompression is streamed and bounded: the output grows a megabyte at a time (zlib's
``max_length``), the input is fed a megabyte at a time, and as soon as the output would pass
``limit`` the file is refused (:class:`TooLarge`, HTTP 413), so a gzip bomb (10 MB that
expand to 10 GB) costs at most ``limit`` bytes of memory and the time to inflate ``limit``
bytes, never its full expansion. The limit is the one on an uploaded file's size
(``CRANFIELD_MAX_UPLOAD``, 256 MiB by default), applied to the *uncompressed* size; files read
locally (the CLI) have the same bound (:func:`local_limit`).

Several gzip members one after another (``cat a.gz b.gz``, what ``gzip`` itself reads as one
file) are read as one file; zero bytes after the last member (tape padding) are ignored, as
``gzip -d`` does; anything else after a member is an error. A truncated or corrupt file (a
bad header, a bad block, a CRC or length that does not match) is an :class:`InvalidInput`
naming the file.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from service.errors import InvalidInput, TooLarge

GZIP_MAGIC = b"\x1f\x8b"
#: Input fed to zlib, and output taken from it, this many bytes at a time.
PIECE = 1 << 20
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
        return inflate((view[i:i + PIECE] for i in range(0, len(view), PIECE)), source, limit)
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
            pieces = _file_pieces(f, head)
            return inflate(pieces, str(path), local_limit() if limit is None else limit)
    except OSError as exc:
        raise InvalidInput(str(path), None, f"cannot read the file: {exc.strerror or exc}") from None


def _file_pieces(f, head: bytes) -> Iterator[bytes]:  # type: ignore[no-untyped-def]
    yield head
    while piece := f.read(PIECE):
        yield piece


def inflate(pieces: Iterable[bytes | memoryview], source: str, limit: int) -> bytearray:
    """The gzip stream given in ``pieces``, decompressed: one or more members, refused past
    ``limit`` output bytes (:class:`TooLarge`) or when corrupt or cut short (:class:`InvalidInput`)."""
    out = bytearray()
    d: zlib._Decompress | None = None  # the member being read; None between members
    members = 0

    def take(chunk: bytes) -> None:
        if len(out) + len(chunk) > limit:
            raise TooLarge(f"{source}: the gzipped file expands to more than {limit:,} bytes, the limit on "
                           f"a file's uncompressed size (CRANFIELD_MAX_UPLOAD); refused without expanding it "
                           f"further")
        out.extend(chunk)

    try:
        for piece in pieces:
            data = bytes(piece)
            while data:
                if d is None:  # between members: another member, or zero padding
                    data = data.lstrip(b"\x00")
                    if not data:
                        break
                    if members and not data.startswith(GZIP_MAGIC[: len(data)]):
                        raise InvalidInput(source, None, f"data after gzip member {members} is not another gzip "
                                                         "member (a corrupt file?)")
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    members += 1
                take(d.decompress(data, PIECE))
                if d.eof:
                    data, d = d.unused_data, None
                else:
                    data = d.unconsumed_tail
        while d is not None and not d.eof:  # output zlib holds back (a match cut by the last piece)
            chunk = d.decompress(b"", PIECE)
            if not chunk:
                break
            take(chunk)
    except zlib.error as exc:
        raise InvalidInput(source, None, f"not readable as gzip ({exc}): the file is corrupt") from None
    if d is not None and not d.eof:
        raise InvalidInput(source, None, "the gzipped file is cut short (it ends inside gzip member "
                                         f"{members}): the file is truncated")
    return out
