"""Cranfield against ranx (0.3.x), per query, on generated collections.

Expected values: ``ranx.evaluate(Qrels, Run, metrics, return_mean=False)``.

What ranx does with the inputs (read in ranx/metrics/*.py and checked in
``test_label_semantics`` below):

* A label >= ``rel_lvl`` (1, or 2 with the ``-l2`` suffix) is relevant; every
  other document that is in the qrels, whatever its label (0 *or negative*), is
  judged non-relevant: bpref counts ``qrels < rel_lvl`` as its N and treats a
  document as unjudged only when it is absent from the qrels. ranx therefore
  cannot represent Cranfield's -1 (pooled but unjudged): such judgments are
  dropped from both sides, which makes them "absent from the qrels" = unjudged
  for both.
* A retrieved document absent from the qrels is non-relevant, and unjudged for
  bpref, as in Cranfield.
* nDCG gains are the labels (only labels >= rel_lvl count): ranx's ``ndcg``
  ("Järvelin" variant) uses linear gains with the log2(r + 1) discount at every
  rank, which is Cranfield's ``MSnDCG`` (not Cranfield's ``nDCG``, which uses
  Järvelin & Kekäläinen's max(1, log2 r) discount); ``ndcg_burges`` uses gains
  2^l - 1, which is ``MSnDCG(gains={1:1,2:3,3:7,...})``.
* ``map@k`` divides by R (trec_eval's map_cut) = Cranfield's default norm=R;
  ``precision@k`` divides by k even for a shorter list, as Cranfield does.
* Topics: ranx needs the run and the qrels to have the same query ids;
  ``make_comparable=True`` adds an empty result list for every qrels topic the
  run lacks (scored 0) = Cranfield's ``missing="zero"``. ranx scores judged
  topics that have no relevant document 0 = ``no_relevant="count"``.
* Run order: ranx sorts each query by score with an unstable argsort, so ties
  would be ordered arbitrarily; the run is given strictly decreasing, distinct
  scores in Cranfield's rank order.
* bpref has two ranx problems (ranx 0.3.21, ``ranx/metrics/bpref.py``), both
  checked in ``test_ranx_bpref_quirks``:
  - a topic with no relevant document (R = 0) raises ZeroDivisionError in
    ``_bpref``; inside the numba ``prange`` loop the exception is swallowed and
    that topic *and every later topic of the same thread's chunk* keep their
    initial 0 (with fewer than 10 queries ranx uses one thread, so every later
    topic). Cranfield and trec_eval score only the R = 0 topic 0. The bpref
    metrics are therefore computed by ranx on the topics with R >= rel only
    (``bpref`` and ``bpref-l2`` in separate calls).
  - when a topic has relevant but no judged non-relevant document (N = 0),
    ranx computes 0/0 = nan where trec_eval and Cranfield give 1 for each
    relevant document retrieved; the generated collections assert N >= 1.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from service.formats.types import Qrels as CranfieldQrels
from service.formats.types import Run as CranfieldRun
from service.metrics import EvalSettings, evaluate
from tests.support.collections import generate
from tests.support.peers import RANX_ID_LEN, compiling_alone, require_peer

ranx = require_peer("ranx", "ranx")
from ranx import Qrels, Run  # noqa: E402
from ranx import evaluate as _ranx_evaluate  # noqa: E402


def ranx_evaluate(*args, **kwargs):  # type: ignore[no-untyped-def]
    """ranx's evaluate, compiling alone (tests.support.peers.compiling_alone)."""
    with compiling_alone("ranx"):
        return _ranx_evaluate(*args, **kwargs)

pytestmark = [
    pytest.mark.peer,
    # ranx's kernels cast uint64 hashes to int64; harmless here (ids are only compared for equality).
    pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning"),
]

TOL = 1e-9

#: (seed, topics, runs, depth, max_level, unjudged_label_rate)
COLLECTIONS = {
    "x1": (7, 8, 4, 30, 3, 0.15),
    "x2": (8, 10, 4, 40, 2, 0.10),
    "x3": (9, 9, 5, 25, 1, 0.10),  # binary levels: R < N on most topics
}

RANX_SETTINGS = EvalSettings(missing="zero", no_relevant="count")

#: ranx's Qrels and Run constructors store doc ids as numpy "<U{longest}" arrays and numba
#: compiles them once per string length (about 5 s each without a warm numba cache), so every
#: doc id in this module has the generated ids' length ("D0-000", "X7-019": topics <= 10).
ID_LEN = RANX_ID_LEN
A, B, C, D, X = (f"toy--{c}" for c in "abcdx")


def pairs_for(max_level: int) -> dict[str, str]:
    """ranx metric -> Cranfield measure."""
    exp_gains = "{" + ",".join(f"{lv}:{2**lv - 1}" for lv in range(1, max_level + 1)) + "}"
    return {
        "map": "AP",
        "map@5": "AP@5",
        "map@10": "AP@10",
        "precision@5": "P@5",
        "precision@10": "P@10",
        "recall@10": "Recall@10",
        "recall@100": "Recall@100",
        "mrr": "RR",
        "mrr@5": "RR@5",
        "r-precision": "Rprec",
        "hit_rate@1": "Hit@1",
        "hit_rate@5": "Hit@5",
        "hit_rate@10": "Hit@10",
        "ndcg": "MSnDCG",
        "ndcg@5": "MSnDCG@5",
        "ndcg@10": "MSnDCG@10",
        "ndcg_burges": f"MSnDCG(gains={exp_gains})",
        "ndcg_burges@10": f"MSnDCG(gains={exp_gains})@10",
        "bpref": "bpref",
        # ranx's "-l2" suffix = rel_lvl 2 = Cranfield's rel=2.
        "map-l2": "AP(rel=2)",
        "precision@10-l2": "P(rel=2)@10",
        "recall@10-l2": "Recall(rel=2)@10",
        "mrr-l2": "RR(rel=2)",
        "r-precision-l2": "Rprec(rel=2)",
        "hit_rate@5-l2": "Hit(rel=2)@5",
        "bpref-l2": "bpref(rel=2)",
    }


def without_unjudged_labels(judgments: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Drop the -1 labels (ranx would count them as judged non-relevant)."""
    out = {t: {d: v for d, v in j.items() if v >= 0} for t, j in judgments.items()}
    assert all(out.values()), "a topic lost all its judgments"
    return out


def ranx_qrels(judgments: dict[str, dict[str, int]]) -> Qrels:
    assert all(len(d) == ID_LEN for j in judgments.values() for d in j)
    return Qrels(judgments)


def ranx_run(ranking: dict[str, list[str]], tag: str = "r") -> Run:
    """Strictly decreasing distinct scores in Cranfield's order; empty lists left to make_comparable."""
    assert all(len(d) == ID_LEN for docs in ranking.values() for d in docs)
    return Run(
        {t: {d: float(len(docs) - i) for i, d in enumerate(docs)} for t, docs in ranking.items() if docs},
        name=tag,
    )


#: ranx metrics that raise inside ranx on a topic with no relevant document (see the module docstring):
#: they are computed on the topics with R >= rel only.
BPREF = {"bpref": 1, "bpref-l2": 2}


def ranx_scores(judgments: dict[str, dict[str, int]], ranking: dict[str, list[str]], metrics: list[str]) -> dict:
    """topic -> metric -> ranx's per-query value, over the qrels topics (make_comparable=True)."""
    qrels = ranx_qrels(judgments)
    run = ranx_run({t: docs for t, docs in ranking.items() if t in judgments})
    scores = ranx_evaluate(qrels, run, metrics, return_mean=False, make_comparable=True)
    if len(metrics) == 1:
        scores = {metrics[0]: scores}
    query_ids = list(run.get_query_ids())
    assert query_ids == sorted(judgments), query_ids  # the per-query arrays follow the sorted query ids
    return {t: {m: float(scores[m][i]) for m in metrics} for i, t in enumerate(query_ids)}


@functools.cache
def comparison(name: str) -> tuple[list[str], int]:
    """Every (run, topic, metric) disagreement, and how many values were compared."""
    seed, topics, runs, depth, max_level, unjudged = COLLECTIONS[name]
    g = generate(
        np.random.default_rng(seed), topics=topics, runs=runs, depth=depth, max_level=max_level,
        unjudged_label_rate=unjudged,
    )
    judgments = without_unjudged_labels(g.judgments)
    # bpref precondition: N >= 1 on every topic (ranx gives nan when N = 0, see the module docstring).
    assert all(any(v == 0 for v in j.values()) for j in judgments.values())
    assert any(-1 in j.values() for j in g.judgments.values())  # there was something to drop
    assert any(not any(v >= 1 for v in j.values()) for j in judgments.values())  # a topic with nothing relevant
    pairs = pairs_for(CranfieldQrels.from_mapping(judgments).max_level)
    ev = evaluate(CranfieldQrels.from_mapping(judgments), g.runs, list(pairs.values()), RANX_SETTINGS)
    assert ev.topics == tuple(sorted(judgments))
    main_metrics = [m for m in pairs if m not in BPREF]
    bpref_topics = {
        m: {t: j for t, j in judgments.items() if any(v >= rel for v in j.values())} for m, rel in BPREF.items()
    }
    bad, compared = [], 0
    for ri, tag in enumerate(ev.runs):
        peer = ranx_scores(judgments, g.rankings[tag], main_metrics)
        for metric, subset in bpref_topics.items():
            if subset:
                for t, v in ranx_scores(subset, g.rankings[tag], [metric]).items():
                    peer[t].update(v)
        for metric, cran in pairs.items():
            got = ev.per_topic(cran)[ri]
            for ti, topic in enumerate(ev.topics):
                if metric not in peer[topic]:
                    continue
                compared += 1
                expected = peer[topic][metric]
                if not math.isclose(float(got[ti]), expected, rel_tol=0.0, abs_tol=TOL):
                    bad.append(
                        f"{tag} topic {topic} {metric}: ranx {expected!r} vs Cranfield {cran} {float(got[ti])!r}"
                    )
    return bad, compared


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_per_query_matches_ranx(name: str) -> None:
    # Expected: ranx.evaluate(..., return_mean=False, make_comparable=True) per query.
    bad, compared = comparison(name)
    assert compared > 0
    assert not bad, f"{len(bad)} of {compared} disagree:\n" + "\n".join(bad[:20])


def test_label_semantics() -> None:
    # Expected: ranx on a hand-made topic (values hand-checked).
    # q1: A (0), B (1), C (2), D (-1), X (absent), in that order. ranx counts D as judged
    #     non-relevant: R = 2, N = 2, bpref = (1/2)[(1 - 1/2) + (1 - 1/2)] = 0.5, whereas
    #     Cranfield and trec_eval (D unjudged, N = 1) give (1/2)[(1 - 1/1) + (1 - 1/1)] = 0.
    # q1dropped: the same with D's label dropped: ranx agrees with Cranfield (0).
    # AP = (1/2 + 2/3)/2 on both sides either way: -1 is neither relevant nor a gain.
    judged = {"q1": {A: 0, B: 1, C: 2, D: -1}}
    ranking = [A, B, C, D, X]
    qrels = {"q1": judged["q1"], "q1dropped": without_unjudged_labels(judged)["q1"]}
    run = ranx_run({"q1": ranking, "q1dropped": ranking})
    peer = ranx_evaluate(ranx_qrels(qrels), run, ["bpref", "map", "ndcg"], return_mean=False)
    # Query ids in sorted order: q1, q1dropped.
    assert peer["bpref"].tolist() == pytest.approx([0.5, 0.0], abs=TOL)
    assert peer["map"].tolist() == pytest.approx([(1 / 2 + 2 / 3) / 2] * 2, abs=TOL)

    ev = evaluate(CranfieldQrels.from_mapping(judged), [CranfieldRun.from_rankings("r", {"q1": ranking})],
                  ["bpref", "AP", "MSnDCG"], RANX_SETTINGS)
    assert float(ev.per_topic("bpref")[0, 0]) == pytest.approx(float(peer["bpref"][1]), abs=TOL)
    assert float(ev.per_topic("AP")[0, 0]) == pytest.approx(float(peer["map"][0]), abs=TOL)
    assert float(ev.per_topic("MSnDCG")[0, 0]) == pytest.approx(float(peer["ndcg"][0]), abs=TOL)


def test_ranx_bpref_quirks() -> None:
    # Expected: the ranx behaviour that the comparison works around (see the module docstring),
    # against hand-checked values that Cranfield (and trec_eval) give.
    # qa, qc: B (1), A (0), C (2): R = 2, N = 1: bpref = (1/2)[1 + (1 - 1/1)] = 0.5.
    # qb: nothing relevant (R = 0): bpref 0. qn: all judged documents relevant (N = 0): bpref 1.
    good_q, good_r = {B: 1, A: 0, C: 2}, [B, A, C]
    judged = {"qa": good_q, "qb": {A: 0, B: 0}, "qc": good_q, "qn": {A: 1, B: 1}}
    ranking = {"qa": good_r, "qb": [A], "qc": good_r, "qn": [A, B]}

    ev = evaluate(CranfieldQrels.from_mapping(judged), [CranfieldRun.from_rankings("r", ranking)], ["bpref"],
                  RANX_SETTINGS)
    assert dict(zip(ev.topics, ev.per_topic("bpref")[0].tolist())) == {"qa": 0.5, "qb": 0.0, "qc": 0.5, "qn": 1.0}

    peer = ranx_evaluate(ranx_qrels(judged), ranx_run(ranking), "bpref", return_mean=False).tolist()
    # ranx: qa right; qb's division by zero silently stops the loop, so qc and qn stay 0.
    assert peer == [0.5, 0.0, 0.0, 0.0]
    # Without the R = 0 topic: qc right, qn is nan (0/0) instead of 1.
    judged.pop("qb")
    ranking.pop("qb")
    peer = ranx_evaluate(ranx_qrels(judged), ranx_run(ranking), "bpref", return_mean=False).tolist()
    assert peer[:2] == [0.5, 0.5]
    assert math.isnan(peer[2])


def test_ranx_ndcg_is_not_cranfield_jk_ndcg() -> None:
    # Expected: ranx "ndcg" = MSnDCG (log2(r+1) discount), so Cranfield's nDCG (J&K's
    # max(1, log2 r) discount) must differ from it; hand-checked on one list:
    # levels 0, 2, 1 (R = 2): ranx ndcg = (2/log2 3 + 1/2) / (2 + 1/log2 3);
    # Cranfield nDCG = (2/1 + 1/log2 3) / (2 + 1/1).
    judged = {"q": {A: 0, B: 2, C: 1}}
    ranking = {"q": [A, B, C]}
    peer = ranx_evaluate(ranx_qrels(judged), ranx_run(ranking), "ndcg", return_mean=False)
    ev = evaluate(CranfieldQrels.from_mapping(judged), [CranfieldRun.from_rankings("r", ranking)], ["nDCG", "MSnDCG"])
    log3 = math.log2(3)
    assert float(peer[0]) == pytest.approx((2 / log3 + 1 / 2) / (2 + 1 / log3), abs=TOL)
    assert float(ev.per_topic("MSnDCG")[0, 0]) == pytest.approx(float(peer[0]), abs=TOL)
    assert float(ev.per_topic("nDCG")[0, 0]) == pytest.approx((2 + 1 / log3) / 3, abs=TOL)
    assert abs(float(ev.per_topic("nDCG")[0, 0]) - float(peer[0])) > 1e-3
