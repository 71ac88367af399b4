"""Stratified-sampling pools over the API, with the workers' part done in-process, on SQLite and
PostgreSQL (issue 17): requested like depth pools (`kind: "stratified"`, `strata`, `seed`),
drawn by the core's `stratified_sample`, judged blind (the sampled documents only), and the
accepted judgments stored as sampled qrels (NIST's five columns) that the workers evaluate with
xinfAP and infNDCG.

Every expected number comes from the run files themselves: the pool is each topic's union of
the runs' top ranks, a document's stratum the one holding its best rank over the runs (computed
here from the files), the sample the core's draw with the same seed, and the scores the core's
`SampleEvaluator` (sample_eval.pl's estimators; tests/unit/test_inferred.py) on the sample
judged from the generator's hidden ground truth.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select

from service.formats.readers import parse_run
from service.metrics.inferred_sampled import SampleEvaluator
from service.metrics.sampling import stratified_sample
from service.sample import CollectionSpec, generate
from service.store.models import Pool, PoolDocument, QrelsVersion
from tests.integration.conftest import Backend, auth, run_inline

SPEC = CollectionSpec(topics=6, runs=12, depth=60, docs_per_topic=150, judged_per_topic=100, seed=17,
                      missing_topic_rate=0.0, no_relevant_topics=0)
TOPICS = [f"{i + 1:04d}" for i in range(SPEC.topics)]
STRATA = [[1, 5, 1.0], [6, 20, 0.5], [21, 50, 0.2]]
SEED = 20261124


@dataclass
class Task:
    client: Any
    cid: int
    tokens: dict[str, str]
    runs: dict[str, str]  # tag -> text, in submission order (team k has runs 3k, 3k+1, 3k+2)
    truth: dict[str, dict[str, int]]  # topic -> docno -> level (the hidden ground truth)
    backend: Backend
    factory: Any


@pytest.fixture
def task(backend: Backend) -> Iterator[Task]:
    """A collection judged by stratified sampling: xinfAP official, infNDCG beside it; 4 teams of
    3 runs (the first of each primary); two assessors with 3 topics each; no qrels yet."""
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction

    factory = backend.factory()
    with transaction(factory) as s:
        admin, _ = create_token(s, "admin", name="root")
    qrels, runs = generate(SPEC)
    truth: dict[str, dict[str, int]] = {}
    for line in qrels.splitlines():
        t, d, label = line.split()
        truth.setdefault(t, {})[d] = max(int(label[1:]), 0)
    app = create_app(backend.database_url, lambda followups: run_inline(factory, followups))
    with TestClient(app=app) as c:
        a = auth(admin)
        cid = c.post("/api/collections", json={"name": "sampled task", "official_metric": "xinfAP",
                                               "metrics": ["xinfAP", "infNDCG"], "evaluation": {"max_level": 3}},
                     headers=a).json()["id"]
        other = c.post("/api/collections", json={"name": "other"}, headers=a).json()["id"]
        tokens = {"admin": admin}
        tokens["organiser"] = c.post("/api/tokens", json={"role": "organiser", "collections": [cid]},
                                     headers=a).json()["token"]
        tokens["other_organiser"] = c.post("/api/tokens", json={"role": "organiser", "collections": [other]},
                                           headers=a).json()["token"]
        org = auth(tokens["organiser"])
        for i in range(4):
            team = f"team{i}"
            assert c.post("/api/teams", json={"name": team}, headers=a).status_code == 201
            assert c.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
            tokens[team] = c.post("/api/tokens", json={"role": "participant", "team": team},
                                  headers=org).json()["token"]
        assert c.post(f"/api/collections/{cid}/topics", json={"topics": TOPICS}, headers=org).status_code == 201
        for i, text in enumerate(runs.values()):
            team = auth(tokens[f"team{i // 3}"])
            r = c.post(f"/api/collections/{cid}/runs", content=text, headers=team)
            assert r.status_code == 201 and r.json()["job"] is None, r.text  # no qrels yet: stored, waiting
            if i % 3 == 0:
                assert c.patch(f"/api/runs/{r.json()['id']}/settings", json={"primary": True},
                               headers=team).status_code == 200
        for name, topics in (("assessor1", TOPICS[:3]), ("assessor2", TOPICS[3:])):
            r = c.post("/api/tokens", json={"role": "assessor", "name": name, "collections": [cid],
                                            "topics": topics}, headers=org)
            assert r.status_code == 201, r.text
            tokens[name] = r.json()["token"]
        yield Task(c, cid, tokens, runs, truth, backend, factory)


def request(task: Task, token: str = "organiser", **body: object) -> Any:
    return task.client.post(f"/api/collections/{task.cid}/pools", json=body, headers=auth(task.tokens[token]))


def build(task: Task, **body: object) -> dict[str, Any]:
    """Ask for a stratified pool; the in-process worker builds it once the request commits."""
    r = request(task, kind="stratified", **body)
    assert r.status_code == 202 and r.json()["status"] == "pending", r.text
    org = auth(task.tokens["organiser"])
    done = task.client.get(f"/api/pool-builds/{r.json()['id']}", headers=org).json()
    assert done["status"] == "done" and done["error"] == "", done
    assert done["params"]["kind"] == "stratified" and done["params"]["strata"] == body["strata"]
    return task.client.get(f"/api/pools/{done['pool']}", headers=org).json()


def rankings(runs: dict[str, str], tags: list[str]) -> dict[str, list[list[str]]]:
    """topic -> each run's docnos best first (score descending, ties by docno descending: trec_eval)."""
    out: dict[str, list[list[str]]] = {}
    for tag in tags:
        rows: dict[str, list[tuple[float, str]]] = {}
        for line in runs[tag].splitlines():
            t, _, d, _, score, _ = line.split()
            rows.setdefault(t, []).append((float(score), d))
        for t, v in rows.items():
            ordered = sorted(v, key=lambda x: (-x[0], tuple(-b for b in x[1].encode())))
            out.setdefault(t, []).append([d for _, d in ordered])
    return out


def stored(task: Task, pool_id: int) -> dict[str, dict[str, tuple[int, int, float, bool]]]:
    """topic -> docno -> (stratum, best rank, inclusion probability, sampled), as stored."""
    out: dict[str, dict[str, tuple[int, int, float, bool]]] = {}
    with task.factory() as s:
        for row in s.scalars(select(PoolDocument).where(PoolDocument.pool_id == pool_id)):
            out.setdefault(row.topic, {})[row.docno] = (row.stratum, row.best_rank, row.inclusion_probability,
                                                        row.sampled)
    return out


def judged_text(task: Task, text: str) -> str:
    """The simulated assessor: each downloaded ``topic docno`` line gets its true level."""
    return "".join(f"{line} L{task.truth[line.split()[0]].get(line.split()[1], 0)}\n" for line in text.splitlines())


def test_a_stratified_pool_is_drawn_judged_and_evaluated_with_the_inferred_measures(task: Task) -> None:
    c, cid, org = task.client, task.cid, auth(task.tokens["organiser"])
    tags = list(task.runs)
    pool = build(task, strata=STRATA, seed=SEED)
    assert pool["kind"] == "stratified" and pool["seed"] == SEED and pool["depth"] == 50
    assert pool["runs"] == tags and pool["excludes_judged_in_qrels_version"] is None

    # the pool: each topic's union of the runs' top 50, each document in the stratum of its best rank
    ranked = rankings(task.runs, tags)
    docs = stored(task, pool["id"])
    assert set(docs) == set(TOPICS)
    for topic in TOPICS:
        best: dict[str, int] = {}
        for ranking in ranked[topic]:
            for rank, d in enumerate(ranking[:50], start=1):
                best[d] = min(best.get(d, rank), rank)
        assert set(docs[topic]) == set(best)
        for d, (stratum, best_rank, probability, _) in docs[topic].items():
            first, last, rate = STRATA[stratum]
            assert best_rank == best[d] and first <= best[d] <= last  # its best rank's stratum
            assert probability == rate  # inclusion probability = the stratum's rate
        assert all(s for k, _, _, s in docs[topic].values() if k == 0)  # rate 1: every document drawn
    # the draw is the core's, with the same seed
    core = stratified_sample({t: [r[:50] for r in rs] for t, rs in ranked.items()}, STRATA, SEED)
    assert {t: sorted(d for d, v in ds.items() if v[3]) for t, ds in docs.items()} == core.to_judge()
    assert pool["size"] == core.size == sum(v["new"] for v in pool["counts"].values())
    for topic, counts in pool["counts"].items():  # per-stratum population and sample
        pooled, drawn = core.topics[topic].stratum_sizes(3)
        assert (counts["pooled"], counts["sampled"], counts["union"]) == (pooled, drawn, len(docs[topic]))
    assert [(s["first_rank"], s["last_rank"], s["rate"]) for s in pool["strata"]] == [tuple(s) for s in STRATA]
    assert [s["sampled"] for s in pool["strata"]] == [sum(c["sampled"][k] for c in pool["counts"].values())
                                                      for k in range(3)]
    assert pool["strata"][0]["pooled"] == pool["strata"][0]["sampled"]

    # determinism: the same seed draws the same pool (documents, strata, draw, assessors' order);
    # another seed another draw
    again = build(task, strata=STRATA, seed=SEED)
    assert again["number"] == pool["number"] + 1 and stored(task, again["id"]) == docs
    assert again["counts"] == pool["counts"]
    assert (c.get(f"/api/pools/{again['id']}/topics/{TOPICS[0]}", headers=org).text
            == c.get(f"/api/pools/{pool['id']}/topics/{TOPICS[0]}", headers=org).text)
    other = build(task, strata=STRATA, seed=SEED + 1)
    assert stored(task, other["id"]) != docs
    # the run selections of depth pools
    primary = build(task, strata=STRATA, seed=SEED, selection="primary")
    assert primary["runs"] == tags[0::3] and primary["selection"] == "primary"

    # the assessors download exactly the sampled documents of their topics, in a seeded random order
    to_judge = core.to_judge()
    uploads: dict[str, str] = {}
    for assessor in ("assessor1", "assessor2"):
        h = auth(task.tokens[assessor])
        items = [i for i in c.get("/api/assessments", headers=h).json()["items"] if i["pool"] == pool["id"]]
        assert sorted(i["topic"] for i in items) == (TOPICS[:3] if assessor == "assessor1" else TOPICS[3:])
        body = ""
        for item in items:
            text = c.get(item["download"], headers=h).text
            listed = [line.split()[1] for line in text.splitlines()]
            assert sorted(listed) == to_judge[item["topic"]] and item["documents"] == len(listed)
            assert listed != sorted(listed)
            body += judged_text(task, text)
        uploads[assessor] = body
    # an unsampled document is refused, naming the line
    unsampled = next(d for d, v in docs[TOPICS[0]].items() if not v[3])
    bad = uploads["assessor1"] + f"{TOPICS[0]} {unsampled} L1\n"
    r = c.post(f"/api/pools/{pool['id']}/judgments", content=bad, headers=auth(task.tokens["assessor1"]))
    assert r.status_code == 422 and "not sampled" in r.json()["error"]["message"], r.text
    assert r.json()["error"]["line"] == len(bad.splitlines())

    # accepted judgments: a sampled qrels version each, every pooled document of the judged topics
    # in its stratum (1, 2, 3), the unsampled ones at -1
    judgments = {t: {d: task.truth[t].get(d, 0) for d in ds} for t, ds in to_judge.items()}
    for n, assessor in enumerate(("assessor1", "assessor2"), start=1):
        r = c.post(f"/api/pools/{pool['id']}/judgments", content=uploads[assessor],
                   headers=auth(task.tokens[assessor]))
        assert r.status_code == 201 and r.json()["qrels_version"] == n, r.text
        judged = TOPICS[:3] if n == 1 else TOPICS
        expected = stratified_sample({t: [r[:50] for r in ranked[t]] for t in judged}, STRATA, SEED)
        with task.factory() as s:
            version = s.scalar(select(QrelsVersion).where(QrelsVersion.collection_id == cid,
                                                          QrelsVersion.version == n))
            from service.evaluation.organising.setup import load_sampled_qrels

            assert version.format == "sampled"
            sample = load_sampled_qrels(version)
        assert sample.to_mapping() == expected.to_sampled_qrels(
            {t: judgments[t] for t in judged}).to_mapping()

    # the workers evaluated every run on it: xinfAP and infNDCG as the core's SampleEvaluator gives them
    evaluator = SampleEvaluator(sample)
    for metric in ("xinfAP", "infNDCG"):
        matrix = c.get(f"/api/collections/{cid}/matrix", params={"metric": metric}, headers=org).json()
        assert matrix["qrels_version"] == 2 and len(matrix["rows"]) == len(tags)
        for row in matrix["rows"]:
            core_run = parse_run(task.runs[row["run"]].encode(), row["run"], "score")
            direct = evaluator.evaluate(core_run).per_topic(metric)
            got = {t: v for t, v in zip(matrix["topics"], row["scores"]) if v is not None}
            assert set(got) <= set(direct) and len(got) >= len(TOPICS) - 1
            for t, v in got.items():
                assert v == pytest.approx(direct[t], abs=1e-12), (row["run"], t, metric)
            assert any(v > 0 for v in got.values())
    board = c.get(f"/api/collections/{cid}/leaderboard", headers=org).json()
    assert board["metric"] == "xinfAP" and len(board["rows"]) == len(tags)


def test_topics_the_pool_does_not_judge_yet_keep_their_ad_hoc_judgments(task: Task) -> None:
    """Over ad hoc qrels, a stratified pool's judged topics replace theirs; the other topics are
    carried as one stratum each (every judged document sampled, -1 kept as pooled-unjudged)."""
    c, org = task.client, auth(task.tokens["organiser"])
    adhoc = "".join(f"{t} {d} L{lv}\n" for t in TOPICS for d, lv in sorted(task.truth[t].items())[:40])
    assert c.post(f"/api/collections/{task.cid}/qrels", content=adhoc, headers=org).status_code == 201
    pool = build(task, strata=STRATA, seed=SEED)
    h = auth(task.tokens["assessor1"])
    body = "".join(judged_text(task, c.get(f"/api/pools/{pool['id']}/topics/{t}", headers=h).text)
                   for t in TOPICS[:3])
    r = c.post(f"/api/pools/{pool['id']}/judgments", content=body, headers=h)
    assert r.status_code == 201 and r.json()["qrels_version"] == 2, r.text
    ranked = rankings(task.runs, list(task.runs))
    sample = stratified_sample({t: [r[:50] for r in ranked[t]] for t in TOPICS[:3]}, STRATA, SEED)
    expected = sample.to_sampled_qrels({t: {d: task.truth[t].get(d, 0) for d in ds}
                                        for t, ds in sample.to_judge().items()}).to_mapping()
    for t in TOPICS[3:]:
        expected[t] = {d: ("1", lv) for d, lv in sorted(task.truth[t].items())[:40]}
    with task.factory() as s:
        from service.evaluation.organising.setup import load_sampled_qrels

        version = s.scalar(select(QrelsVersion).where(QrelsVersion.collection_id == task.cid,
                                                      QrelsVersion.version == 2))
        assert version.format == "sampled" and load_sampled_qrels(version).to_mapping() == expected


def test_bad_strata_are_refused_with_the_reason(task: Task) -> None:
    cases: list[tuple[dict[str, object], tuple[int, ...], str]] = [
        ({"strata": [[2, 10, 1.0]]}, (400,), "starts at rank 2"),
        ({"strata": [[1, 10, 1.0], [12, 20, 0.5]]}, (400,), "contiguous"),
        ({"strata": [[1, 10, 1.0], [11, 5, 0.5]]}, (400,), "before its first rank"),
        ({"strata": [[1, 10, 0.0]]}, (400,), "the rate of stratum 1 is 0.0; a rate lies in (0, 1]"),
        ({"strata": [[1, 10, 1.0], [11, 20, 1.5]]}, (400,), "the rate of stratum 2 is 1.5"),
        ({"strata": [[1, 10, 1.0], [11, 10_001, 0.1]]}, (400,), "reaches rank 10000 at most"),
        ({"strata": [[k, k, 1.0] for k in range(1, 22)]}, (400,), "21 strata; a stratified pool has at most 20"),
        ({"strata": []}, (400,), "needs its strata"),
        ({}, (400,), "needs its strata"),
        ({"strata": [[1, 10, 1.0]], "depth": 20}, (400,), "leave depth out"),
        # the schema's refusals name the field
        ({"strata": [[1, 10]]}, (422,), "strata[0]"),
        ({"strata": "1-10:1"}, (422,), "strata"),
        ({"strata": [[1, 10, 1.0]], "seed": -1}, (422,), "seed"),
    ]
    for body, statuses, message in cases:
        r = request(task, kind="stratified", **body)
        assert r.status_code in statuses and message in r.text, (body, r.status_code, r.text)
    r = request(task, depth=10, strata=[[1, 10, 1.0]])  # a depth pool takes no strata
    assert r.status_code == 400 and "stratified" in r.text, r.text
    org = auth(task.tokens["organiser"])
    assert task.client.get(f"/api/collections/{task.cid}/pools", headers=org).json()["items"] == []


def test_who_may_request_and_read_a_stratified_pool(task: Task) -> None:
    c, cid = task.client, task.cid
    body = {"kind": "stratified", "strata": STRATA, "seed": 1}
    for token in ("other_organiser", "team0", "assessor1"):
        assert request(task, token, **body).status_code == 403, token
    assert c.post(f"/api/collections/{cid}/pools", json=body).status_code == 401
    pool = build(task, strata=STRATA, seed=1)
    assert request(task, "admin", **body).status_code == 202
    h = auth(task.tokens["assessor1"])
    for path in (f"/api/pools/{pool['id']}", f"/api/collections/{cid}/pools",
                 f"/api/pools/{pool['id']}/topics/{TOPICS[3]}"):  # the organisers' view; another's topic
        assert c.get(path, headers=h).status_code == 403, path
    for token in ("other_organiser", "team0"):
        assert c.get(f"/api/pools/{pool['id']}", headers=auth(task.tokens[token])).status_code == 403
        assert c.get(f"/api/pools/{pool['id']}/topics/{TOPICS[0]}",
                     headers=auth(task.tokens[token])).status_code == 403
    text = c.get(f"/api/pools/{pool['id']}/topics/{TOPICS[0]}", headers=h).text
    assert text and all(len(line.split()) == 2 for line in text.splitlines())  # no stratum, rank or run
    items = c.get("/api/assessments", headers=h).json()["items"]
    assert {i["topic"] for i in items} == set(TOPICS[:3])
    assert "strata" not in items[0] and "seed" not in items[0]


def test_the_portal_form_and_the_command_line_build_stratified_pools(task: Task, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from service.cli import main
    from service.config import settings
    from service.evaluation.permissions import access
    from service.portal.forms import COOKIE, csrf_for

    c, cid = task.client, task.cid
    with task.factory() as s:
        me = access.principal_for(s, f"Bearer {task.tokens['organiser']}")
        secret = access.open_session(s, me.token_id, settings().web.session_cookie_lifetime)
        s.commit()
    cookie, csrf = {"Cookie": f"{COOKIE}={secret}"}, csrf_for(secret)
    page = c.get(f"/c/{cid}/pools", headers=cookie).text
    assert 'id="stratified-form"' in page and 'name="strata"' in page
    form = {"csrf": csrf, "action": "pool", "kind": "stratified", "strata": "1-5:1, 6-20:0.5 21-50:0.2",
            "seed": str(SEED), "selection": "all"}
    assert c.post(f"/c/{cid}/pools", data=form, headers=cookie, follow_redirects=False).status_code == 303
    r = c.post(f"/c/{cid}/pools", data={**form, "strata": "1-5:1, 7-20:0.5"}, headers=cookie)
    assert r.status_code == 400 and "contiguous" in r.text
    r = c.post(f"/c/{cid}/pools", data={**form, "strata": "1-5"}, headers=cookie)
    assert r.status_code == 400 and "first-last:rate" in r.text
    page = c.get(f"/c/{cid}/pools", headers=cookie).text
    assert 'id="strata-1"' in page and f"seed {SEED}" in page
    with task.factory() as s:
        built = s.scalars(select(Pool).where(Pool.collection_id == cid)).one()
        assert (built.kind, built.strata, built.sample_seed) == ("stratified", STRATA, SEED)

    # the command line (on the backend's database): the same pool, one file per topic with its
    # sampled documents
    out = tmp_path / "pools"
    assert main(["pool", "--collection", "sampled task", "--strata", "1-5:1,6-20:0.5,21-50:0.2", "--seed",
                 str(SEED), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"stratified pool 2 (id {built.id + 1}) of sampled task: seed {SEED}" in printed
    assert stored(task, built.id + 1) == stored(task, built.id)
    files = {f.stem: f.read_text() for f in (out / "pool-2").glob("*.txt")}
    sampled = {t: sorted(d for d, v in ds.items() if v[3]) for t, ds in stored(task, built.id).items()}
    assert {t: sorted(line.split()[1] for line in text.splitlines()) for t, text in files.items()} == {
        t: ds for t, ds in sampled.items() if ds}
    assert main(["pool", "--collection", "sampled task", "--strata", "1-5:1,6-20:2", "--out", str(out)]) == 1
    assert "a rate lies in (0, 1]" in capsys.readouterr().err


def test_migration_0019_goes_back_without_the_stratified_pools(task: Task) -> None:
    """Downgrading past 0019 drops the stratified pools (a depth pool's rows cannot stand for
    them) with their documents, keeps the depth pools, and upgrading again reads them as depth
    pools of sampled documents."""
    from sqlalchemy import text

    from service.store.db import engine_for, make_engine
    from service.store.migrate import downgrade, upgrade

    org = auth(task.tokens["organiser"])
    r = task.client.post(f"/api/collections/{task.cid}/pools", json={"depth": 5}, headers=org)
    depth_pool = task.client.get(f"/api/pool-builds/{r.json()['id']}", headers=org).json()["pool"]
    stratified = build(task, strata=STRATA, seed=SEED)["id"]
    url = task.backend.database_url
    engine_for(url).dispose()  # the app's idle connections
    downgrade(url, "0018")
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT id FROM pools")).scalars().all() == [depth_pool]
            assert conn.execute(text("SELECT count(*) FROM pool_documents WHERE pool_id = :p"),
                                {"p": stratified}).scalar() == 0
        upgrade(url, "head")
        engine.dispose()
        with engine.connect() as conn:
            assert conn.execute(text("SELECT kind, strata, sample_seed FROM pools")).all() == [("depth", None, None)]
            rows = conn.execute(text("SELECT DISTINCT sampled, stratum FROM pool_documents")).all()
            assert [(bool(s), k) for s, k in rows] == [(True, None)]
    finally:
        engine.dispose()
