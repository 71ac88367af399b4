"""Two judgment sets of a collection of answers compared (issue 36, item 3), through the API and
``cranfield rag compare --collection``: NIST's assignments (the official set) against an
automatic-like set derived from them (20% of not_support judged partial_support), the five
submitted runs scored under both by the workers. The label figures equal the core's on the
files; the ranking figures are those of the two boards' means; every role gets what it may."""

from __future__ import annotations

import gzip
import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from service.formats.rag_judgments import read_assignments
from service.metrics.rag_agreement import assignment_labels
from tests.integration.conftest import Backend, auth
from tests.integration.test_answer_collections import ASSIGNMENTS, SUBMITTED, SUPPORT, answer_runs
from tests.integration.test_diversity_and_sampled_collections import inline, portal_cookie  # noqa: F401

VITAL_STRICT = "nugget_vital(strict=true)"
#: The API question is answered alike on both databases; the CLI reads the database itself.
SQLITE_ONLY_BUT = {"test_the_cli_compares_a_collections_sets"}


@pytest.fixture(scope="module")
def data() -> Path:
    from tests.conftest import require_shared

    return require_shared("data/trec-rag24")


def derived(data: Path) -> bytes:
    rows = [json.loads(line) for line in gzip.decompress((data / ASSIGNMENTS).read_bytes()).splitlines()]
    rng = np.random.default_rng(20)
    for row in rows:
        for nugget in row["nuggets"]:
            if nugget["assignment"] == "not_support" and rng.random() < 0.2:
                nugget["assignment"] = "partial_support"
            elif nugget["assignment"] == "support" and rng.random() < 0.1:
                nugget["assignment"] = "not_support"
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def _setup(client: Any, admin: str, data: Path) -> tuple[int, dict[str, str]]:
    a = auth(admin)
    cid = client.post("/api/collections", json={"name": "rag", "task_kind": "answers"}, headers=a).json()["id"]
    tokens = {"organiser": client.post("/api/tokens", json={"role": "organiser", "collections": [cid]},
                                       headers=a).json()["token"], "admin": admin, "anonymous": ""}
    org = auth(tokens["organiser"])
    assert client.post(f"/api/collections/{cid}/answer-judgments/assignments", content=(data / ASSIGNMENTS).read_bytes(),
                       headers=org).status_code == 201
    assert client.post(f"/api/collections/{cid}/answer-judgments/support?append=true",
                       content=(data / SUPPORT[0]).read_bytes(), headers=org).status_code == 201
    r = client.post(f"/api/collections/{cid}/judgment-sets", json={"name": "llm", "source": "automatic",
                                                                   "model": "an assigner", "auto_evaluate": True},
                    headers=org)
    assert r.status_code == 201, r.text
    for team in ("alpha", "beta", "gamma"):
        assert client.post("/api/teams", json={"name": team}, headers=a).status_code in (201, 409)
        assert client.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
        tokens[team] = client.post("/api/tokens", json={"role": "participant", "team": team},
                                   headers=org).json()["token"]
    for (team, _run, _fmt), body in zip(SUBMITTED, answer_runs(data).values()):
        assert client.post(f"/api/collections/{cid}/runs", content=body, headers=auth(tokens[team])).status_code == 201
    # the automatic set's version, scored for every run at its upload (the set evaluates automatically)
    r = client.post(f"/api/collections/{cid}/answer-judgments/assignments?judgment_set=llm", content=derived(data),
                    headers=org)
    assert r.status_code == 201, r.text
    return cid, tokens


def test_two_assignment_sets_compared_through_the_api(inline: tuple[Any, str, Any], data: Path) -> None:  # noqa: F811
    client, admin, factory = inline
    cid, tokens = _setup(client, admin, data)
    org = auth(tokens["organiser"])
    r = client.get(f"/api/collections/{cid}/answer-judgments/compare", params={"a": "official", "b": "llm"},
                   headers=org)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["a"]["judgment_set"] == "official" and doc["b"]["judgment_set"] == "llm"
    # the labels: the core's figures on the two files
    want = assignment_labels(read_assignments(gzip.decompress((data / ASSIGNMENTS).read_bytes()), "a"),
                             read_assignments(derived(data), "b")).labels.overall
    assert doc["agreement"]["confusion"] == want.confusion.tolist()
    assert doc["agreement"]["kappa"] == want.kappa and doc["agreement"]["alpha_ordinal"] == want.alpha
    assert doc["agreement"]["partial_share_second"] > 3 * doc["agreement"]["partial_share_first"]
    # the rankings of the five runs: the two boards' means, Kendall's tau-b as scipy gives it
    assert VITAL_STRICT in doc["rankings"], (list(doc["rankings"]), doc["notes"])
    ranking = doc["rankings"][VITAL_STRICT]
    assert ranking["runs"] == 5 and ranking["topics"]["compared"] == 21
    boards = []
    for version in (doc["a"]["version"], doc["b"]["version"]):
        rows = client.get(f"/api/collections/{cid}/leaderboard", params={"metric": VITAL_STRICT,
                                                                           "qrels_version": version},
                          headers=org).json()["rows"]
        boards.append({row["run"]: row["mean"] for row in rows})
    runs = sorted(boards[0])
    tau = stats.kendalltau([boards[0][r] for r in runs], [boards[1][r] for r in runs]).statistic
    assert ranking["kendall"]["value"] == pytest.approx(tau, abs=1e-12)
    assert set(ranking["per_topic_kendall"]) and ranking["kendall"]["resamples"] == 1000

    # support: the llm set's version holds assignments only (a new set starts empty), so there is
    # nothing to compare; official against its own earlier version does compare support
    r = client.get(f"/api/collections/{cid}/answer-judgments/compare",
                   params={"a": "official", "b": "llm", "kind": "support"}, headers=org)
    assert r.status_code == 409 and "has no support judgments" in r.text, r.text
    r = client.get(f"/api/collections/{cid}/answer-judgments/compare",
                   params={"a": "official", "b": "official", "kind": "support"}, headers=org)
    assert r.status_code == 200, r.text
    same = r.json()
    assert same["agreement"]["kappa"] == 1.0 and same["agreement"]["second_higher"] == 0
    assert {m: v["kendall"]["value"] for m, v in same["rankings"].items()} == {
        "support_precision": 1.0, "support_recall": 1.0}
    # a metric of the other family is refused
    r = client.get(f"/api/collections/{cid}/answer-judgments/compare",
                   params={"a": "official", "b": "llm", "metric": "support_precision"}, headers=org)
    assert r.status_code == 400 and "not a nugget score" in r.text

    # every role
    expected = {"anonymous": 401, "alpha": 403, "beta": 403, "gamma": 403, "organiser": 200, "admin": 200}
    for role, status in expected.items():
        r = client.get(f"/api/collections/{cid}/answer-judgments/compare", params={"a": "official", "b": "llm"},
                       headers=auth(tokens[role]))
        assert r.status_code == status, (role, r.status_code, r.text)
    # the portal's page (the organisers'): the same figures, for people
    page = client.get(f"/c/{cid}/qrels/compare", params={"a": "official", "b": "llm"},
                      headers=portal_cookie(factory, tokens["organiser"]))
    assert page.status_code == 200, page.text
    assert 'id="confusion"' in page.text and f"{doc['agreement']['kappa']:.3f}" in page.text
    assert f"{100 * doc['agreement']['partial_share_second']:.1f}%" in page.text
    assert f"{ranking['kendall']['value']:.3f}" in page.text and "llm (version" in page.text
    default = client.get(f"/c/{cid}/qrels/compare", headers=portal_cookie(factory, tokens["organiser"]))
    assert default.status_code == 200 and 'value="official"' in default.text and 'value="llm"' in default.text
    support = client.get(f"/c/{cid}/qrels/compare", params={"a": "official", "b": "llm", "kind": "support"},
                         headers=portal_cookie(factory, tokens["organiser"]))
    assert support.status_code == 409 and "has no support judgments" in support.text
    refused = client.get(f"/c/{cid}/qrels/compare", params={"a": "official", "b": "llm"},
                         headers=portal_cookie(factory, tokens["alpha"]))
    assert refused.status_code == 403 and 'id="confusion"' not in refused.text
    # a collection of ranked lists: its sets are compared elsewhere
    ranked = client.post("/api/collections", json={"name": "ranked"}, headers=auth(admin)).json()["id"]
    r = client.get(f"/api/collections/{ranked}/answer-judgments/compare", params={"a": "official", "b": "official"},
                   headers=auth(admin))
    assert r.status_code == 409 and "takes ranked lists" in r.text, r.text


def test_the_cli_compares_a_collections_sets(backend: Backend, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cranfield rag compare --collection NAME --from official --to llm`` on the database."""
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.cli import main
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction
    from tests.integration.conftest import run_inline

    factory = backend.factory()
    with transaction(factory) as s:
        admin, _ = create_token(s, "admin", name="root")
    with TestClient(app=create_app(backend.database_url, lambda f: run_inline(factory, f))) as client:
        _setup(client, admin, data)
        api = client.get("/api/collections/1/answer-judgments/compare", params={"a": "official", "b": "llm"},
                         headers=auth(admin)).json()
    from service.config import settings

    monkeypatch.setenv("CRANFIELD_DATABASE_URL", backend.database_url)
    settings.cache_clear()
    try:
        out = io.StringIO()
        with redirect_stdout(out):
            code = main(["rag", "compare", "--collection", "rag", "--from", "official", "--to", "llm",
                         "--format", "json"])
        assert code == 0
        doc = json.loads(out.getvalue())
        assert doc["agreement"] == api["agreement"] and doc["rankings"] == api["rankings"]
        text = io.StringIO()
        with redirect_stdout(text):
            assert main(["rag", "compare", "--collection", "rag", "--to", "llm"]) == 0
        assert text.getvalue().startswith("rag: set llm (version ") and "Cohen's kappa" in text.getvalue()
    finally:
        settings.cache_clear()
