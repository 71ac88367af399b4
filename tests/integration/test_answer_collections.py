"""A collection of generated answers (issue 35) end to end on NIST's real TREC 2024 RAG files
(../shared/data/trec-rag24): the organiser creates it (task kind answers), uploads the nugget
assignments and both citation-support files through the API; three teams submit answer runs
in the 2024 format and in 2025's format 1; the workers (their use cases, in this process)
score every run; the board ranks by Vital strict with the values ``cranfield rag eval`` gives
on the same files; the significance tests are stored; a new assignment set version re-scores.

The answer runs are built from NIST's files (NIST did not release the runs themselves): each
(run, topic) answer of the assignment file, its sentences and cited passages taken from the
support files where they judged it (else the answer text as one uncited sentence).
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_shared
from tests.integration.conftest import Backend, auth, run_inline

ASSIGNMENTS = "nugget_assignment.20241108.jl.gz"
SUPPORT = ("final.citation_judgments_with_prediction.20241025.jsonl.gz",
           "final.citation_judgments_without_prediction.20241025.jsonl.gz")
#: The runs submitted (team, run, format): three teams, the 2024 format and 2025's format 1.
SUBMITTED = (("alpha", "BEST_cot_gpt3.5", "rag24"), ("alpha", "FT-llama3", "rag25"),
             ("beta", "ICL-mistral", "rag24"), ("beta", "ISIR-IRIT-zephyr_p2", "rag25"),
             ("gamma", "Enhanced_Iterative_Fact_Refinement_and_Prioritization", "rag24"))
OFFICIAL = "nugget_vital(strict=true)"


@pytest.fixture(scope="module")
def data() -> Path:
    return require_shared("data/trec-rag24")


def _lines(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]  # (json reads the bare NaN tokens)


def answer_runs(data: Path) -> dict[str, bytes]:
    """Each submitted run's answer file, in its format."""
    rows = _lines(data / ASSIGNMENTS)
    support: dict[tuple[str, str], dict[str, Any]] = {}
    for name in SUPPORT:
        for line in _lines(data / name):
            support[(line["run_id"].split(".", 1)[-1], line["topic_id"])] = line
    files = {}
    for team, run, fmt in SUBMITTED:
        out = []
        for row in (r for r in rows if r["run_id"] == run):
            judged = support.get((run, row["qid"]))
            references: list[str] = []
            answer = []
            if judged is None:
                answer.append({"text": row["answer_text"], "citations": []})
            else:
                for sentence in judged["sentences"]:
                    cited = []
                    for c in sentence["citations"]:
                        if c["reference"] not in references:
                            references.append(c["reference"])
                        cited.append(references.index(c["reference"]))
                    text = sentence["text"] if isinstance(sentence["text"], str) else ""
                    answer.append({"text": text, "citations": cited})
            words = sum(len(a["text"].split()) for a in answer)
            if fmt == "rag24":
                line = {"run_id": run, "topic_id": row["qid"], "topic": row["query"], "references": references,
                        "response_length": words, "answer": answer}
            else:
                line = {"metadata": {"team_id": team, "run_id": run, "narrative_id": row["qid"], "type": "automatic",
                                     "narrative": row["query"], "prompt": "answer the question"},
                        "references": references, "answer": answer}
            out.append(json.dumps(line))
        files[run] = ("\n".join(out) + "\n").encode()
    return files


def rag_eval(data: Path, *extra: str) -> dict[tuple[str, str], float | None]:
    """``cranfield rag eval`` on the same files: (run, metric) -> the run's mean (None: undefined)."""
    from service.cli import main

    buffer = io.StringIO()
    with redirect_stdout(buffer):
        code = main(["rag", "eval", "--assignments", str(data / ASSIGNMENTS),
                     *[a for name in SUPPORT for a in ("--support", str(data / name))], "--format", "json",
                     "-m", OFFICIAL, "-m", "support_precision", "-m", "support_recall", *extra])
    assert code == 0
    doc = json.loads(buffer.getvalue())
    return {(run, metric): value["mean"] for run, metrics in doc["runs"].items() for metric, value in metrics.items()}


@pytest.fixture
def inline(backend: Backend) -> Iterator[tuple[Any, str, Any]]:
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction

    factory = backend.factory()
    with transaction(factory) as s:
        admin, _ = create_token(s, "admin", name="root")
    with TestClient(app=create_app(backend.database_url, lambda f: run_inline(factory, f))) as client:
        yield client, admin, factory


def _track(client: Any, admin: str) -> tuple[int, dict[str, str]]:
    """An answers collection, its three teams enrolled; the tokens of its organiser and teams."""
    a = auth(admin)
    r = client.post("/api/collections", json={"name": "rag24", "task_kind": "answers",
                                              "significance": {"test": "t", "resamples": 1000}}, headers=a)
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    tokens = {"organiser": client.post("/api/tokens", json={"role": "organiser", "collections": [cid]},
                                       headers=a).json()["token"]}
    for team in ("alpha", "beta", "gamma"):
        assert client.post("/api/teams", json={"name": team}, headers=a).status_code in (201, 409)
        assert client.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
        tokens[team] = client.post("/api/tokens", json={"role": "participant", "team": team},
                                   headers=auth(tokens["organiser"])).json()["token"]
    return cid, tokens


def test_an_answers_collection_end_to_end_on_nists_files(inline: tuple[Any, str, Any], data: Path) -> None:
    client, admin, factory = inline
    cid, tokens = _track(client, admin)
    org = auth(tokens["organiser"])
    doc = client.get(f"/api/collections/{cid}", headers=org).json()
    assert doc["task_kind"] == "answers" and doc["official_metric"] == OFFICIAL
    assert doc["answer_settings"]["format"] == "auto"

    # the judgments: assignments (the topics come with them), then both support files, gzipped as NIST ships them
    r = client.post(f"/api/collections/{cid}/answer-judgments/assignments?source={ASSIGNMENTS}",
                    content=(data / ASSIGNMENTS).read_bytes(), headers=org)
    assert r.status_code == 201, r.text
    assert r.json()["parts"]["assignments"]["runs"] == 45 and r.json()["parts"]["assignments"]["topics"] == 21
    for name in SUPPORT:
        r = client.post(f"/api/collections/{cid}/answer-judgments/support?append=true&source={name}",
                        content=(data / name).read_bytes(), headers=org)
        assert r.status_code == 201, r.text
    assert r.json()["parts"]["support_answers"] == 585 + 381
    topics = client.get(f"/api/collections/{cid}/topics", headers=org).json()
    assert len(topics["items"] if isinstance(topics, dict) else topics) == 23 + 21 - 12

    # the teams submit (the client's door: the API upload), 2024 and 2025 format 1
    ids = {}
    for (team, run, fmt), body in zip(SUBMITTED, answer_runs(data).values()):
        r = client.post(f"/api/collections/{cid}/runs", content=gzip.compress(body), headers=auth(tokens[team]))
        assert r.status_code == 201, r.text
        assert r.json()["tag"] == run and r.json()["format"] == fmt
        ids[run] = r.json()["id"]

    # the board ranks by Vital strict, with cranfield rag eval's values on the same files
    want = rag_eval(data)
    board = client.get(f"/api/collections/{cid}/leaderboard", headers=org).json()
    rows = board["rows"]
    assert board["metric"] == OFFICIAL
    assert {row["run"] for row in rows} == {run for _, run, _ in SUBMITTED}
    for row in rows:
        assert row["mean"] == pytest.approx(want[(row["run"], OFFICIAL)], abs=1e-12)
    means = [row["mean"] for row in rows]
    assert means == sorted(means, reverse=True)
    # support precision/recall stored per run as rag eval gives them
    for metric in ("support_precision", "support_recall"):
        rows = client.get(f"/api/collections/{cid}/leaderboard", params={"metric": metric}, headers=org).json()["rows"]
        assert {row["run"] for row in rows} == set(ids)
        for row in rows:
            assert row["mean"] == pytest.approx(want[(row["run"], metric)], abs=1e-12)
    # significance stored for the official metric
    sig = client.get(f"/api/collections/{cid}/significance", params={"metric": OFFICIAL}, headers=org)
    assert sig.status_code == 200, sig.text
    assert len(sig.json()["runs"]) == len(SUBMITTED)

    # a run's page data: its answers with the nuggets' assignments and the citations' support
    view = client.get(f"/api/runs/{ids['BEST_cot_gpt3.5']}/answers", headers=auth(tokens["alpha"])).json()
    topic = next(t for t in view["topics"] if t["nuggets"])
    assert {n["assignment"] for n in topic["nuggets"]} <= {"support", "partial_support", "not_support"}
    assert any(t["support_judged"] for t in view["topics"])
    assert client.get(f"/api/runs/{ids['BEST_cot_gpt3.5']}/answers",
                      headers=auth(tokens["beta"])).status_code == 403
