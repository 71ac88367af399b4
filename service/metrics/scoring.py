"""Runs x topics -> score matrices: the one place where evaluation rules live.

Rules (see docs/definitions.md):

* The topics evaluated are the qrels' topics that have at least one relevant
  (level >= 1) document; ``no_relevant="count"`` keeps the others (they score
  0 on most metrics). Run topics absent from the qrels are ignored, as
  trec_eval does.
* A topic of the qrels that a run lacks is evaluated as an empty ranked list
  (``missing="zero"``: 0 for every metric but the residuals, like trec_eval -c)
  or left out of that run's mean (``missing="skip"``: NaN per topic, as
  trec_eval without -c and pytrec_eval).
* ``depth`` keeps only the top ``depth`` documents of every list.
* ``judged_only=true`` evaluates the condensed list (unjudged removed) first,
  then the metric's cutoff applies to it.

Two families need more than ad hoc levels, and ``evaluate`` takes it as ``extra``: the
diversity metrics (alpha-nDCG, ERR-IA, D#-nDCG, ...) the intent-aware judgments
(:class:`IntentQrels`, of which ``qrels`` is the flattened view, ``IntentQrels.to_qrels()``),
and xinfAP / infNDCG the stratified sample (:class:`SampledQrels`, ``qrels`` being
``SampledQrels.to_qrels()``). The rules above (topics, missing, depth) apply to them as to
every metric. Without the judgments a metric needs (``needs_judgments``), its value is NaN on
every topic: the caller says why (``service.evaluation.organising.setup.unavailable_metrics``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

import service.metrics.measures  # registers the metrics
import service.metrics.sessions  # noqa: F401  (registers the session metrics)
import service.metrics.rag  # noqa: F401  (registers the RAG metrics: scored by service/metrics/rag_scoring.py)
from service.errors import InvalidMeasure
from service.formats.diversity import IntentQrels
from service.formats.sampled import SampledQrels
from service.formats.types import Qrels, Run
from service.metrics.diversity import DiversityEvaluator  # registers the diversity metrics
from service.metrics.inferred_sampled import REGISTERED as SAMPLED_FIELDS  # registers xinfAP and infNDCG
from service.metrics.inferred_sampled import SampleEvaluator
from service.metrics.lists import RankedLists, Scale, TopicStats, resolve_gains
from service.metrics.matching import level_matrix
from service.metrics.spec import OWN_EVALUATOR_FAMILIES, Measure, parse_measure

Missing = Literal["zero", "skip"]
NoRelevant = Literal["skip", "count"]

#: The papers' recommended metrics plus P@10 and RR (the CLI's default set).
DEFAULT_MEASURES = (
    "AP", "Q", "nDCG@1000", "nDCG@10", "MSnDCG@10", "nERR@10", "Pplus", "bpref", "Q'", "P@10", "RR",
)

#: Cells (rows x depth) evaluated at once. Small enough that the cached float64
#: arrays of a batch (about 2 MB each) stay in cache; bounds memory too.
_CHUNK_CELLS = 250_000


@dataclass(frozen=True)
class EvalSettings:
    """How runs are turned into scores (part of a collection's versioned configuration)."""

    missing: Missing = "zero"
    no_relevant: NoRelevant = "skip"
    depth: int | None = None
    gains: tuple[tuple[int, float], ...] | None = None  # level:gain; default level n -> n
    max_level: int | None = None  # H as declared; default: the largest level in the qrels
    session_sep: str = ":"  # session metrics: run topic ids are SESSION<sep>POSITION

    def __post_init__(self) -> None:
        if self.missing not in ("zero", "skip"):
            raise ValueError(f"missing must be 'zero' or 'skip', not {self.missing!r}")
        if self.no_relevant not in ("skip", "count"):
            raise ValueError(f"no_relevant must be 'skip' or 'count', not {self.no_relevant!r}")
        if self.depth is not None and self.depth < 1:
            raise ValueError("depth must be a positive integer")
        if not self.session_sep:
            raise ValueError("session_sep must not be empty")

    def with_max_level_of(self, qrels: Qrels) -> EvalSettings:
        """These settings with H fixed: the declared top level, else ``qrels``' own. Evaluating
        on judgments derived from ``qrels`` (reduced, or without a team's documents) then keeps
        its gain scale, which would otherwise move when the top level drops out."""
        return replace(self, max_level=self.max_level if self.max_level is not None else qrels.max_level)

    def scale(self, qrels: Qrels) -> Scale:
        found = qrels.max_level
        h = self.max_level if self.max_level is not None else found
        if found > h:
            raise ValueError(f"the qrels use level {found}, above the declared top level {h}")
        if self.gains is None:
            return Scale.linear(h)
        return Scale(h, resolve_gains(dict(self.gains), h, "gains"))


@dataclass(frozen=True)
class Evaluation:
    """Per-topic scores of every run for every measure, and their means."""

    topics: tuple[str, ...]
    runs: tuple[str, ...]
    measures: tuple[Measure, ...]
    scores: dict[Measure, np.ndarray] = field(repr=False)  # (runs, topics); NaN = not evaluated
    settings: EvalSettings = field(default_factory=EvalSettings)

    def per_topic(self, measure: Measure | str) -> np.ndarray:
        return self.scores[_as_measure(measure)]

    def means(self, measure: Measure | str) -> np.ndarray:
        """Mean over each run's evaluated topics (NaN-aware for missing="skip")."""
        s = self.per_topic(measure)
        counts = np.sum(~np.isnan(s), axis=1)
        sums = np.nansum(s, axis=1)
        return np.divide(sums, counts, out=np.full(s.shape[0], np.nan), where=counts > 0)

    def value(self, run: str, measure: Measure | str, topic: str | None = None) -> float:
        i = self.runs.index(run)
        if topic is None:
            return float(self.means(measure)[i])
        return float(self.per_topic(measure)[i, self.topics.index(topic)])


def _as_measure(m: Measure | str) -> Measure:
    return m if isinstance(m, Measure) else parse_measure(m)


def parse_measures(names: Iterable[str | Measure]) -> tuple[Measure, ...]:
    """Parse and de-duplicate (by canonical form), keeping the first occurrence's order."""
    out: dict[str, Measure] = {}
    for n in names:
        m = _as_measure(n)
        out.setdefault(str(m), m)
    return tuple(out.values())


def evaluation_topics(qrels: Qrels, settings: EvalSettings) -> tuple[int, ...]:
    """Indices of the qrels topics that are evaluated."""
    keep = []
    for i, lv in enumerate(qrels.levels):
        if settings.no_relevant == "count" or np.any(lv >= 1):
            keep.append(i)
    return tuple(keep)


#: The judgments beyond ad hoc levels that a family's metrics need, as ``evaluate``'s ``extra``.
JUDGMENTS_NEEDED: dict[str, type] = {"diversity": IntentQrels, "sampled": SampledQrels}


def needs_judgments(measure: Measure | str) -> str | None:
    """"diversity" (intent-aware judgments) or "sampled" (a stratified sample's strata) for a
    metric that ad hoc qrels cannot score; None for every other metric."""
    family = _as_measure(measure).definition.family
    return family if family in JUDGMENTS_NEEDED else None


def evaluate(
    qrels: Qrels,
    runs: Sequence[Run],
    measures: Iterable[str | Measure] = DEFAULT_MEASURES,
    settings: EvalSettings | None = None,
    *,
    extra: IntentQrels | SampledQrels | None = None,
) -> Evaluation:
    """Score every run on every measure, per topic.

    ``extra``: the intent-aware judgments or the stratified sample whose flattened view
    ``qrels`` is (see the module docstring); the diversity and sampled metrics are NaN without it.
    """
    settings = settings or EvalSettings()
    ms = parse_measures(measures)
    rag = [m for m in ms if m.definition.family == "rag"]
    if rag:  # answers, not ranked lists: never a column of NaN
        rag[0].definition.kernel()
    try:
        scale = settings.scale(qrels)
    except ValueError as exc:
        raise InvalidMeasure(str(exc)) from None
    topic_idx = evaluation_topics(qrels, settings)
    topics = tuple(qrels.topics[i] for i in topic_idx)
    stats = TopicStats(qrels.level_counts(scale.max_level)[list(topic_idx)], scale.max_level)
    n_topics = len(topics)
    scores = {m: np.full((len(runs), n_topics), np.nan) for m in ms}
    if n_topics == 0 or not runs:
        return Evaluation(topics, tuple(r.tag for r in runs), ms, scores, settings)

    session_ms = [m for m in ms if m.definition.family == "session"]
    if session_ms:
        from service.metrics.sessions import session_scores

        for m in session_ms:
            values, present = session_scores(qrels, runs, m, scale, topic_idx, depth=settings.depth,
                                             sep=settings.session_sep)
            scores[m][:] = np.where(present, values, np.nan) if settings.missing == "skip" else values
    judged_ms = [m for m in ms if m.definition.family in JUDGMENTS_NEEDED]
    if judged_ms:
        _judgment_family_scores(runs, judged_ms, topics, settings, extra, scores)
    ms_ranked = tuple(m for m in ms if m.definition.family not in OWN_EVALUATOR_FAMILIES)
    if not ms_ranked:
        return Evaluation(topics, tuple(r.tag for r in runs), ms, scores, settings)

    # Map each run's topics to evaluation columns once.
    col_of = {qrels.topics[qi]: c for c, qi in enumerate(topic_idx)}
    chunk_runs = _chunk_size(runs, n_topics, settings.depth)
    for start in range(0, len(runs), chunk_runs):
        batch = runs[start : start + chunk_runs]
        levels, present = level_matrix(qrels, batch, topic_idx, col_of, settings.depth)
        row_topic = np.tile(np.arange(n_topics), len(batch))
        lists = RankedLists(levels, row_topic, stats)
        if any(m.name == "infAP" for m in ms_ranked):  # which unjudged documents were pooled (negative labels)
            from service.metrics.measures.inferred import pool_status, with_pool_status

            with_pool_status(lists, pool_status(qrels, batch, topic_idx, col_of, settings.depth))
        for m in ms_ranked:
            target = lists.condensed() if m.get("judged_only") is True else lists
            values = np.asarray(m.definition.kernel(target, m, scale), dtype=np.float64).reshape(len(batch), n_topics)
            if settings.missing == "skip":
                values = np.where(present, values, np.nan)
            scores[m][start : start + len(batch)] = values
    return Evaluation(topics, tuple(r.tag for r in runs), ms, scores, settings)


def _judgment_family_scores(runs: Sequence[Run], ms: Sequence[Measure], topics: tuple[str, ...],
                            settings: EvalSettings, extra: IntentQrels | SampledQrels | None,
                            scores: dict[Measure, np.ndarray]) -> None:
    """The diversity and sampled metrics (NaN, as ``scores`` starts, without their judgments):
    each run's list of each evaluated topic, cut at ``depth``, in the run's rank order; a topic
    the run lacks is an empty list (0), or NaN with ``missing="skip"``."""
    diversity = [m for m in ms if m.definition.family == "diversity"] if isinstance(extra, IntentQrels) else []
    sampled = [m for m in ms if m.definition.family == "sampled"] if isinstance(extra, SampledQrels) else []
    if not diversity and not sampled:
        return
    div_eval = DiversityEvaluator(extra) if isinstance(extra, IntentQrels) and diversity else None
    sample_eval = SampleEvaluator(extra) if isinstance(extra, SampledQrels) and sampled else None
    pooled = set(extra.topics) if sample_eval is not None else set()
    empty = np.array([], dtype="S1")
    for ri, run in enumerate(runs):
        lists: dict[str, np.ndarray] = {}
        for i, t in enumerate(run.topics):
            docs = run.docnos[int(run.offsets[i]): int(run.offsets[i + 1])]
            lists[t] = docs if settings.depth is None else docs[: settings.depth]
        if div_eval is not None:
            wanted = {t: [d.decode("utf-8") for d in lists[t].tolist()] for t in topics if t in lists}
            got = div_eval.evaluate(wanted, diversity, no_relevant="count")
            for m in diversity:
                values = got[str(m)]
                scores[m][ri] = [values.get(t, np.nan) for t in topics]
        if sample_eval is not None:
            estimates = {t: sample_eval.topic(t, lists.get(t, empty)) for t in topics if t in pooled}
            for m in sampled:
                field_name = SAMPLED_FIELDS[m.name]
                scores[m][ri] = [float(getattr(estimates[t], field_name)) if t in estimates else np.nan for t in topics]
        if settings.missing == "skip":
            absent = np.array([t not in lists for t in topics], dtype=bool)
            for m in (*diversity, *sampled):
                scores[m][ri, absent] = np.nan


def _chunk_size(runs: Sequence[Run], n_topics: int, depth: int | None) -> int:
    longest = max((int(np.diff(r.offsets).max(initial=0)) for r in runs), default=1)
    if depth is not None:
        longest = min(longest, depth)
    per_run = max(n_topics * max(longest, 1), 1)
    return max(1, _CHUNK_CELLS // per_run)
