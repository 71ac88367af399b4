"""The judgment loop over the API with a real Celery worker, on SQLite and PostgreSQL.

A generated task of 10 teams x 3 runs is pooled at depth 20; two simulated assessors judge
their topics from a hidden ground truth; the judgments become qrels versions and every run
is evaluated by the worker; a late run is added and pooled incrementally; the reusability
analysis (pool statistics, unique relevant documents, leave-one-team-out) is computed by the
worker and checked against a direct computation with trec_eval (pytrec-eval-terrier).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from service.sample import CollectionSpec, generate
from tests.integration.conftest import Backend, auth, wait_for

SPEC = CollectionSpec(topics=8, runs=31, depth=50, docs_per_topic=200, judged_per_topic=120, seed=21,
                      missing_topic_rate=0.0)
TOPICS = [f"{i + 1:04d}" for i in range(SPEC.topics)]
DEPTH = 20


@dataclass
class Task:
    client: Any
    cid: int
    tokens: dict[str, str]
    runs: dict[str, str]  # tag -> text (RUN-31 is the late run)
    truth: dict[str, dict[str, int]]  # the hidden ground truth: topic -> docno -> level
    backend: Backend


def ranking(text: str) -> dict[str, list[str]]:
    """topic -> docnos best first (score descending, ties by docno descending, as trec_eval)."""
    rows: dict[str, list[tuple[float, str]]] = {}
    for line in text.splitlines():
        t, _, d, _, score, _ = line.split()
        rows.setdefault(t, []).append((float(score), d))
    return {t: [d for _, d in sorted(v, key=lambda x: (-x[0], _neg(x[1])))] for t, v in rows.items()}


def _neg(docno: str) -> tuple[int, ...]:
    return tuple(-b for b in docno.encode())


def judge(task: Task, lines: str) -> str:
    """The simulated assessor: each downloaded ``topic docno`` line gets its true level."""
    out = []
    for line in lines.splitlines():
        topic, docno = line.split()
        out.append(f"{topic} {docno} L{max(task.truth[topic].get(docno, 0), 0)}")
    return "\n".join(out) + "\n"


@pytest.fixture
def task(backend: Backend) -> Iterator[Task]:
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction
    from workers.tasks import send

    backend.start_worker()
    celery = backend.celery()
    with transaction(backend.factory()) as s:
        admin, _ = create_token(s, "admin", name="root")
    qrels, runs = generate(SPEC)
    truth: dict[str, dict[str, int]] = {}
    for line in qrels.splitlines():
        t, d, label = line.split()
        truth.setdefault(t, {})[d] = int(label[1:])
    with TestClient(app=create_app(backend.database_url, lambda f: send(f, celery))) as c:
        a = auth(admin)
        # B = 1000, no sequential extension: this test reads no verdict, and the default (10,000
        # resamples, extended for undecided pairs) costs ~10 s a round of tests at 31 runs.
        cid = c.post("/api/collections", json={"name": "pooled task", "official_metric": "AP",
                                               "metrics": ["AP", "nDCG@10", "bpref"],
                                               "evaluation": {"max_level": 3},
                                               "significance": {"resamples": 1000, "max_resamples": 1000}},
                     headers=a).json()["id"]
        org = c.post("/api/tokens", json={"role": "organiser", "collections": [cid]}, headers=a).json()["token"]
        tokens = {"admin": admin, "organiser": org}
        for i in range(11):
            team = f"team{i:02d}"
            assert c.post("/api/teams", json={"name": team}, headers=a).status_code == 201
            assert c.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
            tokens[team] = c.post("/api/tokens", json={"role": "participant", "team": team},
                                  headers=auth(org)).json()["token"]
        assert c.post(f"/api/collections/{cid}/topics", json={"topics": TOPICS}, headers=auth(org)).status_code == 201
        for i, (tag, text) in enumerate(list(runs.items())[:30]):
            r = c.post(f"/api/collections/{cid}/runs", content=text, headers=auth(tokens[f"team{i // 3:02d}"]))
            assert r.status_code == 201 and r.json()["job"] is None, r.text  # no qrels yet: stored, waiting
            if i % 3 == 0:
                assert c.patch(f"/api/runs/{r.json()['id']}/settings", json={"primary": True},
                               headers=auth(tokens[f"team{i // 3:02d}"])).status_code == 200
        for name, topics in (("assessor1", TOPICS[:4]), ("assessor2", TOPICS[4:])):
            r = c.post("/api/tokens", json={"role": "assessor", "name": name, "collections": [cid], "topics": topics},
                       headers=auth(org))
            assert r.status_code == 201, r.text
            tokens[name] = r.json()["token"]
        yield Task(c, cid, tokens, runs, truth, backend)


def build_pool(task: Task, **body: object) -> dict[str, Any]:
    """Ask for a pool: the request answers at once (202, pending) and the worker builds it;
    its build names the pool once done."""
    c, org = task.client, auth(task.tokens["organiser"])
    r = c.post(f"/api/collections/{task.cid}/pools", json=body, headers=org)
    assert r.status_code == 202 and r.json()["status"] == "pending" and r.json()["pool"] is None, r.text
    build = wait_for(lambda: (lambda d: d if d["status"] in ("done", "failed") else None)(
        c.get(f"/api/pool-builds/{r.json()['id']}", headers=org).json()), 120, "the pool build", task.backend)
    assert build["status"] == "done" and build["error"] == "", build
    assert build["params"] == {"depth": body["depth"], "selection": r.json()["params"]["selection"],
                               "max_priority": body.get("max_priority")}
    return c.get(f"/api/pools/{build['pool']}", headers=org).json()


def pool_union(runs: dict[str, str], tags: list[str], depth: int) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for tag in tags:
        for topic, docs in ranking(runs[tag]).items():
            out.setdefault(topic, set()).update(docs[:depth])
    return out


def assess(task: Task, assessor: str, pool_id: int) -> list[int]:
    """The assessor downloads each assigned topic of the pool and uploads its judgments."""
    c, h = task.client, auth(task.tokens[assessor])
    items = [i for i in c.get("/api/assessments", headers=h).json()["items"] if i["pool"] == pool_id]
    judged = []
    for item in items:
        text = c.get(item["download"], headers=h).text
        docs = [line.split()[1] for line in text.splitlines()]
        assert len(docs) == item["documents"]
        assert len(docs) < 5 or docs != sorted(docs)  # not in rank or name order
        assert c.get(item["download"], headers=h).text == text  # the same order every time
        judged.append(judge(task, text))
    # all of the assessor's topics in one upload: one new qrels version
    r = c.post(f"/api/pools/{pool_id}/judgments", content="".join(judged), headers=h)
    assert r.status_code == 201, r.text
    assert r.json()["topics"] == sorted(i["topic"] for i in items)
    return [r.json()["qrels_version"]]


def board(task: Task, metric: str = "AP") -> dict[str, Any]:
    return task.client.get(f"/api/collections/{task.cid}/leaderboard", params={"metric": metric},
                           headers=auth(task.tokens["organiser"])).json()


def settled(task: Task, n_runs: int, version: int) -> dict[str, Any] | None:
    doc = board(task)
    done = (doc["qrels_version"] == version and len(doc["rows"]) == n_runs and not doc["reevaluation_in_progress"]
            and all(r["judged_at_10"] is not None for r in doc["rows"]))
    return doc if done else None


def test_pool_judge_evaluate_then_pool_a_late_run_incrementally(task: Task) -> None:
    c, cid, org = task.client, task.cid, auth(task.tokens["organiser"])
    tags = list(task.runs)[:30]
    # each team's primary runs only: 10 runs
    primary = build_pool(task, depth=DEPTH, primary_only=True)
    assert len(primary["runs"]) == 10 and primary["runs"] == tags[0::3]
    # the pool that is judged: all 30 runs at depth 20, exactly the union of their top 20
    pool = build_pool(task, depth=DEPTH)
    union = pool_union(task.runs, tags, DEPTH)
    assert pool["size"] == sum(len(v) for v in union.values())
    assert {t: v["new"] for t, v in pool["counts"].items()} == {t: len(v) for t, v in union.items()}
    assert pool["excludes_judged_in_qrels_version"] is None

    # bad uploads name the line and store nothing
    h1 = auth(task.tokens["assessor1"])
    text = c.get(f"/api/pools/{pool['id']}/topics/{TOPICS[0]}", headers=h1).text
    good = judge(task, text).splitlines()
    cases = [
        ("\n".join([*good, f"{TOPICS[0]} NOT-IN-POOL L1"]) + "\n", len(good) + 1, "not in the pool"),
        ("\n".join(good[1:]) + "\n", None, "not judged"),
        ("\n".join([good[0].rsplit(" ", 1)[0] + " L7", *good[1:]]) + "\n", 1, "unknown level 7"),
        ("\n".join([*good, good[0]]) + "\n", len(good) + 1, "judged twice"),
        (f"{TOPICS[5]} X L1\n", 1, "not assigned to you"),
    ]
    for body, line, message in cases:
        r = c.post(f"/api/pools/{pool['id']}/judgments", content=body, headers=h1)
        assert r.status_code == 422 and message in r.json()["error"]["message"], (message, r.text)
        assert r.json()["error"]["line"] == line
    assert c.get(f"/api/collections/{cid}/qrels", headers=org).json()["items"] == []

    versions = assess(task, "assessor1", pool["id"]) + assess(task, "assessor2", pool["id"])
    assert versions == [1, 2]  # one qrels version per accepted upload
    doc = wait_for(lambda: settled(task, 30, 2), 240, "the 30 runs evaluated on qrels version 2", task.backend)
    # every run's top 10 is inside the depth-20 pool, so fully judged
    assert all(r["judged_at_10"] == 1.0 for r in doc["rows"])
    expected = _direct_ap({t: task.runs[t] for t in tags}, _judged(task.truth, union))
    for row in doc["rows"]:
        assert row["mean"] == pytest.approx(expected[row["run"]], abs=1e-9)

    # a late run: evaluated on the current qrels, then pooled incrementally
    late = task.runs["RUN-31"]
    r = c.post(f"/api/collections/{cid}/runs", content=late, headers=auth(task.tokens["team10"]))
    assert r.status_code == 201 and r.json()["job"] is not None
    doc = wait_for(lambda: settled(task, 31, 2), 240, "the late run evaluated", task.backend)
    late_row = next(r for r in doc["rows"] if r["run"] == "RUN-31")
    new_docs = {t: set(d[:DEPTH]) - union.get(t, set()) for t, d in ranking(late).items()}
    assert any(new_docs.values())  # the late run brings documents nobody judged
    scored = _scored_topics(_judged(task.truth, union))  # Judged@10 is averaged over the scored topics
    top10_unjudged = sum(len(set(d[:10]) - union.get(t, set())) for t, d in ranking(late).items() if t in scored)
    assert late_row["judged_at_10"] == pytest.approx(1 - top10_unjudged / (10 * len(scored)), abs=1e-9)
    incremental = build_pool(task, depth=DEPTH)
    assert incremental["excludes_judged_in_qrels_version"] == 2 and incremental["number"] == 3
    assert {t: v["new"] for t, v in incremental["counts"].items() if v["new"]} == {
        t: len(v) for t, v in new_docs.items() if v}
    assess(task, "assessor1", incremental["id"])
    assess(task, "assessor2", incremental["id"])
    final_version = board(task)["newest_qrels_version"]
    doc = wait_for(lambda: settled(task, 31, final_version), 240, "the re-evaluation after the late pool",
                   task.backend)
    assert all(r["judged_at_10"] == 1.0 for r in doc["rows"])

    # reusability, computed by the worker
    full_union = pool_union(task.runs, list(task.runs), DEPTH)
    r = c.post(f"/api/collections/{cid}/analyses", json={"metric": "AP"}, headers=org)
    assert r.status_code == 202 and r.json()["status"] == "queued"
    aid = r.json()["id"]
    analysis = wait_for(lambda: (lambda d: d if d["status"] in ("done", "failed") else None)(
        c.get(f"/api/analyses/{aid}", headers=org).json()), 240, "the reusability analysis", task.backend)
    assert analysis["status"] == "done", analysis["error"]
    result = analysis["result"]
    assert result["depth"] == DEPTH and result["pool"] == 3
    assert {t["topic"]: t["pool_size"] for t in result["topics"]} == {t: len(v) for t, v in full_union.items()}
    assert all(t["judged_share"] == 1.0 for t in result["topics"])
    teams = {tag: f"team{i // 3:02d}" for i, tag in enumerate(task.runs)}
    judged = _judged(task.truth, full_union)
    direct = _direct_loto(task.runs, teams, judged, DEPTH)
    rows = {row["run"]: row for row in result["leave_one_team_out"]["runs"]}
    assert set(rows) == set(task.runs)
    for tag, (full, reduced) in direct.items():
        assert rows[tag]["full"] == pytest.approx(full, abs=1e-9)
        assert rows[tag]["reduced"] == pytest.approx(reduced, abs=1e-9)
    unique = {t["team"]: t["unique_relevant"] for t in result["teams"]}
    assert unique == _direct_unique(task.runs, teams, judged, DEPTH)


def test_assessors_see_only_their_pools_and_topics(task: Task) -> None:
    c, cid, org = task.client, task.cid, auth(task.tokens["organiser"])
    pool = build_pool(task, depth=5)
    h = auth(task.tokens["assessor1"])
    run_id = c.get(f"/api/collections/{cid}/runs", headers=org).json()["items"][0]["id"]
    denied = [("GET", f"/api/collections/{cid}"), ("GET", f"/api/collections/{cid}/leaderboard"),
              ("GET", f"/api/collections/{cid}/runs"), ("GET", f"/api/runs/{run_id}"),
              ("GET", f"/api/runs/{run_id}/file"), ("GET", f"/api/collections/{cid}/qrels"),
              ("GET", f"/api/pools/{pool['id']}"),  # the organisers' view names the runs
              ("GET", f"/api/collections/{cid}/pools"), ("POST", f"/api/collections/{cid}/pools"),
              ("GET", f"/api/collections/{cid}/assessors"), ("POST", f"/api/collections/{cid}/analyses"),
              ("GET", f"/api/pools/{pool['id']}/topics/{TOPICS[6]}")]  # another assessor's topic
    for method, path in denied:
        r = c.request(method, path, headers=h, json={"depth": 5} if method == "POST" else None)
        assert r.status_code == 403, (path, r.status_code, r.text)
    assert c.get("/api/collections", headers=h).json()["items"] == []
    items = c.get("/api/assessments", headers=h).json()["items"]
    assert {i["topic"] for i in items} == set(TOPICS[:4]) and all(i["pool"] == pool["id"] for i in items)
    body = c.get(items[0]["download"], headers=h).text
    assert "RUN-" not in body and "team" not in body and len(body.split("\n")[0].split()) == 2
    # participants and anonymous callers cannot read pools either
    for token in (task.tokens["team00"], None):
        assert c.get(items[0]["download"], headers=auth(token)).status_code in (401, 403)
        assert c.get("/api/assessments", headers=auth(token)).status_code in (401, 403)
    # organisers reassign topics; the assessor's view follows
    tid = c.get(f"/api/collections/{cid}/assessors", headers=org).json()["items"][0]["token_id"]
    r = c.put(f"/api/collections/{cid}/assessors/{tid}", json={"topics": [TOPICS[7]]}, headers=org)
    assert r.status_code == 200 and r.json()["topics"] == [TOPICS[7]]
    assert {i["topic"] for i in c.get("/api/assessments", headers=h).json()["items"]} == {TOPICS[7]}
    assert c.put(f"/api/collections/{cid}/assessors/{tid}", json={"topics": ["nope"]}, headers=org).status_code == 409


# ------------------------------------------------------------------- direct computations
def _judged(truth: dict[str, dict[str, int]], union: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    """What the simulated assessors produce: the pool's documents with their true levels."""
    return {t: {d: max(truth[t].get(d, 0), 0) for d in docs} for t, docs in union.items()}


def _trec_ap(judgments: dict[str, dict[str, int]], text: str, topics: list[str]) -> float:
    import pytrec_eval

    q = {t: js for t, js in judgments.items() if js}
    r = {t: {d: float(len(docs) - i) for i, d in enumerate(docs)} for t, docs in ranking(text).items()}
    per = pytrec_eval.RelevanceEvaluator(q, {"map"}).evaluate(r)
    return float(np.mean([per[t]["map"] if t in per else 0.0 for t in topics]))


def _scored_topics(judgments: dict[str, dict[str, int]]) -> list[str]:
    return sorted(t for t, js in judgments.items() if any(v >= 1 for v in js.values()))


def _direct_ap(runs: dict[str, str], judgments: dict[str, dict[str, int]]) -> dict[str, float]:
    topics = _scored_topics(judgments)
    return {tag: _trec_ap(judgments, text, topics) for tag, text in runs.items()}


def _direct_loto(runs: dict[str, str], teams: dict[str, str], judgments: dict[str, dict[str, int]],
                 depth: int) -> dict[str, tuple[float, float]]:
    topics = _scored_topics(judgments)
    out = {}
    for tag, text in runs.items():
        mine = pool_union(runs, [t for t in runs if teams[t] == teams[tag]], depth)
        theirs = pool_union(runs, [t for t in runs if teams[t] != teams[tag]], depth)
        reduced = {t: {d: v for d, v in js.items() if not (v >= 1 and d in mine.get(t, set())
                                                           and d not in theirs.get(t, set()))}
                   for t, js in judgments.items()}
        out[tag] = (_trec_ap(judgments, text, topics), _trec_ap(reduced, text, topics))
    return out


def _direct_unique(runs: dict[str, str], teams: dict[str, str], judgments: dict[str, dict[str, int]],
                   depth: int) -> dict[str, int]:
    out = {}
    for team in sorted(set(teams.values())):
        mine = pool_union(runs, [t for t in runs if teams[t] == team], depth)
        theirs = pool_union(runs, [t for t in runs if teams[t] != team], depth)
        out[team] = sum(1 for t, docs in mine.items() for d in docs - theirs.get(t, set())
                        if judgments.get(t, {}).get(d, 0) >= 1)
    return out


def test_pool_judgments_and_reusability_commands(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`cranfield pool`, `judgments add` and `reusability` on the embedded default, with a worker."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from tests.integration.conftest import REPO

    env = {k: v for k, v in os.environ.items() if not k.startswith("CRANFIELD_")}
    env["PYTHONPATH"] = str(REPO)

    def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "service.cli", *args], cwd=tmp_path, env=env, check=check,
                              capture_output=True, text=True)

    sample = REPO / "samples" / "ntcir-like"
    cli("db", "upgrade")
    cli("load", "--collection", "demo", "--qrels", str(sample / "qrels.ntcir"), "--runs", str(sample / "runs"))
    out = cli("pool", "--collection", "demo", "--depth", "30", "--out", "pools").stdout
    assert "pool 1 (id 1) of demo: depth 30, 8 runs (all)" in out and "leaving out what qrels version 1 judges" in out
    files = sorted((tmp_path / "pools" / "pool-1").glob("*.txt"))
    summary = json.loads((tmp_path / "pools" / "pool-1" / "pool.json").read_text())
    assert files and sum(len(f.read_text().splitlines()) for f in files) == summary["size"] > 0
    # judge everything non-relevant except the first document of each file, in TREC form
    lines = []
    for f in files:
        for i, line in enumerate(f.read_text().splitlines()):
            topic, docno = line.split()
            lines.append(f"{topic} 0 {docno} {1 if i == 0 else 0}")
    bad = tmp_path / "bad.qrels"
    bad.write_text("\n".join(lines[:-1] + [lines[-1].rsplit(" ", 1)[0] + " 9"]) + "\n")
    refused = cli("judgments", "add", "--pool", "1", str(bad), check=False)
    assert refused.returncode != 0 and f"bad.qrels:{len(lines)}" in refused.stderr and "unknown level 9" in refused.stderr
    good = tmp_path / "judged.qrels"
    good.write_text("\n".join(lines) + "\n")
    out = cli("judgments", "add", "--pool", "1", str(good)).stdout
    assert out.startswith(f"qrels version 2: {len(lines)} judgments")
    worker = subprocess.Popen([sys.executable, "-m", "service.cli", "worker", "--concurrency", "1"], cwd=tmp_path,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        doc = json.loads(cli("reusability", "--collection", "demo", "--metric", "AP", "--wait", "120").stdout)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    assert doc["status"] == "done" and doc["qrels_version"] == 2 and doc["params"]["depth"] == 30
    assert len(doc["result"]["leave_one_team_out"]["runs"]) == 8
    assert all(t["judged_share"] == 1.0 for t in doc["result"]["topics"])  # the pool is fully judged now
