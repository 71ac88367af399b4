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
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_shared
from tests.integration.conftest import Backend, auth, run_inline
from tests.integration.test_diversity_and_sampled_collections import inline, portal_cookie  # noqa: F401

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


def test_an_answers_collection_end_to_end_on_nists_files(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
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

    # the run's page shows the answer: nuggets labelled by assignment, citations by support (text, not colour alone)
    page = client.get(f"/runs/{ids['BEST_cot_gpt3.5']}", headers=portal_cookie(factory, tokens["alpha"]))
    assert page.status_code == 200 and 'id="answers"' in page.text
    assert 'class="nugget support" data-assignment="support">supported</span>' in page.text
    assert "full support]</span>" in page.text or "partial support]</span>" in page.text
    other_team = client.get(f"/runs/{ids['BEST_cot_gpt3.5']}", headers=portal_cookie(factory, tokens["beta"]))
    assert 'id="answers"' not in other_team.text

    # a new version of the official assignments re-scores every run (the board follows it)
    edited = [json.loads(line) for line in gzip.decompress((data / ASSIGNMENTS).read_bytes()).splitlines()]
    for row in edited:
        if row["run_id"] == "ICL-mistral":
            for nugget in row["nuggets"]:
                nugget["assignment"] = "support"
    body = "\n".join(json.dumps(row) for row in edited).encode()
    r = client.post(f"/api/collections/{cid}/answer-judgments/assignments", content=body, headers=org)
    assert r.status_code == 201, r.text
    assert r.json()["previous_version"] == 3 and r.json()["version"] == 4 and r.json()["job"] is not None
    assert len(r.json()["parts"]["support"]) == 2  # the other parts carried over
    board = client.get(f"/api/collections/{cid}/leaderboard", headers=org).json()
    assert board["qrels_version"] == 4
    assert board["rows"][0]["run"] == "ICL-mistral" and board["rows"][0]["mean"] == 1.0

    # another set (an LLM assigner's, with its provenance): its own versions, scored on request of the board
    r = client.post(f"/api/collections/{cid}/judgment-sets", json={"name": "llm", "source": "automatic",
                                                                   "model": "gpt-4o"}, headers=org)
    assert r.status_code == 201, r.text
    r = client.post(f"/api/collections/{cid}/answer-judgments/assignments?judgment_set=llm",
                    content=(data / ASSIGNMENTS).read_bytes(), headers=org)
    assert r.status_code == 201 and r.json()["judgment_set"] == "llm" and r.json()["version"] == 5
    llm = client.get(f"/api/collections/{cid}/leaderboard", params={"qrels_version": 5}, headers=org).json()
    assert {row["run"]: row["mean"] for row in llm["rows"]} == pytest.approx(
        {run: want[(run, OFFICIAL)] for run in ids}, abs=1e-12)
    assert client.get(f"/api/collections/{cid}/leaderboard", headers=org).json()["qrels_version"] == 4


def refused(r: Any, source: str, line: int, text: str) -> None:
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert (error["source"], error["line"]) == (source, line) and text in error["message"], error


def test_refusals_name_the_file_line_and_field_and_store_nothing(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    client, admin, _factory = inline
    cid, tokens = _track(client, admin)
    org = auth(tokens["organiser"])
    r = client.patch(f"/api/collections/{cid}", json={"answer_settings": {"format": "rag24", "words": 50}},
                     headers=org)
    assert r.status_code == 200 and r.json()["answer_settings"]["limits"]["words"] == 50
    # a submission before any topic exists
    body = next(iter(answer_runs(data).values()))
    assert client.post(f"/api/collections/{cid}/runs", content=body,
                       headers=auth(tokens["alpha"])).status_code == 409
    # an assignment file whose topic lists differ between rows: the error names both rows
    rows = gzip.decompress((data / ASSIGNMENTS).read_bytes()).splitlines()
    second = json.loads(rows[1])
    second["nuggets"] = second["nuggets"][1:]
    bad = b"\n".join([rows[0], json.dumps(second).encode(), *rows[2:]])
    first = json.loads(rows[0])
    assert first["qid"] == second["qid"]
    r = client.post(f"/api/collections/{cid}/answer-judgments/assignments?source=a.jl", content=bad, headers=org)
    refused(r, "a.jl", 2, "line 1")
    assert client.get(f"/api/collections/{cid}/qrels", headers=org).json()["items"] == []
    # nuggets first: an assignment row naming a nugget the topic lacks is an error naming the line
    nuggets = "\n".join(json.dumps({"qid": first["qid"], "query": first["query"],
                                    "nuggets": [{"text": n["text"], "importance": n["importance"]}
                                                for n in first["nuggets"][:-1]]}) for _ in (0,)).encode()
    r = client.post(f"/api/collections/{cid}/answer-judgments/nuggets?source=n.jl", content=nuggets, headers=org)
    assert r.status_code == 201 and r.json()["job"] is None, r.text
    r = client.post(f"/api/collections/{cid}/answer-judgments/assignments?source=a.jl", content=rows[0], headers=org)
    refused(r, "a.jl", 1, "nugget")
    versions = client.get(f"/api/collections/{cid}/qrels", headers=org).json()["items"]
    assert [v["version"] for v in versions] == [1]
    # answers over the collection's limits (50 words), a citation out of range, an unknown topic
    good = {"run_id": "r1", "topic_id": first["qid"], "topic": first["query"], "references": ["d1"],
            "response_length": 2, "answer": [{"text": "two words", "citations": [0]}]}
    cases = [({"answer": [{"text": "word " * 60, "citations": []}], "response_length": 60}, "words"),
             ({"answer": [{"text": "two words", "citations": [10**9]}]}, "answer[0].citations[0]"),
             ({"topic_id": "no-such-topic"}, "topic_id")]
    for change, field in cases:
        line = json.dumps({**good, **change}).encode()
        r = client.post(f"/api/collections/{cid}/runs", content=gzip.compress(line),
                        headers=auth(tokens["alpha"]))
        refused(r, "run upload", 1, field)
    assert client.get(f"/api/collections/{cid}/runs", headers=org).json()["items"] == []
    r = client.post(f"/api/collections/{cid}/runs", content=json.dumps(good).encode(), headers=auth(tokens["alpha"]))
    assert r.status_code == 201 and r.json()["format"] == "rag24", r.text
    # a ranked run is not an answer, and a ranked collection takes no nuggets
    r = client.post(f"/api/collections/{cid}/runs", content=b"t Q0 d 1 1 x\n", headers=auth(tokens["beta"]))
    assert r.status_code == 422, r.text
    ranked = client.post("/api/collections", json={"name": "ranked"}, headers=auth(admin)).json()["id"]
    r = client.post(f"/api/collections/{ranked}/answer-judgments/nuggets", content=nuggets, headers=auth(admin))
    assert r.status_code == 409
    r = client.patch(f"/api/collections/{ranked}", json={"official_metric": OFFICIAL}, headers=auth(admin))
    assert r.status_code == 400 and "task_kind answers" in r.text


def test_every_role_on_the_answers_endpoints(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    client, admin, _factory = inline
    cid, tokens = _track(client, admin)
    a = auth(admin)
    other = client.post("/api/collections", json={"name": "other", "task_kind": "answers"}, headers=a).json()["id"]
    tokens["admin"] = admin
    tokens["other_organiser"] = client.post("/api/tokens", json={"role": "organiser", "collections": [other]},
                                            headers=a).json()["token"]
    tokens["anonymous"] = ""
    assignments = (data / ASSIGNMENTS).read_bytes()
    assert client.post(f"/api/collections/{cid}/answer-judgments/assignments", content=assignments,
                       headers=a).status_code == 201
    r = client.post("/api/tokens", json={"role": "assessor", "collections": [cid], "topics": ["2024-142395"]},
                    headers=a)
    assert r.status_code == 201, r.text
    tokens["assessor"] = r.json()["token"]
    expected_upload = {"anonymous": 401, "alpha": 403, "beta": 403, "gamma": 403, "other_organiser": 403,
                       "assessor": 403, "organiser": 201, "admin": 201}
    for role, want in expected_upload.items():
        r = client.post(f"/api/collections/{cid}/answer-judgments/assignments", content=assignments,
                        headers=auth(tokens[role]))
        assert r.status_code == want, (role, r.status_code, r.text)
    body = answer_runs(data)["BEST_cot_gpt3.5"]
    rid = client.post(f"/api/collections/{cid}/runs", content=body, headers=auth(tokens["alpha"])).json()["id"]
    expected_view = {"anonymous": 401, "alpha": 200, "beta": 403, "gamma": 403, "other_organiser": 403,
                     "assessor": 403, "organiser": 200, "admin": 200}
    for role, want in expected_view.items():
        r = client.get(f"/api/runs/{rid}/answers", headers=auth(tokens[role]))
        assert r.status_code == want, (role, r.status_code, r.text)
        if want == 200:
            assert any(t["nuggets"] for t in r.json()["topics"])


def test_cranfield_load_of_an_answers_collection(backend: Backend, data: Path, tmp_path: Path) -> None:
    """``cranfield load --task-kind answers``: the judgments and the answer runs in one
    transaction, a bad answer file storing nothing; the runs scored as through the API."""
    from sqlalchemy import func, select

    from service.cli import main
    from service.evaluation.common.work import Followup, TaskName
    from service.store.models import Collection, JobItem, Run, Score

    backend.activate()
    factory = backend.factory()
    runs = tmp_path / "runs"
    runs.mkdir()
    for run, body in answer_runs(data).items():
        (runs / f"{run}.jsonl").write_bytes(body)
    judgments = ["--assignments", str(data / ASSIGNMENTS), *[a for n in SUPPORT for a in ("--support", str(data / n))]]
    (tmp_path / "bad.jsonl").write_bytes(b'{"run_id": "x", "topic_id": "2024-142395"}\n')
    assert main(["load", "--collection", "rag", "--task-kind", "answers", *judgments,
                 "--runs", str(runs), str(tmp_path / "bad.jsonl")]) == 1
    with factory() as s:
        assert s.scalar(select(func.count()).select_from(Collection)) == 0
    assert main(["load", "--collection", "rag", "--task-kind", "answers", *judgments, "--runs", str(runs)]) == 0
    with factory() as s:
        coll = s.scalars(select(Collection)).one()
        assert coll.task_kind == "answers" and coll.current_qrels.format == "rag"
        assert coll.current_config.official_metric == OFFICIAL
        items = list(s.scalars(select(JobItem.id)))
    run_inline(factory, [Followup(TaskName.EVALUATE_ITEM, i) for i in items])
    want = rag_eval(data)
    with factory() as s:
        got = dict(s.execute(select(Run.tag, Score.mean).join(Score.evaluation).join(Run).where(
            Score.metric == OFFICIAL)).all())
    assert got == pytest.approx({run: want[(run, OFFICIAL)] for _, run, _ in SUBMITTED}, abs=1e-12)


def test_the_portal_form_and_hidden_topics(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    """The portal's submit form takes answer files as it takes runs (a refusal shown with the file
    and line, nothing stored); a hidden topic of an unrevealed split is left out of the answers a
    team reads, and of its board figures."""
    from service.portal.forms import COOKIE, csrf_for

    client, admin, factory = inline
    cid, tokens = _track(client, admin)
    org = auth(tokens["organiser"])
    assert client.post(f"/api/collections/{cid}/answer-judgments/assignments",
                       content=(data / ASSIGNMENTS).read_bytes(), headers=org).status_code == 201
    cookie = portal_cookie(factory, tokens["alpha"])
    csrf = csrf_for(cookie["Cookie"].removeprefix(f"{COOKIE}="))
    body = answer_runs(data)["BEST_cot_gpt3.5"]
    lines = body.decode().splitlines()
    broken = json.loads(lines[1])
    broken["answer"][0]["citations"] = [7]
    bad = "\n".join([lines[0], json.dumps(broken), *lines[2:]]) + "\n"
    r = client.post(f"/c/{cid}/submit", files={"file": ("answers.jsonl", bad)}, data={"csrf": csrf}, headers=cookie)
    assert r.status_code == 422 and "answers.jsonl, line 2" in r.text and "citations[0]" in r.text
    assert client.get(f"/api/collections/{cid}/runs", headers=org).json()["items"] == []
    r = client.post(f"/c/{cid}/submit", files={"file": ("answers.jsonl", body)}, data={"csrf": csrf}, headers=cookie,
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    (run,) = client.get(f"/api/collections/{cid}/runs", headers=org).json()["items"]
    hidden = json.loads(lines[0])["topic_id"]
    assert client.patch(f"/api/collections/{cid}", json={"hidden_topics": [hidden], "leaderboard_released": True},
                        headers=org).status_code == 200
    team_view = client.get(f"/api/runs/{run['id']}/answers", headers=auth(tokens["alpha"])).json()
    assert hidden not in {t["topic"] for t in team_view["topics"]} and len(team_view["topics"]) == len(lines) - 1
    organiser_view = client.get(f"/api/runs/{run['id']}/answers", headers=org).json()
    assert hidden in {t["topic"] for t in organiser_view["topics"]}
    public = client.get(f"/api/collections/{cid}/leaderboard", headers=auth(tokens["beta"])).json()["rows"][0]
    full = client.get(f"/api/collections/{cid}/leaderboard", headers=org).json()["rows"][0]
    assert public["n_topics"] == full["n_topics"] - 1


def test_the_portal_creates_a_collection_of_answers(inline: tuple[Any, str, Any]) -> None:  # noqa: F811
    """The new-collection form's task kind: answers get Vital strict and the RAG scores unless the
    organiser changed the shown metrics; its settings form then saves without touching them."""
    from service.portal.forms import COOKIE, csrf_for
    from tests.integration.test_console import _form_values

    client, admin, factory = inline
    cookie = portal_cookie(factory, admin)
    csrf = csrf_for(cookie["Cookie"].removeprefix(f"{COOKIE}="))
    form = _form_values(client.get("/collections/new", headers=cookie).text, "new-collection")
    assert form["task_kind"] == "ranked"
    r = client.post("/collections/new", data={**form, "name": "rag", "task_kind": "answers", "csrf": csrf},
                    headers=cookie, follow_redirects=False)
    assert r.status_code == 303, r.text
    (doc,) = [c for c in client.get("/api/collections", headers=auth(admin)).json()["items"] if c["name"] == "rag"]
    assert doc["task_kind"] == "answers" and doc["official_metric"] == OFFICIAL and "support_recall" in doc["metrics"]
    r = client.post("/collections/new", data={**form, "name": "ranked", "csrf": csrf}, headers=cookie,
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    (ranked,) = [c for c in client.get("/api/collections", headers=auth(admin)).json()["items"]
                 if c["name"] == "ranked"]
    assert ranked["task_kind"] == "ranked" and ranked["official_metric"] == "AP"


def test_an_untouched_settings_form_of_an_answers_collection_changes_nothing(
        inline: tuple[Any, str, Any]) -> None:  # noqa: F811
    from service.portal.forms import COOKIE, csrf_for
    from tests.integration.test_console import _form_values

    client, admin, factory = inline
    cid, _ = _track(client, admin)
    assert client.patch(f"/api/collections/{cid}", json={"answer_settings": {"format": "rag25", "words": 300}},
                        headers=auth(admin)).status_code == 200
    before = client.get(f"/api/collections/{cid}", headers=auth(admin)).json()
    cookie = portal_cookie(factory, admin)
    csrf = csrf_for(cookie["Cookie"].removeprefix(f"{COOKIE}="))
    form = _form_values(client.get(f"/c/{cid}/console/settings", headers=cookie).text, "settings")
    r = client.post(f"/c/{cid}/console/settings", data={**form, "csrf": csrf, "confirm": "1"}, headers=cookie,
                    follow_redirects=False)
    assert r.status_code == 303, r.text[:3000]
    after = client.get(f"/api/collections/{cid}", headers=auth(admin)).json()
    assert after["answer_settings"] == before["answer_settings"] and after["config_version"] == before["config_version"]


def test_hostile_answer_files_are_refused_at_the_door(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    """Through the API, as in file mode: a 5 MB sentence (past the line bound), deep nesting,
    invalid UTF-8, 10^5 sentences: 422 naming the line; nothing stored."""
    client, admin, _ = inline
    cid, tokens = _track(client, admin)
    org = auth(tokens["organiser"])
    assert client.post(f"/api/collections/{cid}/answer-judgments/assignments",
                       content=(data / ASSIGNMENTS).read_bytes(), headers=org).status_code == 201
    topic = json.loads(gzip.decompress((data / ASSIGNMENTS).read_bytes()).splitlines()[0])["qid"]
    good = json.dumps({"run_id": "r", "topic_id": topic, "topic": "q", "references": ["d"], "response_length": 2,
                       "answer": [{"text": "two words", "citations": [0]}]})
    huge = json.dumps({"run_id": "r", "topic_id": "x", "topic": "q", "references": [], "response_length": 1,
                       "answer": [{"text": "w" * 5_000_000, "citations": []}]})
    many = json.dumps({"run_id": "r", "topic_id": topic, "topic": "q", "references": [], "response_length": 0,
                       "answer": [{"text": "", "citations": []}] * 100_000})
    cases = [(f"{good}\n{huge}\n".encode(), 2), (f"{good}\n".encode() + b"[" * 100_000 + b"\n", 2),
             (f"{good}\n".encode() + b'{"run_id": "\xff"}\n', 2), (f"{many}\n".encode(), 1)]
    for body, line in cases:
        r = client.post(f"/api/collections/{cid}/runs", content=gzip.compress(body), headers=auth(tokens["alpha"]))
        assert r.status_code == 422, r.text[:300]
        assert r.json()["error"]["line"] == line, r.json()["error"]
    assert client.get(f"/api/collections/{cid}/runs", headers=org).json()["items"] == []
