"""A reproducibility track as a service (issue 28), on SQLite and PostgreSQL, with real TREC DL runs.

Originals: TREC DL 2019's ``bm25base_p`` (baseline) and ``p_exp_rm3_bert`` (advanced), submitted
by the organisers to a "dl19" collection with NIST's qrels and registered as an original pair
there and in a "dl20" collection (reproducibility on another collection). Reproductions: team
alpha's pair derived from the originals (re-ranked with noise), declared at submission and then
as a pair; team beta's advanced run truncated to 100 documents, a single-run reproduction; team
alpha's DL 2020 runs (``indri-sdm``, ``bigIR-BERT-R``) in "dl20", scored on DL 2020's qrels.

The workers' stored figures (run here in-process, as the workers' table says) equal, per topic
and overall, what ``cranfield repro`` (the core, which tests/peers/test_repro_peers.py checks
against repro_eval) prints for the same files and qrels; the board's role rules; the measures
are computed again after a qrels correction.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import require_shared
from tests.integration.conftest import Backend, auth, run_inline

SQLITE_ONLY_BUT = frozenset({"test_stored_measures_equal_the_cores", "test_qrels_correction_measures_again"})
METRICS = ("AP", "MSnDCG@10", "P@10", "RR")
TOL = 1e-12


def _noise(text: str, seed: int, tag: str) -> str:
    """Every topic's documents re-ranked with noise of half the topic's score spread."""
    rng = np.random.default_rng(seed)
    lists: dict[str, list[tuple[str, float]]] = {}
    for line in text.splitlines():
        topic, _, doc, _, score, _ = line.split()
        lists.setdefault(topic, []).append((doc, float(score)))
    out = []
    for topic, items in lists.items():
        scores = np.array([s for _, s in items])
        noisy = scores + rng.normal(0.0, 0.5 * scores.std() + 1e-9, scores.size)
        for rank, i in enumerate(np.argsort(-noisy, kind="stable"), 1):
            out.append(f"{topic} Q0 {items[i][0]} {rank} {float(noisy[i])!r} {tag}")
    return "\n".join(out) + "\n"


def _truncated(text: str, depth: int = 100) -> str:
    seen: dict[str, int] = {}
    out = []
    for line in text.splitlines():
        topic = line.split()[0]
        seen[topic] = seen.get(topic, 0) + 1
        if seen[topic] <= depth:
            out.append(" ".join([*line.split()[:5], "trunc-a"]))
    return "\n".join(out) + "\n"


@dataclass
class Track:
    client: Any
    tokens: dict[str, str]
    cid: int
    other_cid: int
    files: dict[str, Path]
    run_ids: dict[str, int]
    originals: dict[str, int]
    factory: Any
    backend: Backend


def _headers(track: Track, role: str) -> dict[str, str]:
    return auth(track.tokens.get(role))


@pytest.fixture
def track(backend: Backend, tmp_path: Path) -> Iterator[Track]:
    from litestar.testing import TestClient

    from service.api.app import create_app
    from service.evaluation.permissions.access import create_token
    from service.store.db import transaction

    root = require_shared("data/trec-dl-passage")
    dl19, dl20 = root / "dl19-passage", root / "dl20-passage"
    texts = {name: gzip.decompress((dl19 / "runs" / f"{name}.txt.gz").read_bytes()).decode()
             for name in ("bm25base_p", "p_exp_rm3_bert")}
    texts["noise-b"] = _noise(texts["bm25base_p"], 1, "noise-b")
    texts["noise-a"] = _noise(texts["p_exp_rm3_bert"], 2, "noise-a")
    texts["trunc-a"] = _truncated(texts["p_exp_rm3_bert"])
    for name in ("indri-sdm", "bigIR-BERT-R"):
        texts[name] = gzip.decompress((dl20 / "runs" / f"{name}.txt.gz").read_bytes()).decode()
    files = {}
    for name, text in texts.items():
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text(text)
    files["qrels"], files["other_qrels"] = dl19 / "qrels.txt", dl20 / "qrels.txt"

    factory = backend.factory()
    with transaction(factory) as s:
        admin, _ = create_token(s, "admin", name="root")
    app = create_app(backend.database_url, lambda followups: run_inline(factory, followups))
    with TestClient(app=app) as c:
        a = auth(admin)
        for team in ("orig", "alpha", "beta", "gamma"):
            assert c.post("/api/teams", json={"name": team}, headers=a).status_code == 201
        spec = {"official_metric": "MSnDCG@10", "metrics": list(METRICS)}
        cid = c.post("/api/collections", json={"name": "dl19", **spec}, headers=a).json()["id"]
        other = c.post("/api/collections", json={"name": "dl20", **spec}, headers=a).json()["id"]
        unrelated = c.post("/api/collections", json={"name": "unrelated"}, headers=a).json()["id"]
        for team in ("orig", "alpha", "beta", "gamma"):
            assert c.post(f"/api/collections/{cid}/teams", json={"team": team}, headers=a).status_code == 201
        assert c.post(f"/api/collections/{other}/teams", json={"team": "alpha"}, headers=a).status_code == 201
        tokens = {"admin": admin}
        tokens["organiser"] = c.post("/api/tokens", json={"role": "organiser", "collections": [cid, other]},
                                     headers=a).json()["token"]
        tokens["other_organiser"] = c.post("/api/tokens", json={"role": "organiser", "collections": [unrelated]},
                                           headers=a).json()["token"]
        for team in ("alpha", "beta", "gamma"):
            tokens[team] = c.post("/api/tokens", json={"role": "participant", "team": team},
                                  headers=a).json()["token"]
        org = auth(tokens["organiser"])
        for coll, qrels in ((cid, files["qrels"]), (other, files["other_qrels"])):
            r = c.post(f"/api/collections/{coll}/qrels", content=qrels.read_bytes(), headers=org)
            assert r.status_code == 201, r.text
        run_ids = {}
        for name in ("bm25base_p", "p_exp_rm3_bert"):
            r = c.post(f"/api/collections/{cid}/runs?team=orig", content=texts[name], headers=org)
            assert r.status_code == 201, r.text
            run_ids[name] = r.json()["id"]
        originals = {}
        for coll in (cid, other):
            r = c.post(f"/api/collections/{coll}/reproduction-originals",
                       json={"run": run_ids["bm25base_p"], "advanced_run": run_ids["p_exp_rm3_bert"],
                             "label": "BM25 vs RM3+BERT"}, headers=org)
            assert r.status_code == 201, r.text
            originals[str(coll)] = r.json()["id"]
        b, adv = run_ids["bm25base_p"], run_ids["p_exp_rm3_bert"]
        # alpha: the noise pair, its baseline declared at submission, then the pair
        r = c.post(f"/api/collections/{cid}/runs?reproduces={b}", content=texts["noise-b"],
                   headers=auth(tokens["alpha"]))
        assert r.status_code == 201, r.text
        assert r.json()["reproduction"] is not None
        run_ids["noise-b"] = r.json()["id"]
        r = c.post(f"/api/collections/{cid}/runs", content=texts["noise-a"], headers=auth(tokens["alpha"]))
        run_ids["noise-a"] = r.json()["id"]
        r = c.post(f"/api/runs/{run_ids['noise-b']}/reproduction",
                   json={"original_run": b, "advanced_run": run_ids["noise-a"], "original_advanced_run": adv},
                   headers=auth(tokens["alpha"]))
        assert r.status_code == 201, r.text
        assert r.json()["kind"] == "pair"
        # beta: a single run reproducing the advanced original
        r = c.post(f"/api/collections/{cid}/runs?reproduces={adv}", content=texts["trunc-a"],
                   headers=auth(tokens["beta"]))
        assert r.status_code == 201, r.text
        run_ids["trunc-a"] = r.json()["id"]
        # alpha on DL 2020: a pair on another collection
        for name in ("indri-sdm", "bigIR-BERT-R"):
            r = c.post(f"/api/collections/{other}/runs", content=texts[name], headers=auth(tokens["alpha"]))
            assert r.status_code == 201, r.text
            run_ids[name] = r.json()["id"]
        r = c.post(f"/api/runs/{run_ids['indri-sdm']}/reproduction",
                   json={"original_run": b, "advanced_run": run_ids["bigIR-BERT-R"], "original_advanced_run": adv},
                   headers=auth(tokens["alpha"]))
        assert r.status_code == 201, r.text
        yield Track(c, tokens, cid, other, files, run_ids, originals, factory, backend)


def _cranfield_repro(*argv: str) -> dict[str, Any]:
    from service.cli import build_parser
    from service.cli.registry import handler_for

    args = build_parser().parse_args(["repro", *argv, "--format", "json", "--per-topic",
                                      *[a for m in METRICS for a in ("-m", m)]])
    out = io.StringIO()
    assert handler_for("repro")(args, out) == 0
    return json.loads(out.getvalue())


def _close(ours: float | None, theirs: float | None, what: str) -> None:
    if theirs is None or (isinstance(theirs, float) and not math.isfinite(theirs)):
        assert ours is None, (what, ours, theirs)
        return
    assert ours is not None and abs(ours - theirs) <= TOL * max(1.0, abs(theirs)), (what, ours, theirs)


def _check_against_core(track: Track, row: dict[str, Any], core: dict[str, Any], metric: str) -> None:
    c = track.client
    org = _headers(track, "organiser")
    topics = c.get(f"/api/collections/{row['collection']}/reproducibility/{row['id']}?metric={metric}",
                   headers=org)
    assert topics.status_code == 200, topics.text
    parts = {(p["metric"], p["part"]): p for p in topics.json()["parts"]}
    entry = core["metrics"][metric]
    for part in ("baseline", "advanced"):
        if part not in entry:
            continue
        for k in ("mean_original", "mean_reproduction", "RMSE", "nRMSE", "p_value"):
            _close(row[part][k], entry[part][k], f"{metric} {part} {k}")
        delta = entry[part]["mean_reproduction"] - entry[part]["mean_original"]
        _close(row[part]["delta"], delta, f"{metric} {part} delta")
        _close(row[part]["relative_delta"], delta / entry[part]["mean_original"], f"{metric} {part} relative delta")
        per = {t["topic"]: t["values"] for t in parts[(metric, part)]["topics"]}
        for name in ("original", "reproduction"):
            for topic, v in entry[part]["per_topic"][name].items():
                _close(per[topic][name], v, f"{metric} {part} {name} {topic}")
        if "document_order" in core:
            d = core["document_order"][part]
            _close(row["order"][part]["KTU"], d["KTU"], f"KTU {part}")
            _close(row["order"][part]["RBO"], d["RBO"], f"RBO {part}")
            per_order = {t["topic"]: t["values"] for t in parts[(None, part)]["topics"]}
            assert set(per_order) == set(d["per_topic"])
            for topic, v in d["per_topic"].items():
                _close(per_order[topic]["KTU"], v["KTU"], f"KTU {part} {topic}")
                _close(per_order[topic]["RBO"], v["RBO"], f"RBO {part} {topic}")
    if "effect" in entry:
        e = entry["effect"]
        _close(row["effect"]["ER"], e["ER"], "ER")
        _close(row["effect"]["DeltaRI"], e["DeltaRI"], "DeltaRI")
        _close(row["effect"]["ER_low"], e["ER_interval"][0], "ER low")
        _close(row["effect"]["ER_high"], e["ER_interval"][1], "ER high")
        _close(row["effect"]["DeltaRI_low"], e["DeltaRI_interval"][0], "DeltaRI low")
        _close(row["effect"]["DeltaRI_high"], e["DeltaRI_interval"][1], "DeltaRI high")
        _close(row["effect"]["RI_original"], e["RI_original"], "RI original")


def _board(track: Track, cid: int, role: str = "organiser", metric: str = "MSnDCG@10") -> dict[str, Any]:
    r = track.client.get(f"/api/collections/{cid}/reproducibility?metric={metric}", headers=_headers(track, role))
    assert r.status_code == 200, r.text
    return r.json()


def test_stored_measures_equal_the_cores(track: Track) -> None:
    f = track.files
    board = _board(track, track.cid)
    assert not board["stale"] and board["waiting"] == 0 and board["computed_at"] is not None
    assert len(board["rows"]) == 2
    pair = next(r for r in board["rows"] if r["kind"] == "pair")
    single = next(r for r in board["rows"] if r["kind"] == "run")
    assert pair["same_collection"] and single["same_collection"]
    same_pair = _cranfield_repro("--qrels", str(f["qrels"]), "--orig", str(f["bm25base_p"]), str(f["p_exp_rm3_bert"]),
                                 "--rep", str(f["noise-b"]), str(f["noise-a"]))
    same_single = _cranfield_repro("--qrels", str(f["qrels"]), "--orig", str(f["p_exp_rm3_bert"]),
                                   "--rep", str(f["trunc-a"]))
    other_pair = _cranfield_repro("--qrels", str(f["qrels"]), "--rep-qrels", str(f["other_qrels"]),
                                  "--orig", str(f["bm25base_p"]), str(f["p_exp_rm3_bert"]),
                                  "--rep", str(f["indri-sdm"]), str(f["bigIR-BERT-R"]))
    other = _board(track, track.other_cid)
    assert len(other["rows"]) == 1 and not other["rows"][0]["same_collection"]
    for metric in METRICS:
        by_kind = {r["kind"]: r for r in _board(track, track.cid, metric=metric)["rows"]}
        _check_against_core(track, by_kind["pair"], same_pair, metric)
        _check_against_core(track, by_kind["run"], same_single, metric)
        _check_against_core(track, _board(track, track.other_cid, metric=metric)["rows"][0], other_pair, metric)
        assert by_kind["run"]["baseline"]["test"] == "paired t"
        assert _board(track, track.other_cid, metric=metric)["rows"][0]["baseline"]["test"] == "Student t"
        assert _board(track, track.other_cid, metric=metric)["rows"][0]["baseline"]["RMSE"] is None
    # the longitudinal view of DL 2020 follows alpha's pair back to DL 2019: stored means, deltas
    lon = track.client.get(f"/api/collections/{track.other_cid}/longitudinal?metric=AP",
                           headers=_headers(track, "organiser"))
    assert lon.status_code == 200, lon.text
    row = _board(track, track.other_cid, metric="AP")["rows"][0]
    systems = {x["part"]: x for x in lon.json()["systems"]}
    assert set(systems) == {"baseline", "advanced"}
    for part, x in systems.items():
        assert [p["collection"] for p in x["points"]] == [track.cid, track.other_cid]
        assert x["points"][0]["tag"] == ("bm25base_p" if part == "baseline" else "p_exp_rm3_bert")
        _close(x["points"][0]["mean"], row[part]["mean_original"], "longitudinal original mean")
        _close(x["points"][1]["mean"], row[part]["mean_reproduction"], "longitudinal mean")
        assert x["steps"][0]["delta"] == row[part]["delta"] and x["steps"][0]["ER"] == row["effect"]["ER"]
    assert track.client.get(f"/api/collections/{track.other_cid}/longitudinal",
                            headers=_headers(track, "beta")).status_code == 403
    # the verdict names the figures it is read from
    e = pair["effect"]
    assert pair["verdict"].endswith(f"ER {e['ER']:.2f} [{e['ER_low']:.2f}, {e['ER_high']:.2f}], "
                                    f"DeltaRI {e['DeltaRI']:.2f}")
    assert single["verdict"].startswith(("scores reproduced", "scores differ"))
    # the CSV: a line per reproduction with the same figures
    csv_text = track.client.get(f"/api/collections/{track.cid}/reproducibility?format=csv&metric=MSnDCG@10",
                                headers=_headers(track, "organiser")).text
    lines = csv_text.strip().splitlines()
    assert len(lines) == 3 and lines[0].startswith("reproduction,kind,team")
    assert repr(e["ER"]) in csv_text
    # the rows are stored compactly: one row per (reproduction, metric, part)
    from sqlalchemy import func, select

    from service.store.models import ReproductionMeasure
    with track.factory() as s:
        n = s.scalar(select(func.count()).select_from(ReproductionMeasure))
    # pair (same): 2 order + 4 metrics x 3; single: 1 order + 4; other pair: 4 x 3
    assert n == (2 + 12) + (1 + 4) + 12


def test_qrels_correction_measures_again(track: Track) -> None:
    """A corrected qrels version: the runs are evaluated again, and the measures with them."""
    from sqlalchemy import select

    from service.store.models import Analysis
    before = _board(track, track.cid)
    pair = next(r for r in before["rows"] if r["kind"] == "pair")
    lines = track.files["qrels"].read_text().splitlines()
    # the correction: every judgment of the first topic at level 0 (its relevant documents gone)
    first = lines[0].split()[0]
    corrected = [(" ".join([*ln.split()[:3], "0"]) if ln.split()[0] == first else ln) for ln in lines]
    r = track.client.post(f"/api/collections/{track.cid}/qrels", content="\n".join(corrected) + "\n",
                          headers=_headers(track, "organiser"))
    assert r.status_code == 201, r.text
    after = _board(track, track.cid)
    assert not after["stale"]
    pair_after = next(r for r in after["rows"] if r["kind"] == "pair")
    assert pair_after["baseline"]["mean_original"] != pair["baseline"]["mean_original"]
    topics = track.client.get(f"/api/collections/{track.cid}/reproducibility/{pair['id']}?metric=MSnDCG@10",
                              headers=_headers(track, "organiser")).json()
    listed = {t["topic"] for p in topics["parts"] if p["metric"] for t in p["topics"]}
    assert first not in listed  # a topic without relevant documents is not scored (no_relevant: skip)
    with track.factory() as s:
        kinds = [a.status for a in s.scalars(select(Analysis).where(Analysis.collection_id == track.cid,
                                                                    Analysis.kind == "reproducibility"))]
    assert kinds.count("done") >= 2
    # the reproductions on DL 2020 read the original's scores too: computed again as well
    other = _board(track, track.other_cid)
    assert not other["stale"]


ROLE_SEES = {"admin": 2, "organiser": 2, "alpha": 1, "beta": 1, "gamma": 0}
ROLES = (*ROLE_SEES, "other_organiser", "anonymous")


def _refused(role: str) -> int:
    return 401 if role == "anonymous" else 403


def test_board_rows_by_role(track: Track) -> None:
    """Organisers every reproduction, a team its own until the release, then every reader; the
    organiser of another collection and anonymous callers nothing (board, per topic, CSV)."""
    c = track.client
    every = _board(track, track.cid)["rows"]
    pair = next(x for x in every if x["kind"] == "pair")
    for role in ROLES:
        headers = _headers(track, role)
        r = c.get(f"/api/collections/{track.cid}/reproducibility", headers=headers)
        csv_r = c.get(f"/api/collections/{track.cid}/reproducibility?format=csv", headers=headers)
        if role not in ROLE_SEES:
            assert r.status_code == _refused(role), (role, r.text)
            assert csv_r.status_code == _refused(role), role
            assert c.get(f"/api/collections/{track.cid}/reproducibility/{pair['id']}",
                         headers=headers).status_code == _refused(role), role
            continue
        rows = r.json()["rows"]
        assert len(rows) == ROLE_SEES[role], role
        assert len(csv_r.text.splitlines()) == 1 + ROLE_SEES[role], role
        if role in ("alpha", "beta", "gamma"):
            assert {x["run"]["team"] for x in rows} <= {role}
            for other in (x for x in every if x["run"]["team"] != role):
                assert c.get(f"/api/collections/{track.cid}/reproducibility/{other['id']}",
                             headers=headers).status_code == 404, role
    # once released, every reader of the collection sees every reproduction
    assert c.patch(f"/api/collections/{track.cid}", json={"leaderboard_released": True},
                   headers=_headers(track, "organiser")).status_code == 200
    for role in ("alpha", "beta", "gamma"):
        rows = c.get(f"/api/collections/{track.cid}/reproducibility", headers=_headers(track, role)).json()["rows"]
        assert len(rows) == 2, role
    assert c.get(f"/api/collections/{track.cid}/reproducibility",
                 headers=_headers(track, "other_organiser")).status_code == 403
    # an unrevealed topic split: the figures over every topic are the organisers' only; a team
    # sees them over the visible topics, as the leaderboard shows it the means (issue 34, item
    # 4), and a per-topic view without the hidden topics
    pair_topics = c.get(f"/api/collections/{track.cid}/reproducibility/{pair['id']}",
                        headers=_headers(track, "organiser")).json()
    hidden = sorted({t["topic"] for p in pair_topics["parts"] for t in p["topics"]})[:3]
    assert c.patch(f"/api/collections/{track.cid}", json={"hidden_topics": hidden},
                   headers=_headers(track, "organiser")).status_code == 200
    org_rows = _board(track, track.cid)["rows"]
    assert all(r["baseline"] is not None and r["topics"] == "all" and not r["withheld"] for r in org_rows)
    alpha_rows = _board(track, track.cid, role="alpha")["rows"]
    lb = c.get(f"/api/collections/{track.cid}/leaderboard?metric=MSnDCG@10", headers=_headers(track, "alpha")).json()
    assert lb["topics"].startswith("visible only")
    shown_means = {r["run"]: r["mean"] for r in lb["rows"]}
    assert alpha_rows and all(r["topics"].startswith("visible only") and not r["withheld"] for r in alpha_rows)
    for r in alpha_rows:
        organisers = next(x for x in org_rows if x["id"] == r["id"])
        part = "advanced" if r["advanced"] else "baseline"
        _close(r[part]["mean_original"], shown_means[r["original"][f"{'advanced_run' if r['advanced'] else 'run'}"]
                                                      ["tag"]], "the original's visible mean")
        _close(r[part]["mean_reproduction"], shown_means[r[f"{'advanced_run' if r['advanced'] else 'run'}"]["tag"]],
               "the reproduction's visible mean")
        assert r[part]["mean_original"] != organisers[part]["mean_original"]  # not the mean over every topic
    seen = c.get(f"/api/collections/{track.cid}/reproducibility/{pair['id']}", headers=_headers(track, "alpha")).json()
    listed = {t["topic"] for p in seen["parts"] for t in p["topics"]}
    assert listed and not listed & set(hidden)


def test_who_registers_originals_and_declares(track: Track) -> None:
    """Every new route for every role: registering an original (organisers), declaring what a
    run reproduces (its team, organisers; refused before the body is read), the originals'
    list (readers of the collection), measuring now (organisers)."""
    c = track.client
    b = track.run_ids["bm25base_p"]
    rid = track.run_ids["trunc-a"]  # beta's
    for role in ROLES:
        headers = _headers(track, role)
        organises = role in ("admin", "organiser")
        r = c.post(f"/api/collections/{track.cid}/reproduction-originals", json={"run": b}, headers=headers)
        assert r.status_code == (201 if organises else _refused(role)), (role, r.text)
        r = c.post(f"/api/runs/{rid}/reproduction", json={"nonsense": 1}, headers=headers)
        assert r.status_code == (422 if organises or role == "beta" else _refused(role)), (role, r.text)
        r = c.post(f"/api/runs/{rid}/reproduction", json={"original_run": track.run_ids["p_exp_rm3_bert"]},
                   headers=headers)
        assert r.status_code == (201 if organises or role == "beta" else _refused(role)), (role, r.text)
        r = c.get(f"/api/collections/{track.cid}/reproduction-originals", headers=headers)
        assert r.status_code == (200 if role in ROLE_SEES else _refused(role)), role
        r = c.post(f"/api/collections/{track.cid}/reproducibility", json={"force": True}, headers=headers)
        assert r.status_code == (202 if organises else _refused(role)), (role, r.text)


def test_declarations_follow_the_window_and_the_originals(track: Track) -> None:
    c = track.client
    alpha = _headers(track, "alpha")
    adv = track.run_ids["p_exp_rm3_bert"]
    # a run that is not an original is refused at submission, before anything is stored
    r = c.post(f"/api/collections/{track.cid}/runs?reproduces={track.run_ids['noise-a']}",
               content=track.files["noise-a"].read_text().replace(" noise-a", " again"), headers=alpha)
    assert r.status_code == 404, r.text
    # a run cannot reproduce itself; a pair is one team's two runs
    r = c.post(f"/api/runs/{track.run_ids['noise-a']}/reproduction",
               json={"original_run": track.run_ids["bm25base_p"], "advanced_run": track.run_ids["trunc-a"],
                     "original_advanced_run": adv}, headers=_headers(track, "organiser"))
    assert r.status_code == 400, r.text
    # the window closed: a team may no longer declare, the organisers still may
    r = c.patch(f"/api/collections/{track.cid}", json={"submission_closes_at": "2020-01-01T00:00:00Z"},
                headers=_headers(track, "organiser"))
    assert r.status_code == 200, r.text
    r = c.post(f"/api/runs/{track.run_ids['noise-a']}/reproduction", json={"original_run": adv}, headers=alpha)
    assert r.status_code == 409, r.text
    r = c.post(f"/api/runs/{track.run_ids['noise-a']}/reproduction", json={"original_run": adv},
               headers=_headers(track, "organiser"))
    assert r.status_code == 201, r.text
    # one run of the registered pair reproduced alone: its original says which part of the pair it
    # is, not the pair's own label (issue 37, item 8: two originals of one name)
    assert r.json()["original"]["label"] == "the advanced run of BM25 vs RM3+BERT"
    listed = c.get(f"/api/collections/{track.cid}/reproduction-originals",
                   headers=_headers(track, "organiser")).json()["items"]
    assert sorted(o["label"] for o in listed if o["kind"] == "pair") == ["BM25 vs RM3+BERT"]
    # the new single declaration replaced alpha's pair (a run is in one declaration)
    kinds = sorted(x["kind"] for x in _board(track, track.cid)["rows"])
    assert kinds == ["run", "run"]
    # withdrawn: a team not after the window, the organisers at any time; the measures go with it
    rid = track.run_ids["noise-a"]
    assert c.delete(f"/api/runs/{rid}/reproduction", headers=alpha).status_code == 409
    assert c.delete(f"/api/runs/{rid}/reproduction", headers=_headers(track, "beta")).status_code == 403
    r = c.delete(f"/api/runs/{rid}/reproduction", headers=_headers(track, "organiser"))
    assert r.status_code == 200, r.text
    assert c.delete(f"/api/runs/{rid}/reproduction", headers=_headers(track, "organiser")).status_code == 404
    assert [x["run"]["tag"] for x in _board(track, track.cid)["rows"]] == ["trunc-a"]
    from sqlalchemy import select

    from service.store.models import ReproductionMeasure
    with track.factory() as s:
        assert set(s.scalars(select(ReproductionMeasure.reproduction_id))) == {
            x["id"] for x in _board(track, track.cid)["rows"]} | {
            x["id"] for x in _board(track, track.other_cid)["rows"]}


def _portal(track: Track, role: str) -> dict[str, str]:
    from service.config import settings
    from service.evaluation.permissions import access
    from service.portal.forms import COOKIE

    with track.factory() as s:
        me = access.principal_for(s, f"Bearer {track.tokens[role]}")
        secret = access.open_session(s, me.token_id, settings().web.session_cookie_lifetime)
        s.commit()
    return {"Cookie": f"{COOKIE}={secret}"}


def test_portal_page_shows_the_board_and_the_plane(track: Track) -> None:
    """/c/{cid}/reproducibility: the board's rows with their verdicts, the ER/DeltaRI plane as
    inline SVG naming each pair's point, the per-topic page and the CSV; a team its own row."""
    import re

    c = track.client
    org = _portal(track, "organiser")
    api = _board(track, track.cid, metric="AP")
    page = c.get(f"/c/{track.cid}/reproducibility?metric=AP", headers=org)
    assert page.status_code == 200, page.text
    html = page.text
    assert len(set(re.findall(r'<tr data-reproduction="(\d+)"', html))) == 2
    # a pair on two rows, each with its own run's figures and saying whose (issue 37, item 8)
    pair_id = next(r["id"] for r in api["rows"] if r["kind"] == "pair")
    assert re.findall(rf'<tr data-reproduction="{pair_id}" data-part="(\w+)">', html) == ["baseline", "advanced"]
    for row in api["rows"]:
        assert row["verdict"].replace("[", "[") in html.replace("&#39;", "'")
    pair = next(r for r in api["rows"] if r["kind"] == "pair")
    assert '<figure id="plane"><svg' in html and 'role="img"' in html
    assert f"ER {pair['effect']['ER']:.2f}, DeltaRI {pair['effect']['DeltaRI']:.2f}" in html  # the chart's name
    topics = c.get(f"/c/{track.cid}/reproducibility/{pair['id']}?metric=AP", headers=org)
    assert topics.status_code == 200 and topics.text.count('class="repro-topics"') == 2 + 3
    csv_r = c.get(f"/c/{track.cid}/reproducibility.csv?metric=AP", headers=org)
    assert csv_r.status_code == 200 and csv_r.text == c.get(
        f"/api/collections/{track.cid}/reproducibility?format=csv&metric=AP", headers=_headers(track, "organiser")).text
    tex = c.get(f"/c/{track.cid}/reproducibility.tex?metric=AP", headers=org)
    assert tex.status_code == 200 and tex.text == c.get(
        f"/api/collections/{track.cid}/reproducibility?format=latex&metric=AP", headers=_headers(track, "organiser")).text
    assert tex.text.startswith("\\begin{tabular}") and tex.text.count(" \\\\\n") == 1 + len(api["rows"])
    assert f"{pair['effect']['ER']:.3f} [{pair['effect']['ER_low']:.3f}, {pair['effect']['ER_high']:.3f}]" in tex.text
    # the longitudinal page: DL 2020's systems followed back to DL 2019, the API's means and deltas
    lon = c.get(f"/api/collections/{track.other_cid}/longitudinal?metric=AP", headers=_headers(track, "organiser"))
    page = c.get(f"/c/{track.other_cid}/reproducibility/longitudinal?metric=AP", headers=org)
    assert page.status_code == 200 and '<figure class="chart" id="persistence-chart"><svg' in page.text
    assert page.text.count('<table class="persistence"') == len(lon.json()["systems"]) == 2
    for system in lon.json()["systems"]:
        for point in system["points"]:
            assert f'<td class="num">{point["mean"]:.4f}</td>' in page.text
        step = system["steps"][0]
        assert f'{step["delta"]:+.4f}' in page.text and f'{step["ER"]:.3f}' in page.text
    assert c.get(f"/c/{track.other_cid}/reproducibility/longitudinal",
                 headers=_portal(track, "other_organiser")).status_code == 403
    beta = c.get(f"/c/{track.cid}/reproducibility?metric=AP", headers=_portal(track, "beta")).text
    assert len(set(re.findall(r'<tr data-reproduction="(\d+)"', beta))) == 1
    # the track's page is in the collection's navigation, marked where it is
    assert f'<a href="/c/{track.cid}/reproducibility" aria-current="page">Reproducibility</a>' in beta
    assert f'<a href="/c/{track.cid}/reproducibility">Reproducibility</a>' in c.get(
        f"/c/{track.cid}", headers=_portal(track, "beta")).text
    assert c.get(f"/c/{track.cid}/reproducibility/{pair['id']}", headers=_portal(track, "beta")).status_code == 404
    assert c.get(f"/c/{track.cid}/reproducibility", headers=_portal(track, "other_organiser")).status_code == 403


def test_a_team_names_what_its_run_reproduces_in_the_portals_submission_form(track: Track) -> None:
    from service.config import settings
    from service.evaluation.permissions import access
    from service.portal.forms import COOKIE, csrf_for

    with track.factory() as s:
        me = access.principal_for(s, f"Bearer {track.tokens['gamma']}")
        secret = access.open_session(s, me.token_id, settings().web.session_cookie_lifetime)
        s.commit()
    cookie, csrf = {"Cookie": f"{COOKIE}={secret}"}, csrf_for(secret)
    c, original = track.client, track.run_ids["bm25base_p"]
    form = c.get(f"/c/{track.cid}/submit", headers=cookie).text
    assert 'id="reproduces"' in form and f'<option value="{original}">bm25base_p' in form
    text = track.files["noise-a"].read_text().replace(" noise-a", " gamma-rep")
    before = len(c.get(f"/api/collections/{track.cid}/runs", headers=_headers(track, "organiser")).json()["items"])
    # not an original: refused on the form, nothing stored
    r = c.post(f"/c/{track.cid}/submit", files={"file": ("gamma-rep.run", text)},
               data={"csrf": csrf, "reproduces": str(track.run_ids["noise-a"])}, headers=cookie)
    assert r.status_code == 404 and "Not accepted" in r.text, r.text[:500]
    runs = c.get(f"/api/collections/{track.cid}/runs", headers=_headers(track, "organiser")).json()["items"]
    assert len(runs) == before
    # an original: the run is stored and declared its reproduction
    r = c.post(f"/c/{track.cid}/submit", files={"file": ("gamma-rep.run", text)},
               data={"csrf": csrf, "reproduces": str(original)}, headers=cookie, follow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    declared = c.get(f"/api/collections/{track.cid}/reproducibility", headers=_headers(track, "organiser")).json()
    mine = [x for x in declared["rows"] if x["run"] and x["run"]["tag"] == "gamma-rep"]
    assert len(mine) == 1 and mine[0]["original"]["run"]["id"] == original
