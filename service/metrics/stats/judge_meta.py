"""Judging the judges, part three: how well does one automatic judge rank the runs, and how sure
is that figure?

:mod:`rank_agreement` gives the point value of a ranking correlation between a reference judgment
set (human) and a candidate one (an automatic judge); this module adds its uncertainty over
topics. A correlation of 0.9 measured on 50 topics says little until one knows whether another
50 topics could as well have given 0.7.

Inputs are two (topics, runs) per-topic score matrices of the same runs on the same topics, one
per judgment set, NaN where a run was not scored on a topic. A run's score under a set is the mean
over the topics it was scored on (``np.nanmean``); a run scored on no topic under either set is
left out, with a note.

The interval is a percentile bootstrap over topics (Efron & Tibshirani 1993, 13.3): rows are
resampled with replacement, both matrices with the **same** rows (a topic's scores under the two
sets stay paired), the runs' means are recomputed on each resample, and so is the statistic. The
draw is exactly ``rng.integers(0, n_topics, size=(resamples, n_topics))`` with ``rng =
numpy.random.default_rng(seed)`` (or ``seed`` itself when it is a Generator), drawn once before
anything else, row b being resample b; so a plain loop over those rows reproduces every
resample's statistic (the tests do). Within a resample, a run whose drawn topics hold no score
under a set is left out of that resample's statistic (the point value's rule); a resample whose
statistic is undefined (fewer than two runs left, a set ranking every run equal, a tied reference
for tau_AP) is counted in ``undefined_resamples`` and the interval is taken over the others: the
(1 - level)/2 and (1 + level)/2 quantiles of the defined statistics (numpy's linear interpolation,
as :func:`service.metrics.stats.intervals.bootstrap_interval`). The percentile interval is not
bias-corrected: a rank correlation of means computed on resampled topics (repeated topics, others
missing) is noisier, hence usually lower, than on the full set, so with many runs and high
agreement the full-sample value can lie above the interval; a note says so when it happens.

Measures (reference first; see :mod:`rank_agreement` and docs/statistics.md): ``kendall``
(tau-b), ``tau_ap`` (the candidate's ranking walked, judged by the reference), ``tau_ap_b``,
``spearman``, ``pearson`` and ``tau_top_k`` (tau-b over the reference's top ``top_k`` runs, the
top set re-chosen on each resample).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from service.metrics.stats import rank_agreement as ra
from service.metrics.stats.common import as_rng, paired_scores

MEASURES: tuple[str, ...] = ("kendall", "tau_ap", "tau_ap_b", "spearman", "pearson", "tau_top_k")

#: Largest number of (resample, topic, run) cells gathered at once when the resamples' means are
#: computed; more resamples are done in chunks (the values do not depend on the chunking).
_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class JudgeAgreement:
    """A ranking correlation between a reference and a candidate judgment set, with its
    percentile bootstrap interval over topics (see the module). ``value``, ``low`` and ``high``
    are NaN where undefined; ``notes`` say why, and which runs were left out."""

    measure: str
    value: float
    low: float
    high: float
    level: float
    resamples: int  # B, the resamples drawn
    undefined_resamples: int  # resamples whose statistic is undefined (not in the interval)
    n_topics: int
    n_runs: int  # runs compared: those scored on at least one topic under both sets
    notes: tuple[str, ...] = field(default=())

    @property
    def defined_resamples(self) -> int:
        return self.resamples - self.undefined_resamples


def _statistic(measure: str, top_k: int) -> Callable[[np.ndarray, np.ndarray], float]:
    if measure == "kendall":
        return ra.tau_b
    if measure == "tau_ap":
        return ra.tau_ap
    if measure == "tau_ap_b":
        return ra.tau_ap_b
    if measure == "spearman":
        return ra.spearman
    if measure == "pearson":
        return ra.pearson
    return lambda x, y: ra.tau_top_k(x, y, top_k)


def _validate(reference: np.ndarray, candidate: np.ndarray, measure: str, resamples: int, level: float,
              top_k: int) -> tuple[np.ndarray, np.ndarray]:
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}: the measures are {', '.join(MEASURES)}")
    x, y = paired_scores(reference, candidate, 2, ("reference", "candidate"))
    if x.shape[0] < 1:
        raise ValueError("need at least one topic")
    if x.shape[1] < 2:
        raise ValueError(f"need at least two runs to rank, got {x.shape[1]}")
    if isinstance(resamples, bool) or int(resamples) != resamples or resamples < 1:
        raise ValueError("resamples must be a positive integer")
    if not 0 < level < 1:
        raise ValueError("level must lie strictly between 0 and 1")
    if isinstance(top_k, bool) or int(top_k) != top_k or top_k < 1:
        raise ValueError("top_k must be a positive integer")
    return x, y


def _defined(stat: Callable[[np.ndarray, np.ndarray], float], x: np.ndarray, y: np.ndarray) -> float:
    """The statistic on the runs both vectors score (NaN: the run was left out)."""
    keep = ~(np.isnan(x) | np.isnan(y))
    if not keep.all():
        x, y = x[keep], y[keep]
    return float(stat(x, y))


def _resample_means(values: np.ndarray, scored: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(len(rows), runs) np.nanmean of each resample's rows: the sum of the drawn rows (NaN
    counted 0) in draw order over the count of scored ones, as ``np.nanmean(x[rows[b]], axis=0)``
    computes it; NaN where a run has no score among the drawn rows."""
    total = values[rows].sum(axis=1)
    count = scored[rows].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def judge_agreement(reference: np.ndarray, candidate: np.ndarray, measure: str, *, resamples: int = 1000,
                    level: float = 0.95, seed: int | np.random.Generator = 0, top_k: int = 10) -> JudgeAgreement:
    """The ``measure`` correlation between the runs' mean scores under ``reference`` and under
    ``candidate`` ((topics, runs) matrices, NaN = not scored), with its percentile bootstrap
    interval over topics at ``level`` from ``resamples`` draws seeded by ``seed`` (the exact draw
    is described in the module docstring). Wrong shapes or parameters are a ``ValueError``."""
    x, y = _validate(reference, candidate, measure, resamples, level, top_k)
    resamples, top_k = int(resamples), int(top_k)
    rng = as_rng(seed)
    draws = rng.integers(0, x.shape[0], size=(resamples, x.shape[0]))  # first use of rng: see the module
    stat = _statistic(measure, top_k)
    notes: list[str] = []

    with np.errstate(invalid="ignore", divide="ignore"):
        scored_x, scored_y = ~np.isnan(x), ~np.isnan(y)
        mean_x = np.where(scored_x, x, 0.0).sum(axis=0) / scored_x.sum(axis=0)
        mean_y = np.where(scored_y, y, 0.0).sum(axis=0) / scored_y.sum(axis=0)
    kept = ~(np.isnan(mean_x) | np.isnan(mean_y))
    if not kept.all():
        left = np.flatnonzero(~kept).tolist()
        shown = ", ".join(str(i) for i in left[:20]) + (", ..." if len(left) > 20 else "")
        notes.append(f"{_count(len(left), 'run')} left out, scored on no topic under a set (column {shown})")
    x, y = x[:, kept], y[:, kept]
    scored_x, scored_y = scored_x[:, kept], scored_y[:, kept]
    n_topics, n_runs = x.shape
    value = _defined(stat, mean_x[kept], mean_y[kept])
    if math.isnan(value):
        notes.append(f"{measure} is undefined on the full topic set: {_why(measure, mean_x[kept], mean_y[kept], top_k)}")

    stats = np.full(resamples, math.nan)
    partial = 0
    if n_runs:
        fill_x, fill_y = np.where(scored_x, x, 0.0), np.where(scored_y, y, 0.0)
        count_x, count_y = scored_x.astype(np.int64), scored_y.astype(np.int64)
        step = max(1, _CHUNK_CELLS // max(n_topics * n_runs, 1))
        for lo in range(0, resamples, step):
            rows = draws[lo:lo + step]
            rx = _resample_means(fill_x, count_x, rows)
            ry = _resample_means(fill_y, count_y, rows)
            partial += int((np.isnan(rx) | np.isnan(ry)).any(axis=1).sum())
            for b in range(rows.shape[0]):
                stats[lo + b] = _defined(stat, rx[b], ry[b])
    defined = stats[~np.isnan(stats)]
    undefined = resamples - int(defined.shape[0])
    if partial:
        notes.append(f"in {_count(partial, 'resample')} some run had no scored topic among the drawn ones and was "
                     f"left out of that resample's statistic")
    if undefined == resamples:
        every = "the one resample" if resamples == 1 else f"all {resamples} resamples"
        notes.append(f"{measure} is undefined in {every}: no interval can be given")
    elif undefined:
        rest = resamples - undefined
        notes.append(f"{undefined} of the {_count(resamples, 'resample')} {'leaves' if undefined == 1 else 'leave'} "
                     f"{measure} undefined; the interval is over the {'one other' if rest == 1 else f'other {rest}'}")
    if defined.shape[0]:
        low, high = (float(v) for v in np.quantile(defined, [(1.0 - level) / 2.0, (1.0 + level) / 2.0]))
    else:
        low = high = math.nan
    if not math.isnan(value) and not math.isnan(low) and not low <= value <= high:
        notes.append(f"the full-sample value lies outside the percentile interval: resampling topics adds noise to "
                     f"the run means, which biases {measure} (usually down) on resamples")
    return JudgeAgreement(measure=measure, value=value, low=low, high=high, level=float(level), resamples=resamples,
                          undefined_resamples=undefined, n_topics=int(n_topics), n_runs=int(n_runs), notes=tuple(notes))


def _count(n: int, noun: str) -> str:
    """"1 resample", "1000 resamples": a count with its noun in the right number."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _topics(n: int) -> str:
    return _count(n, "topic")


def _why(measure: str, x: np.ndarray, y: np.ndarray, top_k: int) -> str:
    """Why ``measure`` of the run means x (reference) and y (candidate) is undefined, for the notes."""
    where = ""
    if measure == "tau_top_k" and x.shape[0]:
        keep = ra.top_k_runs(x, top_k)
        x, y = x[keep], y[keep]
        where = f"over the reference's top {_count(top_k, 'run')}, "
    if x.shape[0] < 2:
        return where + ra.TOO_FEW
    if measure == "tau_ap" and np.unique(x).shape[0] != x.shape[0]:
        return "the reference ranks some runs equal (tau_AP needs a strict reference; tau_ap_b handles ties)"
    constant = [name for name, v in (("the reference", x), ("the candidate", y)) if v.max() == v.min()]
    return where + " and ".join(constant) + f" {ra.CONSTANT}" if constant else "its inputs leave it undefined"


# --------------------------------------------------------------------------- the topics both judged
@dataclass(frozen=True, eq=False)
class CommonTopics:
    """Two judgment sets' per-topic scores cut to the topics both judged (:func:`common_topics`)."""

    topics: tuple[str, ...]  # the topics compared: judged by both sets, in input order
    only_a: tuple[str, ...]  # judged by a only (left out)
    only_b: tuple[str, ...]  # judged by b only (left out)
    no_relevant: tuple[str, ...]  # judged by both, neither with a relevant document (left out: no one scores it)
    zero_a: tuple[str, ...]  # compared topics a judged without a relevant document: every run scores 0 under a
    zero_b: tuple[str, ...]
    reference: np.ndarray  # (topics, runs) under a on ``topics``, NaN where a run is not scored
    candidate: np.ndarray  # (topics, runs) under b

    def means(self) -> tuple[np.ndarray, np.ndarray]:
        """Each run's mean over the compared topics it is scored on, under a and under b (NaN: none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            out = []
            for x in (self.reference, self.candidate):
                scored = ~np.isnan(x)
                out.append(np.where(scored.sum(axis=0) > 0, np.where(scored, x, 0.0).sum(axis=0)
                                    / np.maximum(scored.sum(axis=0), 1), np.nan))
        return out[0], out[1]

    def summary(self) -> dict[str, object]:
        """The topics' account for a report: how many compared, which left out and why."""
        return {"compared": len(self.topics), "left_out": len(self.only_a) + len(self.only_b) + len(self.no_relevant),
                "only_a": list(self.only_a), "only_b": list(self.only_b), "no_relevant": list(self.no_relevant),
                "zero_a": list(self.zero_a),
                "zero_b": list(self.zero_b), "sentence": self.sentence()}

    def sentence(self) -> str:
        s = f"compared on the {_topics(len(self.topics))} both sets judged"
        left = len(self.only_a) + len(self.only_b) + len(self.no_relevant)
        if left:
            s += (f"; {left} left out ({len(self.only_a)} judged by a only, {len(self.only_b)} by b only: a topic "
                  "one set did not judge has no score under it")
            if self.no_relevant:
                s += f"; {len(self.no_relevant)} without a relevant document under either set"
            s += ")"
        else:
            s += "; none left out"
        if self.zero_a or self.zero_b:
            s += (f"; {len(self.zero_a)} compared topic{'s' if len(self.zero_a) != 1 else ''} judged by a and "
                  f"{len(self.zero_b)} by b without any relevant document "
                  f"score{'s' if len(self.zero_a) + len(self.zero_b) == 1 else ''} 0 there, as trec_eval does")
        return s


def common_topics(topics: list[str], reference: np.ndarray, candidate: np.ndarray,
                  judged_a: Mapping[str, bool] | None = None,
                  judged_b: Mapping[str, bool] | None = None) -> CommonTopics:
    """The (topics, runs) score matrices of a reference set (a) and a candidate (b) cut to the
    topics both judged, so that the runs' means, and every ranking figure over them, compare the
    two sets on the same topics. ``judged_*`` maps each topic a set judged (any judgment of
    level 0 or more) to whether it has a relevant document (level >= 1); None: the topics with a
    score under that set, all taken to have one. A compared topic that a set judged without any
    relevant document scores 0 under that set for every run (an evaluator skips such a topic, as
    trec_eval gives AP 0 there); such topics are listed. A topic both judged without a relevant
    document under either is left out too (no run can score on it under either set; counting it
    would add a (0, 0) point), so on the same topics the means are the evaluators' own. Topics of ``judged_*`` without a row
    in ``topics`` get one (no run scored on them)."""
    x = np.asarray(reference, dtype=np.float64)
    y = np.asarray(candidate, dtype=np.float64)
    if x.ndim != 2 or x.shape != y.shape or x.shape[0] != len(topics):
        raise ValueError(f"reference and candidate must be (topics, runs) matrices of {len(topics)} topics, got "
                         f"{x.shape} and {y.shape}")
    row = {t: i for i, t in enumerate(topics)}
    if judged_a is None:
        judged_a = {t: True for t, scored in zip(topics, (~np.isnan(x)).any(axis=1).tolist()) if scored}
    if judged_b is None:
        judged_b = {t: True for t, scored in zip(topics, (~np.isnan(y)).any(axis=1).tolist()) if scored}
    order = list(topics) + sorted((set(judged_a) | set(judged_b)) - set(row))
    both = [t for t in order if t in judged_a and t in judged_b and (judged_a[t] or judged_b[t])]
    no_relevant = tuple(t for t in order if t in judged_a and t in judged_b and not (judged_a[t] or judged_b[t]))
    only_a = tuple(t for t in order if t in judged_a and t not in judged_b)
    only_b = tuple(t for t in order if t in judged_b and t not in judged_a)
    runs = x.shape[1]
    xs = np.full((len(both), runs), np.nan)
    ys = np.full((len(both), runs), np.nan)
    for i, t in enumerate(both):
        if t in row:
            xs[i], ys[i] = x[row[t]], y[row[t]]
    zero_a = tuple(t for t in both if not judged_a[t])
    zero_b = tuple(t for t in both if not judged_b[t])
    at = {t: i for i, t in enumerate(both)}
    for zeros, m in ((zero_a, xs), (zero_b, ys)):
        for t in zeros:
            m[at[t]] = np.where(np.isnan(m[at[t]]), 0.0, m[at[t]])
    return CommonTopics(tuple(both), only_a, only_b, no_relevant, zero_a, zero_b, xs, ys)
