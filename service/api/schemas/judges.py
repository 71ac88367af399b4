"""Judging the judges: the comparison of two qrels versions of a collection.

Version ``a`` is the reference, ``b`` the one compared with it: confusion rows are a's levels,
differences b - a (positive: b is more lenient), rank changes a's rank - b's rank (positive: the
run moves up under b). A figure the data leave undefined is null and a note says why.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from service.api.schemas import Response

Figure = Annotated[float | None, Meta(description="null when undefined (the notes say why).")]


class ComparedVersion(Response, kw_only=True):
    version: Annotated[int | None, Meta(description="null for an assessor's labels (kept, not versioned).")]
    judgment_set: Annotated[str | None, Meta(description="The judgment set it belongs to.")] = None
    assessor: Annotated[str | None, Meta(description="One assessor's labels in that set.")] = None
    judgments: int
    uploaded_by: str
    uploaded_at: str | None


class JudgedOverlapOut(Response, kw_only=True):
    """The judged (topic, document) pairs the two versions have in common."""

    a: Annotated[int, Meta(description="Judgments of version a.")]
    b: int
    both: int
    only_a: int
    only_b: int
    union: int
    share_of_a: Annotated[float | None, Meta(description="Share of a's judged documents b also judged.")]
    share_of_b: float | None
    jaccard: Annotated[float | None, Meta(description="both / union.")]


class LabelFigures(Response, kw_only=True):
    """Label agreement on the documents both versions judged."""

    documents: int
    observed: Annotated[float | None, Meta(description="Share of those documents with the same label.")]
    kappa: Annotated[float | None, Meta(description="Cohen's kappa.")]
    kappa_linear: Annotated[float | None, Meta(description="Weighted kappa, linear weights |i - j| on positions.")]
    kappa_quadratic: Annotated[float | None, Meta(description="Weighted kappa, quadratic weights (i - j)^2.")]
    alpha: Annotated[float | None, Meta(description="Krippendorff's alpha (ordinal).")]
    higher: Annotated[int, Meta(description="Documents b labels higher than a.")]
    lower: Annotated[int, Meta(description="Documents b labels lower than a.")]


class OverallLabels(LabelFigures, kw_only=True):
    alpha_level: str
    confusion: Annotated[list[list[int]], Meta(description="Rows a's level, columns b's, in `levels` order.")]


class TopicLabels(LabelFigures, kw_only=True):
    topic: str
    added: Annotated[int, Meta(description="Judgments b adds on the topic.")]
    removed: int
    changed: int


class LabelAgreementOut(Response, kw_only=True):
    levels: Annotated[list[int], Meta(description="The scale compared (the confusion matrix's order).")]
    overlap: JudgedOverlapOut
    changes: Annotated[dict[str, int], Meta(description="Judgments added, removed and changed from a to b.")]
    overall: Annotated[OverallLabels, Meta(description="Every topic's documents pooled (one confusion matrix).")]
    macro: Annotated[dict[str, float | None], Meta(description="The mean of each figure over the topics "
                                                                 "where it is defined.")]
    defined: Annotated[dict[str, int], Meta(description="The topics where each figure is defined.")]
    topics: list[TopicLabels]
    notes: list[str]


class ComparedRun(Response, kw_only=True):
    run: str
    team: str | None
    mean_a: float | None
    mean_b: float | None
    rank_a: int
    rank_b: int
    change: Annotated[int, Meta(description="rank_a - rank_b: positive when the run moves up under b.")]


class RankChangeOut(Response, kw_only=True):
    run: str | None
    rank_a: int
    rank_b: int
    change: int


class RankingOut(Response, kw_only=True):
    """How alike the two versions rank the runs by their means."""

    runs: int
    kendall: Annotated[float | None, Meta(description="Kendall's tau-b.")]
    tau_ap: Annotated[float | None, Meta(description="tau_AP with a as the reference (b's ranking walked).")]
    tau_ap_reverse: Annotated[float | None, Meta(description="tau_AP with b as the reference.")]
    tau_ap_symmetric: Figure
    tau_ap_b: Annotated[float | None, Meta(description="Urbano & Marrero's tie-aware, symmetric tau_AP_b.")]
    spearman: Figure
    pearson: Figure
    top_k: int
    top_k_runs: Annotated[int, Meta(description="Runs in a's top k (ties at the k-th included).")]
    tau_top_k: Annotated[float | None, Meta(description="tau-b over a's top k runs.")]
    largest_change: RankChangeOut | None
    notes: list[str]


class TopicPoint(Response, kw_only=True):
    topic: str
    mean_a: float | None
    mean_b: float | None


class BlandAltmanOut(Response, kw_only=True):
    """Bland-Altman of the per-topic means over the compared runs, b - a."""

    topics: int
    dropped: int
    bias: Annotated[float | None, Meta(description="Mean of b - a: positive, b is more lenient.")]
    sd: Figure
    level: float
    lower: Annotated[float | None, Meta(description="Lower limit of agreement, bias - z sd.")]
    upper: Figure
    bias_low: Annotated[float | None, Meta(description="The t interval of the bias.")]
    bias_high: Figure
    direction: Annotated[str, Meta(description="more lenient, stricter or no bias (b against a).")]
    points: list[TopicPoint]
    notes: list[str]


class StoredTestOut(Response, kw_only=True):
    test: str
    alpha: float
    correction: str
    resamples: int | None
    topics: int


class SignificanceAgreementOut(Response, kw_only=True):
    """Each pair of runs' verdict (significant in one direction or not) under both versions' tests."""

    pairs: int
    untested: int
    kept_significant: int
    kept_not_significant: int
    lost: Annotated[int, Meta(description="Significant under a only.")]
    gained: Annotated[int, Meta(description="Significant under b only.")]
    flipped: Annotated[int, Meta(description="Significant under both, in opposite directions.")]
    agreement: Annotated[float | None, Meta(description="Share of the pairs keeping their verdict.")]
    kept_of_significant: Figure
    significant_a: int
    significant_b: int
    test_a: StoredTestOut | None = None
    test_b: StoredTestOut | None = None


class RunCorrelation(Response, kw_only=True):
    run: str
    kendall: Figure
    pearson: Figure


class DisagreeingTopic(Response, kw_only=True):
    topic: str
    tau: Annotated[float | None, Meta(description="tau-b of the runs' order on the topic under a and b.")]
    disagreement: Annotated[float | None, Meta(description="1 - tau (0 same order, 2 reversed).")]
    mean_difference: Annotated[float | None, Meta(description="Mean over runs of b - a on the topic.")]
    mean_a: float | None
    mean_b: float | None
    added: int
    removed: int
    changed: int


class TopicCorrelationOut(Response, kw_only=True):
    mean_kendall: Annotated[float | None, Meta(description="tau-b over topics of the per-topic means.")]
    mean_pearson: Figure
    runs: list[RunCorrelation]
    disagreeing: Annotated[list[DisagreeingTopic], Meta(description="Every topic, most disagreement first.")]
    notes: list[str]


class ComparedTopicsOut(Response, kw_only=True):
    """The topics the score figures compare on: those both sides judged (issue 25, item 8)."""

    compared: Annotated[int, Meta(description="Topics compared: judged by both, with a relevant document under one "
                                              "at least. The runs' means, ranking, Bland-Altman, per-topic figures "
                                              "are over these.")]
    left_out: Annotated[int, Meta(description="Topics left out: only_a + only_b + no_relevant.")]
    only_a: Annotated[list[str], Meta(description="Topics judged by a only.")]
    only_b: Annotated[list[str], Meta(description="Topics judged by b only.")]
    no_relevant: Annotated[list[str], Meta(description="Topics both judged without any relevant document.")]
    zero_a: Annotated[list[str], Meta(description="Compared topics a judged without a relevant document: every "
                                                  "run scores 0 there under a, as trec_eval does.")]
    zero_b: Annotated[list[str], Meta(description="The same under b.")]
    sentence: Annotated[str, Meta(description="The account in words.")]


class QrelsComparison(Response, kw_only=True):
    """Two qrels versions compared (a the reference, b the compared one)."""

    collection: int
    a: ComparedVersion
    b: ComparedVersion
    metric: str
    configuration: Annotated[int, Meta(description="The configuration version whose stored scores are read.")]
    labels: LabelAgreementOut
    runs: Annotated[list[ComparedRun], Meta(description="The runs evaluated under both versions.")]
    ranking: RankingOut | None
    bland_altman: BlandAltmanOut | None
    topics: TopicCorrelationOut | None
    compared_topics: Annotated[ComparedTopicsOut | None, Meta(
        description="The topics the score figures are on (null when there are none: an assessor's labels).")] = None
    only_a: Annotated[list[str], Meta(description="Runs evaluated under a only (left out).")]
    only_b: list[str]
    significance: SignificanceAgreementOut | None
    significance_reason: Annotated[str | None, Meta(description="Why `significance` is null.")]
    notes: list[str]


# --------------------------------------------------------------------------- several assessors (issue 25, item 9)
class AlphaByLevel(Response, kw_only=True):
    """Krippendorff's alpha at three levels of measurement (null: undefined)."""

    nominal: Figure
    ordinal: Figure
    interval: Figure


class TopicAlpha(AlphaByLevel, kw_only=True):
    topic: str
    documents: Annotated[int, Meta(description="The topic's documents with two labels or more (pairable).")]
    labels: Annotated[int, Meta(description="The labels of those documents.")]


class AssessorDisagreement(Response, kw_only=True):
    assessor: str
    labels: int
    mean_kappa: Annotated[float | None, Meta(description="Mean Cohen's kappa with every other assessor (the pairs "
                                                         "where it is defined).")]
    alpha_without: Annotated[AlphaByLevel, Meta(description="Alpha of the other assessors' labels.")]
    ordinal_change_without: Annotated[float | None, Meta(
        description="Ordinal alpha without this assessor minus with everyone: positive when the others agree more "
                    "without them (the rows are ordered by it, largest first).")]


class AssessorPair(Response, kw_only=True):
    a: Annotated[str, Meta(description="The first assessor (the confusion matrix's rows).")]
    b: str
    documents: Annotated[int, Meta(description="Documents both labelled.")]
    observed: Figure
    kappa: Annotated[float | None, Meta(description="Cohen's kappa.")]
    kappa_linear: Annotated[float | None, Meta(description="Weighted kappa, linear weights.")]
    kappa_quadratic: Annotated[float | None, Meta(description="Weighted kappa, quadratic weights.")]
    alpha: Annotated[float | None, Meta(description="Krippendorff's ordinal alpha of the two.")]
    confusion: Annotated[list[list[int]], Meta(description="Rows a's level, columns b's, in `levels` order.")]
    notes: list[str]


class AssessorAgreementOut(Response, kw_only=True):
    """How far the assessors whose labels a judgment set keeps agree with each other."""

    collection: int
    judgment_set: str
    assessors: list[str]
    levels: Annotated[list[int], Meta(description="The scale (alpha's value domain, the confusion matrices' order).")]
    documents: Annotated[int, Meta(description="Documents with at least one label.")]
    labels: Annotated[int, Meta(description="Labels counted (negative levels, pooled but unjudged, left out).")]
    pairable_documents: Annotated[int, Meta(description="Documents with two labels or more (alpha's units).")]
    unjudged: int
    alpha: Annotated[AlphaByLevel, Meta(description="Krippendorff's alpha over every assessor, missing labels "
                                                    "allowed.")]
    per_topic: list[TopicAlpha]
    disagreement: Annotated[list[AssessorDisagreement], Meta(description="Who disagrees most first.")]
    pairs: Annotated[list[AssessorPair], Meta(description="Every pair of assessors.")]
    notes: list[str]
