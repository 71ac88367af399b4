"""Collections judged with intent-aware qrels or a stratified sample, end to end: uploaded
through the API in their formats, evaluated by the workers, stored, tested and shown (board,
per-topic scores, significance matrix, CSV exports) like any other collection.

Where every expected number comes from:

* the ndeval measures (alpha-nDCG@20, ERR-IA@20, nERR-IA@20, P-IA@10, S-recall@20): pyndeval
  (TREC's ndeval.c 4.5 as a C extension), per topic, fed the qrels in ascending numeric subtopic
  order and each run in Cranfield's rank order with strictly decreasing scores, as
  tests/peers/test_diversity_peers.py explains (its tie order differs);
* D#-nDCG@10 (NTCIREVAL's, which pyndeval lacks): the core's ``DiversityEvaluator`` on the same
  judgments, read by the core's readers (tests/peers/test_diversity_peers.py checks that core);
* xinfAP and infNDCG: the core's ``SampleEvaluator`` (NIST's sample_eval.pl, checked in
  tests/unit/test_inferred.py); infAP: pytrec_eval's ``infAP`` (trec_eval 9) on the sample's
  four-column view, the runs handed over in Cranfield's rank order.

The collections are generated here with a fixed seed (``diversity_collection``, ``sampled_collection``).
"""

from __future__ import annotations

import csv
import functools
import io
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from service.formats.diversity import parse_diversity_qrels, parse_intent_probabilities
from service.formats.readers import parse_run
from service.formats.sampled import SampledQrels, parse_sampled_qrels
from service.metrics import EvalSettings, evaluate
from service.metrics.diversity import DiversityEvaluator
from service.metrics.inferred_sampled import SampleEvaluator
from tests.integration.conftest import Backend, World, auth, run_inline, wait_for
from tests.support.peers import require_peer

pyndeval = require_peer("pyndeval")
pytrec_eval = require_peer("pytrec_eval", "pytrec-eval-terrier")

ATOL = 1e-9
NDEVAL = {"alpha-nDCG@20": "alpha-nDCG@20", "ERR-IA@20": "ERR-IA@20", "nERR-IA@20": "nERR-IA@20",
          "P-IA@10": "P-IA@10", "S-recall@20": "strec@20"}  # Cranfield's name -> pyndeval's
DIVERSITY_METRICS = [*NDEVAL, "D#-nDCG@10"]
TEAMS = ("alpha", "beta")
#: The largest difference seen per comparison, printed at the end of each test (-s) for the record.
SEEN: dict[str, float] = {}


# ----------------------------------------------------------------------------- generated data
@dataclass(frozen=True)
class Generated:
    qrels: str  # the uploaded file
    runs: dict[str, str]  # tag -> TREC run file
    rows: list[tuple[str, str, str, int]]  # diversity: (topic, subtopic, docno, rel)


@functools.cache
def diversity_collection(seed: int = 5) -> Generated:
    """Eight topics of 1 to 4 subtopics, graded labels 0-2 per subtopic, a topic judged without a
    relevant document (D08), four runs with tied scores, unjudged documents and a missing topic."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[str, str, str, int]] = []
    for t in range(8):
        topic = f"D{t + 1:02d}"
        n_intents = 1 if t == 0 else int(rng.integers(2, 5))
        for d in range(30):
            doc = f"{topic}-doc{d:03d}"
            for i in range(1, n_intents + 1):
                if rng.random() < 0.5:
                    level = 0 if t == 7 else int(rng.choice(3, p=[0.5, 0.3, 0.2]))
                    rows.append((topic, str(i), doc, level))
        if t != 7 and not any(r[0] == topic and r[3] >= 1 for r in rows):
            rows.append((topic, "1", f"{topic}-doc000", 2))
    topics = sorted({r[0] for r in rows})
    runs: dict[str, str] = {}
    for k in range(4):
        tag = f"div{k}"
        lines = []
        for topic in topics:
            if k == 3 and topic == "D03":
                continue  # this run lacks a topic: it scores 0 there
            pool = sorted({r[2] for r in rows if r[0] == topic})
            docs = [d for d in pool if rng.random() < 0.3 + 0.15 * k] + [f"{topic}-unjudged{u}" for u in range(4)]
            rng.shuffle(docs)
            docs = docs[:25]
            scores = rng.integers(0, 8, size=len(docs))  # ties, ordered by docno (descending)
            lines += [f"{topic} Q0 {d} {n + 1} {int(s)} {tag}" for n, (d, s) in enumerate(zip(docs, scores))]
        runs[tag] = "\n".join(lines) + "\n"
    text = "".join(f"{t} {i} {d} {lv}\n" for t, i, d, lv in rows)
    return Generated(text, runs, rows)


@functools.cache
def sampled_collection(seed: int = 9) -> Generated:
    """Six topics, each a pool of 60 documents in three strata (ranks 1-10 all judged, 11-30 half,
    31-60 a fifth), levels 0-2 on the sampled ones and -1 on the others; three runs retrieving
    pooled documents (sampled or not) and unpooled ones."""
    rng = np.random.default_rng(seed)
    lines: list[str] = []
    pools: dict[str, list[str]] = {}
    for t in range(6):
        topic = f"S{t + 1}"
        pools[topic] = []
        for d in range(60):
            doc = f"{topic}-d{d:02d}"
            stratum, rate = (1, 1.0) if d < 10 else (2, 0.5) if d < 30 else (3, 0.2)
            sampled = rng.random() < rate or d == 0
            level = int(rng.choice(3, p=[0.55, 0.3, 0.15])) if sampled else -1
            if d == 0:
                level = 2  # every topic has a relevant sampled document
            lines.append(f"{topic} 0 {doc} {stratum} {level}")
            pools[topic].append(doc)
    runs: dict[str, str] = {}
    for k in range(3):
        tag = f"smp{k}"
        out = []
        for topic, pool in pools.items():
            docs = [d for d in pool if rng.random() < 0.5] + [f"{topic}-unpooled{u}" for u in range(6)]
            rng.shuffle(docs)
            out += [f"{topic} Q0 {d} {n + 1} {len(docs) - n + k * 0.5} {tag}" for n, d in enumerate(docs)]
        runs[tag] = "\n".join(out) + "\n"
    return Generated("\n".join(lines) + "\n", runs, [])


def ntcir_version(g: Generated) -> tuple[str, str]:
    """The diversity judgments as NTCIR intent qrels (levels L<n>) and a probability file whose
    weights are not uniform (intents 1..n of a topic weigh 1..n)."""
    qrels = "".join(f"{t} {i} {d} L{lv}\n" for t, i, d, lv in g.rows)
    intents: dict[str, set[int]] = {}
    for t, i, _, _ in g.rows:
        intents.setdefault(t, set()).add(int(i))
    probs = []
    for t, ids in sorted(intents.items()):
        total = sum(ids)
        probs += [f"{t} {i} {i / total!r} inf" for i in sorted(ids)]
    return qrels, "\n".join(probs) + "\n"


# ----------------------------------------------------------------------------- the service
@dataclass
class Service:
    client: Any
    admin: str
    org: str
    cid: int
    run_ids: dict[str, int]


def _collection(client: Any, admin: str, name: str, official: str, metrics: list[str]) -> tuple[int, str]:
    a = auth(admin)
    r = client.post("/api/collections", json={"name": name, "official_metric": official, "metrics": metrics},
                    headers=a)
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    for team in TEAMS:
        if client.post("/api/teams", json={"name": team}, headers=a).status_code not in (201, 409):
            raise AssertionError(team)
        assert client.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
    org = client.post("/api/tokens", json={"role": "organiser", "collections": [cid]}, headers=a).json()["token"]
    return cid, org


def _submit(client: Any, cid: int, org: str, runs: dict[str, str]) -> dict[str, int]:
    ids = {}
    for k, (tag, text) in enumerate(runs.items()):
        r = client.post(f"/api/collections/{cid}/runs?team={TEAMS[k % 2]}", content=text, headers=auth(org))
        assert r.status_code == 201, r.text
        ids[tag] = r.json()["id"]
    return ids


@pytest.fixture
def inline(backend: Backend) -> Iterator[tuple[Any, str, Any]]:
    """An API client whose follow-ups the workers' use cases run in this process; the admin token."""
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction

    factory = backend.factory()
    with transaction(factory) as s:
        admin, _ = create_token(s, "admin", name="root")
    with TestClient(app=create_app(backend.database_url, lambda f: run_inline(factory, f))) as client:
        yield client, admin, factory


def portal_cookie(factory: Any, token: str) -> dict[str, str]:
    """A portal session of the token's holder, as the sign-in form opens one."""
    from service.config import settings
    from service.evaluation.permissions import access
    from service.portal.forms import COOKIE

    with factory() as s:
        me = access.principal_for(s, f"Bearer {token}")
        secret = access.open_session(s, me.token_id, settings().web.session_cookie_lifetime)
        s.commit()
    return {"Cookie": f"{COOKIE}={secret}"}


def scores(client: Any, org: str, rid: int, metric: str) -> dict[str, float | None]:
    r = client.get(f"/api/runs/{rid}/scores", params={"metric": metric}, headers=auth(org))
    assert r.status_code == 200, r.text
    (doc,) = r.json()["runs"].values()
    return doc["per_topic"]


def ranked(text: str, tag: str) -> dict[str, list[str]]:
    """A run's lists in Cranfield's rank order (score descending, ties by docno descending)."""
    return parse_run(text.encode(), tag, order="score").to_rankings()


def diversity_peers(g: Any) -> Iterator[tuple[str, dict[str, list[str]], dict[str, Any], Any]]:
    """Per run of the generated diversity collection ``g``: (tag, its ranking, pyndeval's
    per-topic figures of the NDEVAL measures, the core's D#-nDCG@10), ndeval's qrels in its order."""
    peer_rows = sorted(g.rows, key=lambda row: (int(row[1]), row[0], row[2]))
    evaluator = pyndeval.RelevanceEvaluator(peer_rows, list(NDEVAL.values()))
    core = DiversityEvaluator(parse_diversity_qrels(g.qrels.encode(), "qrels", "trec"))
    for tag, text in g.runs.items():
        ranking = ranked(text, tag)
        peer = evaluator.evaluate([(t, d, float(len(docs) - n)) for t, docs in ranking.items()
                                   for n, d in enumerate(docs)])
        yield tag, ranking, peer, core.evaluate(ranking, ["D#-nDCG@10"])


def record(name: str, worst: float) -> None:
    SEEN[name] = max(SEEN.get(name, 0.0), worst)


# ----------------------------------------------------------------------------- diversity
def test_a_diversity_collection_is_evaluated_stored_tested_and_shown(inline: tuple[Any, str, Any]) -> None:
    client, admin, factory = inline
    g = diversity_collection()
    cid, org = _collection(client, admin, "diversity task", "alpha-nDCG(alpha=0.5)@20",
                           [*DIVERSITY_METRICS, "AP"])
    config = client.get(f"/api/collections/{cid}", headers=auth(org)).json()
    assert config["official_metric"] == "alpha-nDCG@20"  # the canonical name: alpha's default left out
    r = client.post(f"/api/collections/{cid}/qrels?format=diversity-trec", content=g.qrels, headers=auth(org))
    assert r.status_code == 201, r.text
    assert r.json()["format"] == "diversity" and r.json()["version"] == 1
    ids = _submit(client, cid, org, g.runs)

    # the judgment rows are the flattened view: a document's largest level over its subtopics
    flat: dict[str, dict[str, int]] = {}
    for t, _, d, lv in g.rows:
        docs = flat.setdefault(t, {})
        docs[d] = max(docs.get(d, 0), lv)
    (version,) = client.get(f"/api/collections/{cid}/qrels", headers=auth(org)).json()["items"]
    assert version["format"] == "diversity" and not version["intent_probabilities"]
    assert version["judgments"] == sum(len(v) for v in flat.values())
    for t, docs in flat.items():
        assert version["level_counts"][t] == {str(lv): list(docs.values()).count(lv) for lv in set(docs.values())}

    # the board: every run ranked by alpha-nDCG@20, its mean the mean of its stored per-topic values
    board = client.get(f"/api/collections/{cid}/leaderboard", headers=auth(org)).json()
    assert board["metric"] == "alpha-nDCG@20" and board["qrels_version"] == 1
    assert sorted(row["run"] for row in board["rows"]) == sorted(g.runs)
    assert board["bounds"] == {"low": 0.0, "high": None}  # the greedy ideal can be beaten: no upper bound
    assert board["significance"] is not None

    # every stored per-topic value against pyndeval (ndeval) and D#-nDCG against the core
    evaluated = [t for t in sorted(flat) if any(v >= 1 for v in flat[t].values())]
    compared = 0
    for tag, ranking, peer, ours in diversity_peers(g):
        for metric in DIVERSITY_METRICS:
            stored = scores(client, org, ids[tag], metric)
            assert sorted(stored) == evaluated  # D08 (nothing relevant) is skipped, as ndeval does
            worst = 0.0
            for t in evaluated:
                if metric == "D#-nDCG@10":
                    expected = ours["D#-nDCG@10"][t]
                else:
                    expected = peer[t][NDEVAL[metric]] if t in ranking else 0.0  # a missing topic scores 0
                worst = max(worst, abs(stored[t] - expected))
                compared += 1
            assert worst <= ATOL, (tag, metric, worst)
            record(f"{metric} vs {'core' if metric == 'D#-nDCG@10' else 'pyndeval'}", worst)
            mean = next(row["mean"] for row in board["rows"] if row["run"] == tag) if metric == "alpha-nDCG@20" \
                else None
            if mean is not None:
                assert abs(mean - float(np.mean([stored[t] for t in evaluated]))) <= 1e-12
    assert compared == len(g.runs) * len(DIVERSITY_METRICS) * len(evaluated)
    # a run lacking a topic scores 0 there (missing: zero)
    assert scores(client, org, ids["div3"], "alpha-nDCG@20")["D03"] == 0.0
    # AP is computed on the flattened judgments, as the core computes it
    flat_eval = evaluate(parse_diversity_qrels(g.qrels.encode(), "q", "trec").to_qrels(),
                         [parse_run(text.encode(), tag) for tag, text in g.runs.items()], ["AP"])
    for i, tag in enumerate(g.runs):
        stored = scores(client, org, ids[tag], "AP")
        assert all(abs(stored[t] - flat_eval.per_topic("AP")[i, j]) <= 1e-12 for j, t in enumerate(flat_eval.topics))

    # the significance matrix of every metric, and the CSV exports
    for metric in DIVERSITY_METRICS:
        sig = client.get(f"/api/collections/{cid}/significance", params={"metric": metric}, headers=auth(org))
        assert sig.status_code == 200, sig.text
        doc = sig.json()
        assert doc["metric"] == metric and sorted(doc["runs"]) == sorted(g.runs)
        assert len(doc["p_adjusted"]) == 4 and all(len(row) == 4 for row in doc["p_adjusted"])
    r = client.get(f"/api/collections/{cid}/leaderboard/metrics", params={"format": "csv"}, headers=auth(org))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    header = next(csv.reader(io.StringIO(r.text)))
    assert all(any(m in column for column in header) for m in [*DIVERSITY_METRICS, "AP"]), header
    r = client.get(f"/api/collections/{cid}/matrix", params={"metric": "nERR-IA@20", "format": "csv"},
                   headers=auth(org))
    assert r.status_code == 200, r.text
    table = list(csv.reader(io.StringIO(r.text)))
    assert table[0][:2] == ["run", "team"] and table[0][2:] == evaluated
    for row in table[1:]:
        stored = scores(client, org, ids[row[0]], "nERR-IA@20")
        assert [float(v) for v in row[2:]] == pytest.approx([stored[t] for t in evaluated], abs=1e-12)
    metrics_board = client.get(f"/api/collections/{cid}/leaderboard/metrics", headers=auth(org)).json()
    columns = {c["metric"]: c for c in metrics_board["metrics"]}
    assert columns["nERR-IA@20"]["bounds"]["high"] is None and columns["ERR-IA@20"]["bounds"]["high"] == 1.0
    assert "intent-aware" in columns["D#-nDCG@10"]["description"]

    # the portal's pages show them (a '#' in a metric name travels percent-encoded)
    cookie = portal_cookie(factory, org)
    for path in (f"/c/{cid}", f"/c/{cid}?metric=D%23-nDCG%4010", f"/c/{cid}/metrics",
                 f"/c/{cid}/significance?metric=D%23-nDCG%4010", f"/runs/{ids['div0']}?metric=D%23-nDCG%4010"):
        page = client.get(path, headers=cookie)
        assert page.status_code == 200 and "D#-nDCG@10" in page.text, path
    board_page = client.get(f"/c/{cid}?metric=D%23-nDCG%4010", headers=cookie).text
    assert "matrix.csv?metric=D%23-nDCG%4010" in board_page
    print("largest differences:", SEEN)


def test_ntcir_intent_qrels_with_probabilities_as_a_multipart_upload(inline: tuple[Any, str, Any]) -> None:
    client, admin, _ = inline
    g = diversity_collection()
    qrels, probs = ntcir_version(g)
    cid, org = _collection(client, admin, "intent task", "D#-nDCG@10", ["D#-nDCG@10", "D-nDCG@10", "I-rec@10",
                                                                        "alpha-nDCG@20"])
    files = {"qrels": ("intents.dqrels", qrels.encode()), "probabilities": ("intents.iprob", probs.encode())}

    # bad uploads: each refused with its file and line, nothing stored
    def refused(**kwargs: Any) -> dict[str, Any]:
        r = client.post(f"/api/collections/{cid}/qrels", headers=auth(org), **kwargs)
        assert r.status_code == 422, r.text
        return r.json()["error"]

    error = refused(params={"format": "diversity-trec"}, content=qrels)  # NTCIR's L<n> labels declared TREC
    assert error["line"] == 1 and "not an integer" in error["message"]
    skewed = probs.splitlines()
    topic = skewed[2].split()[0]
    skewed[2] = f"{topic} {skewed[2].split()[1]} 0.9 inf"
    error = refused(params={"format": "diversity-ntcir"},
                    files={"qrels": files["qrels"], "probabilities": ("bad.iprob", "\n".join(skewed).encode())})
    first = next(n for n, line in enumerate(skewed, 1) if line.split()[0] == topic)
    assert (error["line"], error["source"]) == (first, "bad.iprob") and "sum to" in error["message"]
    error = refused(params={"format": "sampled"}, files=files)  # probabilities go with diversity-ntcir only
    assert error["code"] == "invalid_request" and "probabilities" in error["message"]
    error = refused(params={"format": "sampled"}, content=g.qrels)  # four columns declared as a sample
    assert error["line"] == 1 and "5" in error["message"]
    error = refused(content=sampled_collection().qrels)  # five columns declared ad hoc (the default)
    assert error["line"] == 1
    error = refused(params={"format": "diversity-ntcir"},
                    files={"qrels": files["qrels"], "notes": ("x.txt", b"x")})
    assert error["code"] == "invalid_request" and "notes" in error["message"]
    assert client.get(f"/api/collections/{cid}/qrels", headers=auth(org)).json()["items"] == []

    # the preview reads the form as the upload does
    r = client.post(f"/api/collections/{cid}/qrels/preview?format=diversity-ntcir", files=files, headers=auth(org))
    assert r.status_code == 200 and r.json()["judgments"] == len({(t, d) for t, _, d, _ in g.rows}), r.text
    # the upload: the format as a form field works as well as the query parameter
    r = client.post(f"/api/collections/{cid}/qrels", files=files, data={"format": "diversity-ntcir"},
                    headers=auth(org))
    assert r.status_code == 201 and r.json()["format"] == "diversity", r.text
    (version,) = client.get(f"/api/collections/{cid}/qrels", headers=auth(org)).json()["items"]
    assert version["intent_probabilities"] is True
    ids = _submit(client, cid, org, g.runs)

    # stored values: the core on the same judgments with the same probabilities (which D# weighs by)
    with_probs = DiversityEvaluator(parse_diversity_qrels(qrels.encode(), "q", "ntcir",
                                                          parse_intent_probabilities(probs.encode())))
    uniform = DiversityEvaluator(parse_diversity_qrels(qrels.encode(), "q", "ntcir"))
    moved = 0
    for tag, text in g.runs.items():
        ranking = ranked(text, tag)
        ours = with_probs.evaluate(ranking, ["D#-nDCG@10", "D-nDCG@10", "I-rec@10", "alpha-nDCG@20"])
        flat = uniform.evaluate(ranking, ["D-nDCG@10"])
        for metric in ("D#-nDCG@10", "D-nDCG@10", "I-rec@10", "alpha-nDCG@20"):
            stored = scores(client, org, ids[tag], metric)
            assert set(stored) == set(ours[metric])
            worst = max(abs(stored[t] - v) for t, v in ours[metric].items())
            assert worst <= ATOL, (tag, metric, worst)
            record(f"{metric} (NTCIR, probabilities) vs core", worst)
        moved += sum(abs(flat["D-nDCG@10"][t] - ours["D-nDCG@10"][t]) > 1e-6 for t in ours["D-nDCG@10"])
    assert moved > 0  # the probabilities change the global gains: the file was used
    board = client.get(f"/api/collections/{cid}/leaderboard", headers=auth(org)).json()
    assert board["metric"] == "D#-nDCG@10" and len(board["rows"]) == 4 and board["bounds"]["high"] == 1.0


# ----------------------------------------------------------------------------- sampled
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_sampled_collection_with_a_real_worker(backend: Backend) -> None:
    """A stratified sample (NIST's five columns), evaluated by a Celery worker process."""
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction
    from workers.tasks import send

    backend.start_worker(beat=False)
    celery = backend.celery()
    with transaction(backend.factory()) as s:
        admin, _ = create_token(s, "admin", name="root")
    g = sampled_collection()
    with TestClient(app=create_app(backend.database_url, lambda f: send(f, celery))) as client:
        cid, org = _collection(client, admin, "sampled task", "xinfAP", ["xinfAP", "infNDCG", "infAP", "AP"])
        r = client.post(f"/api/collections/{cid}/qrels", params={"format": "sampled"}, content=g.qrels,
                        headers=auth(org))
        assert r.status_code == 201 and r.json()["format"] == "sampled", r.text
        ids = _submit(client, cid, org, g.runs)

        def board() -> dict[str, Any] | None:
            doc = client.get(f"/api/collections/{cid}/leaderboard", headers=auth(org)).json()
            done = len(doc.get("rows", [])) == len(g.runs) and doc["significance"] is not None
            return doc if done else None

        started = time.monotonic()
        doc = wait_for(board, 120, "the board of the sampled collection", backend)
        assert doc["metric"] == "xinfAP" and doc["bounds"] == {"low": 0.0, "high": 1.0}
        sample = parse_sampled_qrels(g.qrels.encode())
        check_sampled_scores(client, org, ids, g, sample)
        jobs = client.get(f"/api/collections/{cid}/jobs", headers=auth(org)).json()
        assert all("warnings" not in (job["report"] or {}) for job in jobs["items"])
        print(f"worker evaluated in {time.monotonic() - started:.1f} s; largest differences:", SEEN)


def check_sampled_scores(client: Any, org: str, ids: dict[str, int], g: Generated, sample: SampledQrels) -> None:
    core = SampleEvaluator(sample)
    pooled = sample.to_qrels().to_mapping()
    peer = pytrec_eval.RelevanceEvaluator(pooled, {"infAP"})
    topics = sorted(sample.topics)
    for tag, text in g.runs.items():
        ranking = ranked(text, tag)
        infap = peer.evaluate({t: {d: float(len(docs) - n) for n, d in enumerate(docs)}
                               for t, docs in ranking.items()})
        for metric in ("xinfAP", "infNDCG", "infAP"):
            stored = scores(client, org, ids[tag], metric)
            assert sorted(stored) == topics
            if metric == "infAP":
                worst = max(abs(stored[t] - infap[t]["infAP"]) for t in topics)
                record("infAP vs pytrec_eval", worst)
            else:
                worst = max(abs(stored[t] - getattr(core.topic(t, ranking[t]), metric)) for t in topics)
                record(f"{metric} vs core", worst)
            assert worst <= 1e-12, (tag, metric, worst)


# ----------------------------------------------------------------------------- ad hoc qrels
def test_diversity_and_sampled_metrics_need_their_judgments(world: World) -> None:
    """On ad hoc qrels: naming a diversity or sampled metric is refused when the configuration is
    saved; judgments uploaded later in another format give NaN for them, and the job says why."""
    c, org = world.client, world.tokens["organiser"]
    r = c.patch(f"/api/collections/{world.cid}", json={"metrics": ["AP", "nDCG@10", "alpha-nDCG@20"]},
                headers=auth(org))
    assert r.status_code == 400 and "intent-aware" in r.json()["error"]["message"], r.text
    r = c.patch(f"/api/collections/{world.cid}", json={"metrics": ["AP", "nDCG@10", "xinfAP"]}, headers=auth(org))
    assert r.status_code == 400 and "stratified sample" in r.json()["error"]["message"], r.text
    r = c.post(f"/api/collections/{world.cid}/settings-preview", json={"official_metric": "ERR-IA@20"},
               headers=auth(org))
    assert r.status_code == 400, r.text

    # a collection configured before its judgments, which then come as ad hoc qrels
    admin = world.tokens["admin"]
    cid, org2 = _collection(c, admin, "late judgments", "AP", ["AP", "alpha-nDCG@20", "xinfAP"])
    assert c.post(f"/api/collections/{cid}/qrels", content=world.qrels, headers=auth(org2)).status_code == 201
    ids = _submit(c, cid, org2, dict(list(world.runs.items())[:2]))
    for rid in ids.values():
        assert all(v is None for v in scores(c, org2, rid, "alpha-nDCG@20").values())
        assert all(v is None for v in scores(c, org2, rid, "xinfAP").values())
        assert all(v is not None for v in scores(c, org2, rid, "AP").values())
    board = c.get(f"/api/collections/{cid}/leaderboard", params={"metric": "alpha-nDCG@20"},
                  headers=auth(org2)).json()
    assert board["rows"] == []  # no run has a mean to rank by
    job = c.get(f"/api/collections/{cid}/jobs", headers=auth(org2)).json()["items"][0]
    assert job["status"] == "done"
    warnings = job["report"]["warnings"]
    assert set(warnings) == {"alpha-nDCG@20", "xinfAP"}
    assert "intent-aware" in warnings["alpha-nDCG@20"] and "ad hoc" in warnings["alpha-nDCG@20"]
    assert "alpha-nDCG@20" in job["error"] and "xinfAP" in job["error"]


def test_the_core_scores_diversity_and_sampled_metrics_only_with_their_judgments() -> None:
    """``evaluate`` without ``extra``: NaN on every topic; with it, the evaluators' values."""
    g = diversity_collection()
    intents = parse_diversity_qrels(g.qrels.encode(), "q", "trec")
    runs = [parse_run(text.encode(), tag) for tag, text in g.runs.items()]
    without = evaluate(intents.to_qrels(), runs, ["alpha-nDCG@20", "AP"])
    assert np.isnan(without.per_topic("alpha-nDCG@20")).all() and not np.isnan(without.per_topic("AP")).any()
    skip = evaluate(intents.to_qrels(), runs, ["alpha-nDCG@20"], EvalSettings(missing="skip"), extra=intents)
    assert np.isnan(skip.value("div3", "alpha-nDCG@20", "D03"))  # the run lacks D03
    cut = evaluate(intents.to_qrels(), runs, ["S-recall@20"], EvalSettings(depth=3), extra=intents)
    whole = DiversityEvaluator(intents).evaluate({t: d[:3] for t, d in runs[0].to_rankings().items()},
                                                 ["S-recall@20"])
    assert all(cut.value("div0", "S-recall@20", t) == v for t, v in whole["S-recall@20"].items())


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_sampled_collection_evaluated_in_process_on_sqlite(inline: tuple[Any, str, Any]) -> None:
    client, admin, _ = inline
    g = sampled_collection()
    cid, org = _collection(client, admin, "sampled task", "xinfAP", ["xinfAP", "infNDCG", "infAP"])
    r = client.post(f"/api/collections/{cid}/qrels?format=sampled", files={"qrels": ("sample.qrels", g.qrels)},
                    headers=auth(org))
    assert r.status_code == 201 and r.json()["format"] == "sampled", r.text
    (version,) = client.get(f"/api/collections/{cid}/qrels", headers=auth(org)).json()["items"]
    assert version["format"] == "sampled" and "-1" in version["level_counts"]["S1"]  # pooled, not sampled
    ids = _submit(client, cid, org, g.runs)
    check_sampled_scores(client, org, ids, g, parse_sampled_qrels(g.qrels.encode()))
    metrics = client.get(f"/api/collections/{cid}/leaderboard/metrics", headers=auth(org)).json()["metrics"]
    assert {m["metric"]: m["bounds"]["high"] for m in metrics} == {"xinfAP": 1.0, "infNDCG": None, "infAP": 1.0}


# ----------------------------------------------------------------------------- portal and command line
def test_the_portal_form_and_the_command_line_take_a_format(world: World, tmp_path: Any) -> None:
    from service.cli import main
    from service.portal.forms import COOKIE, csrf_for
    from service.store.models import Collection, QrelsVersion

    c, cid = world.client, world.cid
    cookie = portal_cookie(world.factory, world.tokens["organiser"])
    csrf = csrf_for(cookie["Cookie"].removeprefix(f"{COOKIE}="))
    page = c.get(f"/c/{cid}/qrels", headers=cookie).text
    assert '<select id="format" name="format"' in page and 'value="diversity-ntcir"' in page
    assert 'type="file" id="probabilities" name="probabilities"' in page

    g = diversity_collection()
    qrels, probs = ntcir_version(g)
    # a file that is not in the chosen format: refused with its line, the form keeps the choice
    r = c.post(f"/c/{cid}/qrels", files={"file": ("div.qrels", g.qrels)},
               data={"csrf": csrf, "format": "sampled", "action": "upload"}, headers=cookie)
    assert r.status_code == 422 and "div.qrels, line 1" in r.text
    assert '<option value="sampled" selected>' in r.text
    # the preview (an empty probability field is no file), then the confirmation carries the format
    # and the probabilities back (the file replaces every judgment: a large removal to confirm)
    files = {"file": ("intents.dqrels", qrels), "probabilities": ("intents.iprob", probs)}
    r = c.post(f"/c/{cid}/qrels", files=files, data={"csrf": csrf, "format": "diversity-ntcir", "action": "preview"},
               headers=cookie)
    assert r.status_code == 200 and 'id="preview-format"' in r.text and "intents.iprob" in r.text, r.text
    staged = dict(re.findall(r'<textarea name="(staged\w*)" hidden[^>]*>([^<]*)</textarea>', r.text))
    assert set(staged) == {"staged", "staged_probabilities"}
    form = {"csrf": csrf, "action": "upload", "format": "diversity-ntcir", "source": "intents.dqrels",
            "probabilities_source": "intents.iprob", "confirm_removal": "1", **staged}
    r = c.post(f"/c/{cid}/qrels", data=form, headers=cookie, follow_redirects=False)
    assert r.status_code == 303, r.text
    page = c.get(f"/c/{cid}/qrels", headers=cookie).text
    assert "diversity (with intent probabilities)" in page
    with world.factory() as s:
        v2 = s.scalars(select(QrelsVersion).where(QrelsVersion.collection_id == cid, QrelsVersion.version == 2)).one()
        assert v2.format == "diversity" and v2.intent_probabilities is not None

    # the command line: qrels add --format, and load with --format and --probabilities, whose
    # metrics are checked against the qrels loaded with them
    sample = tmp_path / "sample.qrels"
    sample.write_text(sampled_collection().qrels)
    assert main(["qrels", "add", "--collection", "task", "--format", "sampled", str(sample)]) == 0
    (tmp_path / "div.qrels").write_text(g.qrels)
    (tmp_path / "intents.dqrels").write_text(qrels)
    (tmp_path / "intents.iprob").write_text(probs)
    runs = tmp_path / "runs"
    runs.mkdir()
    for tag, text in g.runs.items():
        (runs / f"{tag}.run").write_text(text)
    assert main(["load", "--collection", "task", "--qrels", str(tmp_path / "div.qrels"), "--format",
                 "diversity-trec", "--runs", str(runs), "--official-metric", "alpha-nDCG@20", "--metric",
                 "D#-nDCG@10"]) == 0
    assert main(["load", "--collection", "intents", "--qrels", str(tmp_path / "intents.dqrels"), "--format",
                 "diversity-ntcir", "--probabilities", str(tmp_path / "intents.iprob"), "--runs", str(runs),
                 "--official-metric", "D#-nDCG@10"]) == 0
    assert main(["qrels", "add", "--collection", "intents", "--probabilities", str(tmp_path / "intents.iprob"),
                 str(tmp_path / "div.qrels")]) == 1  # probabilities go with diversity-ntcir only
    with world.factory() as s:
        task = s.get(Collection, cid)
        formats = [v.format for v in s.scalars(select(QrelsVersion).where(QrelsVersion.collection_id == cid)
                                               .order_by(QrelsVersion.version))]
        assert formats == ["adhoc", "diversity", "sampled", "diversity"]
        assert task.current_config.official_metric == "alpha-nDCG@20"
        intents = s.scalars(select(Collection).where(Collection.name == "intents")).one()
        assert intents.current_qrels.format == "diversity" and intents.current_qrels.intent_probabilities
        assert intents.current_config.metrics[0] == "D#-nDCG@10"


# ----------------------------------------------------------------------------- migration 0018
def test_migration_0018_keeps_every_version_readable_both_ways(backend: Backend) -> None:
    """Upgrading gives earlier versions the format adhoc; downgrading makes a diversity or sampled
    version's file its judgment rows as ad hoc qrels (what the older code reads), keeping the
    versions, their judgments and scores."""
    import zlib

    from service.evaluation.organising.setup import add_qrels, ensure_collection, load_qrels
    from service.formats.readers import parse_qrels
    from service.store.db import make_engine, transaction
    from service.store.migrate import downgrade, upgrade
    from service.store.models import QrelsVersion

    factory = backend.factory()
    g = diversity_collection()
    with transaction(factory) as s:
        coll = ensure_collection(s, "formats", None)
        add_qrels(s, coll, g.qrels.encode(), "div.qrels", fmt="diversity-trec")
        add_qrels(s, coll, sampled_collection().qrels.encode(), "sample.qrels", fmt="sampled")
    with factory() as s:
        flat = {v.version: load_qrels(v).to_mapping() for v in s.scalars(select(QrelsVersion))}
    url = backend.database_url
    downgrade(url, "0017")
    engine = make_engine(url)
    try:
        from sqlalchemy import text

        with engine.connect() as conn:
            files = dict(conn.execute(text("SELECT version, file FROM qrels_versions")).all())
        assert {v: parse_qrels(zlib.decompress(f)).to_mapping() for v, f in files.items()} == flat
        upgrade(url, "head")
        engine.dispose()
        with factory() as s:
            assert [(v.format, v.intent_probabilities) for v in s.scalars(select(QrelsVersion))] == [
                ("adhoc", None), ("adhoc", None)]
    finally:
        engine.dispose()


def test_diversity_metrics_are_registered_like_every_other_metric() -> None:
    """One registry: a diversity metric's name, read by the grammar, is the key
    ``DiversityEvaluator`` answers under; the family has exactly the diversity module's metrics."""
    from service.metrics import REGISTRY, parse_measure
    from service.metrics.diversity import NAMES, parse_diversity_measure

    names = ["alpha-nDCG(alpha=0.5)@20", "alphanDCG(rel=2,alpha=0.3)@5", "ERR-IA(alpha=1)@3", "nERR-IA@20",
             "NRBP(beta=0.8,alpha=0.25)", "nNRBP", "P-IA(rel=1)@10", "AP-IA(rel=2)", "strec@7", "I-rec",
             "I-recall@10", "D-nDCG(gains={1:1,2:3})@10", "D#-nDCG(gamma=0.5)@10", "D#-nDCG(gamma=0.25)",
             "D-Q(norm=R,beta=1)@10", "D#-Q(gamma=0.7,norm=minRk)@5", "alpha-DCG@2"]
    for name in names:
        assert parse_measure(name) == parse_diversity_measure(name), name
        assert parse_measure(name).definition.family == "diversity"
    assert {n for n, d in REGISTRY.items() if d.family == "diversity"} == set(NAMES)
    assert len(NAMES) == 14
    assert {n for n, d in REGISTRY.items() if d.family == "sampled"} == {"xinfAP", "infNDCG"}
