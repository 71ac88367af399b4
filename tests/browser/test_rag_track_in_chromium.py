"""A RAG track end to end (issue 35) against a real `cranfield serve` (its own worker, SQLite) in
headless Chromium: the organiser creates a collection of answers and uploads NIST's nugget
assignments and citation-support files (TREC 2024 RAG, ../shared/data/trec-rag24); three teams
submit answer runs with the client (`cranfield remote submit`; the 2024 format and 2025's
format 1); the workers score and test them; the board, read in the browser, ranks by Vital
strict with intervals and significance letters, in `cranfield rag eval`'s order; a run's page
shows its answer with the nuggets labelled by assignment and the citations by support.
Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.browser.test_portal_in_chromium import (  # noqa: F401
    Service,
    _ok,
    _require_chromium,
    board_order,
    browser,
    browsing,
    shot,
    sign_in,
)
from tests.conftest import require_shared
from tests.integration.conftest import REPO, wait_for
from tests.integration.test_answer_collections import ASSIGNMENTS, OFFICIAL, SUBMITTED, SUPPORT, answer_runs, rag_eval
from tests.integration.test_api_server import stop
from tests.support.ports import free_port


@pytest.fixture(scope="module")
def track(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    _require_chromium()
    data = require_shared("data/trec-rag24")
    tmp = tmp_path_factory.mktemp("rag")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANFIELD_")}
    env["PYTHONPATH"] = str(REPO)
    cli = [sys.executable, "-m", "service.cli"]
    admin = subprocess.run([*cli, "token", "create", "--role", "admin", "--name", "root"], env=env, cwd=tmp,
                           check=True, capture_output=True, text=True).stdout.strip()
    port = free_port()
    server = subprocess.Popen([*cli, "serve", "--port", str(port)], cwd=tmp, env=env, start_new_session=True,
                              stdout=open(tmp / "serve.log", "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ok(f"{base}/health/ready"), 60, "the service")
        h = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=base, timeout=120) as c:
            cid = c.post("/api/collections", json={"name": "TREC 2024 RAG", "task_kind": "answers",
                                                   "significance": {"test": "t"}}, headers=h).json()["id"]
            org = c.post("/api/tokens", json={"role": "organiser", "name": "organiser", "collections": [cid]},
                         headers=h).json()["token"]
            tokens = {"organiser": org, "admin": admin}
            o = {"Authorization": f"Bearer {org}"}
            for team in ("alpha", "beta", "gamma"):
                assert c.post("/api/teams", json={"name": team}, headers=o).status_code == 201
                assert c.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=o).status_code == 201
                tokens[team] = c.post("/api/tokens", json={"role": "participant", "team": team, "name": f"{team}-1"},
                                      headers=o).json()["token"]
            r = c.post(f"/api/collections/{cid}/answer-judgments/assignments", content=(data / ASSIGNMENTS).read_bytes(),
                       headers=o)
            assert r.status_code == 201, r.text
            for name in SUPPORT:
                r = c.post(f"/api/collections/{cid}/answer-judgments/support?append=true",
                           content=(data / name).read_bytes(), headers=o)
                assert r.status_code == 201, r.text
            assert c.patch(f"/api/collections/{cid}", json={"leaderboard_released": True}, headers=o).status_code == 200
        runs = answer_runs(data)
        for team, run, _ in SUBMITTED:  # the client's door
            path = tmp / f"{run}.jsonl"
            path.write_bytes(runs[run])
            done = subprocess.run([*cli, "remote", "submit", "TREC 2024 RAG", str(path)], cwd=tmp, timeout=180,
                                  env={**env, "CRANFIELD_URL": base, "CRANFIELD_TOKEN": tokens[team],
                                       "XDG_CONFIG_HOME": str(tmp / "no-config")}, capture_output=True, text=True,
                                  check=False)
            assert done.returncode == 0, done.stderr
        with httpx.Client(base_url=base, timeout=30) as c:
            wait_for(lambda: _tested(c, cid, {"Authorization": f"Bearer {org}"}, len(SUBMITTED)), 300,
                     "the runs' scores and tests")
        yield Service(base, cid, tokens, {}, "", tmp)
    finally:
        stop(server)


def _tested(c: httpx.Client, cid: int, headers: dict[str, str], n: int) -> bool:
    board = c.get(f"/api/collections/{cid}/leaderboard", headers=headers).json()
    return len(board["rows"]) == n and board["significance"] is not None and not board["reevaluation_in_progress"]


def test_a_rag_track_in_the_browser(track: Service, browser: object) -> None:  # noqa: F811
    data = require_shared("data/trec-rag24")
    want = rag_eval(data)
    expected = sorted((run for _, run, _ in SUBMITTED), key=lambda run: -want[(run, OFFICIAL)])
    with browsing(browser, "rag-board") as page:
        sign_in(page, track.base, track.tokens["alpha"])
        page.goto(f"{track.base}/c/{track.cid}")
        assert board_order(page) == expected
        assert OFFICIAL in page.locator("#leaderboard thead").inner_text()
        assert page.locator("#group-letters").count() == 1  # the significance letters' legend
        groups = page.locator("#leaderboard tbody td.group").all_inner_texts()
        assert len(groups) == len(expected) and all(g.strip() for g in groups)
        intervals = page.locator("#leaderboard tbody td.interval").all_inner_texts()
        assert all(i.strip() not in ("", "–") for i in intervals)
        shot(page, "60-rag-board")
        # the own run's page: its answer, nuggets labelled by assignment, citations by support
        with page.expect_navigation():
            page.get_by_role("link", name="BEST_cot_gpt3.5", exact=True).first.click()
        assert "/runs/" in page.url
        answers = page.locator("#answers")
        assert answers.count() == 1, page.content()[-3000:]
        supported = answers.locator('.nugget[data-assignment="support"]')
        assert supported.count() > 0 and supported.first.inner_text() == "supported"
        colour = supported.first.evaluate("el => getComputedStyle(el).color")
        unsupported = answers.locator('.nugget[data-assignment="not_support"]')
        assert unsupported.count() > 0
        assert unsupported.first.evaluate("el => getComputedStyle(el).color") != colour
        assert unsupported.first.evaluate("el => getComputedStyle(el).borderStyle") != \
            supported.first.evaluate("el => getComputedStyle(el).borderStyle")  # not colour alone
        judged = answers.locator(".cite.full, .cite.partial, .cite.none")
        assert judged.count() > 0
        shot(page, "61-rag-run-answers")
