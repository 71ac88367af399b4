"""People assess generated answers in the portal (issue 36, items 1-2), on NIST's TREC 2024 RAG
topics and answers: two assessors label the same three answers of a topic (nuggets and the
first cited passage of each sentence) through the assessment page's forms, blind (no run, no
team; each in an order of their own); the organiser makes the set's next version from their
labels under the set's rule; the workers score it and the board of that version follows the
rule; the set's agreement figures are Krippendorff's alpha of the two; every role gets what it
may."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from sqlalchemy import select

from service.store.models import AssessorLabel
from tests.integration.conftest import auth
from tests.integration.test_answer_collections import ASSIGNMENTS, SUBMITTED, answer_runs
from tests.integration.test_diversity_and_sampled_collections import inline, portal_cookie  # noqa: F401

VITAL_STRICT = "nugget_vital(strict=true)"


@pytest.fixture(scope="module")
def data() -> Path:
    from tests.conftest import require_shared

    return require_shared("data/trec-rag24")


def _csrf(page: str) -> tuple[str, str]:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1), re.search(r'name="once" value="([^"]+)-a\d+"', page).group(1)


def _answers(page: str) -> dict[int, str]:
    """Position -> the answer's text, as the page shows it."""
    out = {}
    for m in re.finditer(r'<section class="answer" id="answer-(\d+)".*?<div class="answer-text">(.*?)</div>', page, re.S):
        out[int(m.group(1))] = re.sub(r"<[^>]+>", " ", m.group(2)).strip()
    return out


def test_two_assessors_assess_answers_and_the_set_follows_its_rule(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    client, admin, factory = inline
    a = auth(admin)
    cid = client.post("/api/collections", json={"name": "rag", "task_kind": "answers"}, headers=a).json()["id"]
    assert client.post(f"/api/collections/{cid}/answer-judgments/assignments",
                       content=(data / ASSIGNMENTS).read_bytes(), headers=a).status_code == 201
    tokens: dict[str, str] = {}
    for team in ("alpha", "beta", "gamma"):
        assert client.post("/api/teams", json={"name": team}, headers=a).status_code in (201, 409)
        assert client.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
        tokens[team] = client.post("/api/tokens", json={"role": "participant", "team": team}, headers=a).json()["token"]
    for (team, _run, _fmt), body in zip(SUBMITTED, answer_runs(data).values()):
        assert client.post(f"/api/collections/{cid}/runs", content=body, headers=auth(tokens[team])).status_code == 201
    topic = "2024-19025"
    # the cited passages' texts (the organiser's passages part), shown on the support questions
    cited = sorted({ref for body in answer_runs(data).values() for line in body.decode().splitlines()
                    for ref in json.loads(line).get("references", [])})
    passages = "".join(json.dumps({"segment_id": ref, "segment": f"text of {ref}"}) + "\n" for ref in cited)
    r = client.post(f"/api/collections/{cid}/answer-judgments/passages", content=passages.encode(), headers=a)
    assert r.status_code == 201 and r.json()["parts"]["passages"]["passages"] == len(cited), r.text
    dup = passages.splitlines()[0] + "\n" + passages.splitlines()[0] + "\n"
    r = client.post(f"/api/collections/{cid}/answer-judgments/passages?source=p.jl", content=dup.encode(), headers=a)
    assert r.status_code == 422 and "p.jl" in r.text and "given twice" in r.text
    r = client.post(f"/api/collections/{cid}/judgment-sets", json={"name": "people", "source": "human",
                                                                   "rule": "latest", "auto_evaluate": True}, headers=a)
    assert r.status_code == 201, r.text
    for name in ("ann", "bob"):
        r = client.post("/api/tokens", json={"role": "assessor", "name": name, "collections": [cid],
                                             "topics": [topic]}, headers=a)
        assert r.status_code == 201, r.text
        tokens[name] = r.json()["token"]
    r = client.post("/api/tokens", json={"role": "assessor", "name": "carl", "collections": [cid],
                                         "topics": ["2024-96063"]}, headers=a)
    tokens["carl"] = r.json()["token"]

    listing = client.get("/assess", headers=portal_cookie(factory, tokens["ann"]))
    assert listing.status_code == 200 and f'href="/c/{cid}/answers/assess?topic={topic}&amp;set=people"' in listing.text
    url = f"/c/{cid}/answers/assess"
    cookies = {name: portal_cookie(factory, token) for name, token in tokens.items()}  # one session each
    cookies["admin"] = portal_cookie(factory, admin)
    pages = {name: client.get(url, params={"topic": topic, "set": "people"}, headers=cookies[name])
             for name in ("ann", "bob")}
    for name, page in pages.items():
        assert page.status_code == 200, page.text
        assert "of 5 answers" in page.text and 'name="n0"' in page.text
        assert '<blockquote class="passage">text of ' in page.text
        for _, run, _ in SUBMITTED:  # blind: no run, no team
            assert run not in page.text
        assert "alpha" not in page.text and "beta" not in page.text
    ann, bob = _answers(pages["ann"].text), _answers(pages["bob"].text)
    assert sorted(ann.values()) == sorted(bob.values()) and list(ann.values()) != list(bob.values())  # own orders
    n_nuggets = len(re.findall(r'<fieldset class="nugget-label">', pages["ann"].text)) // 5
    assert n_nuggets >= 2

    # both label the same three answers (found by their text); bob disagrees on the first nugget
    chosen = [ann[p] for p in sorted(ann)[:3]]
    given: dict[str, dict[str, list[int]]] = {}
    for name, page in pages.items():
        positions = {text: p for p, text in _answers(page.text).items()}
        csrf, once = _csrf(page.text)
        cookie = cookies[name]
        for k, text in enumerate(chosen):
            values = [(k + n) % 3 for n in range(n_nuggets)]
            if name == "bob":
                values[0] = (values[0] + 1) % 3
            given.setdefault(name, {})[text] = values
            form = {"csrf": csrf, "once": f"{once}-a{positions[text]}", "topic": topic, "set": "people",
                    "position": str(positions[text]), **{f"n{n}": str(v) for n, v in enumerate(values)}}
            section = page.text.split(f'<section class="answer" id="answer-{positions[text]}"', 1)[1].split("</section>")[0]
            for i in re.findall(r'name="s(\d+)_0"', section):  # every sentence's first citation: full support
                form[f"s{i}_0"] = "2"
            r = client.post(url, data=form, headers=cookie, follow_redirects=False)
            assert r.status_code == 303, r.text
    again = client.get(url, params={"topic": topic, "set": "people"}, headers=cookies["ann"])
    assert "You have assessed 3 of 5 answers" in again.text

    # every citation of a sentence, when the organiser says so (answer_settings.assessed_citations)
    assert 'name="s' in pages["ann"].text and not re.search(r'name="s\d+_1"', pages["ann"].text)
    r = client.patch(f"/api/collections/{cid}", json={"answer_settings": {"assessed_citations": "every"}}, headers=a)
    assert r.status_code == 200, r.text
    extra = {"run_id": "two-citations", "topic_id": topic, "topic": "q", "references": ["ref-a", "ref-b"],
             "response_length": 4, "answer": [{"text": "One sentence, two passages.", "citations": [0, 1]}]}
    r = client.post(f"/api/collections/{cid}/runs", content=json.dumps(extra).encode(), headers=auth(tokens["gamma"]))
    assert r.status_code == 201, r.text
    every = client.get(url, params={"topic": topic, "set": "people"}, headers=cookies["ann"])
    assert re.search(r'name="s\d+_1"', every.text) and "the passages each sentence cites support" in every.text
    assert client.patch(f"/api/collections/{cid}", json={"answer_settings": {"assessed_citations": "all"}},
                        headers=a).status_code in (400, 422)
    assert client.patch(f"/api/collections/{cid}", json={"answer_settings": {"assessed_citations": "first"}},
                        headers=a).status_code == 200

    # the organisers see each assessor's progress per topic on the set's page
    progress = client.get(f"/c/{cid}/judgment-sets/people", headers=cookies["admin"])
    assert progress.status_code == 200 and 'id="assessment-progress"' in progress.text
    row = re.search(rf"<th scope=\"row\">{topic}</th><td class=\"num\">(\d+)</td><td class=\"num\">(\d+)</td>"
                    rf"<td class=\"num\">(\d+)</td>", progress.text)
    assert row and row.groups() == ("6", "3", "3"), row  # 6 answers now (the two-citation run); ann and bob 3 each

    # refusals: a label out of range, another topic's assessor, a team, nobody
    csrf, once = _csrf(pages["ann"].text)
    bad = client.post(url, data={"csrf": csrf, "once": f"{once}-bad", "topic": topic, "set": "people", "position": "1",
                                 "n0": "7"}, headers=cookies["ann"], follow_redirects=False)
    assert bad.status_code == 400 and "a label is 0" in bad.text
    assert client.get(url, params={"topic": topic}, headers=cookies["carl"]).status_code == 403
    assert client.get(url, params={"topic": topic}, headers=cookies["alpha"]).status_code == 403
    assert client.get(url, params={"topic": topic}, follow_redirects=False).status_code in (302, 303, 401)

    # the organiser makes the set's version from the labels: "latest" takes bob's (the later) label
    set_page = client.get(f"/c/{cid}/judgment-sets", headers=cookies["admin"])
    assert f'action="/c/{cid}/judgment-sets/people/derive"' in set_page.text
    csrf = re.search(r'name="csrf" value="([^"]+)"', set_page.text).group(1)
    assert client.post(f"/c/{cid}/judgment-sets/people/derive", data={"csrf": csrf},
                       headers=cookies["ann"], follow_redirects=False).status_code == 403
    r = client.post(f"/c/{cid}/judgment-sets/people/derive", data={"csrf": csrf},
                    headers=cookies["admin"], follow_redirects=False)
    assert r.status_code == 303, r.text
    version = int(re.search(r"version=(\d+)", r.headers["location"]).group(1))
    board = client.get(f"/api/collections/{cid}/leaderboard", params={"metric": "nugget_all", "qrels_version": version},
                       headers=a).json()
    assert len(board["rows"]) == 3  # the three runs whose answers were assessed
    # under "latest", each answer's labels are bob's (he saved after ann): All = (support + partial/2) / nuggets

    def score(values: list[int]) -> float:
        return sum({2: 1.0, 1: 0.5, 0: 0.0}[v] for v in values) / len(values)

    assert sorted(row["mean"] for row in board["rows"]) == pytest.approx(
        sorted(score(v) for v in given["bob"].values()), abs=1e-12)
    assert sorted(score(v) for v in given["bob"].values()) != sorted(score(v) for v in given["ann"].values())
    with factory() as s:
        kept = s.execute(select(AssessorLabel.docno, AssessorLabel.assessor, AssessorLabel.level)).all()
    assert {who for _, who, _ in kept} == {"ann", "bob"}
    # the agreement of the two: Krippendorff's ordinal alpha over the cells both labelled
    doc = client.get(f"/api/collections/{cid}/judgment-sets/people/agreement", headers=a).json()
    cells = sorted({d for d, _, _ in kept})
    matrix = np.array([[next((lv for d2, w, lv in kept if d2 == d and w == who), np.nan) for d in cells]
                       for who in ("ann", "bob")], dtype=float)
    want = krippendorff.alpha(reliability_data=matrix, value_domain=[0, 1, 2], level_of_measurement="ordinal")
    assert doc["alpha"]["ordinal"] == pytest.approx(want, abs=1e-12)
