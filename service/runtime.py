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
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
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
