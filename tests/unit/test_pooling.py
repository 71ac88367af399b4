"""Pools, unique relevant documents and leave-one-team-out, against hand examples and a direct
computation that uses trec_eval (pytrec-eval-terrier) as the evaluator."""

from __future__ import annotations

import numpy as np
import pytest

from service.formats.readers import parse_qrels, parse_run
from service.formats.types import Qrels, Run
from service.metrics import pooling
from service.sample import CollectionSpec, generate

A = Run.from_rankings("A", {"1": ["d1", "d2", "d3"], "2": ["e1", "e2"]})
B = Run.from_rankings("B", {"1": ["d2", "d4", "d1"], "2": ["e3"]})
C = Run.from_rankings("C", {"1": ["d5"], "2": ["e1", "e4"]})


def test_depth_k_pool_is_the_union_of_the_top_k() -> None:
    pool = pooling.build_pool([A, B], depth=2)
    assert pool.documents == {"1": ["d1", "d2", "d4"], "2": ["e1", "e2", "e3"]}
    assert pool.contributors["1"] == {"d1": 1, "d2": 2, "d4": 1}
    assert pool.size == 6


def test_incremental_pool_leaves_out_what_is_judged_even_non_relevant() -> None:
    judged = Qrels.from_mapping({"1": {"d1": 0, "d2": 2, "d9": 1}, "2": {"e9": 1, "e2": -1}})
    pool = pooling.build_pool([A, B, C], depth=2, judged=judged)
    # d1 (judged 0) and d2 are left out; e2's -1 means "pooled but unjudged": still to judge
    assert pool.documents == {"1": ["d4", "d5"], "2": ["e1", "e2", "e3", "e4"]}
    assert pool.already_judged == {"1": 2, "2": 0}
    assert pool.counts()["1"] == {"new": 2, "already_judged": 2, "union": 4}


def test_pool_topics_can_be_limited_and_depth_must_be_positive() -> None:
    assert set(pooling.build_pool([A, B], 1, topics=["2"]).documents) == {"2"}
    with pytest.raises(ValueError):
        pooling.build_pool([A], 0)


def test_assessment_order_is_a_seeded_permutation() -> None:
    docs = [f"doc{i:03d}" for i in range(50)]
    first = pooling.assessment_order(docs, pooling.topic_seed(7, "401"))
    assert sorted(first) == docs and first != docs
    assert first == pooling.assessment_order(docs, pooling.topic_seed(7, "401"))  # the same every download
    assert first != pooling.assessment_order(docs, pooling.topic_seed(7, "402"))
    assert first != pooling.assessment_order(docs, pooling.topic_seed(8, "401"))


def test_unique_relevant_documents_by_run_and_by_team() -> None:
    qrels = Qrels.from_mapping({"1": {"d1": 1, "d2": 2, "d3": 1, "d4": 0, "d5": 3}, "2": {"e1": 1, "e2": 1, "e4": 2}})
    runs = {"A": A, "B": B, "C": C}
    by_run = pooling.contributions(runs, {t: t for t in runs}, depth=3)
    # topic 1: d3 only A (relevant), d4 only B (non-relevant), d5 only C; d1, d2 both A and B
    # topic 2: e2 only A, e4 only C, e1 A and C
    assert pooling.unique_relevant(qrels, by_run) == {"A": 2, "C": 2}
    by_team = pooling.contributions(runs, {"A": "x", "B": "x", "C": "y"}, depth=3)
    assert pooling.unique_relevant(qrels, by_team) == {"x": 4, "y": 2}  # d1, d2, d3 and e2; d5 and e4
    reduced = pooling.without_unique(qrels, by_run, "A")
    assert reduced.to_mapping() == {"1": {"d1": 1, "d2": 2, "d4": 0, "d5": 3}, "2": {"e1": 1, "e4": 2}}
    assert pooling.unique_relevant(qrels, by_run, rel=2) == {"C": 2}


def test_leave_one_team_out_matches_a_direct_computation_with_trec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels_text, run_texts = generate(CollectionSpec(topics=12, runs=9, depth=40, docs_per_topic=150,
                                                    judged_per_topic=70, seed=5))
    qrels = parse_qrels(qrels_text.encode(), "qrels")
    runs = [parse_run(text.encode(), tag, "score") for tag, text in run_texts.items()]
    teams = {r.tag: f"team{i // 3}" for i, r in enumerate(runs)}
    depth = 15
    result = pooling.leave_one_team_out(qrels, runs, teams, "AP", depth)

    # the direct computation: per team, its documents in the top `depth`, minus everyone else's
    truth = qrels.to_mapping()
    topics = [t for t, js in truth.items() if any(v >= 1 for v in js.values())]
    rankings = {r.tag: r.to_rankings() for r in runs}

    def top(tag: str, topic: str) -> set[str]:
        return set(rankings[tag].get(topic, [])[:depth])

    def ap_with(judgments: dict[str, dict[str, int]], tag: str) -> float:
        q = {t: {d: int(v) for d, v in js.items()} for t, js in judgments.items() if js}
        r = {t: {d: float(len(docs) - i) for i, d in enumerate(docs)} for t, docs in rankings[tag].items()}
        per = pytrec_eval.RelevanceEvaluator(q, {"map"}).evaluate(r)
        return float(np.mean([per[t]["map"] if t in per else 0.0 for t in topics]))

    direct_reduced, direct_full = {}, {}
    for r in runs:
        team = teams[r.tag]
        reduced = {}
        for t, js in truth.items():
            mine = set().union(*(top(x, t) for x in rankings if teams[x] == team))
            theirs = set().union(*(top(x, t) for x in rankings if teams[x] != team))
            reduced[t] = {d: v for d, v in js.items() if not (v >= 1 and d in mine and d not in theirs)}
        direct_reduced[r.tag] = ap_with(reduced, r.tag)
        direct_full[r.tag] = ap_with(truth, r.tag)
    rows = {row["run"]: row for row in result.runs}
    for tag in rankings:
        assert rows[tag]["full"] == pytest.approx(direct_full[tag], abs=1e-9)
        assert rows[tag]["reduced"] == pytest.approx(direct_reduced[tag], abs=1e-9)
    assert any(rows[t]["reduced"] < rows[t]["full"] - 1e-9 for t in rows)  # the test can fail
    assert all(rows[t]["reduced"] <= rows[t]["full"] + 1e-12 for t in rows)  # removing relevant docs never helps AP
    # ranks: each run's left-out score among the others' full scores (its team's runs left out too)
    for tag, row in rows.items():
        mixed = {x: (direct_reduced[x] if teams[x] == teams[tag] else direct_full[x]) for x in rows}
        assert row["reduced_rank"] == 1 + sum(v > mixed[tag] for v in mixed.values())
        assert row["full_rank"] == 1 + sum(v > direct_full[tag] for v in direct_full.values())
    assert result.max_drop == pytest.approx(max(direct_full[t] - direct_reduced[t] for t in rows), abs=1e-9)
    assert -1.0 <= result.tau <= 1.0


def test_leave_one_team_out_keeps_unscored_topics_unscored_with_missing_skip() -> None:
    """Review finding: a run that never answered a topic must not get a 0 for it."""
    from service.metrics.scoring import EvalSettings

    a = Run.from_rankings("A", {"1": ["d1", "d2"], "2": ["e1", "e2"]})
    b = Run.from_rankings("B", {"1": ["d1", "d3"]})  # no ranking for topic 2
    c = Run.from_rankings("C", {"1": ["d1", "d2"], "2": ["e2", "e3"]})
    qrels = Qrels.from_mapping({"1": {"d1": 1, "d2": 0}, "2": {"e1": 1, "e2": 0}})
    result = pooling.leave_one_team_out(qrels, [a, b, c], {"A": "x", "B": "x", "C": "y"}, "AP", 2,
                                        EvalSettings(missing="skip"))
    rows = {r["run"]: r for r in result.runs}
    assert rows["B"]["full"] == 1.0 and rows["B"]["reduced"] == 1.0  # its one topic is unchanged
    assert rows["A"]["full"] == 1.0 and rows["A"]["reduced"] == 0.5  # e1 was only team x's: topic 2 -> 0
