"""Two nugget assignment sets compared (issue 36, item 3) against independent implementations,
on NIST's TREC 2024 RAG assignments and an automatic-like set derived from them at known rates
(as automatic assigners do: 20% of ``not_support`` to ``partial_support``, 10% of ``support`` to
``partial_support``, 5% of ``partial_support`` to ``not_support``; one topic's nuggets reworded
in the candidate, so the text matching leaves them out, and a few answers dropped):

* scikit-learn: ``cohen_kappa_score`` (unweighted and linear) and ``confusion_matrix`` on the
  aligned labels, which this test aligns itself from the JSON files (by (run, topic) and the
  nugget's text);
* ``krippendorff.alpha(level_of_measurement="ordinal")``, the two sets as two raters;
* scipy's ``kendalltau`` (tau-b) and ``spearmanr`` on the runs' mean scores over the topics both
  assessed, each mean computed here from the definitions (Vital strict: vital nuggets fully
  supported over vital nuggets); tau_AP written out from Yilmaz et al.'s formula.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from service.formats.rag_judgments import read_assignments
from service.metrics.rag_agreement import compare_assignments, comparison_document
from tests.conftest import require_shared

CODE = {"not_support": 0, "partial_support": 1, "support": 2}
RATES = {"not_support": ("partial_support", 0.20), "support": ("partial_support", 0.10),
         "partial_support": ("not_support", 0.05)}


@pytest.fixture(scope="module")
def rows() -> tuple[list[dict], list[dict]]:
    path: Path = require_shared("data/trec-rag24") / "nugget_assignment.20241108.jl.gz"
    nist = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines() if line.strip()]
    rng = np.random.default_rng(36)
    auto = json.loads(json.dumps(nist))
    reworded = auto[0]["qid"]
    for row in auto:
        for nugget in row["nuggets"]:
            to, rate = RATES[nugget["assignment"]]
            if rng.random() < rate:
                nugget["assignment"] = to
            if row["qid"] == reworded and nugget is row["nuggets"][0]:
                nugget["text"] = nugget["text"] + " (reworded)"
    dropped = {(r["run_id"], r["qid"]) for r in auto[5:9]}
    auto = [r for r in auto if (r["run_id"], r["qid"]) not in dropped]
    return nist, auto


def _file(rows: list[dict]) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def _aligned(nist: list[dict], auto: list[dict]) -> tuple[list[int], list[int]]:
    other = {(r["run_id"], r["qid"]): {n["text"]: n["assignment"] for n in r["nuggets"]} for r in auto}
    a, b = [], []
    for r in nist:
        labels = other.get((r["run_id"], r["qid"]))
        if labels is None:
            continue
        for n in r["nuggets"]:
            if n["text"] in labels:
                a.append(CODE[n["assignment"]])
                b.append(CODE[labels[n["text"]]])
    return a, b


def _vital_strict_means(rows: list[dict], keep: set[tuple[str, str]], topics: list[str], runs: list[str]) -> np.ndarray:
    """Each run's Vital strict mean over ``topics`` from the definition (0 where not answered)."""
    per = {}
    for r in rows:
        if (r["run_id"], r["qid"]) in keep:
            vital = [n for n in r["nuggets"] if n["importance"] == "vital"]
            per[(r["run_id"], r["qid"])] = sum(n["assignment"] == "support" for n in vital) / len(vital)
    return np.array([np.mean([per.get((run, t), 0.0) for t in topics]) for run in runs])


def _tau_ap(reference: np.ndarray, other: np.ndarray) -> float:
    """Yilmaz, Aslam & Robertson (2008): walk ``other``'s ranking; C(i) counts the runs above
    position i that the reference also ranks above that run."""
    order = np.argsort(-other, kind="stable")
    total = 0.0
    for i in range(1, len(order)):
        run = order[i]
        correct = sum(reference[order[j]] > reference[run] for j in range(i))
        total += correct / i
    return 2.0 / (len(order) - 1) * total - 1.0


def test_label_agreement_equals_scikit_learn_and_krippendorff(rows: tuple[list[dict], list[dict]]) -> None:
    nist, auto = rows
    result = compare_assignments(read_assignments(_file(nist), "nist.jl"), read_assignments(_file(auto), "auto.jl"),
                                 metrics=["nugget_vital(strict=true)"], resamples=200)
    a, b = _aligned(nist, auto)
    overall = result.labels.overall
    assert overall.documents == len(a) == result.cells
    assert np.array_equal(overall.confusion, confusion_matrix(a, b, labels=[0, 1, 2]))
    assert overall.kappa == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2]), abs=1e-12)
    assert overall.kappa_linear == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2], weights="linear"), abs=1e-12)
    peer_alpha = krippendorff.alpha(reliability_data=np.array([a, b], dtype=float), value_domain=[0, 1, 2],
                                    level_of_measurement="ordinal")
    assert overall.alpha == pytest.approx(peer_alpha, abs=1e-12)
    # the shares of partial support, and what the derivation put in (rates, not exact counts)
    assert result.partial_share[0] == pytest.approx(a.count(1) / len(a), abs=1e-15)
    assert result.partial_share[1] == pytest.approx(b.count(1) / len(b), abs=1e-15)
    assert result.partial_share[1] > 3 * result.partial_share[0]
    # what was left out: the dropped answers, the reworded nugget (once per answer of its topic, each side)
    assert len(result.only_first) == 4 and not result.only_second
    reworded = auto[0]["qid"]
    answers_of_topic = sum(1 for r in auto if r["qid"] == reworded)
    assert result.unmatched == 2 * answers_of_topic
    # per topic: scikit-learn's kappa of each topic's labels
    for topic, la in result.labels.per_topic.items():
        ta, tb = _aligned([r for r in nist if r["qid"] == topic], [r for r in auto if r["qid"] == topic])
        assert la.kappa == pytest.approx(cohen_kappa_score(ta, tb, labels=[0, 1, 2]), abs=1e-12, nan_ok=True)


def test_ranking_agreement_equals_scipy_and_a_direct_tau_ap(rows: tuple[list[dict], list[dict]]) -> None:
    nist, auto = rows
    metric = "nugget_vital(strict=true)"
    # a candidate that differs on strict scores too: also 15% of support -> not_support
    rng = np.random.default_rng(7)
    harsher = json.loads(json.dumps(auto))
    for r in harsher:
        for n in r["nuggets"]:
            if n["assignment"] == "support" and rng.random() < 0.15:
                n["assignment"] = "not_support"
    result = compare_assignments(read_assignments(_file(nist), "nist.jl"),
                                 read_assignments(_file(harsher), "auto.jl"), metrics=[metric], resamples=300)
    r = result.rankings[metric]
    runs = list(r.runs)
    topics = list(r.topics.topics)
    assert len(topics) == len({row["qid"] for row in nist}) and len(runs) == 45
    keep_a = {(x["run_id"], x["qid"]) for x in nist}
    keep_b = {(x["run_id"], x["qid"]) for x in harsher}
    x = _vital_strict_means(nist, keep_a, topics, runs)
    y = _vital_strict_means(harsher, keep_b, topics, runs)
    assert r.correlations["kendall"].value == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert r.correlations["spearman"].value == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert len(np.unique(x)) == len(np.unique(y)) == len(x)  # no tie on these files: the plain formula applies
    assert r.correlations["tau_ap"].value == pytest.approx(_tau_ap(x, y), abs=1e-12)
    assert r.correlations["tau_ap"].value < 1.0  # the harsher set does reorder runs
    # per topic: scipy's tau-b of the runs' scores on the topic alone
    for t, value in list(r.per_topic_tau.items())[:5]:
        px = _vital_strict_means(nist, keep_a, [t], runs)
        py = _vital_strict_means(harsher, keep_b, [t], runs)
        with np.errstate(invalid="ignore"):
            want = stats.kendalltau(px, py).statistic
        assert value == pytest.approx(want, abs=1e-12, nan_ok=True)
    doc = comparison_document(result)
    assert doc["rankings"][metric]["kendall"]["value"] == r.correlations["kendall"].value
    assert doc["agreement"]["confusion"] == result.labels.overall.confusion.tolist()
