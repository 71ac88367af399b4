"""An upload's memory: given back when the upload is done, and a clear refusal when it runs short.

The readers validate a file in memory bounded by a small multiple of its size
(``benchmarks/upload_memory.py`` measures it; docs/formats.md, "Memory"). Every upload use case
(a run, qrels and their preview, labels, pool judgments, a judge's judgments) is wrapped by
:func:`guarded`:

* once it returns, an upload of at least ``RELEASE_FROM`` bytes gives the heap's free pages
  back to the kernel (:func:`service.runtime.release_memory`), so the API process returns to
  its size instead of keeping its peak;
* a ``MemoryError`` anywhere in it (numpy's included) is answered as :func:`refusal` says,
  naming the upload: a 413 when the file needs more memory than the process can ever give an
  upload, else a 503 with Retry-After (other uploads were using the memory). Never a 500.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from service import runtime
from service.errors import CranfieldError, TooLarge, Unavailable

#: Validating an upload takes up to about this many times the file's size (the file included).
UPLOAD_MEMORY_FACTOR = 3
#: Uploads at least this large give their memory back to the kernel when they are done.
RELEASE_FROM = 8 << 20
#: Seconds a client waits before sending an upload again that ran short of memory.
RETRY_AFTER = 30

#: The process's smallest use of memory seen at the start of an upload (less the upload's
#: body), per kind of limit: what an upload can count on when nothing else is running.
_idle: dict[str, int] = {}

F = TypeVar("F", bound=Callable[..., Any])


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def _note_start(size: int) -> None:
    for kind in (runtime.ADDRESS_SPACE, runtime.RESIDENT):  # whichever limit applies when one runs short
        used = runtime.memory_in_use(kind)
        if used is not None:
            _idle[kind] = min(_idle.get(kind, used), max(used - size, 0))


def refusal(source: str, size: int) -> CranfieldError:
    """What an upload of ``size`` bytes that ran short of memory is answered: a 413
    (:class:`TooLarge`) when even an idle process could not give it the memory it needs
    (``UPLOAD_MEMORY_FACTOR`` times its size) under its limit (RLIMIT_AS, the cgroup's, the
    RAM), else a 503 (:class:`Unavailable`) to be retried once other uploads are done."""
    need = UPLOAD_MEMORY_FACTOR * size
    limit = runtime.memory_limit()
    if limit is not None:
        ceiling, kind = limit
        now = runtime.memory_in_use(kind)
        idle = min(_idle.get(kind, now or 0), max((now or 0) - size, 0))
        room = ceiling - idle
        if need > room:
            return TooLarge(f"{source}: validating a file of {_mb(size)} takes about {_mb(need)} of memory, more "
                            f"than this server can give one upload ({_mb(max(room, 0))}); send a smaller file")
    return Unavailable(f"{source}: the server ran short of memory for this {_mb(size)} file (other requests may "
                       f"hold it); send it again in a minute", retry_after=RETRY_AFTER)


def guarded(fn: F | None = None, *, always_release: bool = False) -> Any:
    """Wrap an upload use case whose parameters include ``body`` (the file) and ``source``
    (its name in messages): memory given back after a large upload, a ``MemoryError`` turned
    into :func:`refusal`'s answer (raised once the failed attempt's arrays are gone).
    ``always_release``: after any upload, however small (a qrels file is compared with the
    stored version, read whole: a one-line preview against a 89 MB version left 107 MB in the
    API; issue 34, item 5)."""
    if fn is None:
        return functools.partial(guarded, always_release=always_release)
    signature = inspect.signature(fn)
    default_source = signature.parameters["source"].default

    @functools.wraps(fn)
    def upload(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments
        size = len(given["body"])
        source = given.get("source", default_source)
        _note_start(size)
        short = False
        try:
            return fn(*args, **kwargs)
        except MemoryError:
            short = True  # leaving this block drops the traceback, and with it the arrays
        finally:
            if short or always_release or size >= RELEASE_FROM:
                runtime.release_memory()
        raise refusal(source, size)

    return upload  # type: ignore[return-value]
