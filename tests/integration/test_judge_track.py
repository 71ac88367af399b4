"""A judges track end to end with a real Celery worker (issue 16): teams submit automatic
judgments for the pool, the worker evaluates every run under each and ranks the judges by
their agreement with the hidden official judgments, with a bootstrap interval; the board's
figures against an independent computation (the core's evaluation of the same files, scipy's
Kendall tau); the validation of submissions; and what each role may see."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from scipy import stats

from service.sample import CollectionSpec, generate
from tests.integration.conftest import Backend, auth, wait_for

SPEC = CollectionSpec(topics=8, runs=8, depth=30, docs_per_topic=80, judged_per_topic=40, seed=5,
                      missing_topic_rate=0.0)
TEAMS = ("alpha", "beta", "gamma", "delta")


@dataclass
class Track:
    client: Any
    cid: int
    tokens: dict[str, str]
    qrels: str
    runs: dict[str, str]
    backend: Backend


@pytest.fixture
def track(backend: Backend) -> Iterator[Track]:
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.access import create_token
    from service.store.db import transaction
    from workers.tasks import send

    backend.start_worker()
    celery = backend.celery()
    with transaction(backend.factory()) as s:
        admin, _ = create_token(s, "admin", name="root")
    qrels, runs = generate(SPEC)
    with TestClient(app=create_app(backend.database_url, lambda f: send(f, celery))) as c:
        a = auth(admin)
        cid = c.post("/api/collections", json={"name": "judged task", "official_metric": "nDCG@10",
                                               "metrics": ["AP", "nDCG@10"]}, headers=a).json()["id"]
        org = c.post("/api/tokens", json={"role": "organiser", "collections": [cid]}, headers=a).json()["token"]
        tokens = {"organiser": org}
        for team in TEAMS:
            assert c.post("/api/teams", json={"name": team}, headers=a).status_code == 201
            assert c.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
            tokens[team] = c.post("/api/tokens", json={"role": "participant", "team": team},
                                  headers=auth(org)).json()["token"]
        assert c.post(f"/api/collections/{cid}/qrels", content=qrels, headers=auth(org)).status_code == 201
        for i, (tag, text) in enumerate(runs.items()):
            r = c.post(f"/api/collections/{cid}/runs", content=text, headers=auth(tokens[TEAMS[i % 2]]))
            assert r.status_code == 201, r.text
        yield Track(c, cid, tokens, qrels, runs, backend)


def _relabelled(qrels: str, share: float, seed: int) -> str:
    """The official judgments with ``share`` of the labels drawn again at random."""
    rng = random.Random(seed)
    out = []
    for line in qrels.splitlines():
        topic, docno, label = line.split()
        level = int(label[1:])
        if level >= 0 and rng.random() < share:
            level = rng.choice([0, 1, 2, 3])
        out.append(f"{topic} {docno} L{max(level, 0)}")
    return "\n".join(out) + "\n"


def _wait_board(track: Track, token: str, count: int) -> dict[str, Any]:
    c, h = track.client, auth(token)

    def ready() -> dict[str, Any] | None:
        doc = c.get(f"/api/collections/{track.cid}/judge-board", headers=h).json()
        if len(doc["rows"]) == count and not doc["stale"]:
            return doc
        c.post(f"/api/collections/{track.cid}/judge-board", json={}, headers=h)  # queued again once the jobs finish
        return None

    return wait_for(ready, 180, "the judge board", track.backend)


def _per_topic(qrels: str, runs: dict[str, str]) -> dict[str, np.ndarray]:
    """topic -> nDCG@10 of each run (sorted by tag), computed by the core from the files."""
    from service.formats.readers import parse_qrels, parse_run
    from service.metrics.scoring import EvalSettings, evaluate

    tags = sorted(runs)
    result = evaluate(parse_qrels(qrels.encode(), "qrels"), [parse_run(runs[t].encode(), t) for t in tags],
                      ["nDCG@10"], EvalSettings())
    assert list(result.runs) == tags
    return dict(zip(result.topics, result.per_topic("nDCG@10").T))


def _matrices(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Both as (topics, runs) over the topics either scored (sorted), NaN where one did not."""
    topics = sorted(set(a) | set(b))
    n = len(next(iter(a.values())))
    blank = np.full(n, np.nan)
    return (np.array([a.get(t, blank) for t in topics]), np.array([b.get(t, blank) for t in topics]))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_judges_track_ranks_submitted_judges_by_agreement_with_the_hidden_official_set(track: Track) -> None:
    from service.metrics.stats.judge_meta import judge_agreement

    c, cid = track.client, track.cid
    org = auth(track.tokens["organiser"])
    judged = {"gamma": _relabelled(track.qrels, 0.1, 1), "delta": _relabelled(track.qrels, 1.0, 2)}
    r = c.post(f"/api/collections/{cid}/judge-submissions", params={"name": "g1"}, content=judged["gamma"],
               headers=auth(track.tokens["gamma"]))
    assert r.status_code == 409 and "judges track" in r.text  # not open yet
    r = c.put(f"/api/collections/{cid}/judge-track", json={"accepts_judgments": True, "measure": "kendall",
                                                          "resamples": 500, "max_sets_per_team": 1}, headers=org)
    assert r.status_code == 200 and r.json()["accepts_judgments"] is True, r.text

    # Validation, line by line, before anything is stored.
    g = auth(track.tokens["gamma"])
    first = judged["gamma"].splitlines()[0].split()
    for bad, what in ((f"{first[0]} NOT-POOLED L1\n", "not in the pool"), (f"{first[0]} {first[1]} L7\n", "scale"),
                      ("9999 X L1\n", "nothing to judge")):
        r = c.post(f"/api/collections/{cid}/judge-submissions", params={"name": "g1"}, content=bad, headers=g)
        assert r.status_code == 422 and what in r.text and '"line":1' in r.text, r.text
    assert c.get(f"/api/collections/{cid}/judgment-sets", headers=g).json()["items"] == []

    for team in ("gamma", "delta"):
        r = c.post(f"/api/collections/{cid}/judge-submissions",
                   params={"name": f"{team}-llm", "model": "m-1", "prompt": "p"},
                   content=judged[team], headers=auth(track.tokens[team]))
        assert r.status_code == 201, r.text
        assert r.json()["judgment_set"] == f"{team}-llm" and r.json()["coverage"] == pytest.approx(1.0)
    r = c.post(f"/api/collections/{cid}/judge-submissions", params={"name": "gamma-2"}, content=judged["gamma"],
               headers=g)
    assert r.status_code == 409 and "limit" in r.text  # one set per team here
    r = c.post(f"/api/collections/{cid}/judge-submissions", params={"name": "delta-llm"}, content=judged["gamma"],
               headers=g)
    assert r.status_code == 409 and "taken" in r.text  # another team's set

    board = _wait_board(track, track.tokens["organiser"], 2)
    assert (board["measure"], board["metric"], board["official_set"]) == ("kendall", "nDCG@10", "official")
    rows = {row["judgment_set"]: row for row in board["rows"]}
    assert [row["judgment_set"] for row in board["rows"]] == ["gamma-llm", "delta-llm"]  # the noisier judge last
    assert rows["gamma-llm"]["team"] == "gamma" and rows["gamma-llm"]["runs"] == len(track.runs)

    # The figures, recomputed from the files by the core and by scipy.
    for name, team in (("gamma-llm", "gamma"), ("delta-llm", "delta")):
        official, candidate = _matrices(_per_topic(track.qrels, track.runs), _per_topic(judged[team], track.runs))
        expected = judge_agreement(official, candidate, "kendall", resamples=500, level=0.95, seed=0)
        row = rows[name]
        assert row["value"] == pytest.approx(expected.value, abs=1e-12)
        assert (row["low"], row["high"]) == (pytest.approx(expected.low, abs=1e-12),
                                            pytest.approx(expected.high, abs=1e-12))
        tau = stats.kendalltau(np.nanmean(official, axis=0), np.nanmean(candidate, axis=0), variant="b").statistic
        assert row["value"] == pytest.approx(tau, abs=1e-12)
        both = ~np.isnan(official).all(axis=1) & ~np.isnan(candidate).all(axis=1)
        bias = np.mean(np.nanmean(candidate[both], axis=1) - np.nanmean(official[both], axis=1))
        assert row["bias"] == pytest.approx(bias, abs=1e-12)

    # What each role sees: a team its own row until release, never the official judgments.
    own = c.get(f"/api/collections/{cid}/judge-board", headers=g).json()
    assert [row["judgment_set"] for row in own["rows"]] == ["gamma-llm"] and own["released"] is False
    alpha = c.get(f"/api/collections/{cid}/judge-board", headers=auth(track.tokens["alpha"])).json()
    assert alpha["rows"] == []
    assert [s["name"] for s in c.get(f"/api/collections/{cid}/judgment-sets", headers=g).json()["items"]] == [
        "gamma-llm"]
    for path in ("judgment-sets/official", "judgment-sets/delta-llm"):
        assert c.get(f"/api/collections/{cid}/{path}", headers=g).status_code == 403
    assert c.get(f"/api/collections/{cid}/judgment-sets/gamma-llm", headers=g).status_code == 200
    for path in ("qrels", "qrels/compare?a=1&b=2", "judgment-sets/compare?a=official&b=gamma-llm"):
        assert c.get(f"/api/collections/{cid}/{path}", headers=g).status_code in (403, 404), path
    version = rows["gamma-llm"]["version"]
    assert c.get(f"/api/collections/{cid}/leaderboard", params={"qrels_version": version},
                 headers=g).status_code == 404
    assert c.put(f"/api/collections/{cid}/judge-track", json={"released": True}, headers=g).status_code == 403
    assert c.post(f"/api/collections/{cid}/judge-board", json={}, headers=g).status_code == 403
    assert c.put(f"/api/collections/{cid}/judge-track", json={"released": True}, headers=org).status_code == 200
    released = c.get(f"/api/collections/{cid}/judge-board", headers=auth(track.tokens["alpha"])).json()
    assert [row["judgment_set"] for row in released["rows"]] == ["gamma-llm", "delta-llm"]
    assert c.get(f"/api/collections/{cid}/judge-board").status_code == 401  # a private collection

    # The participants' client: a new version of the team's set, and the board.
    from service.client import Client, Upload

    # (not closed: the test client's transport is closed with the test client)
    client = Client("http://testserver.local", track.tokens["gamma"], transport=c._transport, retries=0)
    doc = client.submit_judgments(cid, Upload("again.qrels", judged["gamma"].encode(), "text/plain"), "gamma-llm",
                                  model="m-2", idempotency_key="k-1")
    assert doc["judgment_set"] == "gamma-llm" and doc["version"] > version
    assert client.submit_judgments(cid, Upload("again.qrels", judged["gamma"].encode(), "text/plain"),
                                   "gamma-llm", model="m-2", idempotency_key="k-1") == doc  # a retry
    seen = client.judge_board(cid)
    assert [r["judgment_set"] for r in seen["rows"]] == ["gamma-llm", "delta-llm"] and seen["stale"] is True
