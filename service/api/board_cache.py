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
from collections.abc import Callable, Hashable


class BoardCache:
    def __init__(self, seconds: float, max_entries: int = 1024) -> None:
        self.seconds = seconds
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[float, bytes, str]] = {}
        self._lock = threading.Lock()

    def get_or_render(self, key: Hashable, render: Callable[[], tuple[bytes, str]]) -> tuple[bytes, str]:
        """The cached (body, media type) of ``key``, or ``render()``'s, kept for ``seconds``."""
        now = time.monotonic()
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None and hit[0] > now:
            return hit[1], hit[2]
        body, media = render()
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (now + self.seconds, body, media)
        return body, media

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
