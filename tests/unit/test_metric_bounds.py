"""Every registered metric declares the range of its values (MetricDef.bounds), and its values
on generated collections lie in it: a board never has to show a value the metric cannot take."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.formats.types import Qrels, Run
from service.metrics import REGISTRY, EvalSettings, bounds, evaluate, parse_measure
from service.metrics.spec import NON_NEGATIVE, OWN_EVALUATOR_FAMILIES, UNIT
from tests.support.collections import generate

# Every registered metric, with the parameter variants that change what it divides by or sums.
VARIANTS = [
    "AP", "AP@5", "AP(norm=minRk)@5", "AP'", "AP(rel=2)", "RR", "RR@3", "P@5", "P@50", "Recall", "Recall@5",
    "Rprec", "Hit@5", "NumRel", "NumRet", "NumRet@5", "NumRelRet", "Judged", "Judged@5", "bpref", "bpref_R",
    "bpref_N", "bpref_relative", "bpref(rel=2)", "infAP", "infAP(rel=2)",
    "ERR", "ERR@5", "ERR(stop=linear)@10", "nERR@10", "nERR(stop=linear)", "RBP", "RBP(p=0.5)@5",
    "RBP(scale=topic)", "RBPresidual", "RBPresidual(p=0.8)@10",
    "nDCG", "nDCG@5", "nDCG(base=5)@10", "nDCG'@10", "MSnDCG", "MSnDCG@5", "CG@5", "CG@50", "DCG@10",
    "DCG(base=5)@50", "nCG@5", "nCGavg@5", "nDCGavg@5",
    "Q", "Q@5", "Q(beta=10)", "Q(beta=0)", "Q(norm=minRk)@5", "Q'", "Rmeasure", "genAP", "genAP(norm=minRk)@5",
    "Omeasure", "Pmeasure", "Pplus", "rpref_N", "rpref_relative", "rpref_relative2",
]
GAIN_PROFILES = [None, ((1, 1.0), (2, 5.0), (3, 10.0)), ((1, 5.0), (2, 1.0), (3, 2.0)), ((1, 0.0), (2, 1.0), (3, 3.0))]
# alpha-nDCG, nERR-IA, nNRBP: ndeval's greedy ideal list can be beaten; infNDCG: an estimate over an estimate
UNBOUNDED = {"NumRel", "NumRet", "NumRelRet", "CG", "DCG", "sDCG", "alpha-nDCG", "nERR-IA", "nNRBP", "infNDCG"}


def test_every_metric_declares_its_range() -> None:
    for name, defn in REGISTRY.items():
        expected = NON_NEGATIVE if name in UNBOUNDED else UNIT
        assert defn.bounds == expected, name
        if defn.ideal_is_one:
            assert defn.bounds == UNIT, name
    assert bounds("nDCG@10") == (0.0, 1.0) and bounds(parse_measure("DCG@10")) == (0.0, math.inf)
    assert parse_measure("Q'").bounds == (0.0, 1.0)
    covered = {str(parse_measure(v).name) for v in VARIANTS}
    # the families with evaluators of their own are checked with their evaluators
    # (tests/unit/test_diversity_measures.py, test_inferred.py, test_sessions.py)
    assert covered == {n for n, d in REGISTRY.items() if d.family not in OWN_EVALUATOR_FAMILIES}


@pytest.mark.parametrize("gains", GAIN_PROFILES)
@pytest.mark.parametrize("seed", range(6))
def test_values_on_generated_collections_lie_in_the_declared_range(
        seed: int, gains: tuple[tuple[int, float], ...] | None) -> None:
    gen = generate(np.random.default_rng(seed), topics=10, runs=5, no_relevant_topics=1)
    for missing, no_relevant in (("zero", "count"), ("skip", "skip")):
        ev = evaluate(gen.qrels, gen.runs, VARIANTS,
                      EvalSettings(gains=gains, max_level=3, missing=missing, no_relevant=no_relevant))
        for m in ev.measures:
            low, high = m.bounds
            values = ev.per_topic(m)
            values = values[~np.isnan(values)]
            assert values.size, str(m)
            assert values.min() >= low - 1e-12 and values.max() <= high + 1e-12, (str(m), values.min(), values.max())
            means = np.nanmean(ev.per_topic(m), axis=1)  # a run's mean stays in the range too
            assert np.all((means >= low - 1e-12) & (means <= high + 1e-12)), str(m)


@st.composite
def one_topic(draw):  # type: ignore[no-untyped-def]
    """One judged topic (levels -1..3), a ranking with unjudged documents, a gain profile that
    may be non-monotone or give a relevant level no gain."""
    n = draw(st.integers(1, 20))
    levels = draw(st.lists(st.integers(-1, 3), min_size=n, max_size=n))
    judgments = {f"d{i}": lv for i, lv in enumerate(levels)}
    pool = list(judgments) + [f"u{i}" for i in range(draw(st.integers(0, 6)))]
    ranking = draw(st.permutations(pool))
    ranking = ranking[: draw(st.integers(0, len(ranking)))]
    gains = draw(st.lists(st.integers(0, 12), min_size=3, max_size=3))
    if not any(gains):
        gains[2] = 1
    return judgments, ranking, tuple(zip((1, 2, 3), map(float, gains)))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_topic())
def test_values_on_random_topics_lie_in_the_declared_range(t) -> None:  # type: ignore[no-untyped-def]
    judgments, ranking, gains = t
    ev = evaluate(Qrels.from_mapping({"t": judgments}), [Run.from_rankings("r", {"t": ranking})], VARIANTS,
                  EvalSettings(gains=gains, max_level=3, no_relevant="count"))
    for m in ev.measures:
        low, high = m.bounds
        v = float(ev.per_topic(m)[0, 0])
        assert low - 1e-12 <= v <= high + 1e-12, (str(m), v)


def test_session_metrics_lie_in_their_range() -> None:
    rng = np.random.default_rng(1)
    judged = {f"s{s}": {f"d{i}": int(rng.integers(0, 4)) for i in range(12)} for s in range(4)}
    for j in judged.values():
        j["d0"] = 3
    rankings = {f"s{s}:{q}": [f"d{i}" for i in rng.permutation(14)[: int(rng.integers(0, 10))]]
                for s in range(4) for q in range(1, int(rng.integers(2, 5)))}
    ev = evaluate(Qrels.from_mapping(judged), [Run.from_rankings("r", rankings)],
                  ["sDCG@5", "nsDCG@5", "nsDCG(bq=2)@10"])
    for m in ev.measures:
        low, high = m.bounds
        values = ev.per_topic(m)
        assert np.all((values >= low) & (values <= high + 1e-12)), str(m)
    assert ev.per_topic("sDCG@5").max() > 1  # sDCG is a gain sum: [0, inf) is its honest range
