"""Two nugget assignment sets (or two citation-support judgment sets) of the same answers
compared (issue 36, item 3): does an automatic assigner agree with NIST's assessors?

* **Labels.** The cells both sets labelled are aligned: a nugget assignment cell is (run, topic,
  nugget), the nugget matched between the sets by its text (a nugget only one set lists is
  counted, not compared); a support cell is (run, topic, sentence, citation), a pair either set
  did not judge (``-1``) left out. On them: the 3x3 confusion matrix (rows the first set's label,
  columns the second's: 0 no support, 1 partial, 2 full), the share of agreeing labels, Cohen's
  kappa, linear- and quadratic-weighted kappa and Krippendorff's alpha at the ordinal level
  (two raters, every cell a unit: :mod:`service.metrics.stats.agreement`), pooled over every
  topic and per topic, and each set's share of partial support (the figure The Great Nugget
  Recall reports: automatic assigners give it 17.6-24.9% of the time, people 3.5-6.6%).
* **Rankings.** Each nugget score (or support precision/recall) of every run both sets assessed,
  per topic, under each set (:func:`~service.metrics.rag_scoring.evaluate_rag`), cut to the
  topics both assessed (:func:`~service.metrics.stats.judge_meta.common_topics`: what was left
  out and why is counted); on the runs' means over those topics, Kendall's tau-b, tau_AP and
  Spearman's rho, each with its percentile bootstrap interval over topics
  (:func:`~service.metrics.stats.judge_meta.judge_agreement`, the judge comparisons' rule);
  and per topic, Kendall's tau-b between the runs' scores on that topic alone (the paper's
  warning: 0.887 on run means, 0.36-0.54 per topic), with its mean over the topics where it is
  defined.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from service.formats.rag_judgments import Assignments, SupportAnswer
from service.metrics.rag_scoring import evaluate_rag
from service.metrics.stats import rank_agreement as ra
from service.metrics.stats.agreement import TopicLabelAgreement, label_agreement_by_topic
from service.metrics.stats.judge_meta import CommonTopics, JudgeAgreement, common_topics, judge_agreement

#: The labels compared: 0 no support, 1 partial support, 2 (full) support.
LEVELS = (0, 1, 2)
LABELS = ("not_support", "partial_support", "support")
NUGGET_SCORES = ("nugget_all", "nugget_all(strict=true)", "nugget_vital", "nugget_vital(strict=true)",
                 "nugget_weighted", "nugget_weighted(strict=true)")
SUPPORT_SCORES = ("support_precision", "support_recall")
RANKING_MEASURES = ("kendall", "tau_ap", "spearman")


@dataclass(frozen=True, eq=False)
class RankingAgreement:
    """One score's run rankings under the two sets, on the topics both assessed."""

    metric: str
    topics: CommonTopics
    runs: tuple[str, ...]
    correlations: dict[str, JudgeAgreement]  # kendall, tau_ap, spearman
    per_topic_tau: dict[str, float]  # topic -> Kendall's tau-b of the runs' scores there (NaN: undefined)

    @property
    def mean_per_topic_tau(self) -> float:
        values = [v for v in self.per_topic_tau.values() if not math.isnan(v)]
        return float(np.mean(values)) if values else math.nan


@dataclass(frozen=True, eq=False)
class SetComparison:
    """Two sets compared: the labels of the cells both labelled, and the rankings."""

    kind: str  # "assignments" or "support"
    labels: TopicLabelAgreement
    partial_share: tuple[float, float]  # each set's share of partial support among the compared cells
    cells: int  # cells compared
    answers: int  # (run, topic) answers both sets assessed
    only_first: tuple[tuple[str, str], ...]  # answers (run, topic) only the first set assessed
    only_second: tuple[tuple[str, str], ...]
    unmatched: int  # cells one set has and the other lacks within a shared answer (a nugget or a pair)
    rankings: dict[str, RankingAgreement]
    notes: tuple[str, ...] = field(default=())


def _share(confusion: np.ndarray, axis: int) -> float:
    total = confusion.sum()
    return float(confusion.sum(axis=axis)[1] / total) if total else math.nan


def ranking_agreement(metric: str, runs: Sequence[str], topics: Sequence[str], first: np.ndarray,
                      second: np.ndarray, first_topics: Iterable[str], second_topics: Iterable[str], *,
                      resamples: int = 1000, level: float = 0.95, seed: int = 0) -> RankingAgreement:
    """One score's rankings compared: ``first`` and ``second`` are (topics, runs) matrices of the
    runs' per-topic scores under each set (NaN: not scored), ``*_topics`` the topics each set
    assessed; cut to the topics both assessed before anything is computed."""
    common = common_topics(list(topics), first, second, {t: True for t in first_topics},
                           {t: True for t in second_topics})
    correlations = {}
    if len(runs) >= 2 and common.topics:
        correlations = {m: judge_agreement(common.reference, common.candidate, m, resamples=resamples,
                                           level=level, seed=seed) for m in RANKING_MEASURES}
    per_topic = {}
    for i, t in enumerate(common.topics):
        x, y = common.reference[i], common.candidate[i]
        keep = ~(np.isnan(x) | np.isnan(y))
        per_topic[t] = ra.tau_b(x[keep], y[keep]) if keep.sum() >= 2 else math.nan
    return RankingAgreement(metric, common, tuple(runs), correlations, per_topic)


def _rankings(metrics: Sequence[str], first: Assignments | None, second: Assignments | None,
              first_support: Sequence[SupportAnswer], second_support: Sequence[SupportAnswer],
              runs: Sequence[str], resamples: int, level: float, seed: int) -> dict[str, RankingAgreement]:
    """Per metric: the runs' per-topic scores under each set (file mode: computed here)."""
    a = evaluate_rag(metrics, first, first_support)
    b = evaluate_rag(metrics, second, second_support)
    out: dict[str, RankingAgreement] = {}
    topics = sorted(set(a.evaluation.topics) | set(b.evaluation.topics))
    for metric in a.evaluation.measures:

        def matrix(ev) -> np.ndarray:  # type: ignore[no-untyped-def]
            rows = {t: j for j, t in enumerate(ev.evaluation.topics)}
            cols = {r: i for i, r in enumerate(ev.evaluation.runs)}
            values = ev.evaluation.per_topic(metric)
            m = np.full((len(topics), len(runs)), np.nan)
            for i, t in enumerate(topics):
                if t in rows:
                    for k, r in enumerate(runs):
                        if r in cols and ev.evaluated[metric][cols[r], rows[t]]:
                            m[i, k] = values[cols[r], rows[t]]
            return m

        out[str(metric)] = ranking_agreement(str(metric), runs, topics, matrix(a), matrix(b), a.evaluation.topics,
                                             b.evaluation.topics, resamples=resamples, level=level, seed=seed)
    return out


def compare_assignments(first: Assignments, second: Assignments, *, metrics: Sequence[str] = NUGGET_SCORES,
                        resamples: int = 1000, level: float = 0.95, seed: int = 0) -> SetComparison:
    """Two nugget assignment sets of the same answers compared (see the module): ``first`` is
    the reference (NIST's, say), ``second`` the candidate (an automatic assigner's); the runs'
    scores on ``metrics`` computed here from both (file mode)."""
    c = assignment_labels(first, second)
    runs = sorted({run for run, topic in set(first.labels) & set(second.labels)})
    return dataclasses.replace(c, rankings=_rankings(metrics, first, second, (), (), runs, resamples, level, seed))


def assignment_labels(first: Assignments, second: Assignments) -> SetComparison:
    """The label half of :func:`compare_assignments` (no rankings)."""
    per_topic: dict[str, tuple[list[int], list[int]]] = {}
    unmatched = 0
    both = sorted(set(first.labels) & set(second.labels))
    for run, topic in both:
        texts_a, texts_b = first.topics[topic].texts, second.topics[topic].texts
        where_b = {t: k for k, t in enumerate(texts_b)}
        codes_a, codes_b = first.labels[(run, topic)], second.labels[(run, topic)]
        a_labels, b_labels = per_topic.setdefault(topic, ([], []))
        for k, text in enumerate(texts_a):
            if text in where_b:
                a_labels.append(int(codes_a[k]))
                b_labels.append(int(codes_b[where_b[text]]))
            else:
                unmatched += 1
        unmatched += sum(1 for t in texts_b if t not in set(texts_a))
    labels = label_agreement_by_topic(per_topic, LEVELS)
    return _comparison("assignments", labels, both, set(first.labels), set(second.labels), unmatched, {})


def _support_cells(support: Iterable[SupportAnswer]) -> dict[tuple[str, str], tuple[tuple[int, ...], ...]]:
    return {(a.run, a.topic): a.sentences for a in support}


def compare_support(first: Sequence[SupportAnswer], second: Sequence[SupportAnswer], *,
                    metrics: Sequence[str] = SUPPORT_SCORES, resamples: int = 1000, level: float = 0.95,
                    seed: int = 0) -> SetComparison:
    """Two citation-support judgment sets of the same answers compared: a cell is a (sentence,
    citation) pair of an answer both judged, in the order listed; a pair either set did not
    judge (-1), or that one answer's judgment lacks, is not compared. The runs' scores on
    ``metrics`` computed here from both (file mode)."""
    c = support_labels(first, second)
    runs = sorted({run for run, _ in set(_support_cells(first)) & set(_support_cells(second))})
    return dataclasses.replace(c, rankings=_rankings(metrics, None, None, list(first), list(second), runs,
                                                     resamples, level, seed))


def support_labels(first: Sequence[SupportAnswer], second: Sequence[SupportAnswer]) -> SetComparison:
    """The label half of :func:`compare_support` (no rankings)."""
    a, b = _support_cells(first), _support_cells(second)
    per_topic: dict[str, tuple[list[int], list[int]]] = {}
    unmatched = 0
    both = sorted(set(a) & set(b))
    for run, topic in both:
        a_labels, b_labels = per_topic.setdefault(topic, ([], []))
        sa, sb = a[(run, topic)], b[(run, topic)]
        for i in range(max(len(sa), len(sb))):
            ca = sa[i] if i < len(sa) else ()
            cb = sb[i] if i < len(sb) else ()
            for j in range(max(len(ca), len(cb))):
                x = ca[j] if j < len(ca) else None
                y = cb[j] if j < len(cb) else None
                if x is None or y is None or x < 0 or y < 0:
                    unmatched += 1
                    continue
                a_labels.append(int(x))
                b_labels.append(int(y))
    labels = label_agreement_by_topic(per_topic, LEVELS)
    return _comparison("support", labels, both, set(a), set(b), unmatched, {})


def _comparison(kind: str, labels: TopicLabelAgreement, both: list[tuple[str, str]], first: set[tuple[str, str]],
                second: set[tuple[str, str]], unmatched: int, rankings: dict[str, RankingAgreement]) -> SetComparison:
    confusion = labels.overall.confusion
    notes = []
    if not both:
        notes.append("the sets assessed no answer in common: nothing to compare")
    return SetComparison(kind, labels, (_share(confusion, 1), _share(confusion, 0)), int(confusion.sum()), len(both),
                         tuple(sorted(first - second)), tuple(sorted(second - first)), unmatched, rankings,
                         tuple(notes))


def comparison_document(c: SetComparison) -> dict[str, object]:
    """The comparison as JSON-ready data (the CLI's ``--format json``, the API's body): numbers
    at full precision, NaN as None."""
    def num(x: float) -> float | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)

    def agreement(la) -> dict[str, object]:  # type: ignore[no-untyped-def]
        return {"cells": la.documents, "observed": num(la.observed), "kappa": num(la.kappa),
                "kappa_linear": num(la.kappa_linear), "kappa_quadratic": num(la.kappa_quadratic),
                "alpha_ordinal": num(la.alpha), "second_higher": la.higher, "second_lower": la.lower,
                "notes": list(la.notes)}

    overall = c.labels.overall
    return {
        "kind": c.kind, "labels": list(LABELS), "cells": c.cells, "answers": c.answers,
        "only_first": [list(k) for k in c.only_first], "only_second": [list(k) for k in c.only_second],
        "unmatched_cells": c.unmatched,
        "agreement": {**agreement(overall), "confusion": overall.confusion.tolist(),
                      "partial_share_first": num(c.partial_share[0]), "partial_share_second": num(c.partial_share[1])},
        "macro": {k: num(v) for k, v in c.labels.macro.items()},
        "per_topic": {t: agreement(la) for t, la in sorted(c.labels.per_topic.items())},
        "rankings": {m: {"runs": len(r.runs), "topics": r.topics.summary(),
                         **{k: {"value": num(j.value), "low": num(j.low), "high": num(j.high), "level": j.level,
                                "resamples": j.resamples, "notes": list(j.notes)} for k, j in r.correlations.items()},
                         "per_topic_kendall": {t: num(v) for t, v in r.per_topic_tau.items()},
                         "mean_per_topic_kendall": num(r.mean_per_topic_tau)}
                     for m, r in c.rankings.items()},
        "notes": list(c.notes),
    }
