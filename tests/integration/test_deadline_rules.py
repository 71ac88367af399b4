"""Deadline-day rules in-process (issue 13): before release a participant's view of the board
says nothing about other teams' runs, ranks included (item 12); boards do not load the stored
files (item 13); a refused file costs no quota (item 4); an idempotent retry is answered after
the window has closed (item 8)."""

from __future__ import annotations

from tests.integration.conftest import World, auth
from tests.integration.test_portal import as_role, table_runs


def test_unreleased_board_ranks_a_participant_among_its_own_runs(world: World) -> None:
    c, cid = world.client, world.cid
    organiser = c.get(f"/api/collections/{cid}/leaderboard", headers=auth(world.tokens["organiser"])).json()
    assert organiser["ranked_among"] == "all" and len(organiser["rows"]) == 3
    global_rank = {r["run"]: r["rank"] for r in organiser["rows"]}
    for team in ("alpha", "beta"):
        mine = c.get(f"/api/collections/{cid}/leaderboard", headers=auth(world.tokens[team])).json()
        assert mine["ranked_among"] == "team"
        assert {r["team"] for r in mine["rows"]} == {team}
        # ranks 1..n among the team's own runs, in the board's order
        assert [r["rank"] for r in mine["rows"]] == list(range(1, len(mine["rows"]) + 1))
        assert [r["run"] for r in mine["rows"]] == [r["run"] for r in organiser["rows"] if r["team"] == team]
    beta_run = next(r["run"] for r in organiser["rows"] if r["team"] == "beta")
    assert global_rank[beta_run] > 1  # the generated runs put beta below an alpha run (the case that leaked)
    beta = c.get(f"/api/collections/{cid}/leaderboard", headers=auth(world.tokens["beta"])).json()
    assert beta["rows"][0]["rank"] == 1 and beta["rows"][0]["run"] == beta_run
    # the portal shows the same: the board page lists beta's run alone, the progress feed its rank 1
    page = c.get(f"/c/{cid}", headers=as_role(world, "beta")).text
    assert table_runs(page) == [beta_run]
    progress = c.get(f"/c/{cid}/progress.json", headers=as_role(world, "beta")).json()
    assert [r["rank"] for r in progress["runs"]] == [1]
    # released: everyone sees the global ranks
    r = c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True}, headers=auth(world.tokens["organiser"]))
    assert r.status_code == 200, r.text
    released = c.get(f"/api/collections/{cid}/leaderboard", headers=auth(world.tokens["beta"])).json()
    assert released["ranked_among"] == "all" and {r["run"]: r["rank"] for r in released["rows"]} == global_rank


def test_a_board_request_does_not_load_the_stored_files(world: World) -> None:
    """Issue 13, item 13: every board request loaded the compressed qrels with the version row.
    The statements a board request sends name neither files' column."""
    from sqlalchemy import event

    from service.store.db import engine_for

    statements: list[str] = []
    engine = engine_for(world.factory.kw["bind"].url.render_as_string(hide_password=False))

    def seen(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        for role in ("organiser", "alpha"):
            r = world.client.get(f"/api/collections/{world.cid}/leaderboard", params={"metric": "AP"},
                                 headers=auth(world.tokens[role]))
            assert r.status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    reads = [s for s in statements if "qrels_versions" in s or "FROM runs" in s]
    assert reads, statements  # the board did read the version and run rows
    assert not [s for s in reads if "qrels_versions.file" in s or "runs.file" in s], reads


def test_a_refused_file_costs_no_quota(world: World) -> None:
    """Issue 13, item 4: a file that fails validation is refused before anything is counted."""
    c, cid = world.client, world.cid
    assert c.patch(f"/api/collections/{cid}", json={"daily_run_quota": 3},
                   headers=auth(world.tokens["organiser"])).status_code == 200
    alpha = auth(world.tokens["alpha"])
    used = c.get(f"/api/collections/{cid}/runs", headers=alpha).json()["quota"]["used_today"]
    assert used == 2  # the world's two runs of alpha
    long_docno = "0001 Q0 " + "d" * 5000 + " 1 1.0 late\n"
    bad = c.post(f"/api/collections/{cid}/runs", content=long_docno, headers=alpha)
    assert bad.status_code == 422 and bad.json()["error"]["line"] == 1 and "limit" in bad.text
    assert c.get(f"/api/collections/{cid}/runs", headers=alpha).json()["quota"]["used_today"] == 2
    good = next(iter(world.runs.values())).replace("RUN-01", "late").replace("RUN-02", "late")
    assert c.post(f"/api/collections/{cid}/runs", content=good, headers=alpha).status_code == 201
    over = c.post(f"/api/collections/{cid}/runs", content=good.replace("late", "later"), headers=alpha)
    assert over.status_code == 409 and "quota" in over.text


def test_an_idempotent_retry_is_answered_after_the_window_closed(world: World) -> None:
    c, cid = world.client, world.cid
    alpha = {**auth(world.tokens["alpha"]), "Idempotency-Key": "last-minute"}
    text = next(iter(world.runs.values())).replace("RUN-01", "lastminute").replace("RUN-02", "lastminute")
    first = c.post(f"/api/collections/{cid}/runs", content=text, headers=alpha)
    assert first.status_code == 201, first.text
    closed = c.patch(f"/api/collections/{cid}", json={"submission_closes_at": "2020-01-01T00:00:00Z"},
                     headers=auth(world.tokens["organiser"]))
    assert closed.status_code == 200, closed.text
    retry = c.post(f"/api/collections/{cid}/runs", content=text, headers=alpha)  # the answer was lost
    assert retry.status_code == 201 and retry.json() == first.json()
    late = c.post(f"/api/collections/{cid}/runs", content=text.replace("lastminute", "toolate"),
                  headers={**alpha, "Idempotency-Key": "another"})
    assert late.status_code == 409 and "closed" in late.text
    unkeyed = c.post(f"/api/collections/{cid}/runs", content=text.replace("lastminute", "toolate"),
                     headers=auth(world.tokens["alpha"]))
    assert unkeyed.status_code == 409 and "closed" in unkeyed.text
