"""Judging the judges, part one: how far two judgment sets (or several assessors) agree on labels.

* The confusion matrix of two sets' labels on the documents both judged, by level of the scale.
* Cohen's kappa (Cohen 1960, "A coefficient of agreement for nominal scales") and the weighted
  kappa (Cohen 1968, "Weighted kappa"), with linear or quadratic disagreement weights on the
  levels' positions in the scale (Cicchetti & Allison 1971; Fleiss & Cohen 1973).
* Krippendorff's alpha (Krippendorff, "Content Analysis", 2004/2019, and "Computing
  Krippendorff's alpha-reliability", 2011) for any number of raters with missing values, with
  the nominal, ordinal, interval or ratio difference function.
* The share of judged documents the two sets have in common.
* Bland & Altman's limits of agreement (Lancet 1986, "Statistical methods for assessing
  agreement between two methods of clinical measurement") of per-topic (or per-run) scores.

Sign conventions: the *first* set is the reference (``a``, rows of the confusion matrix, the
official or human judgments) and the second the one compared with it (``b``, columns: an
automatic judge, say). Bland-Altman differences are ``other - reference``: a positive bias
means the compared set gives higher scores, i.e. it is more lenient than the reference.

A figure that the inputs leave undefined (no document judged by both, a single level used by
both sets, no variation at all) is NaN, and the result's ``notes`` say why; an input that is
wrong (labels outside the scale, arrays of different lengths) is a ``ValueError``. The exact
definitions are in docs/statistics.md ("Judging the judges: agreement measures").
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from service.metrics.stats.common import paired_scores

Weights = Literal["none", "linear", "quadratic"]
AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]
ALPHA_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

NO_OVERLAP = "no document was judged by both sets"
SINGLE_LEVEL = "both sets gave every document the same single level: chance agreement is total"
NO_PAIRS = "no unit has two ratings"
NO_VARIATION = "every rating has the same value: there is no variation to agree on"


# --------------------------------------------------------------------------- validation
def as_levels(levels: Sequence[int] | np.ndarray) -> np.ndarray:
    """The scale's levels as a strictly increasing int64 vector (at least one level)."""
    lv = np.asarray(levels)
    if lv.ndim != 1 or lv.shape[0] == 0:
        raise ValueError("levels must be a non-empty sequence of integers")
    if not (np.issubdtype(lv.dtype, np.integer) or (np.issubdtype(lv.dtype, np.floating)
                                                      and np.all(lv == np.round(lv)))):
        raise ValueError(f"levels must be integers, got {lv.tolist()}")
    lv = lv.astype(np.int64)
    if np.any(np.diff(lv) <= 0):
        raise ValueError(f"levels must be strictly increasing, got {lv.tolist()}")
    return lv


def level_positions(labels: np.ndarray | Sequence[int], levels: np.ndarray, name: str = "labels") -> np.ndarray:
    """Each label's position (0-based) in ``levels``; a label outside the scale is a ValueError."""
    x = np.asarray(labels)
    if x.ndim != 1:
        raise ValueError(f"{name} must be a vector of labels, got shape {x.shape}")
    if x.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if np.issubdtype(x.dtype, np.floating) and not np.all(x == np.round(x)):
        raise ValueError(f"{name} must be integer levels")
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)
            or np.issubdtype(x.dtype, np.bool_)):
        raise ValueError(f"{name} must be integer levels, got dtype {x.dtype}")
    x = x.astype(np.int64)
    pos = np.searchsorted(levels, x)
    bad = (pos >= levels.shape[0]) | (levels[np.minimum(pos, levels.shape[0] - 1)] != x)
    if bad.any():
        outside = sorted(set(x[bad].tolist()))
        raise ValueError(f"{name} {outside[:10]} are not levels of the scale {levels.tolist()}")
    return pos


def _aligned(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray,
             levels: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lv = as_levels(levels)
    pa = level_positions(a, lv, "labels of the first set")
    pb = level_positions(b, lv, "labels of the second set")
    if pa.shape != pb.shape:
        raise ValueError(f"the two label vectors must be aligned (same documents), got {pa.shape[0]} and "
                         f"{pb.shape[0]} labels")
    return pa, pb, lv


# --------------------------------------------------------------------------- kappa
def confusion_matrix(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray,
                     levels: Sequence[int] | np.ndarray) -> np.ndarray:
    """(levels, levels) int64 counts: entry [i, j] is the number of documents the first set
    labels ``levels[i]`` and the second ``levels[j]``. ``a`` and ``b`` are aligned: the labels
    of the same documents, in the same order."""
    pa, pb, lv = _aligned(a, b, levels)
    k = lv.shape[0]
    return np.bincount(pa * k + pb, minlength=k * k).reshape(k, k).astype(np.int64)


def disagreement_weights(k: int, weights: Weights | None = "none") -> np.ndarray:
    """Cohen's (k, k) disagreement weights on the levels' positions i, j: ``none`` 1 - [i = j],
    ``linear`` |i - j|, ``quadratic`` (i - j)^2. (Only ratios matter: kappa is unchanged when
    the weights are scaled, so |i - j| / (k - 1) gives the same linear kappa.)"""
    idx = np.arange(k, dtype=np.float64)
    diff = np.abs(idx[:, None] - idx[None, :])
    if weights in (None, "none"):
        return (diff > 0).astype(np.float64)
    if weights == "linear":
        return diff
    if weights == "quadratic":
        return diff**2
    raise ValueError(f"weights is 'none', 'linear' or 'quadratic', got {weights!r}")


def _kappa(confusion: np.ndarray, weights: Weights | None) -> tuple[float, str | None]:
    o = np.asarray(confusion, dtype=np.float64)
    n = o.sum()
    if n == 0:
        return math.nan, NO_OVERLAP
    w = disagreement_weights(o.shape[0], weights)
    expected = np.outer(o.sum(axis=1), o.sum(axis=0)) / n
    chance = float((w * expected).sum())
    if chance == 0.0:
        return math.nan, SINGLE_LEVEL
    return 1.0 - float((w * o).sum()) / chance, None


def kappa_from_confusion(confusion: np.ndarray, weights: Weights | None = "none") -> float:
    """Cohen's kappa from a confusion matrix: 1 - sum(w O) / sum(w E), O the observed counts,
    E = (row sums)(column sums)^T / n the counts expected by chance from the two sets' own label
    distributions, w the disagreement weights (:func:`disagreement_weights`). With w = 1 - I
    this is (p_o - p_e) / (1 - p_e). NaN when no document was judged by both or when the
    expected disagreement is 0 (both sets used one and the same level)."""
    return _kappa(confusion, weights)[0]


def cohen_kappa(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray, levels: Sequence[int] | np.ndarray,
                weights: Weights | None = "none") -> float:
    """Cohen's (weighted) kappa of two aligned label vectors on the scale ``levels``
    (:func:`kappa_from_confusion` of their :func:`confusion_matrix`)."""
    return kappa_from_confusion(confusion_matrix(a, b, levels), weights)


# --------------------------------------------------------------------------- Krippendorff's alpha
def _difference_matrix(values: np.ndarray, n_c: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's squared difference delta^2(c, k) between the values (V, V)."""
    v = values.astype(np.float64)
    if level == "nominal":
        return 1.0 - np.eye(v.shape[0])
    if level == "interval":
        return (v[:, None] - v[None, :]) ** 2
    if level == "ratio":
        if (v < 0).any():
            raise ValueError("the ratio level needs non-negative values")
        s = v[:, None] + v[None, :]
        d = v[:, None] - v[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(s != 0, (d / np.where(s != 0, s, 1.0)) ** 2, 0.0)
        return out
    if level == "ordinal":
        # (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 for c <= k, symmetric
        cum = np.concatenate([[0.0], np.cumsum(n_c)])  # cum[i] = n_0 + ... + n_{i-1}
        lo = np.minimum.outer(np.arange(v.shape[0]), np.arange(v.shape[0]))
        hi = np.maximum.outer(np.arange(v.shape[0]), np.arange(v.shape[0]))
        between = cum[hi + 1] - cum[lo]
        return (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    raise ValueError(f"level is one of {', '.join(ALPHA_LEVELS)}, got {level!r}")


@dataclass(frozen=True, eq=False)
class Alpha:
    """Krippendorff's alpha with what it was computed on."""

    value: float  # NaN when undefined (``reason`` says why)
    level: str  # nominal, ordinal, interval or ratio
    units: int  # units with at least two ratings (the pairable units)
    pairable: int  # n: the ratings in those units
    observed_disagreement: float  # D_o
    expected_disagreement: float  # D_e
    coincidence: np.ndarray  # (values, values) coincidence matrix o_ck
    values: np.ndarray  # the value domain (sorted)
    reason: str | None = None


def _value_counts(ratings: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(units, V) counts: how many raters gave each value to each unit (NaN: no rating)."""
    raters, units = ratings.shape
    seen = ~np.isnan(ratings)
    r = ratings[seen]
    pos = np.searchsorted(values, r)
    bad = (pos >= values.shape[0]) | (values[np.minimum(pos, values.shape[0] - 1)] != r)
    if bad.any():
        raise ValueError(f"ratings {sorted(set(r[bad].tolist()))[:10]} are not in the value domain "
                         f"{values.tolist()}")
    unit = np.broadcast_to(np.arange(units), (raters, units))[seen]
    k = values.shape[0]
    return np.bincount(unit * k + pos, minlength=units * k).reshape(units, k).astype(np.float64)


def krippendorff(ratings: np.ndarray | Sequence[Sequence[float]], level: AlphaLevel = "ordinal",
                 values: Sequence[float] | np.ndarray | None = None) -> Alpha:
    """Krippendorff's alpha of a (raters, units) reliability matrix; NaN marks a missing rating.

    Units with fewer than two ratings are not pairable and left out. With n_uc the number of
    ratings of value c in unit u and m_u its ratings, the coincidence matrix is
    o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1); n_c = sum_k o_ck, n = sum_c n_c, and

        alpha = 1 - D_o / D_e,  D_o = sum_ck o_ck d2_ck / n,  D_e = sum_ck n_c n_k d2_ck / (n (n - 1))

    with the squared difference d2 of the level of measurement: nominal [c != k]; ordinal
    (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 over the ordered values; interval (c - k)^2; ratio
    ((c - k)/(c + k))^2. ``values`` is the ordered value domain (default: the values seen);
    values no one used change nothing but the interval and ratio distances are on the values
    themselves. NaN, with the reason, when no unit has two ratings or D_e is 0 (every pairable
    rating has the same value).
    """
    x = np.asarray(ratings, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"ratings must be a (raters, units) matrix, got shape {x.shape}")
    if np.isinf(x).any():
        raise ValueError("ratings contain infinite values")
    if level not in ALPHA_LEVELS:
        raise ValueError(f"level is one of {', '.join(ALPHA_LEVELS)}, got {level!r}")
    if values is None:
        domain = np.unique(x[~np.isnan(x)])
    else:
        domain = np.asarray(values, dtype=np.float64)
        if domain.ndim != 1 or np.any(np.diff(domain) <= 0) or np.isnan(domain).any():
            raise ValueError("values must be a strictly increasing vector")
    counts = _value_counts(x, domain) if domain.shape[0] else np.zeros((x.shape[1], 0))
    return alpha_from_counts(counts, level, domain)


def alpha_from_counts(counts: np.ndarray, level: AlphaLevel, values: np.ndarray) -> Alpha:
    """Krippendorff's alpha from the (units, V) value counts n_uc (how many ratings of
    ``values[c]`` unit u has): the coincidence matrix is ``(n / (m_u - 1))^T n - diag(...)``
    over the pairable units, so the work is linear in the units (and in the ratings, which
    build the counts); :func:`krippendorff` and :func:`assessor_agreement` both end here."""
    domain = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    k = domain.shape[0]
    if not counts.shape[0]:
        return Alpha(math.nan, level, 0, 0, math.nan, math.nan, np.zeros((k, k)), domain, NO_PAIRS)
    weighted = counts / (m - 1.0)[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=1)
    n = float(n_c.sum())
    d2 = _difference_matrix(domain, n_c, level)
    d_o = float((o * d2).sum()) / n
    d_e = float((np.outer(n_c, n_c) * d2).sum()) / (n * (n - 1.0))
    units, rated = int(counts.shape[0]), int(m.sum())
    if d_e == 0.0:
        return Alpha(math.nan, level, units, rated, d_o, d_e, o, domain, NO_VARIATION)
    return Alpha(1.0 - d_o / d_e, level, units, rated, d_o, d_e, o, domain)


def krippendorff_alpha(ratings: np.ndarray | Sequence[Sequence[float]], level: AlphaLevel = "ordinal",
                       values: Sequence[float] | np.ndarray | None = None) -> float:
    """Krippendorff's alpha of a (raters, units) matrix with NaN for missing ratings
    (:func:`krippendorff`'s value)."""
    return krippendorff(ratings, level, values).value


# --------------------------------------------------------------------------- two sets' labels
@dataclass(frozen=True, eq=False)
class LabelAgreement:
    """Agreement of two judgment sets' labels on the documents both judged (first = reference)."""

    levels: tuple[int, ...]
    documents: int  # documents judged by both (the aligned labels compared)
    confusion: np.ndarray  # (levels, levels): rows the first set's level, columns the second's
    observed: float  # share of those documents with the same label
    kappa: float  # Cohen's kappa
    kappa_linear: float  # weighted kappa, linear weights |i - j|
    kappa_quadratic: float  # weighted kappa, quadratic weights (i - j)^2
    alpha: float  # Krippendorff's alpha at ``alpha_level`` (two raters, no missing value)
    alpha_level: str
    higher: int  # documents the second set labels higher than the first (more lenient there)
    lower: int  # documents the second set labels lower
    notes: tuple[str, ...] = field(default=())  # why a figure is NaN


def _agreement_from_confusion(confusion: np.ndarray, levels: np.ndarray, alpha_level: str) -> LabelAgreement:
    o = np.asarray(confusion, dtype=np.int64)
    n = int(o.sum())
    notes: list[str] = []
    kappas = []
    for w in ("none", "linear", "quadratic"):
        value, why = _kappa(o, w)  # type: ignore[arg-type]
        kappas.append(value)
        if why and why not in notes:
            notes.append(why)
    # Krippendorff's alpha of two raters from the confusion matrix: every document is a unit
    # with the two ratings (level_i, level_j), so o_ck = C_ck + C_kc (m_u - 1 = 1).
    k = levels.shape[0]
    if n:
        coincidence = (o + o.T).astype(np.float64)
        n_c = coincidence.sum(axis=1)
        d2 = _difference_matrix(levels.astype(np.float64), n_c, alpha_level)
        total = float(n_c.sum())
        d_e = float((np.outer(n_c, n_c) * d2).sum()) / (total * (total - 1.0)) if total > 1 else 0.0
        if d_e == 0.0:
            alpha = math.nan
            notes.append(f"Krippendorff's alpha: {NO_VARIATION}")
        else:
            alpha = 1.0 - (float((coincidence * d2).sum()) / total) / d_e
    else:
        alpha = math.nan
    upper = np.triu(np.ones((k, k), dtype=bool), 1)
    return LabelAgreement(
        levels=tuple(levels.tolist()), documents=n, confusion=o,
        observed=float(np.trace(o)) / n if n else math.nan, kappa=kappas[0], kappa_linear=kappas[1],
        kappa_quadratic=kappas[2], alpha=alpha, alpha_level=alpha_level, higher=int(o[upper].sum()),
        lower=int(o[upper.T].sum()), notes=tuple(notes))


def label_agreement(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray, levels: Sequence[int] | np.ndarray,
                    *, alpha_level: AlphaLevel = "ordinal") -> LabelAgreement:
    """Every label-agreement figure of two aligned label vectors (the labels that the first
    and the second set gave to the same documents, in the same order) on the scale ``levels``
    (increasing integers; every label must be one of them). Krippendorff's alpha is that of the
    two sets as two raters of every document (ordinal by default; its ordinal distance uses
    the pooled frequencies of the levels)."""
    if alpha_level not in ALPHA_LEVELS:
        raise ValueError(f"alpha_level is one of {', '.join(ALPHA_LEVELS)}, got {alpha_level!r}")
    lv = as_levels(levels)
    return _agreement_from_confusion(confusion_matrix(a, b, lv), lv, alpha_level)


@dataclass(frozen=True, eq=False)
class TopicLabelAgreement:
    """:func:`label_agreement` per topic and over all topics' documents pooled."""

    per_topic: dict[str, LabelAgreement]
    overall: LabelAgreement  # the documents of every topic pooled in one confusion matrix
    macro: dict[str, float]  # mean over the topics where each figure is defined (NaN: none)
    defined: dict[str, int]  # the number of topics where each figure is defined


MACRO_FIGURES = ("observed", "kappa", "kappa_linear", "kappa_quadratic", "alpha")


def label_agreement_by_topic(topics: Mapping[str, tuple[Sequence[int] | np.ndarray, Sequence[int] | np.ndarray]],
                             levels: Sequence[int] | np.ndarray, *,
                             alpha_level: AlphaLevel = "ordinal") -> TopicLabelAgreement:
    """Per topic: {topic: (first set's labels, second set's labels)} on the documents both
    judged, aligned. The overall figures pool every topic's documents (micro: one confusion
    matrix, so chance agreement is estimated from all labels); ``macro`` is the plain mean of
    the per-topic figures over the topics where they are defined."""
    if alpha_level not in ALPHA_LEVELS:
        raise ValueError(f"alpha_level is one of {', '.join(ALPHA_LEVELS)}, got {alpha_level!r}")
    lv = as_levels(levels)
    k = lv.shape[0]
    pooled = np.zeros((k, k), dtype=np.int64)
    per: dict[str, LabelAgreement] = {}
    for topic, (a, b) in topics.items():
        c = confusion_matrix(a, b, lv)
        pooled += c
        per[topic] = _agreement_from_confusion(c, lv, alpha_level)
    macro: dict[str, float] = {}
    defined: dict[str, int] = {}
    for name in MACRO_FIGURES:
        vals = np.array([getattr(r, name) for r in per.values()], dtype=np.float64)
        ok = ~np.isnan(vals)
        defined[name] = int(ok.sum())
        macro[name] = float(vals[ok].mean()) if ok.any() else math.nan
    return TopicLabelAgreement(per, _agreement_from_confusion(pooled, lv, alpha_level), macro, defined)


# --------------------------------------------------------------------------- judged documents
@dataclass(frozen=True)
class JudgedOverlap:
    """How many judged documents (keys such as (topic, docno)) two sets share."""

    first: int  # documents the first set judged
    second: int
    both: int
    only_first: int
    only_second: int
    union: int

    @property
    def share_of_first(self) -> float:
        """Share of the first set's judged documents the second also judged (NaN: none)."""
        return self.both / self.first if self.first else math.nan

    @property
    def share_of_second(self) -> float:
        return self.both / self.second if self.second else math.nan

    @property
    def jaccard(self) -> float:
        """|both| / |union| (NaN when neither set judged anything)."""
        return self.both / self.union if self.union else math.nan


def judged_overlap(first: Iterable[Hashable], second: Iterable[Hashable]) -> JudgedOverlap:
    """The overlap of two sets of judged keys (duplicates count once). Keys are whatever
    identifies a judgment, typically (topic, docno); per topic, pass one topic's docnos."""
    a, b = set(first), set(second)
    both = len(a & b)
    return JudgedOverlap(len(a), len(b), both, len(a) - both, len(b) - both, len(a) + len(b) - both)


# --------------------------------------------------------------------------- Bland-Altman
@dataclass(frozen=True, eq=False)
class BlandAltman:
    """Bland & Altman's agreement of two measurements of the same items (topics or runs).

    Differences are ``other - reference``: a positive ``bias`` means the compared set scores
    higher than the reference on average (it is more lenient), a negative one that it is stricter.
    """

    n: int  # items compared (both scores present)
    dropped: int  # items left out: a score missing (NaN) in either
    bias: float  # mean difference
    sd: float  # sample standard deviation of the differences (ddof = 1); NaN when n < 2
    level: float
    lower: float  # bias - z sd, z the standard normal (1 + level)/2 quantile (1.96 at 95%)
    upper: float  # bias + z sd
    bias_low: float  # Student t interval of the bias: bias -+ t_{(1+level)/2, n-1} sd / sqrt(n)
    bias_high: float
    differences: np.ndarray  # other - reference on the compared items, in input order
    averages: np.ndarray  # (other + reference) / 2 on the same items (the plot's x axis)
    notes: tuple[str, ...] = field(default=())

    @property
    def direction(self) -> str:
        """'more lenient', 'stricter' or 'no bias' (by the sign of the bias alone)."""
        if not np.isfinite(self.bias) or self.bias == 0:
            return "no bias"
        return "more lenient" if self.bias > 0 else "stricter"


def bland_altman(reference: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray, *,
                 level: float = 0.95) -> BlandAltman:
    """Bland-Altman analysis of the paired scores (per topic, or per run) under a reference
    judgment set and another one: the mean difference (bias), the standard deviation of the
    differences and the limits of agreement bias -+ z_{(1+level)/2} sd (Bland & Altman 1986),
    with the t interval of the bias. Items with a NaN on either side are left out."""
    if not 0 < level < 1:
        raise ValueError("level must lie strictly between 0 and 1")
    r, o = paired_scores(reference, other, 1)
    keep = ~(np.isnan(r) | np.isnan(o))
    d = o[keep] - r[keep]
    avg = (o[keep] + r[keep]) / 2.0
    n = int(d.shape[0])
    notes: list[str] = []
    if n == 0:
        notes.append("no item has both scores")
        bias = sd = math.nan
    else:
        bias = float(d.mean())
        if n < 2:
            notes.append("one item only: the standard deviation of the differences is undefined")
            sd = math.nan
        else:
            sd = float(d.std(ddof=1))
            if sd <= 1e-12 * abs(bias):
                sd = 0.0  # round-off of a constant difference
    from scipy import stats  # here: importing scipy.stats is most of a second of every process that imports this module

    z = float(stats.norm.ppf((1.0 + level) / 2.0))
    t_margin = float(stats.t.ppf((1.0 + level) / 2.0, n - 1)) * sd / math.sqrt(n) if n >= 2 else math.nan
    return BlandAltman(n=n, dropped=int((~keep).sum()), bias=bias, sd=sd, level=level, lower=bias - z * sd,
                       upper=bias + z * sd, bias_low=bias - t_margin, bias_high=bias + t_margin, differences=d,
                       averages=avg, notes=tuple(notes))


# --------------------------------------------------------------------------- several assessors
MULTI_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")


@dataclass(frozen=True, eq=False)
class PairAgreement:
    """Two assessors' :func:`label_agreement` on the documents both labelled (``first`` the rows)."""

    first: str
    second: str
    agreement: LabelAgreement


@dataclass(frozen=True, eq=False)
class AssessorAgreement:
    """The agreement of every assessor of a label set (:func:`assessor_agreement`)."""

    assessors: tuple[str, ...]  # sorted
    levels: tuple[int, ...]  # the scale (the value domain of alpha)
    documents: int  # documents (topic, docno) with at least one label
    labels: int  # labels counted (negative levels, pooled but unjudged, left out)
    labels_per_assessor: dict[str, int]
    alpha: dict[str, Alpha]  # nominal, ordinal, interval: every assessor, missing labels allowed
    per_topic: dict[str, dict[str, Alpha]]  # topic -> level -> alpha on the topic's documents only
    pairs: list[PairAgreement]  # every pair i < j of ``assessors``
    without: dict[str, dict[str, float]]  # assessor -> level -> alpha of the others (NaN: undefined)
    mean_kappa: dict[str, float]  # assessor -> mean Cohen's kappa with the others (pairs where defined)
    unjudged: int  # negative labels left out
    notes: tuple[str, ...] = field(default=())


def assessor_agreement(topics: Sequence[str], docnos: Sequence[str], assessors: Sequence[str],
                       levels: Sequence[int] | np.ndarray, scale: Sequence[int] | np.ndarray) -> AssessorAgreement:
    """The agreement of every assessor of one label set, from its labels (one per assessor and
    document: ``topics[i], docnos[i], assessors[i], levels[i]``) on the scale ``scale``:

    * Krippendorff's alpha over every assessor at the nominal, ordinal and interval levels
      (a unit is a document, its ratings the labels it has; documents with one label are not
      pairable), overall and per topic (a topic's documents only);
    * alpha without each assessor (the others' labels), and each assessor's mean Cohen's kappa
      with the others: who disagrees most;
    * Cohen's kappa, linear and quadratic weighted kappa, the confusion matrix and the
      two-rater ordinal alpha of every pair of assessors on the documents both labelled.

    Negative levels (pooled but unjudged) are left out and counted. The counts are built with one
    ``bincount`` over the labels; alpha is linear in the labels, the pair table quadratic in the
    assessors. A label outside the scale, or an assessor labelling a document twice, is a
    ``ValueError``."""
    lv = as_levels(scale)
    t, d, a = list(topics), list(docnos), list(assessors)
    x = np.asarray(levels)
    if not (len(t) == len(d) == len(a) == x.shape[0]) or x.ndim != 1:
        raise ValueError(f"topics, docnos, assessors and levels must be aligned, got {len(t)}, {len(d)}, {len(a)} "
                         f"and {x.shape} values")
    x = x.astype(np.int64) if x.shape[0] else np.zeros(0, dtype=np.int64)
    judged = x >= 0
    unjudged = int((~judged).sum())
    keep = np.flatnonzero(judged)
    pos = level_positions(x[keep], lv, "labels")
    names = tuple(sorted({a[i] for i in keep.tolist()}))
    who = {n: i for i, n in enumerate(names)}
    # documents in (topic, docno) order, so the figures do not depend on the order of the labels
    unit_of = {key: u for u, key in enumerate(sorted({(t[i], d[i]) for i in keep.tolist()}))}
    unit = np.fromiter((unit_of[(t[i], d[i])] for i in keep.tolist()), dtype=np.int64, count=keep.shape[0])
    rater = np.fromiter((who[a[i]] for i in keep.tolist()), dtype=np.int64, count=keep.shape[0])
    n_units, n_raters, k = len(unit_of), len(names), lv.shape[0]
    cell = rater * n_units + unit
    if np.unique(cell).shape[0] != cell.shape[0]:
        dup = np.sort(cell)
        c = int(dup[np.flatnonzero(np.diff(dup) == 0)[0]])
        key = next(key for key, u in unit_of.items() if u == c % n_units)
        raise ValueError(f"assessor {names[c // n_units]!r} labels topic {key[0]} document {key[1]} twice")
    counts = np.bincount(unit * k + pos, minlength=n_units * k).reshape(n_units, k).astype(np.float64)
    domain = lv.astype(np.float64)
    alpha = {level: alpha_from_counts(counts, level, domain) for level in MULTI_LEVELS}  # type: ignore[arg-type]

    unit_topic = np.empty(n_units, dtype=object)
    for (topic, _), u in unit_of.items():
        unit_topic[u] = topic
    per_topic: dict[str, dict[str, Alpha]] = {}
    for topic in sorted(set(unit_topic.tolist())):
        rows = counts[unit_topic == topic]
        per_topic[topic] = {level: alpha_from_counts(rows, level, domain) for level in MULTI_LEVELS}  # type: ignore[arg-type]

    without: dict[str, dict[str, float]] = {}
    for r, name in enumerate(names):
        mine = rater == r
        own = np.bincount(unit[mine] * k + pos[mine], minlength=n_units * k).reshape(n_units, k)
        without[name] = {level: alpha_from_counts(counts - own, level, domain).value  # type: ignore[arg-type]
                         for level in MULTI_LEVELS}

    grid = np.full((n_raters, n_units), -1, dtype=np.int64)  # each assessor's level position per document
    grid[rater, unit] = pos
    pairs: list[PairAgreement] = []
    kappas: dict[str, list[float]] = {n: [] for n in names}
    for i in range(n_raters):
        for j in range(i + 1, n_raters):
            both = (grid[i] >= 0) & (grid[j] >= 0)
            conf = np.bincount(grid[i][both] * k + grid[j][both], minlength=k * k).reshape(k, k)
            agreement = _agreement_from_confusion(conf, lv, "ordinal")
            pairs.append(PairAgreement(names[i], names[j], agreement))
            if not math.isnan(agreement.kappa):
                kappas[names[i]].append(agreement.kappa)
                kappas[names[j]].append(agreement.kappa)
    mean_kappa = {n: float(np.mean(v)) if v else math.nan for n, v in kappas.items()}
    notes: list[str] = []
    if n_raters < 2:
        notes.append("fewer than two assessors: there is no agreement to measure")
    if unjudged:
        notes.append(f"{unjudged} pooled but unjudged labels (negative levels) left out")
    single = int((counts.sum(axis=1) < 2).sum())
    if single:
        notes.append(f"{single} of {n_units} documents have a single label: not pairable, left out of alpha")
    for level, al in alpha.items():
        if al.reason:
            notes.append(f"{level} alpha: {al.reason}")
    per_assessor = {n: int((rater == r).sum()) for r, n in enumerate(names)}
    return AssessorAgreement(assessors=names, levels=tuple(lv.tolist()), documents=n_units, labels=int(keep.shape[0]),
                             labels_per_assessor=per_assessor, alpha=alpha, per_topic=per_topic, pairs=pairs,
                             without=without, mean_kappa=mean_kappa, unjudged=unjudged, notes=tuple(notes))
