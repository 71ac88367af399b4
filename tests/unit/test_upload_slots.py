"""Upload slots in-process (service/http/admission.py, :class:`UploadSlots`; issue 34, item 3):
at most ``limit`` uploads at once, at most ``limit - 1`` of one caller (its team, else its
token), so one team's flood always leaves a slot to another team; waiters are served in arrival
order among those under their share; a cancelled waiter is uncounted and nothing leaks.

(Before: one ``anyio.CapacityLimiter(2)`` shared first come, first served, and the decompression
outside it: while two blank-line gzips of one team were being read, another team's 0.2 MB run
waited 103.6 s.)"""

from __future__ import annotations

import asyncio

from service.evaluation.permissions.access import Principal
from service.http.admission import UploadSlots, caller_key

FLOOD, OTHER = ("team", 1), ("team", 2)


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_one_teams_flood_leaves_a_slot_to_another_team_and_waiters_go_in_order() -> None:
    async def scene() -> list[str]:
        slots = UploadSlots(2)
        order: list[str] = []
        holds = []

        async def upload(name: str, key: object) -> None:
            holds.append((name, await slots.acquire(key)))
            order.append(name)

        first = asyncio.create_task(upload("flood-1", FLOOD))
        await _settle()
        flood = [asyncio.create_task(upload(f"flood-{i}", FLOOD)) for i in (2, 3)]
        await _settle()
        assert order == ["flood-1"] and slots.in_use == 1  # the flood holds its share (1 of 2) and waits
        other = asyncio.create_task(upload("other", OTHER))
        await _settle()
        assert order == ["flood-1", "other"] and slots.in_use == 2  # not behind the flood's waiters
        late = asyncio.create_task(upload("other-2", OTHER))
        await _settle()
        assert order == ["flood-1", "other"]  # all slots taken: the other team waits too
        dict(holds)["flood-1"].release()  # the flood's slot: its oldest waiter, not the later one
        await _settle()
        assert order == ["flood-1", "other", "flood-2"]
        dict(holds)["other"].release()  # the other team's: its waiter (the flood is at its share)
        await _settle()
        assert order == ["flood-1", "other", "flood-2", "other-2"]
        dict(holds)["flood-2"].release()
        dict(holds)["flood-2"].release()  # twice: counted once
        await _settle()
        await asyncio.gather(first, *flood, other, late)
        for _, hold in holds:
            hold.release()
        assert slots.in_use == 0 and not slots.held
        return order

    assert asyncio.run(scene()) == ["flood-1", "other", "flood-2", "other-2", "flood-3"]


def test_one_caller_alone_takes_one_slot_of_two_and_a_cancelled_waiter_is_uncounted() -> None:
    async def scene() -> None:
        slots = UploadSlots(2)
        held = await slots.acquire(FLOOD)
        waiter = asyncio.create_task(slots.acquire(FLOOD))
        await _settle()
        assert not waiter.done() and slots.in_use == 1
        waiter.cancel()
        await _settle()
        held.release()
        assert slots.in_use == 0 and not slots.held
        again = await slots.acquire(FLOOD)  # nothing leaked: the slot is free at once
        again.release()
        wide = UploadSlots(4)  # four slots: one team takes three, one stays for the rest
        taken = [await wide.acquire(FLOOD) for _ in range(3)]
        waiting = asyncio.create_task(wide.acquire(FLOOD))
        await _settle()
        assert not waiting.done() and wide.in_use == 3
        (await wide.acquire(OTHER)).release()
        taken[0].release()
        (await waiting).release()
        for hold in taken[1:]:
            hold.release()
        assert wide.in_use == 0

    asyncio.run(scene())


def test_a_callers_share_is_its_team_else_its_token() -> None:
    assert caller_key(Principal(role="participant", token_id=5, team_id=3)) == \
        caller_key(Principal(role="participant", token_id=6, team_id=3)) == ("team", 3)
    assert caller_key(Principal(role="organiser", token_id=7)) == ("token", 7)
    assert caller_key(Principal(role="organiser", token_id=7)) != caller_key(Principal(role="admin", token_id=8))


def test_a_caller_waits_with_at_most_limit_uploads_and_the_next_is_refused_at_once() -> None:
    """Each waiter holds its body and a request slot: a team sending hundreds of uploads at once
    must not take every request slot of the process (a 503 with Retry-After instead)."""
    from service.errors import Unavailable

    async def scene() -> None:
        slots = UploadSlots(2)
        held = await slots.acquire(FLOOD)  # its share
        waiting = [asyncio.create_task(slots.acquire(FLOOD)) for _ in range(2)]
        await _settle()
        try:
            await asyncio.wait_for(slots.acquire(FLOOD), 1)  # (waits for ever without the cap)
        except Unavailable as exc:
            assert exc.retry_after == 5 and "waiting for a slot already" in str(exc)
        else:
            raise AssertionError("a third waiting upload of one team was queued")
        other = await asyncio.wait_for(slots.acquire(OTHER), 1)  # another team is served at once
        other.release()
        held.release()
        for task in waiting:  # served in turn, each once the one before is done
            (await asyncio.wait_for(task, 1)).release()
        assert slots.in_use == 0 and not slots.held

    asyncio.run(scene())
