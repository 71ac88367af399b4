"""Process-level tuning for the command line, the workers and the HTTP server (never imported
by the core).

Evaluation allocates many short-lived arrays of a few megabytes. glibc serves
those with mmap and returns them to the kernel on free, so every new array
pays a page fault per 4 KiB page: on the virtual machines these tools run on
that was a third of the time to read a run. Raising glibc's mmap and trim
thresholds keeps freed memory in the heap for reuse. A no-op elsewhere.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import resource
import sys
from pathlib import Path

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
_done = False


def tune_allocator(threshold: int = 1 << 30) -> bool:
    """Keep freed blocks below ``threshold`` bytes in the heap; True if applied."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False  # not glibc (e.g. musl)
    _done = bool(mallopt(_M_MMAP_THRESHOLD, threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, threshold))
    return _done


def freeze_startup_heap() -> int:
    """Move every object alive now (modules, classes, functions, compiled templates, the ORM's
    mappers) to the collector's permanent generation, so that full collections no longer walk
    them; returns how many were frozen. Called once a server's HTTP application has started
    (``service/asgi.py``; not in test processes, which make an application per test): at 1,000
    runs a board render allocates enough to trigger a full collection every ~15 renders, and
    each walked the whole startup heap for 50-90 ms, the board's whole p99 (with it frozen,
    under 1 ms; benchmarks/bench_board_scale.py). Objects created later are collected as usual.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def one_heap() -> bool:
    """Every thread allocates from glibc's main arena (``M_ARENA_MAX`` 1); True if applied.

    For the HTTP server (``service.asgi``): uploads are parsed in worker threads, and the top
    of a thread's own arena is never trimmed (neither by ``malloc_trim`` nor, with
    :func:`tune_allocator`'s threshold, on free), so a thread that parsed a large upload kept
    its peak. In the main arena :func:`release_memory` gives every free page back. The
    threads' Python code allocates under the GIL anyway, so one arena costs them little
    contention. Call it before the server starts its threads."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    try:
        return bool(libc.mallopt(_M_ARENA_MAX, 1)) if libc is not None else False
    except AttributeError:
        return False


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def release_memory() -> bool:
    """Give the free pages of the heap back to the kernel (glibc's ``malloc_trim``); True if
    glibc did. Called after a large upload: with :func:`tune_allocator`'s thresholds (which
    every ``cranfield`` command, ``serve`` included, applies) the upload's arrays, once freed,
    would stay in the heap and the process would keep its peak size. A few milliseconds; a
    no-op without glibc."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    try:
        return bool(libc.malloc_trim(0)) if libc is not None else False
    except AttributeError:  # not glibc (e.g. musl)
        return False


#: Which memory a limit counts: the address space (RLIMIT_AS) or resident memory (a cgroup, the RAM).
ADDRESS_SPACE, RESIDENT = "address space", "resident"


def memory_limit() -> tuple[int, str] | None:
    """The tightest limit on this process's memory and what it counts: the soft RLIMIT_AS
    (address space), the cgroup's ``memory.max`` (v2; v1's ``memory.limit_in_bytes``) or the
    machine's RAM (resident). None where none can be read."""
    found: list[tuple[int, str]] = []
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        found.append((int(soft), ADDRESS_SPACE))
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # "max" (v2) or a huge number (v1): no limit
            found.append((int(text), RESIDENT))
        break
    try:
        found.append((os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), RESIDENT))
    except (ValueError, OSError, AttributeError):
        pass
    return min(found) if found else None


def memory_in_use(kind: str = RESIDENT) -> int | None:
    """This process's address space (``kind`` ADDRESS_SPACE) or resident memory, in bytes
    (None where /proc cannot tell)."""
    try:
        size, resident = (int(v) for v in Path("/proc/self/statm").read_text().split()[:2])
    except (OSError, ValueError):
        return None
    return (size if kind == ADDRESS_SPACE else resident) * os.sysconf("SC_PAGE_SIZE")
