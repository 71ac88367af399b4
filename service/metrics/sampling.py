"""A stratified-sampling pool: strata by rank range, a sampling rate each, a seeded draw.

The design of the inferred measures (Yilmaz, Kanoulas & Aslam, SIGIR 2008) as TREC runs it
(Terabyte 2006, Clinical Decision Support 2014-16, Precision Medicine 2017-20; TRECVID):
the pool of a topic is cut into strata by rank, e.g. ranks 1-20 judged in full, ranks 21-100
sampled at 20%, and each stratum is sampled at its own rate. Stratum k holds the documents
that some run retrieves within its ranks and no run retrieves within an earlier stratum's,
which is to say a document belongs to the stratum of the best (smallest) rank at which any
run retrieved it. Documents whose best rank is past the last stratum are not pooled.

Each pooled document is drawn independently with its stratum's rate (Bernoulli sampling), so
its inclusion probability is exactly that rate and a stratum's sample size is binomial.
The draw is a numpy Generator seeded per topic from (seed, topic) (:func:`topic_seed`), over
the topic's pool in a canonical order (best rank, then docno): the same rankings and seed
give the same sample whatever the order of the runs, and adding a topic changes no other
topic's sample. Time is linear in the number of ranked documents read (the documents tied
at one best rank, at most one per run, are put in docno order).

:meth:`StratifiedSample.to_sampled_qrels` writes the judged sample as NIST's five-column
sampled qrels (unsampled pool documents at -1), the input of
:mod:`service.metrics.inferred_sampled` (xinfAP, infNDCG).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from service.formats.sampled import SampledQrels
from service.formats.types import Run
from service.metrics.pooling import top_k, topic_seed


@dataclass(frozen=True)
class Stratum:
    """Ranks ``first``..``last`` (1-based, inclusive), sampled at ``rate`` (0 < rate <= 1)."""

    first: int
    last: int
    rate: float


@dataclass(frozen=True)
class PooledDocument:
    docno: str
    best_rank: int  # the smallest rank at which a run retrieved it
    stratum: int  # index into the sample's strata
    sampled: bool
    probability: float  # its inclusion probability: the stratum's rate


@dataclass(frozen=True)
class TopicSample:
    """One topic's pool, every document with its stratum, and which were drawn."""

    topic: str
    pool: tuple[PooledDocument, ...]  # by best rank, then docno

    @property
    def sampled(self) -> tuple[PooledDocument, ...]:
        return tuple(d for d in self.pool if d.sampled)

    def stratum_sizes(self, n_strata: int) -> tuple[list[int], list[int]]:
        """(pooled, sampled) documents per stratum."""
        pooled, drawn = [0] * n_strata, [0] * n_strata
        for d in self.pool:
            pooled[d.stratum] += 1
            drawn[d.stratum] += d.sampled
        return pooled, drawn


@dataclass(frozen=True)
class StratifiedSample:
    strata: tuple[Stratum, ...]
    seed: int
    topics: dict[str, TopicSample]

    @property
    def size(self) -> int:
        """Documents to judge, over all topics."""
        return sum(len(t.sampled) for t in self.topics.values())

    def to_judge(self) -> dict[str, list[str]]:
        """topic -> the sampled docnos (what assessors judge), sorted."""
        return {t: sorted(d.docno for d in s.sampled) for t, s in self.topics.items()}

    def inclusion_probabilities(self) -> dict[str, dict[str, float]]:
        """topic -> sampled docno -> its inclusion probability."""
        return {t: {d.docno: d.probability for d in s.sampled} for t, s in self.topics.items()}

    def to_sampled_qrels(self, judgments: Mapping[str, Mapping[str, int]], source: str = "<stratified sample>",
                         ) -> SampledQrels:
        """NIST's sampled qrels of this pool: each sampled document at its level in ``judgments``
        (topic -> docno -> level; every sampled document needs one), every other pooled document at
        -1; strata labelled 1, 2, ... in rank order."""
        table: dict[str, dict[str, tuple[str, int]]] = {}
        for topic, sample in self.topics.items():
            judged = judgments.get(topic, {})
            rows: dict[str, tuple[str, int]] = {}
            for d in sample.pool:
                if d.sampled:
                    level = judged.get(d.docno)
                    if level is None or level < 0:
                        raise ValueError(f"topic {topic}: sampled document {d.docno!r} has no judgment")
                    rows[d.docno] = (str(d.stratum + 1), int(level))
                else:
                    rows[d.docno] = (str(d.stratum + 1), -1)
            table[topic] = rows
        return SampledQrels.from_mapping(table, source)


def make_strata(strata: Iterable[tuple[int, int, float] | Stratum]) -> tuple[Stratum, ...]:
    """Validated strata: contiguous rank ranges from rank 1, each with a rate in (0, 1]."""
    out = tuple(s if isinstance(s, Stratum) else Stratum(int(s[0]), int(s[1]), float(s[2])) for s in strata)
    if not out:
        raise ValueError("strata: at least one (depth_from, depth_to, rate) is needed")
    expected_first = 1
    for k, s in enumerate(out):
        if s.first != expected_first:
            raise ValueError(f"strata: stratum {k + 1} starts at rank {s.first}; strata are contiguous from "
                             f"rank 1, so it starts at rank {expected_first}")
        if s.last < s.first:
            raise ValueError(f"strata: stratum {k + 1} ends at rank {s.last}, before its first rank {s.first}")
        if not 0 < s.rate <= 1:
            raise ValueError(f"strata: the rate of stratum {k + 1} is {s.rate}; a rate lies in (0, 1]")
        expected_first = s.last + 1
    return out


def rankings_of(runs: Iterable[Run], depth: int) -> dict[str, list[list[str]]]:
    """topic -> each run's top ``depth`` docnos (best first), the input of :func:`stratified_sample`."""
    out: dict[str, list[list[str]]] = {}
    for run in runs:
        for topic, docs in top_k(run, depth).items():
            out.setdefault(topic, []).append(docs)
    return out


def stratified_sample(rankings: Mapping[str, Sequence[Sequence[str]]],
                      strata: Iterable[tuple[int, int, float] | Stratum], seed: int) -> StratifiedSample:
    """Per topic, every pooled document with its stratum (that of its best rank over the runs'
    ``rankings``, topic -> [ranking, ...], each best first) and a seeded Bernoulli draw at the
    stratum's rate."""
    layers = make_strata(strata)
    depth = layers[-1].last
    stratum_of_rank = np.empty(depth + 1, dtype=np.int64)  # index: rank 1..depth
    rates = np.array([s.rate for s in layers])
    for k, s in enumerate(layers):
        stratum_of_rank[s.first: s.last + 1] = k
    topics: dict[str, TopicSample] = {}
    for topic in sorted(rankings, key=lambda t: t.encode("utf-8")):
        best: dict[str, int] = {}
        for ranking in rankings[topic]:
            for rank, docno in enumerate(ranking[:depth], start=1):
                if best.get(docno, depth + 1) > rank:
                    best[docno] = rank
        # Canonical order: best rank (bucketed, linear), then docno within a rank.
        buckets: list[list[str]] = [[] for _ in range(depth + 1)]
        for docno, rank in best.items():
            buckets[rank].append(docno)
        ordered = [(rank, d) for rank in range(1, depth + 1) for d in sorted(buckets[rank], key=str.encode)]
        rng = np.random.default_rng(topic_seed(seed, topic))
        u = rng.random(len(ordered))
        strata_idx = stratum_of_rank[[rank for rank, _ in ordered]] if ordered else np.zeros(0, np.int64)
        drawn = u < rates[strata_idx]
        topics[topic] = TopicSample(topic, tuple(
            PooledDocument(d, rank, int(k), bool(x), float(rates[k]))
            for (rank, d), k, x in zip(ordered, strata_idx.tolist(), drawn.tolist())))
    return StratifiedSample(layers, seed, topics)
