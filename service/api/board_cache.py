"""Rendered leaderboards kept in memory for a short time (``CRANFIELD_BOARD_CACHE_SECONDS``).

On deadline day everyone refreshes the board: serving the rendered bytes for a second saves
the database the same reads hundreds of times. The key holds everything the access rules
look at (the caller's role, team, organised collections), so a cached body is only ever
served to a caller who would have been given the same one; this instance's own writes clear
the cache at once, other instances' show within the time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable


class BoardCache:
    def __init__(self, seconds: float, max_entries: int = 1024) -> None:
        self.seconds = seconds
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[float, bytes, str]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[bytes, str] | None:
        """The cached (body, media type) of ``key`` if it is younger than ``seconds``."""
        with self._lock:
            hit = self._entries.get(key)
        return (hit[1], hit[2]) if hit is not None and hit[0] > time.monotonic() else None

    def put(self, key: Hashable, body: bytes, media: str) -> None:
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (time.monotonic() + self.seconds, body, media)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
