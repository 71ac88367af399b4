"""Cranfield's diversity measures against independent implementations, per topic.

Peers and the source of every expected value:

* pyndeval 0.0.8 (PyPI): TREC's ndeval.c (version 4.5) compiled as a C extension. Every
  ndeval measure (ERR-IA, nERR-IA, alpha-DCG, alpha-nDCG, P-IA, strec at cutoffs 1-20;
  NRBP, nNRBP, MAP-IA) is compared at 1e-9: pyndeval returns ndeval's C doubles as Python
  floats (``PyFloat_FromDouble``), not the six decimals ndeval's command line prints.
* pytrec_eval (pytrec-eval-terrier, trec_eval 9): ``ndcg_cut_k``/``ndcg`` (gain = the
  qrels label, discount log2(r+1)) fed the global gains scaled to integers, against D-nDCG.
* pyNTCIREVAL 0.0.3: NTCIREVAL's ``MSnDCG`` and ``QMeasure`` fed the global gains as the
  gains of pseudo-levels, as NTCIREVAL's ``gcompute`` reads its Grelv file, against D-nDCG
  and D-Q (NTCIREVAL's Q@k divides by min(R, k)).

How the inputs are handed over:

* Ties. Each run is written as a TREC run file with tied scores and read with the project's
  reader (``parse_run``, order ``score``: score descending, ties by docno descending, as
  trec_eval and ndeval -traditional). Each peer then gets strictly decreasing scores in that
  order: pyndeval would otherwise break ties by docno *ascending* (its ``_coerce_run_iter``
  sorts by (-score, docno)), unlike ndeval -traditional.
* Subtopic order. ndeval adds a document's gains subtopic by subtopic; pyndeval numbers the
  subtopics in the order it first meets them in the qrels, over all topics. The qrels are
  given in ascending numeric subtopic order, Cranfield's canonical intent order, so both add
  in the same order and the greedy ideal meets the same float ties.
* Relevance. pyndeval makes each label binary (label >= ``relevance_level``); Cranfield's
  ``rel`` parameter is that threshold.

Two documented differences are checked as such, not skipped:

* ndeval leaves alpha-DCG@1 and ERR-IA@1 undivided by the ideal-ideal normaliser (its loop
  ``for (i = 1; i < DEPTH; i++) rl->dcg[i] /= idealIdeal[i];`` starts at the second rank):
  pyndeval's value there is Cranfield's times S.
* For a topic without any relevant document ndeval's nNRBP is 0/0 = NaN; Cranfield's is 0.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from service.formats.diversity import IntentQrels
from service.formats.readers import parse_run
from service.metrics.diversity import DiversityEvaluator, evaluate_diversity
from tests.support.peers import require_peer

pyndeval = require_peer("pyndeval")
pytrec_eval = require_peer("pytrec_eval", "pytrec-eval-terrier")
nm = require_peer("pyNTCIREVAL.metrics", "pyNTCIREVAL")

pytestmark = pytest.mark.peer

ATOL = 1e-9
CUTOFFS = (1, 2, 3, 5, 10, 20)
AT_K = ("ERR-IA", "nERR-IA", "alpha-DCG", "alpha-nDCG", "P-IA", "strec")
WHOLE = ("NRBP", "nNRBP", "MAP-IA")
#: pyndeval's name -> Cranfield's (strec is an alias of S-recall; the others are the same).
NAMES = {"strec": "S-recall"}
#: (alpha, beta, relevance_level) of each comparison; (0.5, 0.5, 1) is ndeval's default.
SETTINGS = ((0.5, 0.5, 1), (0.3, 0.8, 1), (0.5, 0.5, 2), (1.0, 0.5, 1), (0.0, 0.9, 1))
SEEDS = (11, 12, 13, 14)


# --------------------------------------------------------------------------- collections


@dataclass(frozen=True)
class Collection:
    judgments: dict[str, dict[str, dict[str, int]]]  # topic -> intent -> docno -> level
    weights: dict[str, dict[str, int]]  # topic -> intent -> w; P(i|q) = w / sum(w)
    rankings: dict[str, dict[str, list[str]]]  # run -> topic -> docnos, the project's rank order
    tied: int  # runs x topics whose file has tied scores that the docno order reorders

    @property
    def qrels(self) -> IntentQrels:
        probs = {t: {i: w / sum(ws.values()) for i, w in ws.items()} for t, ws in self.weights.items()}
        return IntentQrels.from_mapping(self.judgments, probs)

    def level(self, topic: str, intent: str, doc: str) -> int:
        return self.judgments[topic][intent].get(doc, 0)

    def global_gain(self, topic: str, doc: str) -> Fraction:
        """GG(d) = sum_i P(i|q) level_i(d), exactly (linear gains)."""
        ws = self.weights[topic]
        return sum((Fraction(w, sum(ws.values())) * self.level(topic, i, doc) for i, w in ws.items()), Fraction(0))


@functools.cache
def collection(seed: int) -> Collection:
    """Topics of 1 to 5 intents (topic 001 has one), graded levels 0-3 per intent, documents
    judged for some intents only, unjudged documents in the runs, a topic judged without any
    relevant document (002), tied scores, runs missing topics, a run topic absent from the
    qrels and an empty ranked list."""
    rng = np.random.default_rng(seed)
    judgments: dict[str, dict[str, dict[str, int]]] = {}
    weights: dict[str, dict[str, int]] = {}
    for t in range(10):
        tid = f"{t + 1:03d}"
        n_intents = 1 if t == 0 else int(rng.integers(2, 6))
        intents = {str(i + 1): {} for i in range(n_intents)}
        for d in range(40):
            if rng.random() < 0.6:
                doc = f"D{t}-{d:03d}"
                judged = [i for i in intents if rng.random() < 0.45] or [str(int(rng.integers(1, n_intents + 1)))]
                for i in judged:
                    level = int(rng.choice(4, p=[0.45, 0.3, 0.15, 0.1]))
                    intents[i][doc] = 0 if t == 1 else level
        intents = {i: j for i, j in intents.items() if j}
        if t != 1 and not any(v >= 1 for j in intents.values() for v in j.values()):
            intents.setdefault("1", {})[f"D{t}-000"] = 3
        judgments[tid] = intents
        weights[tid] = {i: int(rng.integers(1, 5)) for i in intents}
    runs_text: dict[str, str] = {}
    for r in range(4):
        tag = f"run{r}"
        lines = []
        for tid, intents in judgments.items():
            if rng.random() < 0.15 and tid != "001":
                continue  # the run lacks this topic
            pool = sorted({d for j in intents.values() for d in j})
            docs = [d for d in pool if rng.random() < 0.5] + [f"U{tid}-{k}" for k in range(int(rng.integers(0, 8)))]
            rng.shuffle(docs)
            docs = docs[: int(rng.integers(1, 35))]
            scores = rng.integers(0, 6, size=len(docs))  # many ties
            lines += [f"{tid} Q0 {d} {k + 1} {int(s)} {tag}" for k, (d, s) in enumerate(zip(docs, scores))]
        lines.append(f"999 Q0 D0-001 1 1 {tag}")  # a topic the qrels do not have
        runs_text[tag] = "\n".join(lines) + "\n"
    rankings: dict[str, dict[str, list[str]]] = {}
    tied = 0
    for tag, text in runs_text.items():
        run = parse_run(text.encode(), tag, order="score")
        rankings[tag] = run.to_rankings()
        scores = {(ln.split()[0], ln.split()[2]): int(ln.split()[4]) for ln in text.splitlines()}
        for tid, docs in rankings[tag].items():
            own = sorted(docs, key=lambda d: (-scores[(tid, d)], d))  # pyndeval's own tie order
            tied += own != docs
    rankings["run0"]["003"] = []  # an empty ranked list (no TREC line can say so)
    return Collection(judgments, weights, rankings, tied)


def pyndeval_qrels(c: Collection) -> list[tuple[str, str, str, int]]:
    """Qrels in ascending numeric subtopic order (see the module docstring)."""
    rows = [(t, i, d, lv) for t, intents in c.judgments.items() for i, j in intents.items() for d, lv in j.items()]
    return sorted(rows, key=lambda row: (int(row[1]), row[0], row[2]))


def pyndeval_run(ranking: dict[str, list[str]]) -> list[tuple[str, str, float]]:
    return [(t, d, float(len(docs) - k)) for t, docs in ranking.items() for k, d in enumerate(docs)]


def cranfield_name(peer: str, alpha: float, beta: float, rel: int) -> str:
    base, _, k = peer.partition("@")
    name = NAMES.get(base, base)
    params = [f"rel={rel}"]
    if base not in ("P-IA", "MAP-IA", "strec"):
        params.append(f"alpha={alpha}")
    if base in ("NRBP", "nNRBP"):
        params.append(f"beta={beta}")
    return f"{name}({','.join(params)})" + (f"@{k}" if k else "")


def intents_with_relevant(c: Collection, topic: str, rel: int) -> int:
    return sum(1 for j in c.judgments[topic].values() if any(v >= rel for v in j.values()))


# --------------------------------------------------------------------------- ndeval


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("alpha", "beta", "rel"), SETTINGS)
def test_every_ndeval_measure_per_topic(seed: int, alpha: float, beta: float, rel: int) -> None:
    c = collection(seed)
    peer_names = [f"{m}@{k}" for m in AT_K for k in CUTOFFS] + list(WHOLE)
    evaluator = pyndeval.RelevanceEvaluator(pyndeval_qrels(c), peer_names, relevance_level=rel, alpha=alpha, beta=beta)
    ours_names = {p: cranfield_name(p, alpha, beta, rel) for p in peer_names}
    compared, worst, bad = 0, 0.0, []
    cranfield = DiversityEvaluator(c.qrels)  # one for all runs: its greedy ideals are reused
    for tag, ranking in c.rankings.items():
        peer = evaluator.evaluate(pyndeval_run({t: d for t, d in ranking.items() if d}))
        ours = cranfield.evaluate(ranking, ours_names.values(), no_relevant="count")
        # ndeval evaluates the run's topics that the qrels have; so does Cranfield, plus the
        # qrels topics the run lacks (0) and none of the others ("999" is ignored).
        assert set(peer) == {t for t, d in ranking.items() if d and t in c.judgments}
        assert ours.ignored_topics == ("999",)
        for topic in ours.missing_topics + (("003",) if tag == "run0" else ()):
            assert topic not in peer
            assert all(ours[n][topic] == 0.0 for n in ours_names.values())
        for topic, values in peer.items():
            s = intents_with_relevant(c, topic, rel)
            for p, n in ours_names.items():
                expected, got = values[p], ours[n][topic]
                if p in ("alpha-DCG@1", "ERR-IA@1"):
                    got *= s  # ndeval does not normalise rank 1 (module docstring)
                if p == "nNRBP" and s == 0:
                    assert math.isnan(expected) and got == 0.0
                    continue
                compared += 1
                worst = max(worst, abs(got - expected))
                if not abs(got - expected) <= ATOL:
                    bad.append(f"{tag} {topic} {p}: ndeval {expected!r}, Cranfield {got!r}")
    assert not bad, "\n".join(bad[:20])
    assert compared > 1000, compared
    assert worst <= ATOL


def test_collections_have_what_they_claim() -> None:
    for seed in SEEDS:
        c = collection(seed)
        assert c.tied > 0  # tied scores whose order the project's rule decides
        assert len(c.judgments["001"]) == 1  # a single-subtopic topic
        assert not any(v >= 1 for j in c.judgments["002"].values() for v in j.values())
        assert any(any(v >= 2 for v in j.values()) for t in c.judgments.values() for j in t.values())
        assert any(t not in r for r in c.rankings.values() for t in c.judgments)  # missing topics
        judged = {d for t in c.judgments.values() for j in t.values() for d in j}
        assert any(d not in judged for r in c.rankings.values() for docs in r.values() for d in docs)


def test_greedy_ideal_beaten_in_ndeval_too() -> None:
    """The hand-worked case of tests/unit/test_diversity_measures.py: ndeval's alpha-nDCG@2 is
    above 1 as well, with the same value."""
    qrels = [("t", "1", "A", 1), ("t", "1", "C", 1), ("t", "2", "A", 1), ("t", "3", "B", 1), ("t", "3", "C", 1),
             ("t", "4", "B", 1)]
    peer = pyndeval.ndeval(qrels, [("t", "A", 2.0), ("t", "B", 1.0)], measures=["alpha-nDCG@2"])["t"]["alpha-nDCG@2"]
    ours = evaluate_diversity(
        IntentQrels.from_mapping({"t": {"1": {"A": 1, "C": 1}, "2": {"A": 1}, "3": {"B": 1, "C": 1}, "4": {"B": 1}}}),
        {"t": ["A", "B"]}, ["alpha-nDCG@2"])["alpha-nDCG@2"]["t"]
    assert peer > 1 and abs(ours - peer) <= ATOL


# --------------------------------------------------------------------------- D-nDCG and D-Q


def integer_gains(c: Collection, topic: str) -> dict[str, int]:
    """GG(d) * sum(w): integers, so that trec_eval reads them as its relevance labels."""
    total = sum(c.weights[topic].values())
    docs = {d for j in c.judgments[topic].values() for d in j}
    out = {}
    for d in docs:
        g = c.global_gain(topic, d) * total
        assert g.denominator == 1
        out[d] = int(g)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_d_ndcg_against_trec_eval_ndcg(seed: int) -> None:
    """nDCG is scale-invariant: D-nDCG = trec_eval's ndcg_cut on GG * sum(w). trec_eval's
    discount is log2(r + 1) at every rank (as NTCIREVAL's MSnDCG, which D-nDCG is)."""
    c = collection(seed)
    qrels = {t: integer_gains(c, t) for t in c.judgments}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "ndcg_cut.1,5,10,20"})
    names = {"ndcg": "D-nDCG", **{f"ndcg_cut_{k}": f"D-nDCG@{k}" for k in (1, 5, 10, 20)}}
    compared = 0
    for ranking in c.rankings.values():
        peer = evaluator.evaluate({t: {d: float(len(docs) - k) for k, d in enumerate(docs)}
                                   for t, docs in ranking.items() if t in c.judgments})
        ours = evaluate_diversity(c.qrels, ranking, names.values(), no_relevant="count")
        for topic, values in peer.items():
            for p, n in names.items():
                assert abs(ours[n][topic] - values[p]) <= ATOL, (topic, p, ours[n][topic], values[p])
                compared += 1
    assert compared > 100


@pytest.mark.parametrize("seed", SEEDS)
def test_d_measures_against_ntcireval(seed: int) -> None:
    """pyNTCIREVAL's MSnDCG and QMeasure on the global gains (pseudo-levels 1..m, gains the
    distinct positive GG values): D-nDCG, D-Q@k (min(R, k)), D-Q and D-Q(beta=0.5)."""
    c = collection(seed)
    qrels = c.qrels
    cases = {
        "D-nDCG@10": lambda x, g: nm.MSnDCG(x, g, 10),
        "D-nDCG": lambda x, g: nm.MSnDCG(x, g, None),
        "D-Q@10": lambda x, g: nm.QMeasure(x, g, 1.0, cutoff=10),
        "D-Q@5": lambda x, g: nm.QMeasure(x, g, 1.0, cutoff=5),
        "D-Q": lambda x, g: nm.QMeasure(x, g, 1.0),
        "D-Q(beta=0.5)": lambda x, g: nm.QMeasure(x, g, 0.5),
    }
    compared = 0
    for ranking in c.rankings.values():
        ours = evaluate_diversity(qrels, ranking, cases)
        for topic in ours.topics:
            docs = ranking.get(topic, [])
            gg = {d: float(c.global_gain(topic, d)) for j in c.judgments[topic].values() for d in j}
            grades = sorted({g for g in gg.values() if g > 0})
            if not grades or not docs:
                continue  # pyNTCIREVAL divides by R = 0, and fails on an empty list
            level = {d: (grades.index(g) + 1 if g > 0 else 0) for d, g in gg.items()}
            xrelnum = [sum(1 for v in level.values() if v == lv) for lv in range(len(grades) + 1)]
            ranked = [(d, level.get(d)) for d in docs]
            for name, factory in cases.items():
                expected = factory(xrelnum, grades).compute(ranked)
                assert abs(ours[name][topic] - expected) <= ATOL, (topic, name, ours[name][topic], expected)
                compared += 1
    assert compared > 100
