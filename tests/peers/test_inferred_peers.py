"""Cranfield's infAP against trec_eval 9's ``infAP``, through pytrec_eval (pytrec-eval-terrier).

Expected values: pytrec_eval.RelevanceEvaluator(qrels, {"infAP"}), i.e. trec_eval 9's C code
(``m_infAP.c`` over ``form_res_rels.c``): a negative qrels label is "pooled but not judged"
(RELVALUE_UNJUDGED), a retrieved document absent from the qrels "not pooled"
(RELVALUE_NONPOOL). The generated collections have graded qrels, negative labels on relevant
and non-relevant documents alike (sampled out), retrieved documents absent from the qrels,
tied scores, runs that miss topics, topics without relevant documents and short lists.

How the inputs are handed over (as in tests/peers/test_trec_eval_peer.py): Cranfield is
evaluated with ``missing="skip", no_relevant="count"`` (trec_eval without -c); labels go to
pytrec_eval as Python ints; no topic has only negative labels (that crashes its C code).
Ties: pytrec_eval gets the runs' own tied scores, which are multiples of 0.1 below 10 (equal
in float32 exactly when equal in float64), and orders them by score, then docno descending;
Cranfield reads the same runs as TREC files with ``order="score"`` (the same rule), so both
rank identically without any help.

Cranfield's side is ``evaluate`` itself (what the workers run), which attaches to its level
matrix which unjudged documents were pooled when infAP is asked for; :func:`infap_with_pool_status`
(the kernel on a level matrix with the pool status attached by hand) is checked to agree with it.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from service.formats.readers import parse_run
from service.formats.types import Qrels, Run
from service.metrics import EvalSettings, evaluate, parse_measure
from service.metrics.lists import RankedLists, TopicStats
from service.metrics.measures.inferred import pool_status, with_pool_status
from service.metrics.scoring import evaluation_topics, level_matrix
from tests.support.collections import Generated, generate
from tests.support.peers import require_peer

pytrec_eval = require_peer("pytrec_eval", "pytrec-eval-terrier")

pytestmark = pytest.mark.peer

TOL = 1e-12
TREC_SETTINGS = EvalSettings(missing="skip", no_relevant="count")

#: (seed, topics, runs, depth, max_level, share of judgments turned into -1, no-relevant topics)
COLLECTIONS = {
    "i1": (11, 10, 4, 40, 3, 0.3, 1),
    "i2": (22, 12, 5, 60, 2, 0.5, 2),
    "i3": (33, 8, 4, 30, 1, 0.2, 1),
    "i4": (44, 10, 4, 50, 4, 0.7, 0),
    "i5": (55, 9, 3, 80, 3, 0.0, 1),  # no negative label: evaluate() alone is exact
}


@functools.cache
def collection(name: str) -> Generated:
    seed, topics, runs, depth, max_level, sampled_out, no_rel = COLLECTIONS[name]
    rng = np.random.default_rng(seed)
    g = generate(rng, topics=topics, runs=runs, depth=depth, max_level=max_level, unjudged_label_rate=0.0,
                 no_relevant_topics=no_rel, tie_rate=0.3)
    # Sample the judgments: any judged document (relevant or not) may be "pooled but not judged".
    judgments: dict[str, dict[str, int]] = {}
    for topic, labels in g.judgments.items():
        out = {d: (-1 if rng.random() < sampled_out else lv) for d, lv in labels.items()}
        if not any(v >= 0 for v in out.values()):  # trec_eval's C code crashes on all-negative topics
            first = next(iter(labels))
            out[first] = labels[first]
        judgments[topic] = out
    return Generated(judgments, g.rankings, g.scores, g.max_level)


def cranfield_runs(g: Generated) -> list[Run]:
    """The runs as TREC files, ranked by Cranfield's reader (score desc, docno desc). A topic
    with an empty list has no line in a file: the run lacks it."""
    return [parse_run(g.run_text(tag).encode(), f"{tag}.run") for tag in g.rankings]


def peer(g: Generated, relevance_level: int = 1) -> dict[str, dict[str, float]]:
    """run tag -> topic -> trec_eval's infAP (the runs' own, tied, scores; as in a file, a topic
    with an empty list is not handed over)."""
    qrels = {t: {d: int(v) for d, v in labels.items()} for t, labels in g.judgments.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"infAP"}, relevance_level=relevance_level)
    out = {}
    for tag, ranking in g.rankings.items():
        run = {t: {d: float(s) for d, s in zip(docs, g.scores[tag][t])} for t, docs in ranking.items() if docs}
        out[tag] = {t: v["infAP"] for t, v in evaluator.evaluate(run).items()}
    return out


def infap_with_pool_status(qrels: Qrels, runs: list[Run], settings: EvalSettings,
                           rel: int = 1) -> tuple[tuple[str, ...], np.ndarray]:
    """(topics, (runs, topics) infAP): the registered kernel on ``evaluate``'s level matrix, with
    :func:`pool_status` attached by :func:`with_pool_status` (NaN where a run lacks a topic)."""
    measure = parse_measure(f"infAP(rel={rel})")
    scale = settings.scale(qrels)
    topic_idx = evaluation_topics(qrels, settings)
    stats = TopicStats(qrels.level_counts(scale.max_level)[list(topic_idx)], scale.max_level)
    col_of = {qrels.topics[qi]: c for c, qi in enumerate(topic_idx)}
    levels, present = level_matrix(qrels, runs, topic_idx, col_of, settings.depth)
    lists = RankedLists(levels, np.tile(np.arange(len(topic_idx)), len(runs)), stats)
    with_pool_status(lists, pool_status(qrels, runs, topic_idx, col_of, settings.depth))
    values = measure.definition.kernel(lists, measure, scale).reshape(len(runs), len(topic_idx))
    return tuple(qrels.topics[i] for i in topic_idx), np.where(present, values, np.nan)


def differences(topics: tuple[str, ...], values: np.ndarray, tags: list[str],
                expected: dict[str, dict[str, float]]) -> tuple[float, int, list[str]]:
    worst, compared, bad = 0.0, 0, []
    for ri, tag in enumerate(tags):
        got_topics = {t for t, v in zip(topics, values[ri]) if not math.isnan(v)}
        assert got_topics == set(expected[tag]), tag  # the same topics evaluated
        for ti, topic in enumerate(topics):
            if topic not in expected[tag]:
                continue
            diff = abs(float(values[ri, ti]) - expected[tag][topic])
            worst, compared = max(worst, diff), compared + 1
            if diff > TOL:
                bad.append(f"{tag} topic {topic}: trec_eval {expected[tag][topic]!r} vs {float(values[ri, ti])!r}")
    return worst, compared, bad


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
@pytest.mark.parametrize("rel", [1, 2])
def test_infap_matches_trec_eval_per_topic(name: str, rel: int) -> None:
    # Expected: pytrec_eval's infAP per topic, relevance_level=rel (trec_eval -l), at 1e-12.
    g = collection(name)
    runs = cranfield_runs(g)
    assert [r.to_rankings() for r in runs] == [{t: d for t, d in g.rankings[r.tag].items() if d} for r in runs]
    ev = evaluate(g.qrels, runs, [f"infAP(rel={rel})"], TREC_SETTINGS)
    values = ev.per_topic(f"infAP(rel={rel})")
    worst, compared, bad = differences(ev.topics, values, list(ev.runs), peer(g, rel))
    assert compared > 0
    assert not bad, f"{len(bad)} of {compared} differ (largest {worst:.3g}):\n" + "\n".join(bad[:20])
    topics, by_hand = infap_with_pool_status(g.qrels, runs, TREC_SETTINGS, rel)
    assert topics == ev.topics and np.array_equal(by_hand, values, equal_nan=True)


def test_collections_exercise_what_they_should() -> None:
    # Negative labels on relevant documents, unpooled documents above relevant ones, ties,
    # missing topics, no-relevant topics, pooled-unjudged documents retrieved above relevant ones.
    g = collection("i2")
    assert any(v < 0 for j in g.judgments.values() for v in j.values())
    assert any(not any(v >= 1 for v in j.values()) for j in g.judgments.values())
    assert any(len(r) < len(g.judgments) for r in g.rankings.values())
    assert any(len(set(s)) < len(s) for r in g.scores.values() for s in r.values())
    unpooled_above = pooled_unjudged_above = 0
    for ranking in g.rankings.values():
        for topic, docs in ranking.items():
            labels = g.judgments[topic]
            first_rel = next((i for i, d in enumerate(docs) if labels.get(d, -1) >= 1), None)
            if first_rel is not None:
                unpooled_above += any(d not in labels for d in docs[:first_rel])
                pooled_unjudged_above += any(labels.get(d, 0) < 0 for d in docs[:first_rel])
    assert unpooled_above > 0 and pooled_unjudged_above > 0


def test_evaluate_is_exact_without_negative_labels() -> None:
    # Expected: pytrec_eval's infAP. With no negative label every unjudged document is unpooled.
    g = collection("i5")
    runs = cranfield_runs(g)
    ev = evaluate(g.qrels, runs, ["infAP"], TREC_SETTINGS)
    _, compared, bad = differences(ev.topics, ev.per_topic("infAP"), list(ev.runs), peer(g))
    assert compared > 0 and not bad, bad[:10]


def test_worked_example_against_trec_eval() -> None:
    # Ranking x (not pooled), a (1), c (-1: pooled, not judged), d (2), b (0); R = 2.
    # m_infAP.c: j=1 (a): 1/2 + (1/2)(0/1)(...) = 1/2; j=3 (d): rel=1, nonrel=0, unj=1 above:
    # 1/4 + (3/4)(2/3)(1 + 1e-5)/(1 + 2e-5); infAP = the sum / 2.
    judgments = {"q": {"a": 1, "b": 0, "c": -1, "d": 2}}
    ranking = {"q": ["x", "a", "c", "d", "b"]}
    expected = (0.5 + 0.25 + (3 / 4) * (2 / 3) * (1 + 1e-5) / (1 + 2e-5)) / 2
    got_peer = pytrec_eval.RelevanceEvaluator(judgments, {"infAP"}).evaluate(
        {"q": {d: float(5 - i) for i, d in enumerate(ranking["q"])}})["q"]["infAP"]
    assert got_peer == pytest.approx(expected, abs=1e-15)
    g = Generated(judgments, {"r": ranking}, {"r": {"q": [5.0, 4.0, 3.0, 2.0, 1.0]}}, 2)
    _, values = infap_with_pool_status(g.qrels, g.runs, TREC_SETTINGS)
    assert abs(float(values[0, 0]) - got_peer) <= TOL
    # evaluate() (what the workers run) attaches the pool status itself: c is pooled, not judged.
    served = evaluate(g.qrels, g.runs, ["infAP"], TREC_SETTINGS).per_topic("infAP")[0, 0]
    assert abs(float(served) - got_peer) <= TOL
