"""One computation at a time per key, its outcome shared by every request that asks for the
same key meanwhile (the board cache's renderings, the caller cache's token look-ups): when a
crowd misses one entry at once, one rendering or one query, not one per request in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

#: What a maker gives its waiters when its value is not theirs to share (it was cancelled, or
#: its value must not be shared): each waiter then makes its own.
_MAKE_YOUR_OWN = object()


class SingleFlight:
    """The ``make()`` running for each key, if any. The event loop is one thread: no lock."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[Any]] = {}

    async def run(self, key: Hashable, make: Callable[[], Awaitable[T]],
                  share: Callable[[T], bool] | None = None) -> tuple[T, bool]:
        """``make()``'s value and True if this call made it; or, if a ``make()`` for ``key`` is
        running, its value and False once it is done. Its failure is every waiter's; a value
        for which ``share`` says no, or a maker that was cancelled, leaves each waiter to make
        its own (the waiters were not cancelled: they go on)."""
        running = self._running.get(key)
        if running is not None:
            value = await asyncio.shield(running)
            return (await make() if value is _MAKE_YOUR_OWN else value), False
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            value = await make()
        except asyncio.CancelledError:
            future.set_result(_MAKE_YOUR_OWN)
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waited
            raise
        finally:
            self._running.pop(key, None)
        future.set_result(value if share is None or share(value) else _MAKE_YOUR_OWN)
        return value, True
