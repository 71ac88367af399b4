"""The scores of generated answers (docs/rag.md, docs/definitions.md): the six nugget scores
and the citation support's weighted precision and recall, per answer, and their registration
in the metric registry (family ``rag``).

Nugget scores (Pradeep et al., "The Great Nugget Recall", SIGIR 2025; nuggetizer's
``calculate_nugget_scores`` for All, All strict, Vital, Vital strict): a nugget's credit is 1
when the answer supports it, 0.5 when it supports it partially (0 with ``strict=true``), 0
otherwise;

* ``nugget_all``      the mean credit over the topic's nuggets               (A, A_strict)
* ``nugget_vital``    the mean credit over its vital nuggets; undefined (NaN) for a topic
                      without vital nuggets, never 0                        (V, V_strict)
* ``nugget_weighted`` sum(w * credit) / sum(w), w = 1 for vital, 0.5 for okay (W, W_strict)

Vital strict (``V_strict``) is the track's primary score.

Citation support (Thakur et al., "Support Evaluation for the TREC 2024 RAG Track", SIGIR
2025): a judged (sentence, citation) pair's credit is 1 for full support, 0.5 for partial, 0
for none. ``citations=first`` (TREC 2024) uses each sentence's first listed citation,
``citations=every`` all of them.

* ``support_precision`` the sum of the used judged pairs' credits / their number; undefined
  (NaN) for an answer without a judged pair;
* ``support_recall``    the sum of the sentences' credits / the number of sentences, a
  sentence without citation counting 0. A sentence's credit is its first citation's
  (``first``) or its best judged citation's (``every``: a sentence is as supported as its best
  citation makes it, so recall stays within [0, 1]).

A pair judged ``-1`` (not judged) adds nothing and is left out of precision's denominator; a
sentence whose used citations are all unjudged is left out of recall's denominator (a sentence
without any citation stays in it). :class:`SupportCounts` counts both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.errors import InvalidMeasure
from service.metrics.spec import UNIT, Measure, MetricDef, Param, register

FAMILY = "rag"
NUGGET_METRICS = ("nugget_all", "nugget_vital", "nugget_weighted")
SUPPORT_METRICS = ("support_precision", "support_recall")

STRICT = Param("strict", "bool", False, "partial support earns 0 instead of 0.5")
CITATIONS = Param("citations", "choice", "first", "which citations of a sentence count: first (TREC 2024) or every",
                  choices=("first", "every"))
#: Weight of a vital and of an okay nugget in the weighted score.
VITAL_WEIGHT, OKAY_WEIGHT = 1.0, 0.5
#: Credit of a support code (0 none, 1 partial, 2 full); partial is 0 when strict.
PARTIAL_CREDIT = 0.5


def _not_a_ranking(*_: Any) -> Any:
    raise InvalidMeasure("the RAG metrics score answers (nuggets, citation support), not ranked lists: "
                         "`cranfield rag eval`, docs/rag.md")


def _register(name: str, param: Param, doc: str, *aliases: str | tuple[str, dict[str, Any]]) -> None:
    register(MetricDef(name, _not_a_ranking, (param,), doc, cutoff="none", ideal_is_one=True, family=FAMILY,
                       bounds=UNIT), *aliases)


_register("nugget_all", STRICT, "share of the topic's nuggets the answer supports (0.5 for partial support)",
          "A", ("A_strict", {"strict": True}))
_register("nugget_vital", STRICT, "share of the topic's vital nuggets the answer supports; the track's primary "
          "score strict (undefined without vital nuggets)", "V", ("V_strict", {"strict": True}))
_register("nugget_weighted", STRICT, "nugget support weighted vital 1, okay 0.5",
          "W", ("W_strict", {"strict": True}))
_register("support_precision", CITATIONS, "weighted share of an answer's judged citations that support their "
          "sentence (full 1, partial 0.5; undefined without a judged citation)")
_register("support_recall", CITATIONS, "weighted share of an answer's sentences its citations support "
          "(a sentence without citation: 0)")


def is_rag(measure: Measure) -> bool:
    return measure.definition.family == FAMILY


# ----------------------------------------------------------------------------- nuggets


def nugget_score(measure: Measure, codes: np.ndarray, vital: np.ndarray) -> float:
    """One answer's nugget score: ``codes`` per nugget (2 support, 1 partial, 0 not), ``vital``
    per nugget. NaN: undefined (vital, on a topic without vital nuggets)."""
    credit = np.where(codes == 2, 1.0, np.where(codes == 1, 0.0 if measure.get("strict") else PARTIAL_CREDIT, 0.0))
    if measure.name == "nugget_all":
        return float(credit.mean()) if credit.shape[0] else math.nan
    if measure.name == "nugget_vital":
        return float(credit[vital].mean()) if bool(vital.any()) else math.nan
    if measure.name == "nugget_weighted":
        weights = np.where(vital, VITAL_WEIGHT, OKAY_WEIGHT)
        return float((weights * credit).sum() / weights.sum()) if credit.shape[0] else math.nan
    raise AssertionError(measure.name)


# ----------------------------------------------------------------------------- citation support


_SUPPORT_CREDIT = {2: 1.0, 1: 0.5, 0: 0.0}


@dataclass(frozen=True)
class SupportCounts:
    """One answer's support scores and what was left out of them."""

    precision: float  # NaN: no judged pair
    recall: float  # NaN: no sentence in the denominator
    judged_pairs: int
    unjudged_pairs: int  # used pairs judged -1, left out of precision's denominator
    sentences: int  # sentences in recall's denominator
    unjudged_sentences: int  # sentences whose used citations are all unjudged, left out of it


def support_scores(sentences: Sequence[Sequence[int]], citations: str = "first") -> SupportCounts:
    """Weighted precision and recall of one answer: ``sentences`` holds each sentence's support
    codes (0, 1, 2; -1 not judged) in the order its citations are listed."""
    if citations not in ("first", "every"):
        raise ValueError(f"citations is first or every, not {citations!r}")
    total = 0.0
    judged = unjudged = 0
    recall_sum = 0.0
    in_recall = left_out = 0
    for codes in sentences:
        used = codes[:1] if citations == "first" else codes
        credits = [_SUPPORT_CREDIT[c] for c in used if c != -1]
        judged += len(credits)
        unjudged += len(used) - len(credits)
        total += sum(credits)
        if used and not credits:
            left_out += 1  # cited, but none of its used citations judged
            continue
        in_recall += 1
        recall_sum += max(credits) if credits else 0.0  # (first: the one credit there is)
    precision = total / judged if judged else math.nan
    recall = recall_sum / in_recall if in_recall else math.nan
    return SupportCounts(precision, recall, judged, unjudged, in_recall, left_out)
