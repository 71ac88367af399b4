"""The API process's admission control: slots are given back on every path, and the limits
answer 503 with Retry-After (issue 13, item 1), in-process; a burst far above the limits against
a real server (issue 24, item 8)."""

from __future__ import annotations

from collections import Counter

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.http.admission import ServerLimits
from service.sample import CollectionSpec, generate
from tests.integration.conftest import Backend, World, auth
from tests.integration.test_deadline import make_collection, serving


def test_refused_requests_give_their_database_slot_back(world: World, backend: Backend) -> None:
    """A bad token or a refused collection fails a dependency resolved after the unit of work;
    Litestar does not close the unit of work then, so the request gives the slot back itself.
    With two slots, forty refusals in a row would otherwise leave none."""
    app = create_app(backend.database_url, lambda followups: None,
                     limits=ServerLimits(threads=2, db_slots=2, queue_seconds=0.5, caller_cache_seconds=0))
    slots = app.state["db_slots"]
    with TestClient(app=app) as c:
        for _ in range(20):
            assert c.get(f"/api/collections/{world.cid}", headers=auth("not-a-token")).status_code == 401
            assert c.get(f"/api/collections/{world.other_cid}/runs",
                         headers=auth(world.tokens["alpha"])).status_code in (403, 404)
            assert c.post(f"/api/collections/{world.cid}/runs", content=b"garbage",
                          headers=auth(world.tokens["alpha"])).status_code == 422
        assert slots.in_use == 0
        r = c.get(f"/api/collections/{world.cid}/leaderboard", headers=auth(world.tokens["organiser"]))
        assert r.status_code == 200 and len(r.json()["rows"]) == 3


def test_beyond_the_in_flight_limit_the_answer_is_an_immediate_503(world: World, backend: Backend) -> None:
    app = create_app(backend.database_url, lambda followups: None, limits=ServerLimits(max_in_flight=0))
    with TestClient(app=app) as c:
        r = c.get(f"/api/collections/{world.cid}/leaderboard", headers=auth(world.tokens["organiser"]))
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["code"] == "unavailable"
        assert c.get("/health/live").status_code == 200  # the probes are never refused


def test_an_unreachable_database_is_a_503_not_a_500() -> None:
    """PostgreSQL down (here: nothing listens on the port): every request that needs it gets a
    503 with Retry-After, quickly, and the process stays alive to answer once it is back."""
    app = create_app("postgresql+psycopg://postgres@127.0.0.1:1/nothing?connect_timeout=2",
                     lambda followups: None)
    with TestClient(app=app) as c:
        for headers in ({}, auth("some-token")):
            r = c.get("/api/collections", headers=headers)
            assert r.status_code == 503, r.text
            assert int(r.headers["retry-after"]) >= 1 and r.json()["code"] == "unavailable"
        assert c.get("/health/live").status_code == 200
        assert c.get("/health/ready").status_code == 503


def test_the_in_flight_limit_counts_every_route_together(world: World, backend: Backend) -> None:
    """One counter for the process: a request in flight on one route counts against another
    route's (the gate stands before routing). The other request waits for the one slot, which
    the upload holds throughout, and is refused when its wait is up."""
    import asyncio

    import httpx

    app = create_app(backend.database_url, lambda followups: None,
                     limits=ServerLimits(max_in_flight=1, queue_seconds=0.3))

    async def scene() -> tuple[int, int, int]:
        release = asyncio.Event()

        async def slow_body():  # type: ignore[no-untyped-def]
            yield b"0001 Q0 d1 1 1.0 slow\n"
            await release.wait()

        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            upload = asyncio.create_task(c.post(f"/api/collections/{world.cid}/runs", content=slow_body(),
                                                headers=auth(world.tokens["alpha"])))
            await asyncio.sleep(0.3)  # the upload is in flight, its body still arriving
            other = await c.get("/api/collections", headers=auth(world.tokens["organiser"]))
            release.set()
            done = await upload
            after = await c.get("/api/collections", headers=auth(world.tokens["organiser"]))
            return other.status_code, done.status_code, after.status_code

    other, upload, after = asyncio.run(scene())
    assert other == 503 and after == 200 and upload in (201, 422)


@pytest.mark.exclusive  # 150 clients against one server: alone, not beside another test's load (xdist)
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)  # the production shape; the gate knows no database
def test_a_burst_far_above_the_limits_is_served_throughout_and_refused_only_with_503s(backend: Backend) -> None:
    """A real `cranfield serve` with 4 request slots and 8 places to wait; 150 clients that
    ignore Retry-After, each asking again the moment it has an answer. Every answer is a 200 or
    a 503 problem with Retry-After (no other status, no hang: a request unanswered within 30 s
    fails the test), and requests keep being served during the burst: one more client, started
    once every burst client has had an answer, gets five 200s while all of them are still
    asking, and the burst clients get 200s of their own."""
    import asyncio
    import ssl

    import httpx

    clients, most = 150, 300  # each burst client stops once the probe is done, or after `most` requests
    small = {"CRANFIELD_API_MAX_IN_FLIGHT": "4", "CRANFIELD_API_MAX_WAITING": "8", "CRANFIELD_API_QUEUE_SECONDS": "0.5"}
    qrels, _ = generate(CollectionSpec(topics=3, runs=1, depth=5, docs_per_topic=10, judged_per_topic=5, seed=4))
    with serving(backend, workers=False, **small) as srv, srv.client() as c:
        cid, _ = make_collection(c, srv.admin, ["alpha"], qrels)
        assert c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True, "visibility": "public"},
                       headers={"Authorization": f"Bearer {srv.admin}"}).status_code == 200
        path = f"/api/collections/{cid}/leaderboard"
        seen: Counter[str] = Counter()
        bad: list[str] = []

        def check(r: httpx.Response) -> None:
            seen[str(r.status_code)] += 1
            if r.status_code == 503:
                problem = r.json()
                if int(r.headers.get("retry-after", "0")) < 1 or problem.get("code") != "unavailable":
                    bad.append(f"{r.headers} {r.text[:200]}")
            elif r.status_code != 200:
                bad.append(f"{r.status_code} {r.text[:200]}")

        async def burst() -> tuple[int, int, list[bool]]:
            tls = ssl.create_default_context()
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            answered, probe_done = asyncio.Event(), asyncio.Event()
            first_answers = 0

            async def crowd(own: httpx.AsyncClient) -> tuple[int, bool]:
                nonlocal first_answers
                served = 0
                for i in range(most):
                    if probe_done.is_set():
                        return served, False
                    r = await own.get(path)
                    check(r)
                    served += r.status_code == 200
                    if i == 0:
                        first_answers += 1
                        if first_answers == clients:
                            answered.set()
                return served, True  # stopped before the probe was done: the burst ended too soon

            async def probe(own: httpx.AsyncClient) -> int:
                await answered.wait()
                served = 0
                for _ in range(most):
                    r = await own.get(path)
                    check(r)
                    served += r.status_code == 200
                    if served == 5:
                        break
                probe_done.set()
                return served

            owns = [httpx.AsyncClient(base_url=srv.base, timeout=30, limits=limits, verify=tls)
                    for _ in range(clients + 1)]
            try:
                *crowds, probed = await asyncio.gather(*(crowd(own) for own in owns[:-1]), probe(owns[-1]))
            finally:
                await asyncio.gather(*(own.aclose() for own in owns))
            return probed, sum(served for served, _ in crowds), [ended for _, ended in crowds]

        probed, crowd_served, ended_early = asyncio.run(burst())  # a hang raises ReadTimeout here
        assert not bad, bad[:5]
        assert set(seen) == {"200", "503"}, seen  # far above the limits: refusals, and nothing but 503s
        assert probed == 5 and not any(ended_early), (probed, sum(ended_early))  # served during the burst
        assert crowd_served > 0, seen
        r = c.get(path, timeout=5)
        assert r.status_code == 200  # not wedged afterwards
