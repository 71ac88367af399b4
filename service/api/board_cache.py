"""Rendered leaderboards kept in memory for a short time (``CRANFIELD_BOARD_CACHE_SECONDS``).

On deadline day everyone refreshes the board: serving the rendered bytes for a second saves
the database the same reads hundreds of times. A board is keyed by its *view*
(:func:`service.evaluation.permissions.policy.board_view`: every row or the own team's, all topics or the
visible ones), decided in memory from a short-lived, session-less snapshot of the
collection's access facts; callers with the same view share one rendering (the released board
of a public collection is one board for every reader). When many requests miss at once, one
renders and the others wait for it (single flight), so a cache expiry costs one rendering,
not one per waiting request. This process's writes clear everything at once; another
process's show within the time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from service.http.single_flight import SingleFlight

T = TypeVar("T")


class BoardCache:
    def __init__(self, seconds: float, max_entries: int = 1024) -> None:
        self.seconds = seconds
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[float, Any]] = {}
        self._lock = threading.Lock()
        self._flights = SingleFlight()
        # Bumped by every clear(): a value made from reads that began before a write's clear
        # is not stored after it (it could be stale for a whole period, in this process too).
        self.generation = 0

    def get(self, key: Hashable) -> Any | None:
        """The cached value of ``key`` if it is younger than ``seconds``."""
        with self._lock:
            hit = self._entries.get(key)
        return hit[1] if hit is not None and hit[0] > time.monotonic() else None

    def put(self, key: Hashable, value: Any, generation: int | None = None) -> None:
        """Keep ``value``, unless the cache was cleared since ``generation`` was read."""
        if self.seconds <= 0:
            return
        with self._lock:
            if generation is not None and generation != self.generation:
                return
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (time.monotonic() + self.seconds, value)

    async def get_or_make(self, key: Hashable, make: Callable[[], Awaitable[T]],
                          keep: Callable[[T], bool] | None = None) -> T:
        """The cached value of ``key``, or one ``make()`` shared by every caller that missed it
        meanwhile. ``make`` must give the same value to everyone asking for ``key``; a value
        for which ``keep`` says no is neither kept nor shared (each waiter makes its own)."""
        hit = self.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        generation = self.generation
        value, made = await self._flights.run(key, make, keep)
        if made and (keep is None or keep(value)):
            self.put(key, value, generation)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.generation += 1
