"""A new judgments version of a collection of answers re-scores only what it changed (issue 35,
item 3): on NIST's TREC 2024 RAG files, a correction of one run's assignments re-scores that
run alone (the others' results are carried: copied from the version before, naming the
evaluation copied), and re-tests only the metrics whose scores moved (the others' stored tests
are carried the same way). What is carried must be what a computation from scratch gives: a
second collection loaded with the final judgments in one go has, bit for bit, the same scores
and the same stored tests.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from service.metrics.rag_scoring import evaluate_rag
from service.formats.rag_judgments import read_assignments
from service.store.arrays import unpack
from service.store.models import Job, QrelsVersion, Run, RunEvaluation, Score, Significance
from tests.integration.conftest import auth
from tests.integration.test_answer_collections import ASSIGNMENTS, OFFICIAL, SUBMITTED, SUPPORT, answer_runs
from tests.integration.test_diversity_and_sampled_collections import inline  # noqa: F401

NUGGET_METRICS = {"nugget_all", "nugget_all(strict=true)", "nugget_vital", OFFICIAL, "nugget_weighted",
                  "nugget_weighted(strict=true)"}
SUPPORT_METRICS = {"support_precision", "support_recall"}


@pytest.fixture(scope="module")
def data() -> Path:
    from tests.conftest import require_shared

    return require_shared("data/trec-rag24")


def _collection(client: Any, admin: str, name: str) -> tuple[int, dict[str, str]]:
    """An answers collection with the default significance settings (the settled bootstrap)."""
    a = auth(admin)
    r = client.post("/api/collections", json={"name": name, "task_kind": "answers"}, headers=a)
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    tokens = {}
    for team in ("alpha", "beta", "gamma"):
        assert client.post("/api/teams", json={"name": team}, headers=a).status_code in (201, 409)
        assert client.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
        tokens[team] = client.post("/api/tokens", json={"role": "participant", "team": team},
                                   headers=a).json()["token"]
    return cid, tokens


def _upload(client: Any, admin: str, cid: int, part: str, body: bytes, name: str, append: bool = False) -> dict[str, Any]:
    r = client.post(f"/api/collections/{cid}/answer-judgments/{part}",
                    params={"source": name, **({"append": "true"} if append else {})}, content=body,
                    headers=auth(admin))
    assert r.status_code == 201, r.text
    return r.json()


def _submit(client: Any, cid: int, tokens: dict[str, str], runs: dict[str, bytes]) -> None:
    for (team, run, _), body in zip(SUBMITTED, runs.values()):
        r = client.post(f"/api/collections/{cid}/runs", content=body, headers=auth(tokens[team]))
        assert r.status_code == 201, r.text


def _edited(data: Path) -> bytes:
    """NIST's assignments with one correction: ICL-mistral's first topic, every nugget supported."""
    rows = [json.loads(line) for line in gzip.decompress((data / ASSIGNMENTS).read_bytes()).splitlines()]
    first = next(row for row in rows if row["run_id"] == "ICL-mistral")
    for nugget in first["nuggets"]:
        nugget["assignment"] = "support"
    return ("\n".join(json.dumps(row) for row in rows) + "\n").encode()


def _state(factory: Any, cid: int, version: int) -> tuple[dict[str, dict[str, bytes]], dict[str, Any], dict[str, Any]]:
    """Per run tag its stored per-topic values of each metric on ``version``; per metric the stored
    test (run tags in order, p_adjusted, p, letters, carried_from_id); the version's job."""
    with factory() as s:
        vid = s.scalar(select(QrelsVersion.id).where(QrelsVersion.collection_id == cid, QrelsVersion.version == version))
        tags = dict(s.execute(select(Run.id, Run.tag).where(Run.collection_id == cid)).all())
        values: dict[str, dict[str, bytes]] = {}
        carried_runs = {}
        for ev in s.scalars(select(RunEvaluation).where(RunEvaluation.qrels_version_id == vid)):
            values[tags[ev.run_id]] = {sc.metric: sc.values for sc in s.scalars(
                select(Score).where(Score.run_evaluation_id == ev.id))}
            carried_runs[tags[ev.run_id]] = ev.carried_from_id
        tests = {}
        for row in s.scalars(select(Significance).where(Significance.qrels_version_id == vid,
                                                        Significance.subset == "all")):
            tests[row.metric] = {"runs": [tags[r] for r in row.run_ids], "p_adjusted": unpack(row.p_adjusted),
                                 "p": None if row.p is None else unpack(row.p), "letters": row.letters,
                                 "resamples": unpack(row.resamples), "carried_from_id": row.carried_from_id}
        job = s.scalars(select(Job).where(Job.qrels_version_id == vid).order_by(Job.id.desc())).first()
        assert job is not None and job.status == "done", job and (job.status, job.error)
        return values, tests, {"total": job.total, "report": job.report, "carried_runs": carried_runs}


def test_a_correction_re_scores_and_re_tests_only_what_it_changed(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    client, admin, factory = inline
    runs = {run: gzip.compress(body) for run, body in answer_runs(data).items()}
    cid, tokens = _collection(client, admin, "corrected")
    _upload(client, admin, cid, "assignments", (data / ASSIGNMENTS).read_bytes(), ASSIGNMENTS)
    for name in SUPPORT:
        _upload(client, admin, cid, "support", (data / name).read_bytes(), name, append=True)
    _submit(client, cid, tokens, runs)
    before, tests_before, _ = _state(factory, cid, 3)
    assert set(before) == {run for _, run, _ in SUBMITTED} and OFFICIAL in tests_before

    # the correction: one run's assignments on one topic
    doc = _upload(client, admin, cid, "assignments", _edited(data), "corrected.jl")
    assert doc["version"] == 4
    after, tests_after, job = _state(factory, cid, 4)
    assert job["total"] == 1 and job["report"]["carried_runs"] == 4  # one run re-scored, four carried
    assert [run for run, source in job["carried_runs"].items() if source is None] == ["ICL-mistral"]
    for run in before:
        if run != "ICL-mistral":
            assert after[run] == before[run]  # the same bytes: copied
    assert after["ICL-mistral"][OFFICIAL] != before["ICL-mistral"][OFFICIAL]
    assert after["ICL-mistral"]["support_precision"] == before["ICL-mistral"]["support_precision"]
    # the corrected run's scores are those of the corrected file, computed from scratch
    want = evaluate_rag([OFFICIAL], read_assignments(_edited(data), "corrected.jl"))
    i = want.evaluation.runs.index("ICL-mistral")
    with factory() as s:
        topics = s.scalar(select(RunEvaluation.topics).join(QrelsVersion).where(
            QrelsVersion.collection_id == cid, QrelsVersion.version == 4))
    stored = dict(zip(topics, unpack(after["ICL-mistral"][OFFICIAL])))
    for j, topic in enumerate(want.evaluation.topics):
        assert stored[topic] == want.evaluation.per_topic(OFFICIAL)[i, j]

    # the tests of the nugget metrics ran again; those whose scores did not move were carried
    carried = set(job["report"]["carried_tests"])
    assert carried & NUGGET_METRICS == set() and SUPPORT_METRICS <= carried
    for metric, test in tests_after.items():
        assert (test["carried_from_id"] is not None) == (metric in carried), metric
        if metric in carried:
            assert np.array_equal(test["p_adjusted"], tests_before[metric]["p_adjusted"], equal_nan=True)

    # the same upload again changes nothing: every run and every test carried
    doc = _upload(client, admin, cid, "assignments", _edited(data), "corrected-again.jl")
    again, tests_again, job = _state(factory, cid, doc["version"])
    assert job["total"] == 0 and job["report"]["carried_runs"] == 5
    assert again == after and set(job["report"]["carried_tests"]) == set(tests_after)

    # from scratch: another collection given the corrected judgments at once stores the same
    # scores and the same tests, bit for bit (what is carried is what a computation gives)
    fresh, fresh_tokens = _collection(client, admin, "from-scratch")
    _upload(client, admin, fresh, "assignments", _edited(data), "corrected.jl")
    for name in SUPPORT:
        _upload(client, admin, fresh, "support", (data / name).read_bytes(), name, append=True)
    _submit(client, fresh, fresh_tokens, runs)
    scratch, tests_scratch, job = _state(factory, fresh, 3)
    assert scratch == after
    assert set(tests_scratch) == set(tests_after)
    for metric, test in tests_scratch.items():
        mine = tests_after[metric]
        assert test["runs"] == mine["runs"], metric
        for key in ("p_adjusted", "resamples"):
            assert np.array_equal(test[key], mine[key], equal_nan=True), (metric, key)
        assert test["letters"] == mine["letters"], metric
