"""Cranfield against pyNTCIREVAL 0.0.3 (a pure-Python port of Sakai's NTCIREVAL).

Source of every expected value, unless a test says otherwise: pyNTCIREVAL's
metric classes (``pyNTCIREVAL.metrics``) applied to the same judgments and the
same ranked lists, topic by topic. Cranfield is asked for the metric *option*
that reproduces NTCIREVAL's definition:

=============================  ===========================================
Cranfield                      pyNTCIREVAL
=============================  ===========================================
``Q``, ``Q(beta=b)``           ``QMeasure(beta=b)``
``Q(norm=minRk)@k``            ``QMeasure(cutoff=k)`` (divides by min(R,k))
``nDCG(base=b)[@k]``           ``nDCG(logb=b, cutoff=k)`` (J&K's nDCG)
``MSnDCG[@k]``                 ``MSnDCG(cutoff=k)``
``nERR(stop=linear)[@k]``      ``nERR(cutoff=k)`` (stop prob. g/(gmax+1))
``ERR(stop=linear)``           ``ERR``
``RBP(p=p)``                   ``RBP(pr=p)`` (gain g/gmax)
``Pmeasure``/``Pplus``         ``PMeasure``/``PPlusMeasure`` (beta=1)
``Omeasure``                   ``OMeasure`` (beta=1)
``AP``, ``AP(norm=minRk)@k``   ``AP``, ``AP(cutoff=k)``
``RR``, ``Hit@k``, ``P@k``     ``RR``, ``Hit(k)``, ``Precision(k)``
=============================  ===========================================

NTCIREVAL's conventions on the input side: a retrieved document that is not in
the qrels, or carries a negative (pooled-but-unjudged) label, is non-relevant
(level ``None``); ``xrelnum`` counts judged documents per level 0..H, so it
leaves the negative labels out. ``grades`` are the gains of levels 1..H.

pyNTCIREVAL fails on topics without a relevant document (it divides by R = 0),
and Cranfield leaves such topics out by default, so only topics that have a
relevant document are compared. pyNTCIREVAL is quadratic in the list length,
so the collections are small (depth 30, 8 topics, 4 runs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from pyNTCIREVAL import metrics as nm

from service.formats.types import Qrels, Run
from service.metrics import EvalSettings, evaluate
from tests.support.collections import Generated, generate

pytestmark = pytest.mark.peer

H = 3
# Seed 1 includes a run with an empty ranked list (run2, topic 008).
SEEDS = (1, 2, 4, 8)
ATOL = 1e-9
LINEAR = ((1, 1), (2, 2), (3, 3))  # Cranfield's default profile, NTCIR's S:A:B = 3:2:1
STEEP = ((1, 1), (2, 5), (3, 10))
PROFILES = {"linear": LINEAR, "steep": STEEP}

Factory = Callable[[list[int], list[float]], nm.Metric]  # (xrelnum, grades) -> metric


# ----------------------------------------------------------------- helpers


@functools.cache
def collection(seed: int) -> Generated:
    g = generate(np.random.default_rng(seed), topics=8, runs=4, max_level=H, depth=30, docs=50)
    # The gain of the top level (gmax of RBP, ERR's stop probabilities) is
    # the gain of level H on both sides only if the qrels reach level H.
    assert g.qrels.max_level == H
    return g


def xrelnum(judgments: dict[str, int]) -> list[int]:
    """Judged documents per level 0..H (negative = unjudged labels left out)."""
    counts = [0] * (H + 1)
    for level in judgments.values():
        if level >= 0:
            counts[level] += 1
    return counts


def ntcir_list(judgments: dict[str, int], docs: list[str]) -> list[tuple[str, int | None]]:
    """pyNTCIREVAL's ranked list: unjudged (absent or negative label) -> None."""
    out = []
    for d in docs:
        level = judgments.get(d, -1)
        out.append((d, level if level >= 0 else None))
    return out


def condensed(ranked: list[tuple[str, int | None]]) -> list[tuple[str, int | None]]:
    """Sakai's condensed list: the unjudged documents removed, order kept."""
    return [(d, lv) for d, lv in ranked if lv is not None]


def with_cutoff(metric: nm.Metric, k: int) -> nm.Metric:
    """pyNTCIREVAL's ERR, RBP and OMeasure take no cutoff argument, but
    Metric.compute stops at ``self.cutoff`` for every class."""
    metric.cutoff = k
    return metric


def peer_scores(
    g: Generated,
    topics: tuple[str, ...],
    runs: tuple[str, ...],
    factory: Factory,
    grades: list[float],
    transform: Callable[[list], list] | None = None,
) -> np.ndarray:
    """(runs x topics) pyNTCIREVAL scores; NaN where the run lacks the topic
    (as Cranfield's missing="skip")."""
    out = np.full((len(runs), len(topics)), np.nan)
    for i, run in enumerate(runs):
        for k, topic in enumerate(topics):
            docs = g.rankings[run].get(topic)
            if docs is None:
                continue
            judgments = g.judgments[topic]
            ranked = ntcir_list(judgments, docs)
            if transform is not None:
                ranked = transform(ranked)
            if not ranked:
                # Every NTCIREVAL metric is a sum over the ranks of the list,
                # so an empty list scores 0 (NTCIREVAL's output); pyNTCIREVAL
                # itself raises ValueError on it (max() of an empty sequence
                # in Metric.find_first_max_rank).
                out[i, k] = 0.0
                continue
            out[i, k] = factory(xrelnum(judgments), grades).compute(ranked)
    return out


def cranfield(seed: int, name: str, gains: tuple[tuple[int, float], ...] | None):
    """Cranfield evaluates one measure per call here, so that each kernel is
    compared with the peer on its own (``test_one_call_for_all_measures``
    covers many measures sharing one evaluation's caches)."""
    g = collection(seed)
    ev = evaluate(g.qrels, g.runs, [name], EvalSettings(missing="skip", gains=gains))
    # Cranfield evaluates exactly the topics with a relevant document.
    assert set(ev.topics) == set(g.relevant_topics())
    return ev


def grades_of(gains: tuple[tuple[int, float], ...]) -> list[float]:
    return [float(gain) for _, gain in sorted(gains)]


def assert_matches(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert got.shape == expected.shape
    # Some topics must actually be compared (not all NaN).
    assert np.isfinite(expected).sum() >= 10, what
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL, equal_nan=True, err_msg=what)


# ----------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    name: str  # the Cranfield metric that reproduces NTCIREVAL
    factory: Factory  # the pyNTCIREVAL metric

    def __str__(self) -> str:
        return self.name


CASES = [
    Case("Q", lambda x, gr: nm.QMeasure(x, gr, 1.0)),
    Case("Q(beta=0.5)", lambda x, gr: nm.QMeasure(x, gr, 0.5)),
    Case("Q(beta=10)", lambda x, gr: nm.QMeasure(x, gr, 10.0)),
    # NTCIREVAL's Q@k divides by min(R, k); Cranfield's default Q@k by R.
    Case("Q(norm=minRk)@5", lambda x, gr: nm.QMeasure(x, gr, 1.0, cutoff=5)),
    Case("Q(norm=minRk)@10", lambda x, gr: nm.QMeasure(x, gr, 1.0, cutoff=10)),
    Case("Q(beta=0.5,norm=minRk)@10", lambda x, gr: nm.QMeasure(x, gr, 0.5, cutoff=10)),
    # J&K's original nDCG: no discount at ranks <= base, log_base(r) after.
    Case("nDCG(base=2)@5", lambda x, gr: nm.nDCG(x, gr, 2, 5)),
    Case("nDCG(base=2)@10", lambda x, gr: nm.nDCG(x, gr, 2, 10)),
    Case("nDCG(base=5)@10", lambda x, gr: nm.nDCG(x, gr, 5, 10)),
    Case("nDCG(base=10)@20", lambda x, gr: nm.nDCG(x, gr, 10, 20)),
    Case("nDCG(base=2)", lambda x, gr: nm.nDCG(x, gr, 2, None)),
    Case("MSnDCG@10", lambda x, gr: nm.MSnDCG(x, gr, 10)),
    Case("MSnDCG@20", lambda x, gr: nm.MSnDCG(x, gr, 20)),
    Case("MSnDCG", lambda x, gr: nm.MSnDCG(x, gr, None)),
    # NTCIREVAL's ERR stop probability is g/(gmax+1): Cranfield's stop=linear.
    Case("nERR(stop=linear)@5", lambda x, gr: nm.nERR(x, gr, 5)),
    Case("nERR(stop=linear)@10", lambda x, gr: nm.nERR(x, gr, 10)),
    Case("nERR(stop=linear)", lambda x, gr: nm.nERR(x, gr, None)),
    Case("ERR(stop=linear)", lambda x, gr: nm.ERR(x, gr)),
    Case("ERR(stop=linear)@10", lambda x, gr: with_cutoff(nm.ERR(x, gr), 10)),
    # pyNTCIREVAL's RBP gain is g/gmax (GradeMetric._rbp_grade), gmax = grades[-1], the gain
    # of level H: Cranfield's default RBP(scale=collection), not scale=topic (trec_eval 10).
    # Seeds 1 and 8 have topics whose top judged level is 2, where the two differ.
    Case("RBP(p=0.95)", lambda x, gr: nm.RBP(x, gr, 0.95)),
    Case("RBP(p=0.8)", lambda x, gr: nm.RBP(x, gr, 0.8)),
    Case("RBP(p=0.5)@10", lambda x, gr: with_cutoff(nm.RBP(x, gr, 0.5), 10)),
    # P-measure and P+ without a cutoff (see test_pmeasure_cutoff).
    Case("Pmeasure", lambda x, gr: nm.PMeasure(x, gr, 1.0)),
    Case("Pmeasure(beta=0.5)", lambda x, gr: nm.PMeasure(x, gr, 0.5)),
    Case("Pplus", lambda x, gr: nm.PPlusMeasure(x, gr, 1.0)),
    Case("Pplus(beta=0.5)", lambda x, gr: nm.PPlusMeasure(x, gr, 0.5)),
    Case("Omeasure", lambda x, gr: nm.OMeasure(x, gr, 1.0)),
    Case("Omeasure@5", lambda x, gr: with_cutoff(nm.OMeasure(x, gr, 1.0), 5)),
    Case("AP", lambda x, gr: nm.AP(x, gr)),
    # NTCIREVAL's AP@k divides by min(R, k) (p_u in ncu.py).
    Case("AP(norm=minRk)@5", lambda x, gr: nm.AP(x, gr, cutoff=5)),
    Case("AP(norm=minRk)@10", lambda x, gr: nm.AP(x, gr, cutoff=10)),
    Case("RR", lambda x, gr: nm.RR()),
    Case("Hit@1", lambda x, gr: nm.Hit(1)),
    Case("Hit@5", lambda x, gr: nm.Hit(5)),
    # Both divide by k even when the list is shorter than k.
    Case("P@5", lambda x, gr: nm.Precision(5)),
    Case("P@10", lambda x, gr: nm.Precision(10)),
]


# ----------------------------------------------------------------- tests


@pytest.mark.parametrize("profile", list(PROFILES))
@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_ntcireval(case: Case, profile: str) -> None:
    """Expected: pyNTCIREVAL with grades = the evaluation's gain profile
    (EvalSettings(gains=...)), per run and topic, on four collections."""
    gains = PROFILES[profile]
    for seed in SEEDS:
        ev = cranfield(seed, case.name, gains)
        expected = peer_scores(collection(seed), ev.topics, ev.runs, case.factory, grades_of(gains))
        assert_matches(ev.per_topic(case.name), expected, f"{case.name} {profile} seed={seed}")


STEEP_PARAM = "gains={1:1,2:5,3:10}"
PER_METRIC_GAINS = [
    Case(f"nDCG({STEEP_PARAM})@10", lambda x, gr: nm.nDCG(x, gr, 2, 10)),
    Case(f"MSnDCG({STEEP_PARAM})@10", lambda x, gr: nm.MSnDCG(x, gr, 10)),
    Case(f"Q({STEEP_PARAM})", lambda x, gr: nm.QMeasure(x, gr, 1.0)),
    Case(f"nERR({STEEP_PARAM},stop=linear)@10", lambda x, gr: nm.nERR(x, gr, 10)),
    Case(f"RBP({STEEP_PARAM})", lambda x, gr: nm.RBP(x, gr, 0.95)),
    Case(f"Pplus({STEEP_PARAM})", lambda x, gr: nm.PPlusMeasure(x, gr, 1.0)),
]


@pytest.mark.parametrize("case", PER_METRIC_GAINS, ids=str)
def test_per_metric_gains_parameter(case: Case) -> None:
    """A metric's own gains=... overrides the evaluation's (linear) profile.
    Expected: pyNTCIREVAL with grades=[1, 5, 10]."""
    for seed in SEEDS:
        ev = cranfield(seed, case.name, None)  # default profile: level n -> gain n
        expected = peer_scores(collection(seed), ev.topics, ev.runs, case.factory, [1.0, 5.0, 10.0])
        assert_matches(ev.per_topic(case.name), expected, f"{case.name} seed={seed}")
        # The override matters: the same metric under the default profile differs.
        plain = case.name.replace(STEEP_PARAM + ",", "").replace("(" + STEEP_PARAM + ")", "")
        linear = cranfield(seed, plain, None).per_topic(plain)
        assert np.nanmax(np.abs(linear - ev.per_topic(case.name))) > 1e-6


CONDENSED = [
    Case("Q'", lambda x, gr: nm.QMeasure(x, gr, 1.0)),
    Case("nDCG'@10", lambda x, gr: nm.nDCG(x, gr, 2, 10)),
    Case("AveP'", lambda x, gr: nm.AP(x, gr)),
]


@pytest.mark.parametrize("case", CONDENSED, ids=str)
def test_condensed_lists(case: Case) -> None:
    """judged_only (the primed metrics) = the metric on Sakai's condensed list.
    Expected: pyNTCIREVAL on the ranked list with its unjudged documents
    removed (the condensed list is built here, pyNTCIREVAL has no option)."""
    for seed in SEEDS:
        ev = cranfield(seed, case.name, None)
        expected = peer_scores(collection(seed), ev.topics, ev.runs, case.factory, grades_of(LINEAR), condensed)
        assert_matches(ev.per_topic(case.name), expected, f"{case.name} seed={seed}")


@pytest.mark.parametrize(
    ("name", "factory"),
    [
        ("Q@10", lambda x, gr: nm.QMeasure(x, gr, 1.0, cutoff=10)),
        ("AP@10", lambda x, gr: nm.AP(x, gr, cutoff=10)),
    ],
    ids=["Q@10", "AP@10"],
)
def test_cutoff_normaliser_default_is_R(name: str, factory: Factory) -> None:
    """Definitional difference: Cranfield's default Q@k / AP@k divide by R
    (trec_eval's map_cut); NTCIREVAL divides by min(R, k) (norm=minRk above).
    Expected: pyNTCIREVAL's value rescaled by min(R, k) / R."""
    k = 10
    for seed in SEEDS:
        g = collection(seed)
        ev = cranfield(seed, name, None)
        peer = peer_scores(g, ev.topics, ev.runs, factory, grades_of(LINEAR))
        r = np.array([sum(xrelnum(g.judgments[t])[1:]) for t in ev.topics], dtype=np.float64)
        expected = peer * np.minimum(r, k) / r
        assert_matches(ev.per_topic(name), expected, f"{name} seed={seed}")
        assert np.any(r > k)  # some topic where the two normalisers differ


@pytest.mark.parametrize(
    ("name", "cls", "peer_with_attr"),
    # peer_with_attr: pyNTCIREVAL with the cutoff attribute on the minimal case
    # below. P-measure: rank 3 is never reached, 0. P+: BR(1) = 0.5 is summed,
    # then divided by count(3) = 2 (the whole list's preferred rank), 0.25.
    [("Pmeasure", nm.PMeasure, 0.0), ("Pplus", nm.PPlusMeasure, 0.25)],
    ids=["Pmeasure", "Pplus"],
)
def test_pmeasure_cutoff(name: str, cls: type, peer_with_attr: float) -> None:
    """Definitional difference for P-measure / P+ at a cutoff.

    Cranfield's Pmeasure@k is the P-measure of the top-k list: the preferred
    rank is the first document of the highest level *within the top k*.
    pyNTCIREVAL's PMeasure/PPlusMeasure take no cutoff; setting their
    ``cutoff`` attribute keeps the preferred rank of the *whole* list
    (MetricState.first_max_rank), so P-measure scores 0 when that rank lies
    below k and P+ divides the top-k sum by the count at that rank.
    Expected: pyNTCIREVAL without a cutoff on the list cut at k.
    """
    k = 5
    differs = 0
    for seed in SEEDS:
        g = collection(seed)
        ev = cranfield(seed, f"{name}@{k}", None)
        expected = peer_scores(g, ev.topics, ev.runs, lambda x, gr: cls(x, gr, 1.0), grades_of(LINEAR),
                               lambda ranked: ranked[:k])
        assert_matches(ev.per_topic(f"{name}@{k}"), expected, f"{name}@{k} seed={seed}")
        with_attr = peer_scores(g, ev.topics, ev.runs, lambda x, gr: with_cutoff(cls(x, gr, 1.0), k),
                                grades_of(LINEAR))
        differs += int(np.sum(np.abs(with_attr - expected) > 1e-9))
    # The two readings of "P-measure at k" do differ on these collections.
    assert differs > 0

    # A minimal case: qrels {a: 3, b: 1}, ranking [b, x, a], k = 2.
    # Top 2 = [b, x]: preferred rank 1 (b), BR(1) = (1 + 1*1) / (1 + 1*3) = 0.5;
    # P+ = BR(1) / count(1) = 0.5. The whole list's preferred rank is 3 (a).
    qrels = Qrels.from_mapping({"t": {"a": 3, "b": 1}})
    run = Run.from_rankings("r", {"t": ["b", "x", "a"]})
    got = evaluate(qrels, [run], [f"{name}@2"]).value("r", f"{name}@2", "t")
    assert got == pytest.approx(0.5, abs=ATOL)  # by hand, above
    ranked = [("b", 1), ("x", None), ("a", 3)]
    assert cls([0, 1, 0, 1], [1.0, 2.0, 3.0], 1.0).compute(ranked[:2]) == pytest.approx(0.5, abs=ATOL)
    assert with_cutoff(cls([0, 1, 0, 1], [1.0, 2.0, 3.0], 1.0), 2).compute(ranked) == pytest.approx(peer_with_attr)


def test_one_call_for_all_measures() -> None:
    """All measures in one evaluate() call, cutoff versions before full-depth
    ones, so that per-rank quantities cached by a cutoff view are reused by
    later measures. Regression test: at commit 423ca0f, RankedLists.prefix
    cached a cutoff view's truncated array under the full-depth key, so e.g.
    evaluate(..., ["P@1", "P@3"]) gave P@3 = 0 and "nERR(stop=linear)@10"
    before "ERR(stop=linear)" cut ERR at rank 10.
    Expected: pyNTCIREVAL, as in test_matches_ntcireval."""
    cases = sorted(CASES, key=lambda c: (0 if "@" in c.name else 1, c.name))
    names = [c.name for c in cases]
    for seed in SEEDS:
        g = collection(seed)
        ev = evaluate(g.qrels, g.runs, names, EvalSettings(missing="skip", gains=STEEP))
        for case in cases:
            expected = peer_scores(g, ev.topics, ev.runs, case.factory, grades_of(STEEP))
            assert_matches(ev.per_topic(case.name), expected, f"{case.name} seed={seed} (one call)")


def test_cutoff_then_full_depth_minimal() -> None:
    """Minimal form of the regression above: qrels {a: 1, b: 1, c: 0},
    ranking [x, a, b, c]. Expected: pyNTCIREVAL (RR = 1/2, P@3 = 2/3,
    AP = (1/2 + 2/3) / 2, ERR(stop=linear) = 1/3 with g/(gmax+1) = 1/2)."""
    qrels = Qrels.from_mapping({"t": {"a": 1, "b": 1, "c": 0}})
    run = Run.from_rankings("r", {"t": ["x", "a", "b", "c"]})
    ranked = [("x", None), ("a", 1), ("b", 1), ("c", 0)]
    x, gr = [1, 2], [1.0]
    pairs = [
        (["Hit@1", "RR"], nm.RR()),
        (["P@1", "P@3"], nm.Precision(3)),
        (["AP@1", "AP"], nm.AP(x, gr)),
        (["ERR(stop=linear)@1", "ERR(stop=linear)"], nm.ERR(x, gr)),
    ]
    for names, peer in pairs:
        ev = evaluate(qrels, [run], names)
        assert ev.value("r", names[1], "t") == pytest.approx(peer.compute(ranked), abs=ATOL), names
