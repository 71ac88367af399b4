"""The board cache's single flight: a crowd missing one key at once costs one rendering."""

from __future__ import annotations

import asyncio

import pytest

from service.api.board_cache import BoardCache


def test_a_crowd_missing_one_key_waits_for_one_rendering() -> None:
    calls: list[str] = []

    async def render(key: str) -> str:
        calls.append(key)
        await asyncio.sleep(0.05)
        return f"board of {key}"

    async def crowd() -> list[str]:
        cache = BoardCache(seconds=60)
        asks = [cache.get_or_make(k, lambda k=k: render(k)) for k in ["a"] * 50 + ["b"] * 50]
        return await asyncio.gather(*asks)

    got = asyncio.run(crowd())
    assert got == ["board of a"] * 50 + ["board of b"] * 50
    assert sorted(calls) == ["a", "b"]  # one rendering per key, not one per request


def test_a_failed_rendering_fails_its_waiters_and_is_not_kept() -> None:
    attempts = 0

    async def failing() -> str:
        nonlocal attempts
        attempts += 1
        await asyncio.sleep(0.01)
        raise LookupError("no such metric")

    async def crowd() -> list[object]:
        cache = BoardCache(seconds=60)
        first = await asyncio.gather(*[cache.get_or_make("k", failing) for _ in range(5)], return_exceptions=True)
        with pytest.raises(LookupError):
            await cache.get_or_make("k", failing)  # tried again, not served from a cache of errors
        return first

    results = asyncio.run(crowd())
    assert all(isinstance(r, LookupError) for r in results) and attempts == 2


def test_nothing_is_kept_when_the_cache_is_off() -> None:
    made = 0

    async def make() -> int:
        nonlocal made
        made += 1
        return made

    async def twice() -> tuple[int, int]:
        cache = BoardCache(seconds=0)
        return await cache.get_or_make("k", make), await cache.get_or_make("k", make)

    assert asyncio.run(twice()) == (1, 2)
