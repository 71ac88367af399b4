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


ASSESSED_TOPIC = "2024-19025"


def _assess(page, base: str, token: str, texts: list[str] | None, first_label: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Sign in as an assessor, open the topic from the assessor's list, and label three answers
    (the first three shown, or those with ``texts``): every nugget 'support' but the first
    (``first_label``), every first citation 'full support'; the keyboard chooses one of them."""
    sign_in(page, base, token)
    page.goto(f"{base}/assess")
    with page.expect_navigation():
        page.get_by_role("link", name=f"TREC 2024 RAG: topic {ASSESSED_TOPIC} (people)").click()
    sections = page.locator("section.answer")
    assert sections.count() == len(SUBMITTED)
    shown = [s.locator(".answer-text").inner_text().strip() for s in sections.all()]
    for run in (run for _, run, _ in SUBMITTED):
        assert run not in page.content()  # blind
    chosen = texts or shown[:3]
    for text in chosen:
        position = shown.index(text) + 1
        section = page.locator(f"#answer-{position}")
        nuggets = section.locator("fieldset.nugget-label")
        for k in range(nuggets.count()):
            nuggets.nth(k).get_by_label("support", exact=True).check()
        nuggets.nth(0).get_by_label(first_label, exact=True).check()
        # the keyboard: focus the last nugget's checked choice and move with the arrow keys
        last = nuggets.nth(nuggets.count() - 1)
        last.get_by_label("support", exact=True).focus()
        page.keyboard.press("ArrowDown")  # support -> partial support (the next radio of the group)
        assert last.get_by_label("partial support", exact=True).is_checked()
        page.keyboard.press("ArrowUp")
        assert last.get_by_label("support", exact=True).is_checked()
        citations = section.locator("fieldset.support-label")
        for k in range(citations.count()):
            citations.nth(k).get_by_label("full support", exact=True).check()
        with page.expect_navigation():
            section.get_by_role("button", name=f"Save answer {position}").click()
        assert f"Answer {position} saved." in page.locator("#progress").inner_text()
    assert f"You have assessed 3 of {len(SUBMITTED)}" in page.locator("#progress").inner_text()
    shot(page, "62-rag-assessment")
    return chosen


def test_two_assessors_assess_answers_in_the_browser(track: Service, browser: object) -> None:  # noqa: F811
    """Issue 36: two assessors assess the same three answers of a topic in the portal (nuggets
    and support), the organiser makes the set's version from their labels, the set's agreement
    page shows their alpha, and the version's board follows the set's rule (latest: bob's)."""
    base, cid = track.base, track.cid
    o = {"Authorization": f"Bearer {track.tokens['organiser']}"}
    with httpx.Client(base_url=base, timeout=60) as c:
        r = c.post(f"/api/collections/{cid}/judgment-sets", json={"name": "people", "source": "human",
                                                                   "rule": "latest", "auto_evaluate": True}, headers=o)
        assert r.status_code == 201, r.text
        assessors = {name: c.post("/api/tokens", json={"role": "assessor", "name": name, "collections": [cid],
                                                       "topics": [ASSESSED_TOPIC]}, headers=o).json()["token"]
                     for name in ("ann", "bob")}
    with browsing(browser, "rag-assess-ann") as page:
        chosen = _assess(page, base, assessors["ann"], None, "support")
    with browsing(browser, "rag-assess-bob") as page:
        _assess(page, base, assessors["bob"], chosen, "not support")
    with browsing(browser, "rag-assess-organiser") as page:
        sign_in(page, base, track.tokens["organiser"])
        page.goto(f"{base}/c/{cid}/judgment-sets")
        with page.expect_navigation():
            page.get_by_role("button", name="Make the next version of people from its assessors' labels").click()
        assert page.locator("#done").count() == 1, (page.url, page.locator("main").inner_text()[:1500])
        notice = page.locator("#done").inner_text()
        assert "people" in notice and "version" in notice
        with httpx.Client(base_url=base, timeout=60) as c:
            sets = c.get(f"/api/collections/{cid}/judgment-sets/people", headers=o).json()
            version = sets["versions"][-1]["version"]

            def scored() -> bool:
                rows = c.get(f"/api/collections/{cid}/leaderboard", params={"metric": "nugget_all",
                                                                             "qrels_version": version},
                             headers=o).json().get("rows") or []
                return len(rows) == 3
            wait_for(scored, 180, "the derived version's scores")
            rows = c.get(f"/api/collections/{cid}/leaderboard", params={"metric": "nugget_all",
                                                                         "qrels_version": version},
                         headers=o).json()["rows"]
            agreement = c.get(f"/api/collections/{cid}/judgment-sets/people/agreement", headers=o).json()
        page.goto(f"{base}/c/{cid}/judgment-sets/people/agreement")
        summary = page.locator("#agreement-summary").inner_text()
        assert summary.startswith("2 assessors")
        alpha_text = page.locator("#alpha").inner_text()
        assert f"{agreement['alpha']['ordinal']:.3f}" in alpha_text
        shot(page, "63-rag-assessors-agreement")
        # on a phone "who disagrees most" is a card per assessor: every figure on the screen, under
        # its column's name (issue 37, item 10: only the first columns showed)
        page.set_viewport_size({"width": 390, "height": 844})
        cells = page.locator("#disagreement tbody tr:first-child").evaluate("""row => [...row.children].map(c => {
          const r = c.getBoundingClientRect(); return {label: c.dataset.label, right: r.right, left: r.left}; })""")
        assert [c["label"] for c in cells][:4] == ["Assessor", "Labels", "Mean κ", "Ordinal α without"], cells
        assert all(c["left"] >= 0 and c["right"] <= 390 for c in cells), cells
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot(page, "63-rag-assessors-agreement-phone")
        page.set_viewport_size({"width": 1280, "height": 900})
    # latest: bob's labels (he saved after ann), every nugget supported but the first: All = (n - 1) / n
    n = 12  # the nuggets of topic 2024-19025 in NIST's assignments
    assert sorted(row["mean"] for row in rows) == pytest.approx([(n - 1) / n] * 3, abs=1e-12)
