"""The API's caller cache (service/http/unit_of_work.py; issue 24, item 8): when a token's entry
expires under a crowd of its requests, one lookup serves them all; a request without
credentials is anonymous without any lookup."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from service.errors import Unauthenticated
from service.evaluation.permissions.access import Principal
from service.http.unit_of_work import ANONYMOUS, PrincipalCache, caller_from_header

ALPHA = Principal(role="participant", token_id=7, team_id=3, name="alpha")


def _looking_up(calls: list[str], outcome: Principal | Exception, key: str = "alpha"):  # type: ignore[no-untyped-def]
    async def lookup() -> Principal:
        calls.append(key)
        await asyncio.sleep(0.01)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return lookup


def test_a_crowd_of_one_token_makes_one_lookup_and_the_next_request_none() -> None:
    calls: list[str] = []

    async def scene() -> tuple[list[Principal], Principal]:
        cache = PrincipalCache(seconds=60)
        crowd = await asyncio.gather(*(cache.resolve(b"alpha", _looking_up(calls, ALPHA)) for _ in range(50)))
        later = await cache.resolve(b"alpha", _looking_up(calls, ALPHA))
        return crowd, later

    crowd, later = asyncio.run(scene())
    assert crowd == [ALPHA] * 50 and later == ALPHA
    assert calls == ["alpha"]


def test_a_refused_token_is_every_waiters_refusal_and_is_not_kept() -> None:
    calls: list[str] = []

    async def scene() -> list[object]:
        cache = PrincipalCache(seconds=60)
        refused = Unauthenticated("unknown or revoked token")
        crowd = await asyncio.gather(*(cache.resolve(b"bad", _looking_up(calls, refused)) for _ in range(20)),
                                     return_exceptions=True)
        again = await asyncio.gather(cache.resolve(b"bad", _looking_up(calls, refused)), return_exceptions=True)
        return crowd + again

    answers = asyncio.run(scene())
    assert all(isinstance(a, Unauthenticated) for a in answers)
    assert len(calls) == 2  # one for the crowd, one for the request after it


@pytest.mark.parametrize(("seconds", "clear_between", "lookups"), [(0, False, 10), (60, True, 2)])
def test_without_a_cache_or_after_a_write_the_token_is_looked_up_again(
        seconds: float, clear_between: bool, lookups: int) -> None:
    """Caching off (CRANFIELD_CALLER_CACHE_SECONDS=0): each request checks its own token. A
    write's clear() during a lookup: the requests that ask after it do not share the lookup
    that began before it (a token revoked meanwhile would pass)."""
    calls: list[str] = []

    async def scene() -> None:
        cache = PrincipalCache(seconds=seconds)
        first = [asyncio.create_task(cache.resolve(b"alpha", _looking_up(calls, ALPHA))) for _ in range(5)]
        await asyncio.sleep(0)
        if clear_between:
            cache.clear()
        second = [asyncio.create_task(cache.resolve(b"alpha", _looking_up(calls, ALPHA))) for _ in range(5)]
        assert await asyncio.gather(*first, *second) == [ALPHA] * 10

    asyncio.run(scene())
    assert len(calls) == lookups


def test_a_request_without_credentials_is_anonymous_without_a_lookup() -> None:
    def no_sessions():  # type: ignore[no-untyped-def]
        raise AssertionError("no session for an anonymous request")

    provide = caller_from_header(no_sessions, PrincipalCache(seconds=60))  # type: ignore[arg-type]
    for headers in ({}, {"authorization": ""}):
        assert asyncio.run(provide(SimpleNamespace(headers=headers))) is ANONYMOUS
    assert ANONYMOUS == Principal() and ANONYMOUS.role is None
