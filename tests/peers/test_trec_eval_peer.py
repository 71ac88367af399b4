"""Cranfield against trec_eval 9, through pytrec_eval (pytrec-eval-terrier).

Expected values: pytrec_eval.RelevanceEvaluator, i.e. the trec_eval 9 C code
embedded in pytrec-eval-terrier. Cranfield is evaluated with
``EvalSettings(missing="skip", no_relevant="count")``, which is how trec_eval
(without -c) and pytrec_eval behave: only the topics of the run are evaluated
(a qrels topic the run lacks is left out, not scored 0) and a topic that is
judged but has no relevant document is evaluated (it scores 0).

How the inputs are handed to pytrec_eval:

* Scores. trec_eval 9 keeps run scores as float32 and orders a topic's documents
  by score (descending), then by docno (descending); near-equal float64 scores
  tie in float32 and get re-ordered. The run is therefore given strictly
  decreasing integer scores (``len(list) - i``, exact in float32) in Cranfield's
  own rank order, so both sides see the same ranking.
* Relevance labels. pytrec_eval accepts only Python ``int`` labels (``bool``
  too, being an int subclass): a float, a str or even a ``numpy.int64`` label
  raises ``TypeError: Expected relevance to be integer.``, so levels are passed
  through ``int()``. Negative labels are passed as they are: trec_eval treats
  them as unjudged (neither relevant, nor counted among bpref's judged
  non-relevant documents, nor a negative nDCG gain), exactly like Cranfield's
  -1 = pooled-but-unjudged (see ``test_negative_labels_are_unjudged``).
  The Python wrapper silently drops qrels topics with no judgment at all, and a
  topic whose labels are all negative crashes the C code (segmentation fault
  or hang, observed with pytrec-eval-terrier 0.5.11), so the helper asserts
  that every topic handed over has at least one label >= 0.
* A topic present in the run with an empty list is evaluated by pytrec_eval
  (it scores 0), as Cranfield does for a run topic with no document.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from service.metrics import EvalSettings, evaluate
from tests.support.collections import Generated, generate
from tests.support.peers import require_peer

pytrec_eval = require_peer("pytrec_eval", "pytrec-eval-terrier")

pytestmark = pytest.mark.peer

TOL = 1e-9

#: (seed, topics, runs, depth, max_level, unjudged_label_rate, no_relevant_topics)
COLLECTIONS = {
    "s1": (101, 8, 4, 30, 3, 0.05, 1),
    "s2": (202, 12, 5, 50, 3, 0.20, 2),
    "s3": (303, 15, 6, 50, 2, 0.10, 1),
    "s4": (404, 10, 4, 20, 4, 0.30, 0),
    "s5": (505, 9, 4, 40, 1, 0.10, 1),  # binary: R < N on most topics (bpref's min(R, N) = R branch)
}

#: trec_eval measure (as pytrec_eval names its output) -> Cranfield measure.
PAIRS = {
    "map": "AP",
    "map_cut_5": "AP@5",  # trec_eval's map_cut keeps the 1/R normaliser = Cranfield's default norm=R
    "map_cut_10": "AP@10",
    "bpref": "bpref",
    "recip_rank": "RR",
    "P_5": "P@5",
    "P_10": "P@10",
    "Rprec": "Rprec",
    "recall_10": "Recall@10",
    "recall_100": "Recall@100",
    "success_1": "Hit@1",
    "success_5": "Hit@5",
    "success_10": "Hit@10",
    # trec_eval's ndcg: gain = the relevance level, discount log2(r + 1) at every
    # rank = Cranfield's MSnDCG with its default linear gains (not Cranfield's
    # nDCG, which uses Järvelin & Kekäläinen's discount on purpose).
    "ndcg": "MSnDCG",
    "ndcg_cut_5": "MSnDCG@5",
    "ndcg_cut_10": "MSnDCG@10",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
}
REQUEST = {
    "map", "map_cut.5,10", "bpref", "recip_rank", "P.5,10", "Rprec", "recall.10,100",
    "success.1,5,10", "ndcg", "ndcg_cut.5,10", "num_ret", "num_rel", "num_rel_ret",
}

#: With relevance_level=2 (trec_eval -l2) -> Cranfield's rel=2.
PAIRS_L2 = {
    "map": "AP(rel=2)",
    "bpref": "bpref(rel=2)",
    "recip_rank": "RR(rel=2)",
    "P_10": "P(rel=2)@10",
    "Rprec": "Rprec(rel=2)",
    "num_rel": "NumRel(rel=2)",
    "num_rel_ret": "NumRelRet(rel=2)",
}
REQUEST_L2 = {"map", "bpref", "recip_rank", "P.10", "Rprec", "num_rel", "num_rel_ret"}

TREC_SETTINGS = EvalSettings(missing="skip", no_relevant="count")


@functools.cache
def collection(name: str) -> Generated:
    seed, topics, runs, depth, max_level, unjudged, no_rel = COLLECTIONS[name]
    return generate(
        np.random.default_rng(seed),
        topics=topics,
        runs=runs,
        depth=depth,
        max_level=max_level,
        unjudged_label_rate=unjudged,
        no_relevant_topics=no_rel,
    )


def pytrec_qrels(judgments: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    out = {}
    for topic, labels in judgments.items():
        # A topic with only negative labels crashes trec_eval's C code (see the module docstring).
        assert any(v >= 0 for v in labels.values()), f"topic {topic}: no label >= 0 (would crash pytrec_eval)"
        out[topic] = {doc: int(level) for doc, level in labels.items()}
    return out


def pytrec_run(ranking: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Strictly decreasing scores, distinct in float32, in Cranfield's rank order."""
    return {topic: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for topic, docs in ranking.items()}


def peer_results(g: Generated, request: set[str], relevance_level: int = 1) -> dict[str, dict[str, dict[str, float]]]:
    """run tag -> topic -> trec_eval measure -> value."""
    evaluator = pytrec_eval.RelevanceEvaluator(pytrec_qrels(g.judgments), request, relevance_level=relevance_level)
    return {tag: evaluator.evaluate(pytrec_run(ranking)) for tag, ranking in g.rankings.items()}


def mismatches(g: Generated, pairs: dict[str, str], peer: dict) -> tuple[list[str], int]:
    ev = evaluate(g.qrels, g.runs, list(pairs.values()), TREC_SETTINGS)
    bad, compared = [], 0
    for ri, tag in enumerate(ev.runs):
        by_topic = peer[tag]
        for trec_name, cran_name in pairs.items():
            values = ev.per_topic(cran_name)[ri]
            for ti, topic in enumerate(ev.topics):
                if topic not in by_topic:
                    continue
                expected = by_topic[topic][trec_name]
                got = float(values[ti])
                compared += 1
                if not math.isclose(got, expected, rel_tol=0.0, abs_tol=TOL):
                    bad.append(
                        f"{tag} topic {topic} {trec_name}: trec_eval {expected!r} vs Cranfield {cran_name} {got!r}"
                    )
    return bad, compared


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_same_topics_evaluated(name: str) -> None:
    # Expected: the topics pytrec_eval returns = the run's topics that are in the qrels.
    g = collection(name)
    peer = peer_results(g, {"num_ret"})
    ev = evaluate(g.qrels, g.runs, ["NumRet"], TREC_SETTINGS)
    for ri, tag in enumerate(ev.runs):
        cranfield_topics = {t for t, v in zip(ev.topics, ev.per_topic("NumRet")[ri]) if not np.isnan(v)}
        assert cranfield_topics == set(peer[tag]), tag
    # The collections exercise what they should: missing topics, no-relevant topics, -1 labels, short lists.
    assert any(len(r) < len(g.judgments) for r in g.rankings.values())
    assert any(-1 in j.values() for j in g.judgments.values())


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_per_topic_matches_trec_eval(name: str) -> None:
    # Expected: pytrec_eval (trec_eval 9) per-topic values, relevance_level=1.
    g = collection(name)
    bad, compared = mismatches(g, PAIRS, peer_results(g, REQUEST))
    assert compared > 0
    assert not bad, f"{len(bad)} of {compared} disagree:\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_per_topic_matches_trec_eval_relevance_level_2(name: str) -> None:
    # Expected: pytrec_eval.RelevanceEvaluator(..., relevance_level=2), i.e. trec_eval -l2.
    g = collection(name)
    bad, compared = mismatches(g, PAIRS_L2, peer_results(g, REQUEST_L2, relevance_level=2))
    assert compared > 0
    assert not bad, f"{len(bad)} of {compared} disagree:\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_means_match_trec_eval_default(name: str) -> None:
    # Expected: trec_eval's "all" line without -c: the mean over the topics in the run
    # (pytrec_eval.compute_aggregated_measure: arithmetic mean, a sum for num_*).
    # Cranfield: EvalSettings(missing="skip") averages over the topics each run has.
    g = collection(name)
    peer = peer_results(g, REQUEST)
    ev = evaluate(g.qrels, g.runs, list(PAIRS.values()), TREC_SETTINGS)
    for ri, tag in enumerate(ev.runs):
        for trec_name, cran_name in PAIRS.items():
            values = [peer[tag][t][trec_name] for t in peer[tag]]
            expected = pytrec_eval.compute_aggregated_measure(trec_name, values)
            got = float(ev.means(cran_name)[ri])
            if trec_name.startswith("num_"):
                got *= int(np.sum(~np.isnan(ev.per_topic(cran_name)[ri])))
            assert got == pytest.approx(expected, rel=0, abs=TOL), (tag, trec_name)


def test_means_differ_from_missing_zero() -> None:
    # Expected: trec_eval without -c. Cranfield's default missing="zero" (= trec_eval -c)
    # must give a lower MAP for a run that misses a relevant topic, so the option matters.
    g = collection("s2")
    peer = peer_results(g, {"map"})
    zero = evaluate(g.qrels, g.runs, ["AP"], EvalSettings(missing="zero", no_relevant="count"))
    relevant = set(g.relevant_topics())
    differing = 0
    for ri, tag in enumerate(zero.runs):
        trec_mean = pytrec_eval.compute_aggregated_measure("map", [v["map"] for v in peer[tag].values()])
        if relevant - set(g.rankings[tag]):
            assert float(zero.means("AP")[ri]) < trec_mean
            differing += 1
    assert differing > 0


def test_negative_labels_are_unjudged() -> None:
    # Expected (hand-checked and from pytrec_eval): a -1 label is unjudged in trec_eval, as in Cranfield.
    # Ranking a (0), b (1), c (2), d (-1), x (not in qrels): R = 2, N = 1 (d is not judged non-relevant).
    # bpref = (1/2) * [(1 - min(1, 2)/min(2, 1)) + (1 - 1/1)] = 0; AP = (1/2 + 2/3)/2.
    judgments = {"q": {"a": 0, "b": 1, "c": 2, "d": -1}}
    ranking = {"q": ["a", "b", "c", "d", "x"]}
    peer = pytrec_eval.RelevanceEvaluator(pytrec_qrels(judgments), {"bpref", "map", "ndcg", "num_rel"}).evaluate(
        pytrec_run(ranking)
    )["q"]
    g = Generated(judgments, {"r": ranking}, {"r": {"q": [5.0, 4.0, 3.0, 2.0, 1.0]}}, 2)
    ev = evaluate(g.qrels, g.runs, ["bpref", "AP", "MSnDCG", "NumRel"], TREC_SETTINGS)
    assert peer["bpref"] == pytest.approx(0.0, abs=TOL)
    assert float(ev.per_topic("bpref")[0, 0]) == pytest.approx(peer["bpref"], abs=TOL)
    assert peer["map"] == pytest.approx((1 / 2 + 2 / 3) / 2, abs=TOL)
    assert float(ev.per_topic("AP")[0, 0]) == pytest.approx(peer["map"], abs=TOL)
    assert float(ev.per_topic("MSnDCG")[0, 0]) == pytest.approx(peer["ndcg"], abs=TOL)
    assert float(ev.per_topic("NumRel")[0, 0]) == peer["num_rel"] == 2.0


def test_empty_list_topic_is_evaluated() -> None:
    # Expected: pytrec_eval evaluates a run topic given as an empty dict (all measures 0, num_rel
    # still R) and leaves out a qrels topic the run lacks; Cranfield with missing="skip" does the same.
    judgments = {"q1": {"a": 1, "b": 0}, "q2": {"a": 2, "c": 1}, "q3": {"a": 1}}
    ranking: dict[str, list[str]] = {"q1": [], "q2": ["c", "a"]}
    peer = pytrec_eval.RelevanceEvaluator(pytrec_qrels(judgments), {"map", "num_rel", "num_ret"}).evaluate(
        pytrec_run(ranking)
    )
    assert set(peer) == {"q1", "q2"}
    assert peer["q1"] == {"map": 0.0, "num_rel": 1.0, "num_ret": 0.0}
    g = Generated(judgments, {"r": ranking}, {"r": {"q1": [], "q2": [2.0, 1.0]}}, 2)
    ev = evaluate(g.qrels, g.runs, ["AP", "NumRel", "NumRet"], TREC_SETTINGS)
    assert ev.topics == ("q1", "q2", "q3")
    for trec_name, cran_name in (("map", "AP"), ("num_rel", "NumRel"), ("num_ret", "NumRet")):
        row = ev.per_topic(cran_name)[0]
        assert float(row[0]) == pytest.approx(peer["q1"][trec_name], abs=TOL)
        assert float(row[1]) == pytest.approx(peer["q2"][trec_name], abs=TOL)
        assert np.isnan(row[2])
