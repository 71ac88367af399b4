"""Files everywhere (issue 25, items 11 and 12): `cranfield eval` reads diversity and sampled
qrels as the service does, and gzipped files come through the API as their text.

Each collection is uploaded to the service (its qrels and runs gzipped), evaluated by the
workers' use cases in this process, and its stored per-topic values are compared with
`cranfield eval` on the same files (plain and gzipped, the format named and auto-detected) and
with the peers: pyndeval (TREC's ndeval) for the ndeval measures, pytrec_eval (trec_eval 9)
for infAP, the core's evaluators for D#-nDCG, xinfAP and infNDCG (which have no installed peer;
tests/peers/test_diversity_peers.py and tests/unit/test_inferred.py check them), as
tests/integration/test_diversity_and_sampled_collections.py explains.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from service.formats.diversity import parse_diversity_qrels, parse_intent_probabilities
from service.formats.sampled import parse_sampled_qrels
from service.metrics.diversity import DiversityEvaluator
from service.metrics.inferred_sampled import SampleEvaluator
from tests.integration import test_diversity_and_sampled_collections as collections
from tests.integration.conftest import auth
from tests.integration.test_diversity_and_sampled_collections import (
    NDEVAL,
    _collection,
    diversity_collection,
    diversity_peers,
    ntcir_version,
    ranked,
    sampled_collection,
    scores,
)
from tests.support.peers import require_peer

pyndeval = require_peer("pyndeval")
pytrec_eval = require_peer("pytrec_eval", "pytrec-eval-terrier")

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)

TOL = 1e-12
inline = collections.inline  # the fixture: an API client whose follow-ups run in this process
TEAMS = ("alpha", "beta")


def cli_eval(capsys: pytest.CaptureFixture[str], qrels: Path, runs: list[Path], metrics: list[str],
             *options: str) -> dict[str, dict[str, dict[str, float]]]:
    """`cranfield eval --per-topic --format json`: run -> metric -> topic -> value."""
    argv = ["eval", "--per-topic", "--format", "json", "--qrels", str(qrels), *options, *map(str, runs)]
    for m in metrics:
        argv += ["-m", m]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    return {run: {m: v["per_topic"] for m, v in ms.items()} for run, ms in doc["runs"].items()}


def write(folder: Path, name: str, text: str, gz: bool = False) -> Path:
    path = folder / name
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


def submit_gzipped(client: Any, cid: int, org: str, runs: dict[str, str]) -> dict[str, int]:
    """Each run as its gzipped bytes: one as the raw body, the others as a multipart file."""
    ids = {}
    for k, (tag, text) in enumerate(runs.items()):
        data = gzip.compress(text.encode())
        url = f"/api/collections/{cid}/runs?team={TEAMS[k % 2]}"
        r = (client.post(url, content=data, headers=auth(org)) if k == 0 else
             client.post(url, files={"file": (f"input.{tag}.gz", data)}, headers=auth(org)))
        assert r.status_code == 201, r.text
        ids[tag] = r.json()["id"]
    return ids


def assert_same(stored: dict[str, float | None], printed: dict[str, float], what: str) -> float:
    assert set(stored) == set(printed), what
    worst = max(abs(stored[t] - printed[t]) for t in stored)  # type: ignore[operator]
    assert worst <= TOL, (what, worst)
    return worst


# ----------------------------------------------------------------------------- item 11
def test_diversity_qrels_in_file_mode_as_in_the_service_and_ndeval(
        inline: tuple[Any, str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    client, admin, _ = inline
    g = diversity_collection()
    metrics = [*NDEVAL, "D#-nDCG@10", "AP"]
    cid, org = _collection(client, admin, "diversity files", "alpha-nDCG@20", metrics)
    r = client.post(f"/api/collections/{cid}/qrels?format=diversity-trec", content=gzip.compress(g.qrels.encode()),
                    headers=auth(org))
    assert r.status_code == 201 and r.json()["format"] == "diversity", r.text
    ids = submit_gzipped(client, cid, org, g.runs)

    qrels, qrels_gz = write(tmp_path, "div.qrels", g.qrels), write(tmp_path, "div.qrels.gz", g.qrels, gz=True)
    runs = [write(tmp_path, f"{tag}.run", text) for tag, text in g.runs.items()]
    runs_gz = [write(tmp_path, f"input.{tag}.gz", text, gz=True) for tag, text in g.runs.items()]
    detected = cli_eval(capsys, qrels, runs, metrics)  # auto: four columns and an intent-aware metric
    assert cli_eval(capsys, qrels_gz, runs_gz, metrics, "--qrels-format", "diversity-trec") == detected

    compared = 0
    for tag, ranking, peer, ours in diversity_peers(g):
        for metric in metrics:
            printed = detected[tag][metric]
            assert_same(scores(client, org, ids[tag], metric), printed, f"{tag} {metric}: service vs CLI")
            for t, v in printed.items():
                if metric in NDEVAL:
                    expected = peer[t][NDEVAL[metric]] if t in ranking else 0.0  # a missing topic scores 0
                elif metric == "D#-nDCG@10":
                    expected = ours[metric][t]
                else:
                    continue  # AP: the flattened view, checked against the service above
                assert abs(v - expected) <= 1e-9, (tag, metric, t, v, expected)
                compared += 1
    assert compared == len(g.runs) * (len(NDEVAL) + 1) * 7  # seven topics with a relevant document


def test_ntcir_intent_qrels_with_probabilities_in_file_mode_as_in_the_service(
        inline: tuple[Any, str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    client, admin, _ = inline
    g = diversity_collection()
    qrels_text, probs_text = ntcir_version(g)
    metrics = ["D#-nDCG@10", "D-nDCG@10", "I-rec@10", "alpha-nDCG@20", "nDCG@10"]
    cid, org = _collection(client, admin, "intent files", "D#-nDCG@10", metrics)
    files = {"qrels": ("intents.dqrels.gz", gzip.compress(qrels_text.encode())),
             "probabilities": ("intents.iprob.gz", gzip.compress(probs_text.encode()))}
    r = client.post(f"/api/collections/{cid}/qrels", files=files, data={"format": "diversity-ntcir"},
                    headers=auth(org))
    assert r.status_code == 201 and r.json()["format"] == "diversity", r.text
    ids = submit_gzipped(client, cid, org, g.runs)

    qrels = write(tmp_path, "intents.dqrels", qrels_text)
    probs = write(tmp_path, "intents.iprob.gz", probs_text, gz=True)
    runs = [write(tmp_path, f"{tag}.run", text) for tag, text in g.runs.items()]
    printed = cli_eval(capsys, qrels, runs, metrics, "--probabilities", str(probs))  # auto: diversity-ntcir
    assert cli_eval(capsys, qrels, runs, metrics, "--qrels-format", "diversity-ntcir", "--probabilities",
                    str(probs)) == printed
    uniform = cli_eval(capsys, qrels, runs, metrics)  # auto from the L<n> levels, intents weighing alike
    core = DiversityEvaluator(parse_diversity_qrels(qrels_text.encode(), "q", "ntcir",
                                                    parse_intent_probabilities(probs_text.encode())))
    moved = 0
    for tag, text in g.runs.items():
        ours = core.evaluate(ranked(text, tag), metrics[:4])
        for metric in metrics:
            assert_same(scores(client, org, ids[tag], metric), printed[tag][metric], f"{tag} {metric}")
            if metric in ours:
                assert max(abs(printed[tag][metric][t] - v) for t, v in ours[metric].items()) <= TOL
        moved += sum(abs(uniform[tag]["D-nDCG@10"][t] - v) > 1e-6 for t, v in printed[tag]["D-nDCG@10"].items())
    assert moved > 0  # the probability file was used


def test_sampled_qrels_in_file_mode_as_in_the_service_and_trec_eval(
        inline: tuple[Any, str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    client, admin, _ = inline
    g = sampled_collection()
    metrics = ["xinfAP", "infNDCG", "infAP", "AP"]
    cid, org = _collection(client, admin, "sampled files", "xinfAP", metrics)
    r = client.post(f"/api/collections/{cid}/qrels", params={"format": "sampled"},
                    files={"qrels": ("sample.qrels.gz", gzip.compress(g.qrels.encode()))}, headers=auth(org))
    assert r.status_code == 201 and r.json()["format"] == "sampled", r.text
    ids = submit_gzipped(client, cid, org, g.runs)

    qrels = write(tmp_path, "sample.qrels.gz", g.qrels, gz=True)
    runs = [write(tmp_path, f"{tag}.run", text) for tag, text in g.runs.items()]
    printed = cli_eval(capsys, qrels, runs, metrics)  # auto: five columns
    assert cli_eval(capsys, qrels, runs, metrics, "--qrels-format", "sampled") == printed
    sample = parse_sampled_qrels(g.qrels.encode())
    core = SampleEvaluator(sample)
    peer = pytrec_eval.RelevanceEvaluator(sample.to_qrels().to_mapping(), {"infAP"})
    for tag, text in g.runs.items():
        ranking = ranked(text, tag)
        infap = peer.evaluate({t: {d: float(len(docs) - n) for n, d in enumerate(docs)} for t, docs in ranking.items()})
        for metric in metrics:
            assert_same(scores(client, org, ids[tag], metric), printed[tag][metric], f"{tag} {metric}")
        for t in sample.topics:
            assert abs(printed[tag]["infAP"][t] - infap[t]["infAP"]) <= TOL
            for metric in ("xinfAP", "infNDCG"):
                assert abs(printed[tag][metric][t] - getattr(core.topic(t, ranking[t]), metric)) <= TOL


# ----------------------------------------------------------------------------- item 12
def bomb(expanded_mib: int) -> bytes:
    member = gzip.compress(b"\0" * (16 << 20), compresslevel=9)
    return member * (expanded_mib // 16)


def test_gzipped_uploads_a_bomb_and_a_corrupt_file(backend, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A bomb is a 413 naming the limit, a corrupt gzip a 422 naming the file; the limit is the
    body limit, on the uncompressed size."""
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction
    from tests.integration.conftest import run_inline

    factory = backend.factory()
    with transaction(factory) as s:
        admin, _ = create_token(s, "admin", name="root")
    limit = 4 << 20
    g = diversity_collection()
    with TestClient(app=create_app(backend.database_url, lambda f: run_inline(factory, f), max_body=limit)) as client:
        cid, org = _collection(client, admin, "gzip limits", "AP", ["AP"])
        data = bomb(1024)  # 1 GiB of zeros in about 1 MB
        assert len(data) < limit
        for kwargs in ({"content": data}, {"files": {"file": ("input.bomb.gz", data)}}):
            r = client.post(f"/api/collections/{cid}/runs?team=alpha", headers=auth(org), **kwargs)
            assert r.status_code == 413, r.text
            assert f"{limit:,}" in r.json()["error"]["message"] and "uncompressed" in r.json()["error"]["message"]
        r = client.post(f"/api/collections/{cid}/qrels", files={"qrels": ("bomb.qrels.gz", data)}, headers=auth(org))
        assert r.status_code == 413 and "bomb.qrels.gz" in r.json()["error"]["message"], r.text
        # a file within the limit compressed but not uncompressed
        text = "".join(f"T1 Q0 doc{d:07d} {d + 1} {-d} big\n" for d in range(200_000))  # ~6 MB
        r = client.post(f"/api/collections/{cid}/runs?team=alpha", content=gzip.compress(text.encode()),
                        headers=auth(org))
        assert r.status_code == 413, r.text

        good = gzip.compress(g.qrels.encode())
        cut, flipped = good[: len(good) // 2], bytearray(good)
        flipped[len(good) // 2] ^= 0xFF
        for name, broken in (("cut.qrels.gz", cut), ("flipped.qrels.gz", bytes(flipped))):
            r = client.post(f"/api/collections/{cid}/qrels", files={"qrels": (name, broken)}, headers=auth(org))
            assert r.status_code == 422, r.text
            error = r.json()["error"]
            assert error["source"] == name and ("truncated" in error["message"] or "corrupt" in error["message"])
        r = client.post(f"/api/collections/{cid}/qrels", content=cut, headers=auth(org))
        assert r.status_code == 422 and "truncated" in r.json()["error"]["message"], r.text
        assert client.get(f"/api/collections/{cid}/qrels", headers=auth(org)).json()["items"] == []
        assert client.get(f"/api/collections/{cid}/runs", headers=auth(org)).json()["items"] == []


def test_the_portal_takes_gzipped_files(world) -> None:  # type: ignore[no-untyped-def]
    """The portal's forms read a gzipped file as its text (the qrels form, the run submission),
    and name a corrupt one."""
    from tests.integration.test_portal import as_role, csrf_of

    c, cid = world.client, world.cid
    org, csrf = as_role(world, "organiser"), csrf_of(world, "organiser")
    corrected = world.qrels.replace(" L0\n", " L2\n", 4)
    r = c.post(f"/c/{cid}/qrels", files={"file": ("v2.qrels.gz", gzip.compress(corrected.encode()))},
               data={"csrf": csrf}, headers=org, follow_redirects=False)
    assert r.status_code == 303 and "old=1&new=2" in r.headers["location"], r.text
    assert "0 added, 0 removed, 4 changed judgments." in c.get(r.headers["location"], headers=org).text
    broken = gzip.compress(corrected.encode())[:-6]
    r = c.post(f"/c/{cid}/qrels", files={"file": ("v3.qrels.gz", broken)}, data={"csrf": csrf}, headers=org)
    assert r.status_code == 422 and "v3.qrels.gz" in r.text and "truncated" in r.text
    beta, csrf = as_role(world, "beta"), csrf_of(world, "beta")
    text = world.runs["RUN-03"].replace("RUN-03", "beta-gz")
    r = c.post(f"/c/{cid}/submit", files={"file": ("input.beta-gz.gz", gzip.compress(text.encode()))},
               data={"csrf": csrf}, headers=beta, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith(f"/c/{cid}/runs?submitted="), r.text
