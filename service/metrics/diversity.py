"""Intent-aware (diversity) measures: ndeval's family (TREC) and NTCIR's D-measures.

Every measure is a function of one topic's ranked list (docnos in rank order) and its
:class:`~service.formats.diversity.TopicIntents`; :func:`evaluate_diversity` applies a list of
measures to every topic of a run. Definitions, and which tool each reproduces, are in
docs/definitions.md, section "Diversity (intent-aware) measures".

Notation: S is the number of the topic's intents that have at least one relevant document
(level >= ``rel``); J_i(r) is 1 when the document at rank r is relevant to intent i;
c_i(r) = sum_{s<r} J_i(s) counts the earlier documents relevant to i. The novelty gain of
rank r is (Clarke et al., SIGIR 2008, Eq. 5 with J binary)

    G(r) = sum_i J_i(r) (1 - alpha)^{c_i(r)}.

ndeval's family (TREC's ndeval, version 4.5, as wrapped by pyndeval; binary relevance per
intent, uniform intent weights 1/S, intents without a relevant document ignored):

* ``alpha-DCG@k``  sum_{r<=k} G(r)/log2(r+1), divided by the same sum for the "ideal ideal"
  list whose every rank covers all S intents: S (1-alpha)^{r-1} / log2(r+1).
* ``alpha-nDCG@k`` sum_{r<=k} G(r)/log2(r+1) / the same over ndeval's greedy ideal list.
* ``ERR-IA@k``     sum_{r<=k} G(r)/r / sum_{r<=k} S (1-alpha)^{r-1}/r  (Chapelle et al.'s
  ERR-IA with stop probability alpha, divided by its value for the ideal-ideal list).
* ``nERR-IA@k``    sum_{r<=k} G(r)/r over the greedy ideal's (Clarke et al., WSDM 2011).
* ``NRBP``         (1 - (1-alpha) beta)/S sum_r beta^{r-1} G(r) over the whole list
  (Clarke et al., ICTIR 2009); ``nNRBP`` divides by the greedy ideal's.
* ``P-IA@k``       sum_{r<=k} sum_i J_i(r) / (k S)  (Agrawal et al., WSDM 2009).
* ``MAP-IA``       (1/S) sum_i AP_i, AP_i = (1/R_i) sum_r J_i(r) (c_i(r)+1)/r.
* ``S-recall@k``   |{i : J_i(r) = 1 for some r <= k}| / S  (Zhai et al., SIGIR 2003; ndeval's strec).

The greedy ideal (ndeval's ``idealResult``): rank by rank, the judged document with the
largest G given the documents placed before it; ties go to the greatest docno (strcmp).
Its arithmetic is ndeval's (gains multiplied by 1 - alpha step by step, added intent by
intent in the canonical intent order), so that tied documents are the same ones.

NTCIR's family (Sakai & Song, SIGIR 2011; NTCIREVAL's D-NTCIR-eval):

* ``I-rec@k``      intents with a relevant document in the top k / intents with a relevant
  document (NTCIREVAL's ``irec``; the same quantity as S-recall with rel=1).
* global gain     GG(d) = sum_i P(i|q) g_i(d), g_i(d) the gain of d's level for intent i
  (level n -> gain n by default, NTCIREVAL's DIN-splitqrels; ``gains=`` changes it).
* ``D-nDCG@k``     nDCG with the log2(r+1) discount over global gains, the ideal list sorted
  by global gain: NTCIREVAL's ``MSnDCG@k`` on the Grelv file (Cranfield's MSnDCG kernel).
* ``D-Q@k``        Q-measure over global gains (Cranfield's Q kernel); at a cutoff divided by
  min(R, k) by default, as NTCIREVAL's ``Q@k`` (``norm=R`` divides by R).
* ``D#-nDCG@k`` = gamma I-rec@k + (1 - gamma) D-nDCG@k, ``D#-Q@k`` likewise (gamma = 0.5).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from service.errors import InvalidMeasure
from service.formats.diversity import IntentQrels, TopicIntents
from service.formats.text import nouned
from service.formats.types import ABSENT, UNJUDGED
from service.metrics.lists import RankedLists, Scale, TopicStats
from service.metrics.measures.cumgain import ndcg as _ndcg_kernel
from service.metrics.measures.graded import q_measure as _q_kernel
from service.metrics.spec import (
    NON_NEGATIVE,
    UNIT,
    Measure,
    MetricDef,
    Param,
    ParamValue,
    make_measure,
    parse_measure,
    register,
)
from service.metrics.spec import REGISTRY as SPEC_REGISTRY

NoRelevant = Literal["skip", "count"]


# ============================================================================ per-topic data


class PreparedTopic:
    """A topic's judgments as a (documents x intents) level matrix, documents in ascending
    byte order (ndeval's order), built once and shared by every run and measure."""

    def __init__(self, entry: TopicIntents) -> None:
        self.entry = entry
        docs = sorted({d for j in entry.judgments for d in j}, key=lambda d: d.encode("utf-8"))
        self.docnos = docs
        self.index = {d: n for n, d in enumerate(docs)}
        levels = np.zeros((len(docs), len(entry.intents)), dtype=np.int64)
        for i, judged in enumerate(entry.judgments):
            for d, lv in judged.items():
                levels[self.index[d], i] = lv
        self.levels = levels
        self.probabilities = np.asarray(entry.probabilities, dtype=np.float64)
        self._cache: dict[Any, Any] = {}

    def relevant(self, rel: int) -> np.ndarray:
        """(docs, S) relevance to the intents that have a relevant document (level >= rel)."""
        key = ("relevant", rel)
        if key not in self._cache:
            r = self.levels >= rel
            self._cache[key] = np.ascontiguousarray(r[:, r.any(axis=0)])
        return self._cache[key]

    def ideal_gains(self, alpha: float, rel: int, upto: int | None = None) -> np.ndarray:
        """G(r) of ndeval's greedy ideal list for ranks 1..upto (None: every rank with G > 0;
        fewer when the gains run out first). Ranks are placed on demand and kept."""
        key = ("ideal", alpha, rel)
        greedy = self._cache.get(key)
        if greedy is None:
            greedy = self._cache[key] = _GreedyIdeal(self.relevant(rel), alpha)
        return greedy.prefix(upto)

    def global_gains(self, gains: tuple[tuple[int, float], ...] | None) -> np.ndarray:
        """GG(d) = sum_i P(i|q) g(level_i(d)) per judged document (intents added in order)."""
        key = ("gg", gains)
        if key not in self._cache:
            top = int(self.levels.max(initial=0))
            table = _gain_table(gains, top)
            gg = np.zeros(len(self.docnos))
            for i in range(self.levels.shape[1]):
                gg = gg + self.probabilities[i] * table[self.levels[:, i]]
            self._cache[key] = gg
        return self._cache[key]


def _gain_table(gains: tuple[tuple[int, float], ...] | None, top: int) -> np.ndarray:
    """Gain of levels 0..top: level n -> n by default (NTCIREVAL's L<n> -> n)."""
    if gains is None:
        return np.arange(top + 1, dtype=np.float64)
    mapping = dict(gains)
    missing = [lv for lv in range(1, top + 1) if lv not in mapping]
    if missing:
        raise InvalidMeasure(f"gains: no gain for {nouned(len(missing), 'level')} {', '.join(map(str, missing))} "
                             f"(the judgments go up to level {top})")
    return np.array([0.0] + [float(mapping[lv]) for lv in range(1, top + 1)])


class _GreedyIdeal:
    """ndeval's ``idealResult``, placed rank by rank on demand.

    Documents with identical relevance vectors form one group (they always score alike); at
    each rank the best score wins and ties go to the greatest remaining docno, i.e. the group
    whose highest remaining row is highest (rows are in ascending docno order). A score is
    ndeval's sum: gains multiplied by 1 - alpha at each use, added intent by intent.
    """

    def __init__(self, relevant: np.ndarray, alpha: float) -> None:
        rows = np.flatnonzero(relevant.any(axis=1))
        self.keep = 1.0 - alpha
        self.placed: list[float] = []
        self.done = rows.shape[0] == 0
        if self.done:
            return
        patterns, group = np.unique(relevant[rows], axis=0, return_inverse=True)
        group = group.reshape(-1)
        self.patterns = patterns
        self.pattern_gains = patterns.astype(np.float64)
        self.members = [rows[group == g].tolist() for g in range(patterns.shape[0])]  # ascending rows
        self.top = np.array([m[-1] for m in self.members], dtype=np.int64)  # -1: group used up
        self.gain = np.ones(patterns.shape[1])

    def prefix(self, upto: int | None) -> np.ndarray:
        while not self.done and (upto is None or len(self.placed) < upto):
            self._place_one()
        return np.asarray(self.placed if upto is None else self.placed[:upto], dtype=np.float64)

    def _place_one(self) -> None:
        pat = self.pattern_gains
        score = np.zeros(pat.shape[0])
        for j in range(pat.shape[1]):  # ndeval: currentScore += subtopicGain[j], j ascending
            score = score + pat[:, j] * self.gain[j]
        score[self.top < 0] = -1.0
        best = float(score.max())
        if best <= 0.0:
            self.done = True
            return
        tied = np.flatnonzero(score == best)
        g = int(tied[np.argmax(self.top[tied])])
        members = self.members[g]
        members.pop()
        self.top[g] = members[-1] if members else -1
        self.placed.append(best)
        self.gain = np.where(self.patterns[g], self.gain * self.keep, self.gain)  # subtopicGain[i] *= (1 - alpha)


def _powers(base: float, n: int) -> np.ndarray:
    """1, base, base^2, ... (n terms) by repeated multiplication, as ndeval's loops compute them."""
    steps = np.full(max(n, 1), base, dtype=np.float64)
    steps[0] = 1.0
    return np.cumprod(steps)[:n]


def _ndeval_discount(n: int) -> np.ndarray:
    """ndeval's discount(i) = log(2)/log(i + 2) for 0-based rank i, i.e. 1/log2(r + 1)."""
    return math.log(2.0) / np.log(np.arange(n, dtype=np.float64) + 2.0)


class TopicRun:
    """One ranked list of one topic, with the per-rank quantities the measures share."""

    def __init__(self, topic: PreparedTopic, ranking: Sequence[str]) -> None:
        self.topic = topic
        ranking = list(ranking)
        if len(set(ranking)) != len(ranking):
            seen: set[str] = set()
            for d in ranking:
                if d in seen:
                    raise ValueError(f"topic {topic.entry.topic!r}: document {d!r} is ranked twice")
                seen.add(d)
        self.idx = np.array([topic.index.get(d, -1) for d in ranking], dtype=np.int64)
        self._cache: dict[Any, Any] = {}

    @property
    def length(self) -> int:
        return int(self.idx.shape[0])

    def relevant(self, rel: int) -> np.ndarray:
        """(ranks, S) J_i(r); unjudged documents are relevant to nothing."""
        key = ("relevant", rel)
        if key not in self._cache:
            judged = self.topic.relevant(rel)
            out = np.zeros((self.length, judged.shape[1]), dtype=bool)
            hit = self.idx >= 0
            out[hit] = judged[self.idx[hit]]
            self._cache[key] = out
        return self._cache[key]

    def gains(self, alpha: float, rel: int) -> np.ndarray:
        """G(r) for r = 1..length."""
        key = ("gains", alpha, rel)
        if key not in self._cache:
            j = self.relevant(rel)
            before = np.cumsum(j, axis=0) - j
            power = _powers(1.0 - alpha, self.length + 1)
            score = np.zeros(self.length)
            for i in range(j.shape[1]):
                score = score + np.where(j[:, i], power[before[:, i]], 0.0)
            self._cache[key] = score
        return self._cache[key]

    def global_lists(self, gains: tuple[tuple[int, float], ...] | None) -> tuple[RankedLists, Scale] | None:
        """The list as one row of global-gain levels for the core's kernels (None: no GG > 0).

        The topic's distinct positive global gains become levels 1..m (ascending), with the
        gain table (0, GG_1, ..., GG_m): the kernels then see exactly the global gains.
        """
        key = ("global", gains)
        if key not in self._cache:
            gg = self.topic.global_gains(gains)
            values = np.unique(gg[gg > 0])
            if values.shape[0] == 0:
                self._cache[key] = None
            else:
                level_of = np.searchsorted(values, gg) + 1
                level_of[gg <= 0] = 0
                counts = np.bincount(level_of, minlength=values.shape[0] + 1)[None, :]
                row = np.where(self.idx >= 0, level_of[np.maximum(self.idx, 0)], UNJUDGED)
                if row.shape[0] == 0:
                    row = np.array([ABSENT])
                lists = RankedLists(row[None, :].astype(np.int32), np.zeros(1, dtype=np.int64),
                                    TopicStats(counts.astype(np.int64), values.shape[0]))
                scale = Scale(values.shape[0], (0.0, *values.tolist()))
                self._cache[key] = (lists, scale)
        return self._cache[key]


# ============================================================================ the measures


def _check_cutoff(k: int | None, required: bool) -> None:
    if k is None:
        if required:
            raise ValueError("this measure needs a cutoff k >= 1")
        return
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"the cutoff must be a positive integer, not {k!r}")


def _sum_to(values: np.ndarray, weights: np.ndarray, k: int) -> float:
    """sum_{r<=k} values[r] weights[r] (values past the list's end are 0), left to right."""
    n = min(k, values.shape[0])
    if n == 0:
        return 0.0
    return float(np.cumsum(values[:n] * weights[:n])[-1])


def _ideal_ideal(s: int, alpha: float, weights: np.ndarray) -> float:
    """sum_{r<=k} S (1-alpha)^{r-1} w(r): the list covering every intent at every rank."""
    return float(np.cumsum(s * _powers(1.0 - alpha, weights.shape[0]) * weights)[-1])


def _s(run: TopicRun, rel: int) -> int:
    return int(run.topic.relevant(rel).shape[1])


def _alpha_dcg(run: TopicRun, k: int, alpha: float, rel: int) -> float:
    s = _s(run, rel)
    if s == 0:
        return 0.0
    disc = _ndeval_discount(k)
    return _sum_to(run.gains(alpha, rel), disc, k) / _ideal_ideal(s, alpha, disc)


def _alpha_ndcg(run: TopicRun, k: int, alpha: float, rel: int) -> float:
    disc = _ndeval_discount(k)
    actual = _sum_to(run.gains(alpha, rel), disc, k)
    if actual == 0.0:
        return 0.0
    return actual / _sum_to(run.topic.ideal_gains(alpha, rel, k), disc, k)


def _err_ia(run: TopicRun, k: int, alpha: float, rel: int) -> float:
    s = _s(run, rel)
    if s == 0:
        return 0.0
    recip = 1.0 / np.arange(1, k + 1, dtype=np.float64)
    return _sum_to(run.gains(alpha, rel), recip, k) / _ideal_ideal(s, alpha, recip)


def _nerr_ia(run: TopicRun, k: int, alpha: float, rel: int) -> float:
    recip = 1.0 / np.arange(1, k + 1, dtype=np.float64)
    actual = _sum_to(run.gains(alpha, rel), recip, k)
    if actual == 0.0:
        return 0.0
    return actual / _sum_to(run.topic.ideal_gains(alpha, rel, k), recip, k)


def _rbp_sum(gains: np.ndarray, beta: float) -> float:
    return _sum_to(gains, _powers(beta, gains.shape[0]), gains.shape[0])


def _nrbp(run: TopicRun, alpha: float, beta: float, rel: int) -> float:
    s = _s(run, rel)
    if s == 0:
        return 0.0
    return _rbp_sum(run.gains(alpha, rel), beta) * (1.0 - (1.0 - alpha) * beta) / s


def _nnrbp(run: TopicRun, alpha: float, beta: float, rel: int) -> float:
    actual = _rbp_sum(run.gains(alpha, rel), beta)
    if actual == 0.0:
        return 0.0
    return actual / _rbp_sum(run.topic.ideal_gains(alpha, rel), beta)


def _p_ia(run: TopicRun, k: int, rel: int) -> float:
    s = _s(run, rel)
    if s == 0:
        return 0.0
    return float(run.relevant(rel)[:k].sum()) / (k * s)


def _map_ia(run: TopicRun, rel: int) -> float:
    judged = run.topic.relevant(rel)
    s = judged.shape[1]
    if s == 0:
        return 0.0
    j = run.relevant(rel)
    ranks = np.arange(1, run.length + 1, dtype=np.float64)[:, None]
    precision = np.where(j, np.cumsum(j, axis=0) / ranks, 0.0)
    per_intent = precision.sum(axis=0) / judged.sum(axis=0)
    return float(per_intent.sum()) / s


def _s_recall(run: TopicRun, k: int | None, rel: int) -> float:
    s = _s(run, rel)
    if s == 0:
        return 0.0
    top = run.relevant(rel)[:k]
    return float(top.any(axis=0).sum()) / s


def _d_kernel(run: TopicRun, kernel: Callable[..., np.ndarray], name: str, given: dict[str, ParamValue],
              k: int | None, gains: tuple[tuple[int, float], ...] | None) -> float:
    prepared = run.global_lists(gains)
    if prepared is None:
        return 0.0
    lists, scale = prepared
    return float(kernel(lists, make_measure(name, given, k), scale)[0])


def _d_ndcg(run: TopicRun, k: int | None, gains: tuple[tuple[int, float], ...] | None) -> float:
    return _d_kernel(run, _ndcg_kernel, "MSnDCG", {}, k, gains)


def _d_q(run: TopicRun, k: int | None, beta: float, norm: str, gains: tuple[tuple[int, float], ...] | None) -> float:
    given: dict[str, ParamValue] = {"beta": beta}
    if k is not None:
        given["norm"] = norm
    return _d_kernel(run, _q_kernel, "Q", given, k, gains)


# ---------------------------------------------------------------------- public per-topic API


def _run(ranking: Sequence[str], topic: TopicIntents | PreparedTopic) -> TopicRun:
    return TopicRun(topic if isinstance(topic, PreparedTopic) else PreparedTopic(topic), ranking)


def alpha_dcg(ranking: Sequence[str], topic: TopicIntents, k: int, *, alpha: float = 0.5, rel: int = 1) -> float:
    """ndeval's alpha-DCG@k: alpha-DCG (Clarke et al., SIGIR 2008) divided by the ideal-ideal
    list's (every rank covering all S intents). ndeval leaves rank 1 undivided (see the docs)."""
    _check_cutoff(k, True)
    return _alpha_dcg(_run(ranking, topic), k, alpha, rel)


def alpha_ndcg(ranking: Sequence[str], topic: TopicIntents, k: int, *, alpha: float = 0.5, rel: int = 1) -> float:
    """alpha-nDCG@k (Clarke et al., SIGIR 2008) normalised by ndeval's greedy ideal list."""
    _check_cutoff(k, True)
    return _alpha_ndcg(_run(ranking, topic), k, alpha, rel)


def err_ia(ranking: Sequence[str], topic: TopicIntents, k: int, *, alpha: float = 0.5, rel: int = 1) -> float:
    """ndeval's ERR-IA@k: Chapelle et al.'s intent-aware ERR (stop probability alpha, weights 1/S)
    divided by its ideal-ideal value."""
    _check_cutoff(k, True)
    return _err_ia(_run(ranking, topic), k, alpha, rel)


def nerr_ia(ranking: Sequence[str], topic: TopicIntents, k: int, *, alpha: float = 0.5, rel: int = 1) -> float:
    """nERR-IA@k: ERR-IA over the greedy ideal list's (Clarke et al., WSDM 2011; ndeval)."""
    _check_cutoff(k, True)
    return _nerr_ia(_run(ranking, topic), k, alpha, rel)


def nrbp(ranking: Sequence[str], topic: TopicIntents, *, alpha: float = 0.5, beta: float = 0.5, rel: int = 1) -> float:
    """NRBP (Clarke et al., ICTIR 2009) over the whole list, as ndeval computes it."""
    return _nrbp(_run(ranking, topic), alpha, beta, rel)


def nnrbp(ranking: Sequence[str], topic: TopicIntents, *, alpha: float = 0.5, beta: float = 0.5, rel: int = 1) -> float:
    """NRBP divided by the greedy ideal list's NRBP (ndeval's nNRBP)."""
    return _nnrbp(_run(ranking, topic), alpha, beta, rel)


def p_ia(ranking: Sequence[str], topic: TopicIntents, k: int, *, rel: int = 1) -> float:
    """Intent-aware precision P-IA@k (Agrawal et al., WSDM 2009) with weights 1/S (ndeval)."""
    _check_cutoff(k, True)
    return _p_ia(_run(ranking, topic), k, rel)


def map_ia(ranking: Sequence[str], topic: TopicIntents, *, rel: int = 1) -> float:
    """Intent-aware average precision MAP-IA (ndeval): the mean of the per-intent APs."""
    return _map_ia(_run(ranking, topic), rel)


def s_recall(ranking: Sequence[str], topic: TopicIntents, k: int, *, rel: int = 1) -> float:
    """Subtopic recall S-recall@k (Zhai et al., SIGIR 2003; ndeval's strec@k)."""
    _check_cutoff(k, True)
    return _s_recall(_run(ranking, topic), k, rel)


def i_rec(ranking: Sequence[str], topic: TopicIntents, k: int | None = None) -> float:
    """Intent recall I-rec@k (Sakai & Song, SIGIR 2011; NTCIREVAL's irec); None: whole list."""
    _check_cutoff(k, False)
    return _s_recall(_run(ranking, topic), k, 1)


def d_ndcg(ranking: Sequence[str], topic: TopicIntents, k: int | None = None, *,
           gains: Mapping[int, float] | None = None) -> float:
    """D-nDCG@k (Sakai & Song, SIGIR 2011): nDCG with the log2(r+1) discount over global gains."""
    _check_cutoff(k, False)
    return _d_ndcg(_run(ranking, topic), k, _gains_arg(gains))


def d_sharp_ndcg(ranking: Sequence[str], topic: TopicIntents, k: int | None = None, *, gamma: float = 0.5,
                 gains: Mapping[int, float] | None = None) -> float:
    """D#-nDCG@k = gamma I-rec@k + (1 - gamma) D-nDCG@k (Sakai & Song, SIGIR 2011)."""
    _check_cutoff(k, False)
    run = _run(ranking, topic)
    return gamma * _s_recall(run, k, 1) + (1.0 - gamma) * _d_ndcg(run, k, _gains_arg(gains))


def d_q(ranking: Sequence[str], topic: TopicIntents, k: int | None = None, *, beta: float = 1.0,
        norm: str = "minRk", gains: Mapping[int, float] | None = None) -> float:
    """D-Q@k: Q-measure over global gains; at a cutoff divided by min(R, k) (NTCIREVAL's Q@k)
    or, with ``norm="R"``, by R."""
    _check_cutoff(k, False)
    return _d_q(_run(ranking, topic), k, beta, norm, _gains_arg(gains))


def d_sharp_q(ranking: Sequence[str], topic: TopicIntents, k: int | None = None, *, gamma: float = 0.5,
              beta: float = 1.0, norm: str = "minRk", gains: Mapping[int, float] | None = None) -> float:
    """D#-Q@k = gamma I-rec@k + (1 - gamma) D-Q@k (NTCIREVAL's D-NTCIR-eval)."""
    _check_cutoff(k, False)
    run = _run(ranking, topic)
    return gamma * _s_recall(run, k, 1) + (1.0 - gamma) * _d_q(run, k, beta, norm, _gains_arg(gains))


def _gains_arg(gains: Mapping[int, float] | None) -> tuple[tuple[int, float], ...] | None:
    return None if gains is None else tuple(sorted((int(lv), float(g)) for lv, g in gains.items() if lv != 0))


# ============================================================================ names and registry


def _in_unit(v: float) -> str | None:
    return None if 0.0 <= v <= 1.0 else "must lie in [0, 1]"


def _at_least_one(v: int) -> str | None:
    return None if v >= 1 else "must be >= 1"


def _non_negative(v: float) -> str | None:
    return None if v >= 0 else "must be >= 0"


ALPHA = Param("alpha", "float", 0.5, "redundancy penalty: each earlier document relevant to an intent "
              "multiplies its gain by 1 - alpha (ndeval -alpha)", check=_in_unit)
BETA_NRBP = Param("beta", "float", 0.5, "NRBP patience: the weight of rank r is beta^(r-1) (ndeval -beta)",
                  check=_in_unit)
REL = Param("rel", "int", 1, "lowest level counted as relevant to an intent (pyndeval relevance_level)",
            check=_at_least_one)
GAMMA = Param("gamma", "float", 0.5, "weight of I-rec in the D#-measures (NTCIREVAL's GAMMA)", check=_in_unit)
GAINS = Param("gains", "gains", None, "gain of each per-intent level, e.g. {1:1,2:3}; default level n -> n "
              "(NTCIREVAL)")
BETA_Q = Param("beta", "float", 1, "blended-ratio weight of D-Q's cumulative gain", check=_non_negative)
NORM_Q = Param("norm", "choice", "minRk", "D-Q@k normaliser: minRk = min(R, k) (NTCIREVAL's Q@k) or R",
               choices=("minRk", "R"))


# ---------------------------------------------------------------------------- the registry
# Every diversity metric is a metric of the one registry (``service.metrics.spec``), of family
# "diversity": its kernel is the per-topic function below, of a :class:`TopicRun` and the
# measure. ``service.metrics.scoring.evaluate`` routes the family to :class:`DiversityEvaluator`
# when it is given the intent-aware judgments (the kernel needs the intents, not ranked lists
# of ad hoc levels).

#: A diversity metric with its parameters: the registry's :class:`Measure` (one canonical string).
DiversityMeasure = Measure

#: The greedy ideal can be beaten (see the module docstring): these can exceed 1.
_UNBOUNDED_ABOVE = frozenset({"alpha-nDCG", "nERR-IA", "nNRBP"})
#: 1 for an ideal ranking whatever the judgments (the ideal list is exact: sorted by global gain).
_IDEAL_IS_ONE = frozenset({"D-nDCG"})


def _register(name: str, compute: Callable[[TopicRun, Measure], float], params: tuple[Param, ...], doc: str,
              cutoff: str, tool: str, *aliases: str) -> None:
    """Register a diversity metric: ``tool`` names the tool and option it reproduces."""
    register(MetricDef(name, compute, params, f"{doc} (intent-aware; {tool})", cutoff=cutoff, family="diversity",
                       ideal_is_one=name in _IDEAL_IS_ONE, bounds=NON_NEGATIVE if name in _UNBOUNDED_ABOVE else UNIT),
             *aliases)


def _gains_of(m: Measure) -> tuple[tuple[int, float], ...] | None:
    return m.get("gains")  # type: ignore[no-any-return]


_NDEVAL = (ALPHA, REL)
_register("alpha-DCG", lambda r, m: _alpha_dcg(r, m.cutoff, m.get("alpha"), m.get("rel")), _NDEVAL,
          "alpha-DCG divided by the ideal-ideal list's", "required", "ndeval alpha-DCG@k (k >= 2; see rank 1)",
          "alphaDCG")
_register("alpha-nDCG", lambda r, m: _alpha_ndcg(r, m.cutoff, m.get("alpha"), m.get("rel")), _NDEVAL,
          "alpha-nDCG over ndeval's greedy ideal list", "required", "ndeval alpha-nDCG@k", "alphanDCG")
_register("ERR-IA", lambda r, m: _err_ia(r, m.cutoff, m.get("alpha"), m.get("rel")), _NDEVAL,
          "intent-aware ERR divided by the ideal-ideal list's", "required", "ndeval ERR-IA@k (k >= 2; see rank 1)")
_register("nERR-IA", lambda r, m: _nerr_ia(r, m.cutoff, m.get("alpha"), m.get("rel")), _NDEVAL,
          "intent-aware ERR over the greedy ideal list's", "required", "ndeval nERR-IA@k")
_register("NRBP", lambda r, m: _nrbp(r, m.get("alpha"), m.get("beta"), m.get("rel")), (ALPHA, BETA_NRBP, REL),
          "novelty- and rank-biased precision", "none", "ndeval NRBP")
_register("nNRBP", lambda r, m: _nnrbp(r, m.get("alpha"), m.get("beta"), m.get("rel")), (ALPHA, BETA_NRBP, REL),
          "NRBP over the greedy ideal list's", "none", "ndeval nNRBP")
_register("P-IA", lambda r, m: _p_ia(r, m.cutoff, m.get("rel")), (REL,), "intent-aware precision", "required",
          "ndeval P-IA@k")
_register("MAP-IA", lambda r, m: _map_ia(r, m.get("rel")), (REL,), "intent-aware average precision", "none",
          "ndeval MAP-IA", "AP-IA")
_register("S-recall", lambda r, m: _s_recall(r, m.cutoff, m.get("rel")), (REL,), "subtopic recall", "required",
          "ndeval strec@k", "strec", "subtopic-recall")
_register("I-rec", lambda r, m: _s_recall(r, m.cutoff, 1), (), "intent recall", "optional",
          "NTCIREVAL irec I-rec@k", "I-recall", "irec")
_register("D-nDCG", lambda r, m: _d_ndcg(r, m.cutoff, _gains_of(m)), (GAINS,),
          "nDCG (log2(r+1) discount) over global gains", "optional", "NTCIREVAL D-NTCIR-eval MSnDCG@k")
_register("D#-nDCG",
          lambda r, m: m.get("gamma") * _s_recall(r, m.cutoff, 1) + (1 - m.get("gamma")) * _d_ndcg(r, m.cutoff,
                                                                                                  _gains_of(m)),
          (GAMMA, GAINS), "gamma I-rec + (1 - gamma) D-nDCG", "optional", "NTCIREVAL D-NTCIR-eval D#-nDCG@k")
_register("D-Q", lambda r, m: _d_q(r, m.cutoff, m.get("beta"), m.get("norm"), _gains_of(m)),
          (BETA_Q, NORM_Q, GAINS), "Q-measure over global gains", "optional", "NTCIREVAL D-NTCIR-eval Q@k")
_register("D#-Q",
          lambda r, m: m.get("gamma") * _s_recall(r, m.cutoff, 1)
          + (1 - m.get("gamma")) * _d_q(r, m.cutoff, m.get("beta"), m.get("norm"), _gains_of(m)),
          (GAMMA, BETA_Q, NORM_Q, GAINS), "gamma I-rec + (1 - gamma) D-Q", "optional",
          "NTCIREVAL D-NTCIR-eval D#-Q@k")

#: The diversity metrics' canonical names.
NAMES: tuple[str, ...] = tuple(name for name, d in SPEC_REGISTRY.items() if d.family == "diversity")


def parse_diversity_measure(text: str | Measure) -> Measure:
    """Parse a diversity metric name into its canonical :class:`Measure` (the registry's
    grammar; a metric of another family is refused).

    >>> str(parse_diversity_measure("alpha-nDCG(alpha=0.5)@20"))
    'alpha-nDCG@20'
    >>> str(parse_diversity_measure("D#-nDCG(gamma=0.5)@10"))
    'D#-nDCG@10'
    """
    m = text if isinstance(text, Measure) else parse_measure(text)
    if m.definition.family != "diversity":
        raise InvalidMeasure(f"unknown diversity metric {m.name!r}; known: {', '.join(sorted(NAMES, key=str.lower))}")
    return m


# ============================================================================ evaluation


@dataclass(frozen=True, eq=False)
class DiversityScores(Mapping[str, Mapping[str, float]]):
    """``{measure: {topic: value}}`` keyed by canonical measure names, with the topic rules'
    outcome: ``missing_topics`` (evaluated, absent from the run: scored 0), ``ignored_topics``
    (in the run, not in the qrels: left out, as ndeval does) and ``skipped_topics`` (in the
    qrels without a relevant document: left out unless ``no_relevant="count"``)."""

    scores: Mapping[str, Mapping[str, float]]
    measures: tuple[DiversityMeasure, ...]
    topics: tuple[str, ...]
    missing_topics: tuple[str, ...] = ()
    ignored_topics: tuple[str, ...] = ()
    skipped_topics: tuple[str, ...] = ()

    def __getitem__(self, measure: str | DiversityMeasure) -> Mapping[str, float]:  # type: ignore[override]
        """The scores of a measure, by any of its names (``alpha-nDCG(alpha=0.5)@20`` too)."""
        if isinstance(measure, str) and measure in self.scores:
            return self.scores[measure]
        try:
            key = str(parse_diversity_measure(measure))
        except InvalidMeasure:
            raise KeyError(measure) from None
        return self.scores[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.scores)

    def __len__(self) -> int:
        return len(self.scores)

    def mean(self, measure: str | DiversityMeasure) -> float:
        """The mean over the evaluated topics (NaN when there is none)."""
        values = list(self[measure].values())
        return math.fsum(values) / len(values) if values else math.nan


class DiversityEvaluator:
    """Evaluates runs against one :class:`IntentQrels`, keeping each topic's prepared
    judgments and greedy ideal lists from one run to the next (as pyndeval's
    ``RelevanceEvaluator`` keeps its qrels)."""

    def __init__(self, qrels: IntentQrels) -> None:
        self.qrels = qrels
        self._prepared: dict[str, PreparedTopic] = {}

    def prepared(self, topic: str) -> PreparedTopic:
        got = self._prepared.get(topic)
        if got is None:
            got = self._prepared[topic] = PreparedTopic(self.qrels[topic])
        return got

    def evaluate(
        self,
        rankings: Mapping[str, Sequence[str]],
        measures: Iterable[str | DiversityMeasure],
        *,
        no_relevant: NoRelevant = "skip",
    ) -> DiversityScores:
        """See :func:`evaluate_diversity`."""
        if no_relevant not in ("skip", "count"):
            raise ValueError(f"no_relevant must be 'skip' or 'count', not {no_relevant!r}")
        qrels = self.qrels
        ms: dict[str, DiversityMeasure] = {}
        for name in measures:
            m = parse_diversity_measure(name)
            ms.setdefault(str(m), m)
        topics, skipped = [], []
        for t in qrels.topics:
            (topics if no_relevant == "count" or qrels[t].has_relevant else skipped).append(t)
        missing = tuple(t for t in topics if t not in rankings)
        ignored = tuple(sorted((t for t in rankings if t not in qrels), key=lambda s: s.encode("utf-8")))
        scores: dict[str, dict[str, float]] = {key: {} for key in ms}
        for t in topics:
            run = TopicRun(self.prepared(t), rankings.get(t, ()))
            for key, m in ms.items():
                scores[key][t] = float(m.definition.kernel(run, m))
        return DiversityScores(scores=scores, measures=tuple(ms.values()), topics=tuple(topics),
                               missing_topics=missing, ignored_topics=ignored, skipped_topics=tuple(skipped))


def evaluate_diversity(
    qrels: IntentQrels,
    rankings: Mapping[str, Sequence[str]],
    measures: Iterable[str | DiversityMeasure],
    *,
    no_relevant: NoRelevant = "skip",
) -> DiversityScores:
    """Score one run, ``{topic: [docno, ...]}`` in rank order, on every measure and topic.

    Topics evaluated: the qrels topics with at least one relevant judgment (level >= 1 for
    some intent); ``no_relevant="count"`` also keeps the others (they score 0: ndeval prints 0
    for them, and NaN for nNRBP). A topic the run lacks is an empty list (0 on every measure);
    a run topic absent from the qrels is ignored (ndeval prints zeros for it but leaves it out
    of its mean's denominator). To evaluate many runs, :class:`DiversityEvaluator` keeps the
    per-topic work between them.
    """
    return DiversityEvaluator(qrels).evaluate(rankings, measures, no_relevant=no_relevant)
