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


def test_a_cancelled_maker_leaves_its_waiters_to_make_their_own() -> None:
    made = 0

    async def make() -> str:
        nonlocal made
        made += 1
        await asyncio.sleep(0.05)
        return "board"

    async def scene() -> list[str]:
        cache = BoardCache(seconds=60)
        first = asyncio.create_task(cache.get_or_make("k", make))
        await asyncio.sleep(0.01)
        waiters = [asyncio.create_task(cache.get_or_make("k", make)) for _ in range(3)]
        await asyncio.sleep(0.01)
        first.cancel()  # e.g. the maker's client went away
        with pytest.raises(asyncio.CancelledError):
            await first
        return list(await asyncio.gather(*waiters))

    assert asyncio.run(scene()) == ["board"] * 3 and made == 4


def test_a_value_not_to_keep_is_neither_cached_nor_shared() -> None:
    made: list[int] = []

    async def make() -> int:
        made.append(len(made))
        await asyncio.sleep(0.02)
        return len(made)

    async def scene() -> list[int]:
        cache = BoardCache(seconds=60)
        values = await asyncio.gather(*[cache.get_or_make("k", make, keep=lambda v: False) for _ in range(3)])
        assert cache.get("k") is None
        return list(values)

    values = asyncio.run(scene())
    assert len(made) == 3 and values[0] == 1  # the maker's own value; each waiter made its own


def test_a_clear_during_a_rendering_keeps_its_value_out() -> None:
    """A rendering that began before a write's clear() must not be stored after it."""
    async def scene() -> object:
        cache = BoardCache(seconds=60)

        async def make() -> str:
            await asyncio.sleep(0.02)
            return "board read before the write"

        task = asyncio.create_task(cache.get_or_make("k", make))
        await asyncio.sleep(0.005)
        cache.clear()  # the write commits meanwhile
        assert await task == "board read before the write"  # its own caller still gets it
        return cache.get("k")

    assert asyncio.run(scene()) is None
