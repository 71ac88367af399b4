"""xinfAP and infNDCG from stratified samples of the pool, as NIST's ``sample_eval.pl`` computes them.

Yilmaz, Kanoulas & Aslam, "A simple and efficient sampling method for estimating AP and
NDCG", SIGIR 2008. The estimators are those of NIST's ``sample_eval.pl`` (TREC's copy, the
one with NIST's change log of 10 Oct 2011, trec.nist.gov/data/clinical/sample_eval.pl), read
line by line; the judgments are :class:`~service.formats.sampled.SampledQrels` (five columns:
topic, iteration, docno, stratum, rel). Per topic, with strata c taken in sample_eval's order
(labels sorted as strings):

* N_c = pooled documents of stratum c, n_c = those judged (level >= 0), r_c = those judged
  relevant (level > 0); the inclusion probability of c is n_c / N_c (there is no rates file).
* Estimated R: R^ = sum over strata with n_c > 0 of r_c N_c / n_c; per level g,
  R^_g = sum_c r_{c,g} N_c / n_c.
* Walking down the run's ranking (score descending, docno descending; at most
  ``max_result_size`` documents), at a relevant document at rank k with, above it, d documents
  of the pool, of which d_c from stratum c, s_c of them judged and q_c judged relevant::

      prec(k) = 1/k + (d/k) * sum_{c: d_c > 0} (d_c/d) (q_c + 1e-5)/(s_c + 3e-5)

  added to SAP_c of the document's stratum; its DCG term g/log2(k+1) (g = its level) to G_c.
* xinfAP = sum over strata with n_c > 0 of (r_c N_c/n_c / R^) * (SAP_c / r_c)  (0 when R^ = 0
  or r_c = 0): the precisions of the sampled relevant documents, each weighted by the inverse
  of its stratum's inclusion probability, over R^.
* infNDCG = D * sum_c (D_c/D) G_c / S_c / DCG_I, with D, D_c, S_c the pool, stratum-c and
  judged stratum-c documents among the documents ranked (all ranks walked): each stratum's
  gain scaled by the inverse of its sampling rate *within the run*. DCG_I: the levels from
  the highest (sorted as strings, like sample_eval) in turn, each filling
  int(R^_g + 0.5) ranks (rounded to the nearest integer: NIST's change of 10 Oct 2011) at
  g/log2(r+1), a level's run stopping after rank ``max_result_size`` (each lower level still
  adds one term past it, as the script's loop does); infNDCG = 0 when DCG_I = 0.
* inferred precision at k: iP(k) = E(k)/k with E(k) = sum_c D_c(k) (Q_c(k) + 1e-5)/(S_c(k) + 3e-5),
  the counts over the top k (E at the last rank walked when the list is shorter);
  inum_rel_ret = E at the last rank walked, inum_rel = R^.
* The mean is over the run's topics that the sampled qrels hold (a qrels topic the run lacks
  is left out, as trec_eval does without -c).

``variant="trecvid"`` follows TRECVID's copy (change log of 5 Sep 2012): DCG_I fills
R^_g ranks unrounded (the loop ``for (r = start + 1; r <= start + R^_g; r++)`` with a
fractional start), and xinfAP is multiplied by R^/max_result_size when R^ > max_result_size.

Differences with the script that are not estimator choices: topics and documents are
compared as given (the TREC copy strips leading zeros from the run's topic ids only, so
that a zero-padded topic never matches its qrels); a document retrieved twice or listed
twice in the qrels is an error (the script keeps the last score, and counts a qrels line
twice in its stratum's size).

``xinfAP`` and ``infNDCG`` are metrics of the main registry (family "sampled", no parameter,
no cutoff), so that a collection's configuration names them; a value needs each pooled
document's stratum, which the ranked lists of the ad hoc metrics do not carry, so
``service.metrics.scoring.evaluate`` computes them here (:class:`SampleEvaluator`, the "trec"
variant, ``max_result_size`` 1000) when it is given the :class:`SampledQrels`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from service.errors import InvalidMeasure
from service.formats.sampled import SampledQrels, StratumCounts
from service.formats.types import Run
from service.metrics.spec import NON_NEGATIVE, UNIT, MetricDef, register

Variant = Literal["trec", "trecvid"]

#: sample_eval's smoothing of a stratum's precision: (relevant + 1e-5)/(judged + 3e-5).
_NUM_EPS = 0.00001
_DEN_EPS = 0.00003


@dataclass(frozen=True)
class SampledEstimate:
    """sample_eval's estimates for one run on one topic."""

    topic: str
    xinfAP: float  # printed "infAP" by sample_eval
    infNDCG: float
    num_rel: float  # inum_rel: R^
    num_rel_ret: float  # inum_rel_ret: E at the last rank walked
    num_ret: int  # documents the run retrieved for the topic
    rel_ret_at: np.ndarray  # E(k) for k = 1 .. ranks walked

    def iP(self, k: int) -> float:
        """Inferred precision at k: E(k)/k (E at the last rank walked when k is beyond it)."""
        if k < 1:
            raise ValueError("k is a positive rank")
        walked = self.rel_ret_at.shape[0]
        return float(self.rel_ret_at[k - 1]) / k if k <= walked else self.num_rel_ret / k


@dataclass(frozen=True)
class SampleEvaluation:
    """One run's estimates on each topic of the run that the sampled qrels hold."""

    run: str
    topics: tuple[SampledEstimate, ...]

    def per_topic(self, measure: str) -> dict[str, float]:
        """topic -> value of ``measure`` (``xinfAP``, ``infNDCG``, ``num_rel``, ``num_rel_ret`` or ``iP@k``)."""
        return {e.topic: _value(e, measure) for e in self.topics}

    def mean(self, measure: str) -> float:
        """The mean over the evaluated topics (NaN when there is none)."""
        values = [_value(e, measure) for e in self.topics]
        return math.fsum(values) / len(values) if values else math.nan


def _value(e: SampledEstimate, measure: str) -> float:
    if measure.startswith("iP@"):
        return e.iP(int(measure[3:]))
    if measure not in ("xinfAP", "infNDCG", "num_rel", "num_rel_ret"):
        raise ValueError(f"unknown sample_eval measure {measure!r}: xinfAP, infNDCG, num_rel, num_rel_ret or iP@k")
    return float(getattr(e, measure))


@dataclass(frozen=True)
class _TopicPool:
    """What sample_eval computes from the qrels alone, for one topic."""

    docnos: np.ndarray  # sorted bytes_
    stratum: np.ndarray  # int64 index into ``strata``, aligned with docnos
    levels: np.ndarray  # int64, aligned with docnos
    strata: tuple[StratumCounts, ...]  # in sample_eval's order
    num_rel: float  # R^
    ideal_dcg: float  # DCG_I (0: none)


class SampleEvaluator:
    """sample_eval.pl's estimators over one sampled qrels (its per-topic constants computed once)."""

    def __init__(self, qrels: SampledQrels, *, max_result_size: int = 1000, variant: Variant = "trec") -> None:
        if max_result_size < 1:
            raise ValueError("max_result_size is a positive number of ranks")
        if variant not in ("trec", "trecvid"):
            raise ValueError(f"variant is 'trec' or 'trecvid', not {variant!r}")
        self.qrels = qrels
        self.max_result_size = max_result_size
        self.variant = variant
        self._log2 = _Log2Table()
        self._pools = {t: self._prepare(t) for t in qrels.topics}

    # ------------------------------------------------------------------ the qrels
    def _prepare(self, topic: str) -> _TopicPool:
        i = self.qrels.topic_index(topic)
        assert i is not None
        strata = tuple(self.qrels.stratum_counts(topic))
        index = {c.stratum: k for k, c in enumerate(strata)}
        stratum = np.array([index[s] for s in self.qrels.strata[i]], dtype=np.int64)
        levels = self.qrels.levels[i]
        # R^: sum over strata with judged documents of r_c N_c / n_c, in stratum order.
        num_rel = 0.0
        for c in strata:
            if c.judged != 0:
                num_rel += (c.relevant * c.size) / c.judged
        # R^_g per level g: strata in order, levels sorted as strings within each stratum.
        per_level: dict[int, float] = {}
        for k, c in enumerate(strata):
            rel_levels = levels[(stratum == k) & (levels > 0)]
            for g in sorted(set(rel_levels.tolist()), key=str):
                count = int(np.count_nonzero(rel_levels == g))
                per_level[g] = per_level.get(g, 0.0) + (count * c.size) / c.judged
        return _TopicPool(self.qrels.docnos[i], stratum, levels, strata, num_rel, self._ideal_dcg(per_level))

    def _ideal_dcg(self, per_level: dict[int, float]) -> float:
        """DCG_I from R^_g: levels in descending string order, each filling its share of ranks."""
        top = self.max_result_size
        total = 0.0
        if self.variant == "trec":
            start = 0
            for g in sorted(per_level, key=str, reverse=True):
                count = int(per_level[g] + 0.5)  # rounded to the nearest integer (NIST, 10 Oct 2011)
                for r in range(start + 1, start + count + 1):
                    total += g / self._log2(r)
                    if r >= top:  # a level's run stops at max_result_size
                        break
                start += count
        else:  # TRECVID: the estimate unrounded, so ranks may be fractional after the first level
            start_f = 0.0
            for g in sorted(per_level, key=str, reverse=True):
                r_f = start_f + 1
                while r_f <= start_f + per_level[g]:
                    total += g / (math.log(r_f + 1) / math.log(2))
                    if r_f >= top:
                        break
                    r_f += 1
                start_f += per_level[g]
        return total

    # ------------------------------------------------------------------ a run
    def evaluate(self, run: Run) -> SampleEvaluation:
        """The run's estimates on its topics that the qrels hold, in the run's topic order."""
        out = []
        for t, topic in enumerate(run.topics):
            if topic in self._pools:
                ranking = run.docnos[int(run.offsets[t]): int(run.offsets[t + 1])]
                out.append(self.topic(topic, ranking))
        return SampleEvaluation(run.tag, tuple(out))

    def topic(self, topic: str, ranking: Sequence[str] | np.ndarray) -> SampledEstimate:
        """The estimates for one ranked list (best first, as docnos) of a topic the qrels hold."""
        pool = self._pools.get(topic)
        if pool is None:
            raise KeyError(f"topic {topic!r} is not in the sampled qrels")
        docs = np.asarray([d.encode("utf-8") if isinstance(d, str) else d for d in ranking], dtype=bytes) \
            if not isinstance(ranking, np.ndarray) else ranking
        num_ret = int(docs.shape[0])
        docs = docs[: self.max_result_size]
        n = int(docs.shape[0])
        n_strata = len(pool.strata)

        # Each ranked document: in the pool?, its stratum, its level (-1 when not pooled).
        in_pool = np.zeros(n, dtype=bool)
        stratum = np.full(n, -1, dtype=np.int64)
        level = np.full(n, -1, dtype=np.int64)
        if n and pool.docnos.shape[0]:
            pos = np.minimum(np.searchsorted(pool.docnos, docs), pool.docnos.shape[0] - 1)
            in_pool = pool.docnos[pos] == docs
            stratum[in_pool] = pool.stratum[pos[in_pool]]
            level[in_pool] = pool.levels[pos[in_pool]]
        relevant = level > 0
        sampled = in_pool & (level >= 0)
        ranks = np.arange(1, n + 1, dtype=np.float64)

        # Counts over the ranks above each rank (exclusive) and down to it (inclusive).
        depth_incl = np.cumsum(in_pool, dtype=np.float64)
        depth_above = depth_incl - in_pool
        prec_above = np.zeros(n)
        rel_ret_at = np.zeros(n)
        sap = [0.0] * n_strata
        gain = [0.0] * n_strata
        final_docs = [0.0] * n_strata
        final_sampled = [0.0] * n_strata
        rel_rows = np.flatnonzero(relevant)
        with np.errstate(divide="ignore", invalid="ignore"):
            for c in range(n_strata):
                of_c = stratum == c
                docs_incl = np.cumsum(of_c, dtype=np.float64)
                sampled_incl = np.cumsum(of_c & sampled, dtype=np.float64)
                rel_incl = np.cumsum(of_c & relevant, dtype=np.float64)
                docs_above = docs_incl - of_c
                sampled_above = sampled_incl - (of_c & sampled)
                rel_above = rel_incl - (of_c & relevant)
                # prec_above += (d_c/d) (q_c + 1e-5)/(s_c + 3e-5), where d != 0 and d_c/d != 0
                prob = docs_above / depth_above
                term = prob * (rel_above + _NUM_EPS) / (sampled_above + _DEN_EPS)
                prec_above = prec_above + np.where((depth_above != 0) & (prob != 0), term, 0.0)
                # E(k) += D_c(k) (Q_c(k) + 1e-5)/(S_c(k) + 3e-5)
                rel_ret_at = rel_ret_at + docs_incl * (rel_incl + _NUM_EPS) / (sampled_incl + _DEN_EPS)
                if n:
                    final_docs[c], final_sampled[c] = float(docs_incl[-1]), float(sampled_incl[-1])
            prec = 1 / ranks + (depth_above / ranks) * prec_above
        for k in rel_rows.tolist():  # in rank order, as the script adds them
            c = int(stratum[k])
            sap[c] += float(prec[k])
            gain[c] += int(level[k]) / self._log2(k + 1)

        # xinfAP = sum_c (r_c N_c / n_c / R^) (SAP_c / r_c)
        ap = 0.0
        for c, counts in enumerate(pool.strata):
            if counts.judged != 0:
                rel_estimate = (counts.relevant * counts.size) / counts.judged
                if pool.num_rel != 0:
                    share = rel_estimate / pool.num_rel
                    ap_c = sap[c] / counts.relevant if counts.relevant != 0 else 0.0
                    ap += share * ap_c
        if self.variant == "trecvid" and pool.num_rel > self.max_result_size:
            ap = ap * pool.num_rel / self.max_result_size  # TRECVID, 5 Sep 2012

        # infNDCG = D * sum_c (D_c/D) G_c/S_c / DCG_I
        depth = float(depth_incl[-1]) if n else 0.0
        dcg = 0.0
        for c in range(n_strata):
            if depth != 0:
                share = final_docs[c] / depth
                if final_sampled[c] != 0:
                    dcg += share * gain[c] / final_sampled[c]
        ndcg = depth * dcg / pool.ideal_dcg if pool.ideal_dcg != 0 else 0.0
        num_rel_ret = float(rel_ret_at[-1]) if n else 0.0
        return SampledEstimate(topic, ap, ndcg, pool.num_rel, num_rel_ret, num_ret, rel_ret_at)


class _Log2Table:
    """log(r + 1)/log(2) for integer ranks r, computed with the C library's log as Perl does."""

    def __init__(self) -> None:
        self._values: list[float] = [math.nan]

    def __call__(self, r: int) -> float:
        while len(self._values) <= r:
            self._values.append(math.log(len(self._values) + 1) / math.log(2))
        return self._values[r]


def sample_eval(qrels: SampledQrels, runs: Sequence[Run], *, max_result_size: int = 1000,
                variant: Variant = "trec") -> list[SampleEvaluation]:
    """Every run's estimates (``sample_eval.pl -q`` for each run)."""
    evaluator = SampleEvaluator(qrels, max_result_size=max_result_size, variant=variant)
    return [evaluator.evaluate(run) for run in runs]


# ---------------------------------------------------------------------------- the main registry
#: The registered metrics, by name: the field of :class:`SampledEstimate` each one is.
REGISTERED = {"xinfAP": "xinfAP", "infNDCG": "infNDCG"}


def _needs_strata(*_: object) -> np.ndarray:
    raise InvalidMeasure("xinfAP and infNDCG are computed on a stratified sample's qrels "
                         "(service.metrics.inferred_sampled), not on ranked lists of ad hoc levels")


register(MetricDef("xinfAP", _needs_strata, (), "extended inferred AP from a stratified sample of the pool "
                   "(Yilmaz, Kanoulas & Aslam 2008; NIST sample_eval.pl's infAP)", cutoff="none", family="sampled",
                   bounds=UNIT))
# The estimated DCG of a run can exceed the ideal DCG built from the estimated R per level.
register(MetricDef("infNDCG", _needs_strata, (), "inferred nDCG from a stratified sample of the pool "
                   "(Yilmaz, Kanoulas & Aslam 2008; NIST sample_eval.pl)", cutoff="none", family="sampled",
                   bounds=NON_NEGATIVE))
