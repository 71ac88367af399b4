"""Judging the judges on real assessors (issue 25, items 8 and 9): TREC DL 2019 passage topics
re-judged by eight people (../shared/data/trec-dl19-reannotation), NIST's qrels and the 15
official runs (../shared/data/trec-dl-passage/dl19-passage).

* Labels: every assessor against NIST and every pair of assessors, on the documents both judged:
  the confusion matrix, Cohen's kappa and the weighted kappas equal scikit-learn's, the ordinal
  alpha ``krippendorff``'s.
* Rankings (``cranfield judges compare`` on the files): every assessor against NIST and each pair
  of ``main``, on the topics both judged; the runs' means there are recomputed from the core's
  evaluation with topics without a relevant document counted (0, as trec_eval), and Kendall's
  tau-b, Spearman and Pearson equal scipy's on them, tau_AP a direct computation of Yilmaz et
  al.'s definition where no run ties.
* Several assessors (``cranfield judges agreement`` on the agreement round: 8 assessors x the
  same 188 documents): alpha over everyone (nominal, ordinal, interval), per topic and without
  each assessor equals ``krippendorff``'s, each pair's kappas scikit-learn's.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import require_shared
from tests.support.peers import require_peer

pytestmark = [pytest.mark.peer, pytest.mark.filterwarnings("ignore")]

sk_metrics = require_peer("sklearn.metrics", "scikit-learn")
kripp = require_peer("krippendorff")
scipy_stats = require_peer("scipy.stats", "scipy")

METRIC = "MSnDCG@10"
ASSESSORS = ("andrew-parry", "eugene-yang", "ferdinand-schlatt", "froebe", "guglielmo-faggioli", "harry-scells",
             "saber-zerhoudi", "sean-macavaney")
PAIRS = (("andrew-parry", "eugene-yang"), ("ferdinand-schlatt", "froebe"), ("guglielmo-faggioli", "harry-scells"),
         ("saber-zerhoudi", "sean-macavaney"))
LEVELS = [0, 1, 2, 3]


def _judged(path: Path) -> dict[tuple[str, str], int]:
    out = {}
    for line in path.read_text().splitlines():
        t, _, d, lv = line.split()
        out[(t, d)] = int(lv)
    return out


def _relevant(judged: dict[tuple[str, str], int], topic: str) -> bool:
    return any(lv >= 1 for (t, _), lv in judged.items() if t == topic)


def _run(argv: list[str]) -> dict[str, Any]:
    from service.cli import build_parser
    from service.cli.registry import handler_for

    out = io.StringIO()
    args = build_parser().parse_args([*argv, "--format", "json"])
    assert handler_for(args.command)(args, out) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The files, the runs decompressed once, and each qrels' evaluation by the core (topics
    without a relevant document counted: every metric 0 there)."""
    from service.formats.readers import read_qrels, read_run
    from service.metrics.scoring import EvalSettings, evaluate

    root = require_shared("data/trec-dl19-reannotation")
    dl = require_shared("data/trec-dl-passage") / "dl19-passage"
    runs_dir = tmp_path_factory.mktemp("dl19-runs")
    for gz in sorted((dl / "runs").glob("*.txt.gz")):
        (runs_dir / gz.name.removesuffix(".gz")).write_bytes(gzip.decompress(gz.read_bytes()))
    files = {"NIST": dl / "qrels.txt", **{a: root / "main" / f"{a}-qrels.txt" for a in ASSESSORS}}
    runs = [read_run(p) for p in sorted(runs_dir.iterdir())]
    scores = {}
    for name, path in files.items():
        ev = evaluate(read_qrels(path), runs, [METRIC], EvalSettings(no_relevant="count"))
        scores[name] = {(r, t): ev.value(r, METRIC, t) for r in ev.runs for t in ev.topics}
    return {"root": root, "runs_dir": runs_dir, "files": files, "judged": {n: _judged(p) for n, p in files.items()},
            "scores": scores, "tags": [r.tag for r in runs]}


def _tau_ap(x: np.ndarray, y: np.ndarray) -> float:
    """Yilmaz et al.'s tau_AP of ranking y against the reference x (no ties), by its definition."""
    order = np.argsort(-y, kind="stable")
    n = len(order)
    total = sum(sum(1 for j in order[:i] if x[j] > x[order[i]]) / i for i in range(1, n))
    return 2 / (n - 1) * total - 1


def _same(value: float | None, expected: float) -> bool:
    """A figure equals the peer's; NaN (undefined, e.g. both used one level) is null in the document."""
    return value is None if math.isnan(expected) else value == pytest.approx(expected, abs=1e-12)


def _check_labels(figures: dict[str, Any], ja: dict[tuple[str, str], int], jb: dict[tuple[str, str], int]) -> None:
    keys = sorted(ja.keys() & jb.keys())
    o = figures["overall"]
    if not keys:  # assessors of different pairs in `main`: nothing to agree on, said so, never a number
        assert o["documents"] == 0 and o["kappa"] is None and o["alpha"] is None
        assert any("no document was judged by both" in n for n in figures["notes"])
        return
    la, lb = [ja[k] for k in keys], [jb[k] for k in keys]
    assert figures["levels"] == LEVELS and o["documents"] == len(keys)
    assert o["confusion"] == sk_metrics.confusion_matrix(la, lb, labels=LEVELS).tolist()
    for key, weights in (("kappa", None), ("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
        assert _same(o[key], sk_metrics.cohen_kappa_score(la, lb, labels=LEVELS, weights=weights)), key
    if len(set(la + lb)) > 1:  # krippendorff raises where every label is the same (Cranfield: null, a note)
        assert _same(o["alpha"], kripp.alpha(reliability_data=np.array([la, lb], dtype=float), value_domain=LEVELS,
                                             level_of_measurement="ordinal"))
    else:
        assert o["alpha"] is None and any("no variation" in n for n in figures["notes"])


@pytest.mark.parametrize("pair", [("NIST", a) for a in ASSESSORS] + list(itertools.combinations(ASSESSORS, 2)),
                         ids=lambda p: "-".join(p) if isinstance(p, tuple) else str(p))
def test_labels_of_each_assessor_against_nist_and_each_pair_match_scikit_learn_and_krippendorff(
        data: dict[str, Any], pair: tuple[str, str]) -> None:
    from service.evaluation.judging.judge_comparison import label_figures

    ja, jb = data["judged"][pair[0]], data["judged"][pair[1]]
    _check_labels(label_figures(ja, jb), ja, jb)


@pytest.mark.parametrize("pair", [("NIST", a) for a in ASSESSORS] + list(PAIRS), ids="-".join)
def test_rankings_on_the_topics_both_judged_match_scipy_and_a_direct_tau_ap(data: dict[str, Any],
                                                                             pair: tuple[str, str]) -> None:
    a, b = pair
    doc = _run(["judges", "compare", "--qrels", str(data["files"][a]), "--qrels", str(data["files"][b]),
                str(data["runs_dir"]), "-m", METRIC])
    _check_labels(doc["labels"], data["judged"][a], data["judged"][b])
    ja, jb = data["judged"][a], data["judged"][b]
    ta, tb = {t for t, _ in ja}, {t for t, _ in jb}
    common = sorted(t for t in ta & tb if _relevant(ja, t) or _relevant(jb, t))
    ct = doc["compared_topics"]
    assert ct["compared"] == len(common)
    assert sorted(ct["only_a"]) == sorted(ta - tb) and sorted(ct["only_b"]) == sorted(tb - ta)
    assert sorted(ct["zero_a"]) == [t for t in common if not _relevant(ja, t)]
    assert sorted(ct["zero_b"]) == [t for t in common if not _relevant(jb, t)]
    assert ct["left_out"] == len(ta ^ tb) + len(ta & tb) - len(common)
    assert f"compared on the {len(common)} topics both sets judged" in ct["sentence"]

    names = [r["run"] for r in doc["runs"]]
    assert sorted(names) == sorted(data["tags"])
    sa, sb = data["scores"][a], data["scores"][b]
    ma = np.array([np.mean([sa[(r, t)] for t in common]) for r in names])
    mb = np.array([np.mean([sb[(r, t)] for t in common]) for r in names])
    assert [r["mean_a"] for r in doc["runs"]] == pytest.approx(ma.tolist(), abs=1e-12)
    assert [r["mean_b"] for r in doc["runs"]] == pytest.approx(mb.tolist(), abs=1e-12)
    rk = doc["ranking"]
    assert rk["kendall"] == pytest.approx(scipy_stats.kendalltau(ma, mb).statistic, abs=1e-12)
    assert rk["spearman"] == pytest.approx(scipy_stats.spearmanr(ma, mb).statistic, abs=1e-12)
    assert rk["pearson"] == pytest.approx(scipy_stats.pearsonr(ma, mb).statistic, abs=1e-12)
    if len(set(ma.tolist())) == len(ma) and len(set(mb.tolist())) == len(mb):
        assert rk["tau_ap"] == pytest.approx(_tau_ap(ma, mb), abs=1e-12)
        assert rk["tau_ap_reverse"] == pytest.approx(_tau_ap(mb, ma), abs=1e-12)
    ba = doc["bland_altman"]
    d = np.array([np.mean([sb[(r, t)] for r in names]) - np.mean([sa[(r, t)] for r in names]) for t in common])
    assert ba["topics"] == len(common) and ba["bias"] == pytest.approx(d.mean(), abs=1e-12)
    assert doc["significance"]["test_a"]["topics"] == doc["significance"]["test_b"]["topics"] == len(common)


def test_the_issue_case_nist_against_sean_macavaney_ranks_identically_on_the_common_topics(
        data: dict[str, Any]) -> None:
    """Issue 25, item 8: over NIST's 43 topics against the assessor's 15 tau was 0.83; on the
    15 both judged the rankings are the same."""
    doc = _run(["judges", "compare", "--qrels", str(data["files"]["NIST"]), "--qrels",
                str(data["files"]["sean-macavaney"]), str(data["runs_dir"]), "-m", METRIC])
    assert doc["compared_topics"]["compared"] == 15 and len(doc["compared_topics"]["only_a"]) == 28
    assert doc["ranking"]["kendall"] == pytest.approx(1.0)
    assert all(r["change"] == 0 for r in doc["runs"])


@pytest.fixture(scope="module")
def round_doc(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``cranfield judges agreement`` on the agreement round's eight qrels files, and their
    labels as (assessor -> (topic, docno) -> level)."""
    files = sorted((data["root"] / "agreement-round").glob("*-qrels.txt"))
    doc = _run(["judges", "agreement", "--qrels", *map(str, files)])
    labels = {p.name.removesuffix("-qrels.txt"): _judged(p) for p in files}
    return doc, labels


def _reliability(labels: dict[str, dict[tuple[str, str], int]], assessors: list[str],
                 topic: str | None = None) -> np.ndarray:
    units = sorted({k for a in assessors for k in labels[a] if topic is None or k[0] == topic})
    return np.array([[labels[a].get(u, math.nan) for u in units] for a in assessors], dtype=float)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_of_every_assessor_matches_krippendorff(round_doc, level: str) -> None:  # type: ignore[no-untyped-def]
    doc, labels = round_doc
    names = sorted(labels)
    assert doc["assessors"] == names and doc["documents"] == 188 and doc["labels"] == 8 * 188
    expected = kripp.alpha(reliability_data=_reliability(labels, names), value_domain=LEVELS,
                           level_of_measurement=level)
    assert doc["alpha"][level] == pytest.approx(expected, abs=1e-12)
    topics = sorted({t for a in names for t, _ in labels[a]})
    assert [t["topic"] for t in doc["per_topic"]] == topics
    for t in doc["per_topic"]:
        assert t[level] == pytest.approx(kripp.alpha(reliability_data=_reliability(labels, names, t["topic"]),
                                                     value_domain=LEVELS, level_of_measurement=level), abs=1e-12)
    for row in doc["disagreement"]:
        others = [n for n in names if n != row["assessor"]]
        assert row["alpha_without"][level] == pytest.approx(kripp.alpha(
            reliability_data=_reliability(labels, others), value_domain=LEVELS, level_of_measurement=level),
            abs=1e-12)


def test_pairs_and_who_disagrees_most(round_doc) -> None:  # type: ignore[no-untyped-def]
    doc, labels = round_doc
    names = sorted(labels)
    assert [(p["a"], p["b"]) for p in doc["pairs"]] == list(itertools.combinations(names, 2))
    kappas: dict[str, list[float]] = {n: [] for n in names}
    for p in doc["pairs"]:
        keys = sorted(labels[p["a"]].keys() & labels[p["b"]].keys())
        la, lb = [labels[p["a"]][k] for k in keys], [labels[p["b"]][k] for k in keys]
        assert p["documents"] == len(keys) == 188
        assert p["confusion"] == sk_metrics.confusion_matrix(la, lb, labels=LEVELS).tolist()
        for key, weights in (("kappa", None), ("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
            assert p[key] == pytest.approx(sk_metrics.cohen_kappa_score(la, lb, labels=LEVELS, weights=weights),
                                           abs=1e-12)
        assert p["alpha"] == pytest.approx(kripp.alpha(reliability_data=np.array([la, lb], dtype=float),
                                                       value_domain=LEVELS, level_of_measurement="ordinal"),
                                           abs=1e-12)
        kappas[p["a"]].append(p["kappa"])
        kappas[p["b"]].append(p["kappa"])
    rows = {r["assessor"]: r for r in doc["disagreement"]}
    for n in names:
        assert rows[n]["mean_kappa"] == pytest.approx(np.mean(kappas[n]), abs=1e-12)
        assert rows[n]["ordinal_change_without"] == pytest.approx(
            rows[n]["alpha_without"]["ordinal"] - doc["alpha"]["ordinal"], abs=1e-12)
    changes = [r["ordinal_change_without"] for r in doc["disagreement"]]
    assert changes == sorted(changes, reverse=True)


def test_the_text_printout_names_every_figure(data: dict[str, Any]) -> None:
    from service.cli import build_parser
    from service.cli.registry import handler_for

    files = sorted((data["root"] / "agreement-round").glob("*-qrels.txt"))
    out = io.StringIO()
    args = build_parser().parse_args(["judges", "agreement", "--qrels", *map(str, files)])
    assert handler_for(args.command)(args, out) == 0
    text = out.getvalue()
    assert "Krippendorff's alpha over every assessor" in text and "Who disagrees most" in text
    assert text.count("\n") > 8 + 28 + 3


def test_a_label_file_gives_the_figures_of_the_qrels_files(round_doc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The labels in another order (assessors reversed): the same figures, to the last bit."""
    doc, labels = round_doc
    path = tmp_path / "round.labels"
    path.write_text("".join(f"{t} {d} {who} L{lv}\n" for who, judged in sorted(labels.items(), reverse=True)
                            for (t, d), lv in judged.items()))
    from_labels = _run(["judges", "agreement", "--labels", str(path)])
    assert from_labels["labels"] == doc["labels"] and from_labels["labels"] != 0
    for key in ("assessors", "levels", "documents", "alpha", "per_topic", "disagreement", "pairs", "notes"):
        assert from_labels[key] == doc[key], key
