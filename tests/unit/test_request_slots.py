"""The admission gate's queue in-process (service/http/admission.py; issue 24, item 8): requests
beyond the limit wait for a slot instead of being refused at once, in arrival order while the
queue is a passing burst and newest first once it stands; a full queue refuses at once; a
waiter whose time is up or that is cancelled is uncounted, and nothing leaks."""

from __future__ import annotations

import asyncio

import pytest

from service.http import admission
from service.http.admission import ADMITTED, FULL, WAITED, AdmissionGate, RequestSlots


async def _queue_up(slots: RequestSlots, n: int, order: list[int]) -> list[asyncio.Task[int]]:
    """n waiters, each noting its number when admitted; returned once all of them wait."""
    async def one(i: int) -> int:
        verdict = await slots.enter()
        if verdict == ADMITTED:
            order.append(i)
        return verdict

    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    while slots.waiting < n:
        await asyncio.sleep(0)
    return tasks


@pytest.mark.parametrize(("standing", "expected"), [(3600.0, [0, 1, 2]), (-1.0, [2, 1, 0])])
def test_a_free_slot_goes_to_the_oldest_waiter_in_a_burst_and_to_the_newest_in_a_standing_queue(
        monkeypatch: pytest.MonkeyPatch, standing: float, expected: list[int]) -> None:
    monkeypatch.setattr(admission, "STANDING", standing)

    async def scene() -> list[int]:
        slots = RequestSlots(limit=1, wait=60, max_waiting=10)
        assert await slots.enter() == ADMITTED
        order: list[int] = []
        tasks = await _queue_up(slots, 3, order)
        for _ in range(3):
            slots.leave()  # the request in flight ends; its slot goes to one waiter
            await asyncio.sleep(0)
        assert [await t for t in tasks] == [ADMITTED] * 3
        slots.leave()
        assert (slots.in_flight, slots.waiting) == (0, 0)
        return order

    assert asyncio.run(scene()) == expected


def test_a_full_queue_refuses_at_once_and_a_waiter_whose_time_is_up_is_refused() -> None:
    async def scene() -> None:
        slots = RequestSlots(limit=2, wait=0.05, max_waiting=3)
        assert [await slots.enter(), await slots.enter()] == [ADMITTED, ADMITTED]
        waiters = await _queue_up(slots, 3, [])
        assert await slots.enter() == FULL  # three waiting already: no fourth
        assert [await t for t in waiters] == [WAITED] * 3  # nobody left: each one's time ran out
        assert (slots.in_flight, slots.waiting) == (2, 0)
        assert not slots._queue  # nothing kept of them
        slots.leave()
        assert await slots.enter() == ADMITTED  # a free slot is taken at once again
        assert await RequestSlots(limit=0, wait=60, max_waiting=10).enter() == FULL  # limit 0: never admitted

    asyncio.run(scene())


def test_a_cancelled_waiter_is_uncounted_and_an_admitted_one_gives_its_slot_back() -> None:
    async def scene() -> None:
        slots = RequestSlots(limit=1, wait=60, max_waiting=10)
        assert await slots.enter() == ADMITTED
        first, second = await _queue_up(slots, 2, [])
        first.cancel()  # e.g. the server shutting down while it waits
        with pytest.raises(asyncio.CancelledError):
            await first
        assert slots.waiting == 1
        slots.leave()  # goes to the second, which is cancelled before it runs
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        assert (slots.in_flight, slots.waiting) == (0, 0)
        assert await slots.enter() == ADMITTED

    asyncio.run(scene())


def test_the_gate_answers_a_prepared_503_with_retry_after_and_counts_no_probe() -> None:
    async def scene() -> tuple[list[dict], int]:
        slots = RequestSlots(limit=1, wait=60, max_waiting=0)
        calls: list[str] = []

        async def app(scope, receive, send):  # type: ignore[no-untyped-def]
            calls.append(scope["path"])
            if scope["path"] == "/api/slow":
                await asyncio.sleep(0.05)

        sent: list[dict] = []

        async def send(message):  # type: ignore[no-untyped-def]
            sent.append(message)

        gate = AdmissionGate(app, slots)
        slow = asyncio.create_task(gate({"type": "http", "path": "/api/slow"}, None, send))
        await asyncio.sleep(0)
        await gate({"type": "http", "path": "/api/other"}, None, send)  # the one slot is taken, no queue
        await gate({"type": "http", "path": "/health/live"}, None, send)  # probes pass regardless
        await slow
        assert calls == ["/api/slow", "/health/live"]
        return sent, slots.in_flight

    sent, in_flight = asyncio.run(scene())
    start, body = sent
    headers = dict(start["headers"])
    assert start["status"] == 503 and headers[b"retry-after"] == b"1"
    assert headers[b"content-type"] == b"application/problem+json"
    assert int(headers[b"content-length"]) == len(body["body"]) and b'"unavailable"' in body["body"]
    assert in_flight == 0
