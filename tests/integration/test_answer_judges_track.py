"""A judges track on a collection of answers (issue 36, item 4): three teams submit nugget
assignment sets for NIST's TREC 2024 RAG answers (derived from NIST's assignments at growing
noise, as automatic assigners differ), the workers score every run under each, and the judge
board ranks them by tau_AP on Vital strict against the hidden official set, with intervals, the
figures equal to the core's on the files; a team learns nothing of the official labels beyond
its own score (the pool names no run, a refusal names only the team's own line, the board
shows a team its own row until release, the official set and the other sets stay closed)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.metrics.rag_scoring import evaluate_rag
from service.formats.rag_judgments import read_assignments
from service.metrics.stats.judge_meta import judge_agreement

from tests.integration.conftest import auth, wait_for
from tests.integration.test_answer_collections import ASSIGNMENTS, SUBMITTED, answer_runs
from tests.integration.test_diversity_and_sampled_collections import inline  # noqa: F401

VITAL_STRICT = "nugget_vital(strict=true)"
NOISE = {"gamma": 0.05, "delta": 0.25, "epsilon": 0.6}  # the share of labels each team's assigner redraws


@pytest.fixture(scope="module")
def data() -> Path:
    from tests.conftest import require_shared

    return require_shared("data/trec-rag24")


def _submission(pool: list[dict[str, Any]], nist: dict[tuple[str, str], dict[str, str]], tag_of: dict[str, str],
                noise: float, seed: int) -> bytes:
    """A team's assignment file for the pool's answers: NIST's label of each nugget, redrawn at ``noise``."""
    rng = np.random.default_rng(seed)
    labels = ("support", "partial_support", "not_support")
    rows = []
    for item in pool:
        truth = nist[(tag_of[item["run_id"]], item["qid"])]
        rows.append({"qid": item["qid"], "run_id": item["run_id"], "nuggets": [
            {**n, "assignment": str(labels[rng.integers(3)]) if rng.random() < noise else truth[n["text"]]}
            for n in item["nuggets"]]})
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def test_teams_assignment_sets_ranked_against_the_hidden_official_set(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    client, admin, _factory = inline
    a = auth(admin)
    cid = client.post("/api/collections", json={"name": "rag", "task_kind": "answers"}, headers=a).json()["id"]
    nist_body = (data / ASSIGNMENTS).read_bytes()
    assert client.post(f"/api/collections/{cid}/answer-judgments/assignments", content=nist_body,
                       headers=a).status_code == 201
    tokens: dict[str, str] = {}
    for team in ("alpha", "beta", "gamma", "delta", "epsilon"):
        assert client.post("/api/teams", json={"name": team}, headers=a).status_code in (201, 409)
        assert client.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
        tokens[team] = client.post("/api/tokens", json={"role": "participant", "team": team}, headers=a).json()["token"]
    ids = {}
    for (team, run, _fmt), body in zip(SUBMITTED, answer_runs(data).values()):
        r = client.post(f"/api/collections/{cid}/runs", content=body, headers=auth(tokens[team]))
        assert r.status_code == 201
        ids[r.json()["id"]] = run
    g = auth(tokens["gamma"])
    assert client.get(f"/api/collections/{cid}/judge-track/pool", headers=g).status_code == 403  # not open yet
    r = client.put(f"/api/collections/{cid}/judge-track", json={"accepts_judgments": True, "resamples": 300}, headers=a)
    assert r.status_code == 200, r.text

    # the pool: every answer of a topic with nuggets, blind (no run, no team), with the nuggets
    pool_text = client.get(f"/api/collections/{cid}/judge-track/pool", headers=g)
    assert pool_text.status_code == 200
    pool = [json.loads(line) for line in pool_text.text.splitlines()]
    assert len(pool) == 5 * 21 and all(item["nuggets"] and item["answer"] for item in pool)
    for run in ids.values():
        assert run not in pool_text.text
    assert "alpha" not in pool_text.text and "assignment" not in pool_text.text  # no label of NIST's
    from service.evaluation.judging.answer_judges import answer_id

    tag_of = {answer_id(cid, rid, t): run for rid, run in ids.items() for t in {item["qid"] for item in pool}}
    nist_rows = [json.loads(line) for line in gzip.decompress(nist_body).splitlines()]
    nist = {(row["run_id"], row["qid"]): {n["text"]: n["assignment"] for n in row["nuggets"]} for row in nist_rows}

    # refusals name the team's line and nothing of the official labels
    bad_id = json.dumps({"qid": pool[0]["qid"], "run_id": "BEST_cot_gpt3.5", "nuggets": pool[0]["nuggets"]})
    r = client.post(f"/api/collections/{cid}/judge-submissions", params={"name": "x"}, content=bad_id + "\n", headers=g)
    assert r.status_code == 422 and '"line":1' in r.text and "not an answer id" in r.text, r.text
    stray = dict(pool[0], nuggets=[{"text": "a nugget nobody listed", "importance": "vital",
                                    "assignment": "support"}])
    r = client.post(f"/api/collections/{cid}/judge-submissions", params={"name": "x"},
                    content=json.dumps({k: stray[k] for k in ("qid", "run_id", "nuggets")}) + "\n", headers=g)
    assert r.status_code == 422 and '"line":1' in r.text, r.text
    for run in ids.values():
        assert run not in r.text
    assert client.get(f"/api/collections/{cid}/judgment-sets", headers=g).json()["items"] == []

    bodies = {team: _submission(pool, nist, tag_of, noise, seed=k) for k, (team, noise) in enumerate(NOISE.items())}
    for team, body in bodies.items():
        r = client.post(f"/api/collections/{cid}/judge-submissions", params={"name": f"{team}-llm", "model": "m"},
                        content=body, headers=auth(tokens[team]))
        assert r.status_code == 201, r.text
        assert r.json()["judgments"] == len(pool)

    def ready() -> dict[str, Any] | None:
        doc = client.get(f"/api/collections/{cid}/judge-board", headers=a).json()
        return doc if len(doc["rows"]) == 3 and not doc["stale"] else None

    board = wait_for(ready, 120, "the judge board")
    assert (board["measure"], board["metric"]) == ("tau_ap", VITAL_STRICT)
    assert {row["judgment_set"] for row in board["rows"]} == {"gamma-llm", "delta-llm", "epsilon-llm"}
    values = [row["value"] for row in board["rows"]]
    assert values == sorted(values, reverse=True) and [row["rank"] for row in board["rows"]] == [1, 2, 3]
    assert all(row["low"] <= row["high"] for row in board["rows"])  # each with its bootstrap interval
    # the figures from the files: the runs' per-topic Vital strict under NIST's and each team's set
    official = evaluate_rag([VITAL_STRICT], read_assignments(gzip.decompress(nist_body), "nist"))
    runs = sorted(ids.values())
    topics = list(official.evaluation.topics)

    def matrix(ev: Any) -> np.ndarray:
        return np.array([[ev.evaluation.per_topic(VITAL_STRICT)[ev.evaluation.runs.index(r), ev.evaluation.topics.index(t)]
                          for r in runs] for t in topics])

    for row in board["rows"]:
        team = row["team"]
        text = bodies[team].decode()
        for aid, run in tag_of.items():
            text = text.replace(f'"{aid}"', f'"{run}"')
        mine = evaluate_rag([VITAL_STRICT], read_assignments(text.encode(), "team"))
        want = judge_agreement(matrix(official), matrix(mine), "tau_ap", resamples=300, level=0.95, seed=0)
        assert row["value"] == pytest.approx(want.value, abs=1e-12)
        assert (row["low"], row["high"]) == (pytest.approx(want.low, abs=1e-12), pytest.approx(want.high, abs=1e-12))
        assert row["runs"] == 5 and row["topics"] == 21

    # what each role sees: a team its own row until release; the official set and the others closed
    own = client.get(f"/api/collections/{cid}/judge-board", headers=g).json()
    assert [row["judgment_set"] for row in own["rows"]] == ["gamma-llm"]
    assert client.get(f"/api/collections/{cid}/judge-board", headers=auth(tokens["alpha"])).json()["rows"] == []
    for path in ("judgment-sets/official", "judgment-sets/delta-llm", "answer-judgments/compare?a=official&b=gamma-llm"):
        assert client.get(f"/api/collections/{cid}/{path}", headers=g).status_code in (403, 404), path
    rid = next(iter(ids))
    assert client.get(f"/api/runs/{rid}/answers", headers=g).status_code == 403  # another team's run
    # an assessor labels the organisers' sets, never a team's
    from tests.integration.test_diversity_and_sampled_collections import portal_cookie

    topic = pool[0]["qid"]
    assessor = client.post("/api/tokens", json={"role": "assessor", "name": "ann", "collections": [cid],
                                                "topics": [topic]}, headers=a).json()["token"]
    cookie = portal_cookie(_factory, assessor)
    assert client.get(f"/c/{cid}/answers/assess", params={"topic": topic, "set": "gamma-llm"},
                      headers=cookie).status_code == 403
    assert client.get(f"/c/{cid}/answers/assess", params={"topic": topic}, headers=cookie).status_code == 200


def test_teams_support_sets_on_a_support_board(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    """A track whose board ranks by support precision takes teams' citation-support sets (NIST's
    format, the pool's answer ids): checked against the answers' sentences and citations, one
    kind per file, and ranked against the official support judgments."""
    from tests.integration.test_answer_collections import SUPPORT

    client, admin, _factory = inline
    a = auth(admin)
    cid = client.post("/api/collections", json={"name": "rag", "task_kind": "answers"}, headers=a).json()["id"]
    assert client.post(f"/api/collections/{cid}/answer-judgments/assignments",
                       content=(data / ASSIGNMENTS).read_bytes(), headers=a).status_code == 201
    for name in SUPPORT:
        assert client.post(f"/api/collections/{cid}/answer-judgments/support?append=true",
                           content=(data / name).read_bytes(), headers=a).status_code == 201
    tokens = {}
    for team in ("alpha", "beta", "gamma", "delta"):
        assert client.post("/api/teams", json={"name": team}, headers=a).status_code in (201, 409)
        assert client.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
        tokens[team] = client.post("/api/tokens", json={"role": "participant", "team": team}, headers=a).json()["token"]
    for (team, _run, _fmt), body in zip(SUBMITTED, answer_runs(data).values()):
        assert client.post(f"/api/collections/{cid}/runs", content=body, headers=auth(tokens[team])).status_code == 201
    r = client.put(f"/api/collections/{cid}/judge-track", json={"accepts_judgments": True, "metric": "support_precision",
                                                                "resamples": 200}, headers=a)
    assert r.status_code == 200, r.text
    g = auth(tokens["gamma"])
    pool = [json.loads(line) for line in client.get(f"/api/collections/{cid}/judge-track/pool", headers=g).text.splitlines()]
    cited = [item for item in pool if any(s["citations"] for s in item["answer"])]
    assert cited

    def support_file(label: str) -> bytes:
        return ("".join(json.dumps({"topic_id": item["qid"], "run_id": item["run_id"], "sentences": [
            {"sentenceID": i, "text": s["text"], "citations": [{"citationID": j, "reference": item["references"][c],
                                                                 "support": label} for j, c in enumerate(s["citations"])]}
            for i, s in enumerate(item["answer"])]}) + "\n" for item in cited)).encode()

    # one kind per file; sentences and citations are the answer's
    mixed = support_file("2").splitlines()[0] + b"\n" + json.dumps(
        {"qid": pool[0]["qid"], "run_id": pool[0]["run_id"], "nuggets": pool[0]["nuggets"]}).encode() + b"\n"
    r = client.post(f"/api/collections/{cid}/judge-submissions", params={"name": "s"}, content=mixed, headers=g)
    assert r.status_code == 422 and '"line":2' in r.text and "one or the other" in r.text, r.text
    first = json.loads(support_file("2").splitlines()[0])
    first["sentences"].append({"sentenceID": 999, "text": "x", "citations": []})
    r = client.post(f"/api/collections/{cid}/judge-submissions", params={"name": "s"},
                    content=json.dumps(first).encode() + b"\n", headers=g)
    assert r.status_code == 422 and '"line":1' in r.text and "sentences" in r.text, r.text

    for team, label in (("gamma", "2"), ("delta", "0")):
        r = client.post(f"/api/collections/{cid}/judge-submissions", params={"name": f"{team}-support"},
                        content=support_file(label), headers=auth(tokens[team]))
        assert r.status_code == 201, r.text

    def ready() -> dict[str, Any] | None:
        doc = client.get(f"/api/collections/{cid}/judge-board", headers=a).json()
        return doc if len(doc["rows"]) == 2 and not doc["stale"] else None

    board = wait_for(ready, 120, "the judge board")
    assert board["metric"] == "support_precision"
    rows = {row["judgment_set"]: row for row in board["rows"]}
    assert set(rows) == {"gamma-support", "delta-support"} and all(r["runs"] == 5 for r in rows.values())
    # the teams' versions score as their labels say: everything supported (1) or nothing (0)
    for name, want in (("gamma-support", 1.0), ("delta-support", 0.0)):
        version = rows[name]["version"]
        board_of = client.get(f"/api/collections/{cid}/leaderboard", params={"metric": "support_precision",
                                                                            "qrels_version": version}, headers=a).json()
        assert board_of["rows"] and all(row["mean"] == pytest.approx(want) for row in board_of["rows"]), board_of["rows"]
