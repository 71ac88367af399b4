"""Comparing two qrels versions of a collection (issue 16's first slice): every figure of the
API's comparison against an independent computation (scikit-learn, krippendorff, scipy, the
core's evaluation of the same files), who may ask, the bad inputs, the portal page and its CSV,
and ``cranfield judges compare`` on files against the database mode."""

from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion

from tests.integration.conftest import World, auth

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "ntcir-like"


def _changed(qrels: str, share: float = 0.25, seed: int = 7) -> str:
    """The qrels with about ``share`` of the labels drawn again (the same documents)."""
    rng = random.Random(seed)
    out = []
    for line in qrels.splitlines():
        parts = line.split()
        if parts and rng.random() < share:
            ntcir = parts[-1].startswith("L")
            level = int(parts[-1].lstrip("L"))
            if level >= 0:
                new = rng.choice([0, 1, 2, 3])
                parts[-1] = f"L{new}" if ntcir else str(new)
        out.append(" ".join(parts))
    return "\n".join(out) + "\n"


def _judged(qrels: str) -> dict[tuple[str, str], int]:
    found = {}
    for line in qrels.splitlines():
        parts = line.split()
        if parts:
            level = int(parts[-1].lstrip("L"))
            if level >= 0:
                found[(parts[0], parts[-2])] = level
    return found


def _upload_second(world: World) -> str:
    second = _changed(world.qrels)
    r = world.client.post(f"/api/collections/{world.cid}/qrels", content=second,
                          headers=auth(world.tokens["organiser"]))
    assert r.status_code == 201, r.text
    return second


def _tau_ap(x: np.ndarray, y: np.ndarray) -> float:
    """Yilmaz et al.'s tau_AP of ranking y against the reference x (no ties), by its definition."""
    order = np.argsort(-y, kind="stable")
    n = len(order)
    total = sum(sum(1 for j in order[:i] if x[j] > x[order[i]]) / i for i in range(1, n))
    return 2 / (n - 1) * total - 1


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_every_figure_agrees_with_an_independent_computation(world: World) -> None:
    from service.evaluation.publishing.reading import significance_for
    from service.formats.readers import parse_qrels, parse_run
    from service.metrics.scoring import EvalSettings, evaluate
    from service.store.models import Collection

    second = _upload_second(world)
    r = world.client.get(f"/api/collections/{world.cid}/qrels/compare?a=1&b=2&top_k=2",
                         headers=auth(world.tokens["organiser"]))
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["metric"] == "nDCG@10" and doc["a"]["version"] == 1 and doc["b"]["version"] == 2

    # labels: scikit-learn and krippendorff on the documents both judged
    ja, jb = _judged(world.qrels), _judged(second)
    keys = sorted(ja.keys() & jb.keys())
    la, lb = [ja[k] for k in keys], [jb[k] for k in keys]
    levels = doc["labels"]["levels"]
    assert levels == list(range(max(la + lb) + 1))
    overall = doc["labels"]["overall"]
    assert overall["documents"] == len(keys)
    assert overall["confusion"] == sk_confusion(la, lb, labels=levels).tolist()
    assert overall["kappa"] == pytest.approx(cohen_kappa_score(la, lb, labels=levels), abs=1e-12)
    assert overall["kappa_linear"] == pytest.approx(cohen_kappa_score(la, lb, labels=levels, weights="linear"),
                                                    abs=1e-12)
    assert overall["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(la, lb, labels=levels, weights="quadratic"), abs=1e-12)
    assert overall["alpha"] == pytest.approx(krippendorff.alpha(
        reliability_data=np.array([la, lb], dtype=float), level_of_measurement="ordinal",
        value_domain=levels), abs=1e-12)
    assert overall["observed"] == pytest.approx(np.mean(np.array(la) == np.array(lb)))
    assert overall["higher"] == sum(b > a for a, b in zip(la, lb))
    changed = sum(1 for k in keys if ja[k] != jb[k])
    assert doc["labels"]["changes"] == {"added": 0, "removed": 0, "changed": changed}
    assert doc["labels"]["overlap"]["both"] == len(keys) and doc["labels"]["overlap"]["jaccard"] == 1.0
    assert sorted(t["topic"] for t in doc["labels"]["topics"]) == sorted({k[0] for k in keys})
    for t in doc["labels"]["topics"]:
        tk = [k for k in keys if k[0] == t["topic"]]
        ta, tb = [ja[k] for k in tk], [jb[k] for k in tk]
        expected = cohen_kappa_score(ta, tb, labels=levels)
        assert (t["kappa"] is None and math.isnan(expected)) or t["kappa"] == pytest.approx(expected, abs=1e-12)
        assert t["changed"] == sum(1 for k in tk if ja[k] != jb[k])

    # scores: the core's evaluation of the same files (the stored scores are the workers'), on the
    # topics both versions judge (a relevant document under one at least); a topic judged without
    # a relevant document scores 0 there, as the evaluator counting such topics gives
    runs = [parse_run(text.encode(), tag) for tag, text in world.runs.items()]
    count = EvalSettings(no_relevant="count")
    ea = evaluate(parse_qrels(world.qrels.encode(), "a"), runs, ["nDCG@10"], count)
    eb = evaluate(parse_qrels(second.encode(), "b"), runs, ["nDCG@10"], count)
    names = [row["run"] for row in doc["runs"]]
    assert sorted(names) == sorted(world.runs)

    def relevant(judged: dict[tuple[str, str], int], topic: str) -> bool:
        return any(lv >= 1 for (t, _), lv in judged.items() if t == topic)

    judged_both = sorted({t for t, _ in ja} & {t for t, _ in jb})
    topics = [t for t in judged_both if relevant(ja, t) or relevant(jb, t)]
    pa = np.array([[ea.value(n, "nDCG@10", t) for n in names] for t in topics])
    pb = np.array([[eb.value(n, "nDCG@10", t) for n in names] for t in topics])
    ma, mb = pa.mean(axis=0), pb.mean(axis=0)
    ct = doc["compared_topics"]
    assert ct["compared"] == len(topics) and ct["only_a"] == [] and ct["only_b"] == []
    assert sorted(ct["zero_a"]) == [t for t in topics if not relevant(ja, t)]
    assert sorted(ct["zero_b"]) == [t for t in topics if not relevant(jb, t)]
    assert sorted(ct["no_relevant"]) == [t for t in judged_both if t not in topics]
    assert ct["zero_a"] or ct["zero_b"], "the case should hold a topic one version judges without a relevant document"
    assert [row["mean_a"] for row in doc["runs"]] == pytest.approx(ma.tolist(), abs=1e-12)
    assert [row["mean_b"] for row in doc["runs"]] == pytest.approx(mb.tolist(), abs=1e-12)
    rk = doc["ranking"]
    assert rk["runs"] == 3
    assert rk["kendall"] == pytest.approx(stats.kendalltau(ma, mb).statistic, abs=1e-12)
    assert rk["spearman"] == pytest.approx(stats.spearmanr(ma, mb).statistic, abs=1e-12)
    assert rk["pearson"] == pytest.approx(stats.pearsonr(ma, mb).statistic, abs=1e-12)
    assert rk["tau_ap"] == pytest.approx(_tau_ap(ma, mb), abs=1e-12)
    assert rk["tau_ap_reverse"] == pytest.approx(_tau_ap(mb, ma), abs=1e-12)
    top = np.argsort(-ma)[:2]
    assert rk["top_k"] == 2 and rk["tau_top_k"] == pytest.approx(stats.kendalltau(ma[top], mb[top]).statistic)
    ranks_a = stats.rankdata(-ma, method="min")
    ranks_b = stats.rankdata(-mb, method="min")
    assert [row["rank_b"] for row in doc["runs"]] == ranks_b.astype(int).tolist()
    move = np.abs(ranks_a - ranks_b)
    assert (rk["largest_change"] is None) == (move.max() == 0)

    # Bland-Altman of the per-topic means over the runs, b - a
    d = pb.mean(axis=1) - pa.mean(axis=1)
    ba = doc["bland_altman"]
    assert ba["topics"] == len(topics)
    assert ba["bias"] == pytest.approx(d.mean(), abs=1e-12)
    assert ba["sd"] == pytest.approx(d.std(ddof=1), abs=1e-12)
    assert ba["lower"] == pytest.approx(d.mean() - stats.norm.ppf(0.975) * d.std(ddof=1), abs=1e-12)
    assert ba["direction"] == ("more lenient" if d.mean() > 0 else "stricter")

    # per-topic tau and the topics ordered by disagreement
    disagreeing = doc["topics"]["disagreeing"]
    assert len(disagreeing) == len(topics)
    for entry in disagreeing:
        if entry["topic"] not in topics:
            continue
        k = topics.index(entry["topic"])
        tau = stats.kendalltau(pa[k], pb[k]).statistic
        if math.isnan(tau):
            assert entry["tau"] is None
        else:
            assert entry["tau"] == pytest.approx(tau, abs=1e-12)
            assert entry["mean_difference"] == pytest.approx(d[k], abs=1e-12)
        assert entry["changed"] == sum(1 for key in keys if key[0] == entry["topic"] and ja[key] != jb[key])
    defined = [e["disagreement"] for e in disagreeing if e["disagreement"] is not None]
    assert defined == sorted(defined, reverse=True)
    assert doc["topics"]["mean_kendall"] == pytest.approx(
        stats.kendalltau(pa.mean(axis=1), pb.mean(axis=1)).statistic, abs=1e-12)

    # significance: the verdicts of the two stored tests, pair by pair
    with world.factory() as s:
        coll = s.get(Collection, world.cid)
        tests = [significance_for(s, coll, "nDCG@10", qrels_version=v) for v in (1, 2)]
    sig = doc["significance"]
    assert sig is not None and doc["significance_reason"] is None
    verdicts = {"kept": 0, "lost": 0, "gained": 0, "flipped": 0}
    for i in range(3):
        for j in range(i + 1, 3):
            sa = tests[0].p(names[i], names[j]) < tests[0].alpha
            sb = tests[1].p(names[i], names[j]) < tests[1].alpha
            same = np.sign(ma[i] - ma[j]) == np.sign(mb[i] - mb[j])
            key = "kept" if (sa == sb and (not sa or same)) else "lost" if sa and not sb else \
                "gained" if sb and not sa else "flipped"
            verdicts[key] += 1
    assert sig["pairs"] == 3 and sig["untested"] == 0
    assert sig["kept_significant"] + sig["kept_not_significant"] == verdicts["kept"]
    assert (sig["lost"], sig["gained"], sig["flipped"]) == (verdicts["lost"], verdicts["gained"], verdicts["flipped"])
    assert sig["agreement"] == pytest.approx(verdicts["kept"] / 3)

    # the portal page shows the same figures, and the topics as CSV
    c = world.client
    c.cookies.clear()
    assert c.post("/login", data={"token": world.tokens["organiser"]}, follow_redirects=False).status_code == 303
    page = c.get(f"/c/{world.cid}/qrels/compare")  # by default the last two versions, the official metric
    assert page.status_code == 200 and page.text.count("<h1") == 1
    assert 'id="confusion"' in page.text and f"{overall['kappa']:.3f}" in page.text
    assert "tests (α = 0.05, correction: none: unadjusted)" in page.text  # the correction named (issue 25, item 4)
    assert 'id="compared-topics"' in page.text and f"compared on the {ct['compared']} topics" in page.text
    assert "topic(s)" not in page.text  # issue 37, item 7
    assert f"/c/{world.cid}/qrels/compare" in c.get(f"/c/{world.cid}/qrels").text
    csv_text = c.get(f"/c/{world.cid}/qrels/compare.csv?a=1&b=2")
    assert csv_text.status_code == 200 and csv_text.headers["content-type"].startswith("text/csv")
    lines = csv_text.text.splitlines()
    assert lines[0].startswith("topic,tau,") and [ln.split(",")[0] for ln in lines[1:]] == \
        [e["topic"] for e in disagreeing]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_only_the_collections_organisers_compare(world: World) -> None:
    _upload_second(world)
    c = world.client
    expected = {None: 401, "alpha": 403, "beta": 403, "assessor": 403, "other_organiser": 403,
                "organiser": 200, "admin": 200}
    for role, status in expected.items():
        token = world.tokens.get(role) if role else None
        r = c.get(f"/api/collections/{world.cid}/qrels/compare?a=1&b=2", headers=auth(token))
        assert r.status_code == status, (role, r.status_code, r.text[:200])
        c.cookies.clear()
        if token:
            assert c.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
        for path in (f"/c/{world.cid}/qrels/compare?a=1&b=2", f"/c/{world.cid}/qrels/compare.csv?a=1&b=2"):
            page = c.get(path, follow_redirects=False)
            assert page.status_code == status, (role, path, page.status_code)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_version_judging_fewer_topics_is_compared_on_the_topics_both_judged(world: World) -> None:
    """Issue 25, item 8, database mode: a second version judging some of the topics only (an
    assessor's subset) is compared on those; the runs' means are the evaluator's over them, the
    others are listed as judged by a only, and the portal says how many were left out."""
    from service.formats.readers import parse_qrels, parse_run
    from service.metrics.scoring import EvalSettings, evaluate

    topics = sorted({line.split()[0] for line in world.qrels.splitlines() if line.split()})
    kept = topics[::2]
    second = "".join(line + "\n" for line in _changed(world.qrels, share=0.3, seed=5).splitlines()
                     if line.split() and line.split()[0] in kept)
    c, org = world.client, auth(world.tokens["organiser"])
    assert c.post(f"/api/collections/{world.cid}/qrels", content=second, headers=org).status_code == 201
    r = c.get(f"/api/collections/{world.cid}/qrels/compare?a=1&b=2", headers=org)
    assert r.status_code == 200, r.text
    doc = r.json()
    ja, jb = _judged(world.qrels), _judged(second)

    def relevant(judged: dict[tuple[str, str], int], topic: str) -> bool:
        return any(lv >= 1 for (t, _), lv in judged.items() if t == topic)

    common = [t for t in kept if relevant(ja, t) or relevant(jb, t)]
    ct = doc["compared_topics"]
    assert ct["compared"] == len(common) and sorted(ct["only_a"]) == sorted(set(topics) - set(kept))
    assert ct["only_b"] == [] and ct["left_out"] == len(topics) - len(common)
    runs = [parse_run(text.encode(), tag) for tag, text in world.runs.items()]
    count = EvalSettings(no_relevant="count")
    ea = evaluate(parse_qrels(world.qrels.encode(), "a"), runs, ["nDCG@10"], count)
    eb = evaluate(parse_qrels(second.encode(), "b"), runs, ["nDCG@10"], count)
    for row in doc["runs"]:
        assert row["mean_a"] == pytest.approx(np.mean([ea.value(row["run"], "nDCG@10", t) for t in common]), abs=1e-12)
        assert row["mean_b"] == pytest.approx(np.mean([eb.value(row["run"], "nDCG@10", t) for t in common]), abs=1e-12)
    assert doc["bland_altman"]["topics"] == len(common)
    assert sorted(t["topic"] for t in doc["topics"]["disagreeing"]) == sorted(common)
    c.cookies.clear()
    assert c.post("/login", data={"token": world.tokens["organiser"]}, follow_redirects=False).status_code == 303
    page = c.get(f"/c/{world.cid}/qrels/compare?a=1&b=2")
    assert page.status_code == 200 and f"{len(topics) - len(common)} left out" in page.text


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_bad_inputs_are_clear_errors(world: World) -> None:
    from service.evaluation.judging.judge_comparison import score_figures

    c, org = world.client, auth(world.tokens["organiser"])
    base = f"/api/collections/{world.cid}/qrels/compare"
    r = c.get(f"{base}?a=1&b=2", headers=org)
    assert r.status_code == 404 and "no qrels version 2" in r.json()["detail"]
    _upload_second(world)
    assert c.get(f"{base}?a=1&b=2&metric=nope@x", headers=org).status_code == 400
    assert c.get(f"{base}?a=1&b=2&metric=P@5", headers=org).status_code == 400  # not among the metrics
    assert c.get(f"{base}?a=1", headers=org).status_code == 422  # b is required
    assert c.get(f"{base}?a=1&b=2&top_k=0", headers=org).status_code == 422
    same = c.get(f"{base}?a=2&b=2", headers=org).json()
    assert same["labels"]["overall"]["kappa"] == 1.0 and same["ranking"]["kendall"] == 1.0
    assert any("itself" in n for n in same["notes"])
    # a new configuration re-evaluates the current version only: version 1 has no results under it
    r = c.patch(f"/api/collections/{world.cid}", json={"metrics": ["AP", "nDCG@10", "P@5"]},
                headers=auth(world.tokens["admin"]))
    assert r.status_code == 200, r.text
    r = c.get(f"{base}?a=1&b=2", headers=org)
    assert r.status_code == 409 and "version 1 has no results under the collection's current configuration" \
        in r.json()["detail"]
    c.cookies.clear()
    assert c.post("/login", data={"token": world.tokens["organiser"]}, follow_redirects=False).status_code == 303
    page = c.get(f"/c/{world.cid}/qrels/compare?a=1&b=2")
    assert page.status_code == 409 and "no results under the collection" in page.text
    # fewer than two common runs: null figures with notes
    one = score_figures(["r"], np.array([0.5]), np.array([0.4]), ["t1", "t2"], np.array([[0.5], [0.5]]),
                        np.array([[0.4], [0.4]]))
    assert one["ranking"]["kendall"] is None and one["ranking"]["notes"] and one["notes"]
    none = score_figures([], np.zeros(0), np.zeros(0), [], np.zeros((0, 0)), np.zeros((0, 0)))
    assert none["ranking"] is None and none["bland_altman"] is None and none["notes"]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_cli_file_mode_agrees_with_the_database_mode(world: World, tmp_path: Path) -> None:
    from service.cli import build_parser
    from service.cli.registry import handler_for

    c, admin = world.client, auth(world.tokens["admin"])
    cid = c.post("/api/collections", json={"name": "ntcir", "official_metric": "nDCG@10",
                                           "metrics": ["AP", "nDCG@10"]}, headers=admin).json()["id"]
    assert c.post(f"/api/collections/{cid}/teams", json={"team": "alpha"}, headers=admin).status_code == 201
    first = (SAMPLE / "qrels.ntcir").read_text()
    second = tmp_path / "corrected.qrels"
    second.write_text(_changed(first, share=0.2, seed=3))
    assert c.post(f"/api/collections/{cid}/qrels", content=first, headers=admin).status_code == 201
    run_paths = sorted((SAMPLE / "runs").iterdir())
    for path in run_paths:
        r = c.post(f"/api/collections/{cid}/runs?team=alpha", content=path.read_bytes(), headers=admin)
        assert r.status_code == 201, r.text
    assert c.post(f"/api/collections/{cid}/qrels", content=second.read_text(), headers=admin).status_code == 201

    stored, files = io.StringIO(), io.StringIO()
    for argv, out in ((["judges", "compare", "--collection", "ntcir", "--from", "1", "--to", "2", "--format", "json"],
                       stored),
                      (["judges", "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), "--qrels", str(second),
                        *map(str, run_paths), "-m", "nDCG@10", "--format", "json"], files)):
        args = build_parser().parse_args(argv)
        assert handler_for(args.command)(args, out) == 0
    db, fm = json.loads(stored.getvalue()), json.loads(files.getvalue())
    assert db["metric"] == fm["metric"] == "nDCG@10"
    assert db["labels"] == fm["labels"]
    assert [r["run"] for r in db["runs"]] == [r["run"] for r in fm["runs"]]
    for key in ("mean_a", "mean_b", "rank_a", "rank_b"):
        assert [r[key] for r in db["runs"]] == pytest.approx([r[key] for r in fm["runs"]], abs=1e-12)
    for key, value in db["ranking"].items():
        if isinstance(value, float):
            assert fm["ranking"][key] == pytest.approx(value, abs=1e-12), key
        else:
            assert fm["ranking"][key] == value, key
    for key in ("bias", "sd", "lower", "upper"):
        assert fm["bland_altman"][key] == pytest.approx(db["bland_altman"][key], abs=1e-12)
    assert [t["topic"] for t in db["topics"]["disagreeing"]] == [t["topic"] for t in fm["topics"]["disagreeing"]]
    assert db["significance"]["pairs"] == fm["significance"]["pairs"] == 28
    for key in ("kept_significant", "kept_not_significant", "lost", "gained", "flipped"):
        assert db["significance"][key] == fm["significance"][key], key  # the same test, B and seed
    # the text printout, one function for both modes
    for argv in (["judges", "compare", "--collection", "ntcir", "--from", "1", "--to", "2"],
                 ["judges", "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), "--qrels", str(second),
                  str(SAMPLE / "runs"), "-m", "nDCG@10"]):
        buf = io.StringIO()
        args = build_parser().parse_args(argv)
        assert handler_for(args.command)(args, buf) == 0
        text = buf.getvalue()
        assert "Label agreement" in text and "Kendall tau-b" in text and "disagree most" in text
        assert f"{db['labels']['overall']['kappa']:.4f}" in text
        if db["significance"] is not None:  # the correction named (issue 25, item 4)
            assert "alpha 0.05, correction: none: unadjusted)" in text
            # the pairs that keep their verdict counted, not a share (issue 37, item 7)
            sig = db["significance"]
            kept = sig["kept_significant"] + sig["kept_not_significant"]
            assert f"): {kept} of 28 pairs keep their verdict; " in text
        assert "topic(s)" not in text and "pair(s)" not in text
        assert f"compared on the {db['compared_topics']['compared']} topics both sets judged" in text


# --------------------------------------------------------------------------- several assessors (issue 25, item 9)
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_agreement_of_a_sets_assessors_in_every_door(world: World) -> None:
    """The agreement round of the DL19 re-annotation (8 assessors x the same 188 documents) as a
    label file in a set: the API's figures equal krippendorff's and scikit-learn's and those of
    ``cranfield judges agreement`` on the files; the CLI's database mode and the portal page show
    the same; only organisers see it."""
    from service.cli import build_parser
    from service.cli.registry import handler_for
    from tests.conftest import require_shared

    root = require_shared("data/trec-dl19-reannotation") / "agreement-round"
    nist = require_shared("data/trec-dl-passage") / "dl19-passage" / "qrels.txt"
    c, admin = world.client, auth(world.tokens["admin"])
    cid = c.post("/api/collections", json={"name": "dl19", "official_metric": "nDCG@10", "metrics": ["nDCG@10"]},
                 headers=admin).json()["id"]
    assert c.post(f"/api/collections/{cid}/qrels", content=nist.read_bytes(), headers=admin).status_code == 201
    assert c.post(f"/api/collections/{cid}/judgment-sets", json={"name": "round", "rule": "majority"},
                  headers=admin).status_code == 201
    files = sorted(root.glob("*-qrels.txt"))
    labels: dict[str, dict[tuple[str, str], int]] = {}
    lines = []
    for path in files:
        who = path.name.removesuffix("-qrels.txt")
        labels[who] = _judged(path.read_text())
        lines += [f"{t} {d} {who} {lv}\n" for (t, d), lv in labels[who].items()]
    r = c.post(f"/api/collections/{cid}/judgment-sets/round/labels", content="".join(lines), headers=admin)
    assert r.status_code == 201, r.text

    r = c.get(f"/api/collections/{cid}/judgment-sets/round/agreement", headers=admin)
    assert r.status_code == 200, r.text
    doc = r.json()
    names = sorted(labels)
    units = sorted({k for v in labels.values() for k in v})
    data = np.array([[labels[a].get(u, math.nan) for u in units] for a in names], dtype=float)
    assert doc["assessors"] == names and doc["documents"] == len(units) == 188 and doc["levels"] == [0, 1, 2, 3]
    for level in ("nominal", "ordinal", "interval"):
        assert doc["alpha"][level] == pytest.approx(krippendorff.alpha(
            reliability_data=data, value_domain=[0, 1, 2, 3], level_of_measurement=level), abs=1e-12)
    first = doc["pairs"][0]
    keys = sorted(labels[first["a"]].keys() & labels[first["b"]].keys())
    la, lb = [labels[first["a"]][k] for k in keys], [labels[first["b"]][k] for k in keys]
    assert first["kappa_quadratic"] == pytest.approx(cohen_kappa_score(la, lb, weights="quadratic"), abs=1e-12)

    def cli(argv: list[str]) -> dict:
        out = io.StringIO()
        args = build_parser().parse_args([*argv, "--format", "json"])
        assert handler_for(args.command)(args, out) == 0
        return json.loads(out.getvalue())

    stored = cli(["judges", "agreement", "--collection", "dl19", "--set", "round"])
    from_files = cli(["judges", "agreement", "--qrels", *map(str, files)])
    assert stored == doc
    for key in ("assessors", "levels", "documents", "labels", "alpha", "per_topic", "disagreement", "pairs"):
        assert from_files[key] == doc[key], key

    assert c.get(f"/api/collections/{cid}/judgment-sets/nothing/agreement", headers=admin).status_code == 404
    team = c.post(f"/api/collections/{cid}/teams", json={"team": "alpha"}, headers=admin)
    assert team.status_code == 201
    assert c.get(f"/api/collections/{cid}/judgment-sets/round/agreement").status_code == 401

    c.cookies.clear()
    assert c.post("/login", data={"token": world.tokens["admin"]}, follow_redirects=False).status_code == 303
    page = c.get(f"/c/{cid}/judgment-sets/round/agreement")
    assert page.status_code == 200 and page.text.count("<h1") == 1
    assert f"{doc['alpha']['ordinal']:.3f}" in page.text and 'id="pairs"' in page.text
    assert page.text.count("<tr data-assessor=") == 8
    assert f"/c/{cid}/judgment-sets/round/agreement" in c.get(f"/c/{cid}/judgment-sets/round").text


def test_a_pair_undecided_under_a_stored_test_is_left_out_of_the_verdicts_compared(world: World) -> None:
    """Issue 25, item 1: a pair whose stored verdict is undecided at its B has no verdict to
    compare; the comparison leaves it out (counted as untested) and says so."""
    from sqlalchemy import select

    from service.evaluation.publishing import reading
    from service.store.arrays import pack, unpack
    from service.store.models import QrelsVersion, Significance

    _upload_second(world)
    with world.factory() as s:
        first = s.scalars(select(QrelsVersion.id).where(QrelsVersion.collection_id == world.cid,
                                                        QrelsVersion.version == 1)).one()
        rows = s.scalars(select(Significance).where(Significance.qrels_version_id == first,
                                                    Significance.metric == "nDCG@10")).all()
        assert rows
        for row in rows:
            n = unpack(row.p_adjusted).size
            row.undecided = pack(np.array([1.0] + [0.0] * (n - 1)))  # the first pair, (0, 1)
        s.commit()
    reading._SIG_CACHE.clear()
    try:
        doc = world.client.get(f"/api/collections/{world.cid}/qrels/compare?a=1&b=2",
                               headers=auth(world.tokens["organiser"])).json()
    finally:
        reading._SIG_CACHE.clear()
    sig = doc["significance"]
    assert sig["untested"] == 1 and sig["pairs"] == 2
    assert any("1 pair undecided at its B under a stored test (issue 25) is left out" in note
               for note in doc["notes"]), doc["notes"]
