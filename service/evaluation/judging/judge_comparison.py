"""Judging the judges, first slice: how far two qrels versions of one collection agree.

Version ``a`` is the reference (the assessors' first pass, the human set), version ``b`` the
one compared with it (the corrected qrels, an automatic judge's qrels uploaded as a version).
Every figure follows the sign conventions of ``service.metrics.stats.agreement`` and
``rank_agreement``: confusion rows are a's levels, columns b's; differences are b - a (positive:
b is more lenient); a rank change is a's rank - b's rank (positive: the run moves up under b).

* Labels: over the documents both versions judged, overall and per topic (the confusion matrix
  by level, Cohen's kappa, linear and quadratic weighted kappa, Krippendorff's ordinal alpha),
  and the judged documents they have in common.
* Scores (one metric, default the official one): the runs evaluated under both versions with
  the current configuration, read from their stored scores (nothing is computed here but the
  agreement statistics over them): ranking agreement, Bland-Altman of the per-topic means,
  the agreement of the stored significance tests, per-topic correlation and the topics where
  the versions disagree most, with the judgments changed in each.

Qrels are secret: organisers only (``policy.may_see_qrels``). The figures are built by pure
functions (:func:`label_figures`, :func:`score_figures`, :func:`significance_figures`) that
``cranfield judges compare`` also uses on files. NaN figures are ``None`` in the document and
the notes say why. The definitions are in docs/statistics.md ("Judging the judges") and the
figures' meaning in docs/judging.md ("Comparing two qrels versions").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.errors import BadRequest, Conflict
from service.evaluation.organising import collections
from service.evaluation.organising.results import current_result
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing import versions
from service.evaluation.publishing.reading import judgment_changes, significance_for
from service.evaluation.publishing.reading import leaderboard as read_leaderboard
from service.metrics.stats.agreement import LabelAgreement, bland_altman, judged_overlap, label_agreement_by_topic
from service.metrics.stats.common import pair_indices
from service.metrics.stats.judge_meta import common_topics
from service.metrics.stats.rank_agreement import ranking_agreement, significance_agreement, topic_correlation
from service.store.arrays import unpack
from service.store.models import (
    Collection,
    CollectionConfig,
    Job,
    Judgment,
    JudgmentSet,
    QrelsVersion,
    Run,
    RunEvaluation,
    Score,
)

MAX_TOP_K = 10_000

Judged = Mapping[tuple[str, str], int]  # (topic, docno) -> level


def num(v: Any) -> float | None:
    """A figure for the document: a float, or None when undefined (NaN)."""
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None


# --------------------------------------------------------------------------- labels
def scale(judged: Iterable[int], configured: Iterable[int] = ()) -> list[int]:
    """The levels compared: the configured ones and every level from 0 to the highest judged
    (weighted kappa weighs levels by their position in the scale)."""
    seen = set(judged) | set(configured)
    top = max(seen, default=0)
    return sorted(seen | set(range(top + 1)))


def _labels_row(r: LabelAgreement) -> dict[str, Any]:
    return {"documents": r.documents, "observed": num(r.observed), "kappa": num(r.kappa),
            "kappa_linear": num(r.kappa_linear), "kappa_quadratic": num(r.kappa_quadratic), "alpha": num(r.alpha),
            "higher": r.higher, "lower": r.lower}


def label_figures(judged_a: Judged, judged_b: Judged, configured_levels: Iterable[int] = ()) -> dict[str, Any]:
    """Label agreement of two qrels ((topic, docno) -> level) on the documents both judged:
    overall (one pooled confusion matrix), the mean over topics (macro) and per topic, with the
    judged documents in common and the judgments added, removed and changed from a to b."""
    unjudged = sum(1 for v in judged_a.values() if v < 0) + sum(1 for v in judged_b.values() if v < 0)
    judged_a = {k: v for k, v in judged_a.items() if v >= 0}  # a negative level: pooled but not judged
    judged_b = {k: v for k, v in judged_b.items() if v >= 0}
    levels = scale([*judged_a.values(), *judged_b.values()], (v for v in configured_levels if v >= 0))
    common = sorted(judged_a.keys() & judged_b.keys())
    per_topic: dict[str, tuple[list[int], list[int]]] = {}
    for t in sorted({t for t, _ in judged_a} | {t for t, _ in judged_b}):
        per_topic[t] = ([], [])
    for key in common:
        la, lb = per_topic[key[0]]
        la.append(judged_a[key])
        lb.append(judged_b[key])
    by_topic = label_agreement_by_topic(per_topic, levels, alpha_level="ordinal")
    overlap = judged_overlap(judged_a.keys(), judged_b.keys())
    changes = judgment_changes(dict(judged_a), dict(judged_b))
    topics = []
    for t, r in by_topic.per_topic.items():
        e = changes["topics"].get(t, {"added": 0, "removed": 0, "changed": 0})
        topics.append({"topic": t, **_labels_row(r), "added": e["added"], "removed": e["removed"],
                       "changed": e["changed"]})
    overall = by_topic.overall
    return {
        "levels": levels,
        "overlap": {"a": overlap.first, "b": overlap.second, "both": overlap.both, "only_a": overlap.only_first,
                    "only_b": overlap.only_second, "union": overlap.union, "share_of_a": num(overlap.share_of_first),
                    "share_of_b": num(overlap.share_of_second), "jaccard": num(overlap.jaccard)},
        "changes": changes["totals"],
        "overall": {**_labels_row(overall), "alpha_level": overall.alpha_level,
                    "confusion": [[int(c) for c in row] for row in overall.confusion.tolist()]},
        "macro": {k: num(v) for k, v in by_topic.macro.items()},
        "defined": dict(by_topic.defined),
        "topics": topics,
        "notes": list(overall.notes) + ([f"{unjudged} pooled but unjudged entries (negative levels) left out"]
                                         if unjudged else []),
    }


# --------------------------------------------------------------------------- the topics both judged
def judged_topics(judged: Judged) -> dict[str, bool]:
    """topic -> whether it has a relevant document (level >= 1), for every topic with a
    judgment (level 0 or more; a negative level is pooled but not judged)."""
    out: dict[str, bool] = {}
    for (t, _), lv in judged.items():
        if lv >= 0:
            out[t] = out.get(t, False) or lv >= 1
    return out


def on_common_topics(runs: Sequence[str], topics: Sequence[str], per_a: np.ndarray, per_b: np.ndarray,
                     judged_a: Mapping[str, bool], judged_b: Mapping[str, bool], notes: list[str]
                     ) -> tuple[list[str], np.ndarray, np.ndarray, list[str], np.ndarray, np.ndarray, dict[str, Any]]:
    """The runs, their means under a and b, the topics and the (topics, runs) matrices, all on
    the topics both sets judged (:func:`service.metrics.stats.judge_meta.common_topics`), with
    the topics' account (``compared_topics`` of the report); a run scored on none of them under
    a set is left out, with a note."""
    ct = common_topics(list(topics), per_a, per_b, judged_a, judged_b)
    ma, mb = ct.means()
    keep = ~(np.isnan(ma) | np.isnan(mb))
    if not keep.all():
        gone = [r for r, k in zip(runs, keep.tolist()) if not k]
        notes.append(f"{len(gone)} run{'s' if len(gone) != 1 else ''} scored on none of the compared topics under "
                     f"a set left out: "
                     f"{', '.join(gone[:10])}{', ...' if len(gone) > 10 else ''}")
    kept = [r for r, k in zip(runs, keep.tolist()) if k]
    return (kept, ma[keep], mb[keep], list(ct.topics), ct.reference[:, keep], ct.candidate[:, keep], ct.summary())


# --------------------------------------------------------------------------- scores
def score_figures(runs: Sequence[str], means_a: np.ndarray, means_b: np.ndarray, topics: Sequence[str],
                  per_topic_a: np.ndarray, per_topic_b: np.ndarray, *, top_k: int = 10,
                  changes: Mapping[str, Mapping[str, int]] | None = None,
                  teams: Sequence[str] | None = None) -> dict[str, Any]:
    """Ranking agreement of the runs' means under a and b, Bland-Altman of the per-topic means
    over the runs (b - a), per-topic correlation and the topics ordered by disagreement (1 -
    the tau of the runs' order on the topic), each with ``changes[topic]`` (added, removed,
    changed judgments). ``per_topic_*`` are (topics, runs), NaN where not scored."""
    n = len(runs)
    ma, mb = np.asarray(means_a, dtype=np.float64), np.asarray(means_b, dtype=np.float64)
    xa, xb = np.asarray(per_topic_a, dtype=np.float64), np.asarray(per_topic_b, dtype=np.float64)
    notes: list[str] = []
    rows = []
    ranking = bland = topic_doc = None
    if n:
        ra = ranking_agreement(ma, mb, runs=list(runs), top_k=top_k)
        for i, run in enumerate(runs):
            rows.append({"run": run, "team": teams[i] if teams is not None else None, "mean_a": num(ma[i]),
                         "mean_b": num(mb[i]), "rank_a": int(ra.reference_ranks[i]), "rank_b": int(ra.other_ranks[i]),
                         "change": int(ra.reference_ranks[i] - ra.other_ranks[i])})
        change = ra.largest_change
        ranking = {
            "runs": ra.runs, "kendall": num(ra.kendall), "tau_ap": num(ra.tau_ap),
            "tau_ap_reverse": num(ra.tau_ap_reverse), "tau_ap_symmetric": num(ra.tau_ap_symmetric),
            "tau_ap_b": num(ra.tau_ap_b), "spearman": num(ra.spearman), "pearson": num(ra.pearson),
            "top_k": ra.top_k, "top_k_runs": ra.top_k_runs, "tau_top_k": num(ra.tau_top_k),
            "largest_change": None if change is None or change.shift == 0 else {
                "run": change.name, "rank_a": change.reference_rank, "rank_b": change.other_rank,
                "change": change.shift},
            "notes": list(ra.notes)}
        with np.errstate(invalid="ignore"):
            scored_a, scored_b = ~np.isnan(xa), ~np.isnan(xb)
            topic_a = np.where(scored_a, xa, 0.0).sum(axis=1) / scored_a.sum(axis=1)
            topic_b = np.where(scored_b, xb, 0.0).sum(axis=1) / scored_b.sum(axis=1)
        ba = bland_altman(topic_a, topic_b)
        keep = ~(np.isnan(topic_a) | np.isnan(topic_b))
        bland = {"topics": ba.n, "dropped": ba.dropped, "bias": num(ba.bias), "sd": num(ba.sd), "level": ba.level,
                 "lower": num(ba.lower), "upper": num(ba.upper), "bias_low": num(ba.bias_low),
                 "bias_high": num(ba.bias_high), "direction": ba.direction,
                 "points": [{"topic": t, "mean_a": num(a), "mean_b": num(b)}
                            for t, a, b, k in zip(topics, topic_a.tolist(), topic_b.tolist(), keep.tolist()) if k],
                 "notes": list(ba.notes)}
        tc = topic_correlation(xa, xb, topics=list(topics), runs=list(runs), by="tau")
        changed = changes or {}
        disagreeing = []
        for i in tc.order.tolist():
            t = tc.topics[i]
            e = changed.get(t, {})
            disagreeing.append({"topic": t, "tau": num(tc.topic_tau[i]), "disagreement": num(tc.disagreement[i]),
                                "mean_difference": num(tc.topic_mean_difference[i]), "mean_a": num(topic_a[i]),
                                "mean_b": num(topic_b[i]), "added": int(e.get("added", 0)),
                                "removed": int(e.get("removed", 0)), "changed": int(e.get("changed", 0))})
        topic_doc = {"mean_kendall": num(tc.mean_kendall), "mean_pearson": num(tc.mean_pearson),
                     "runs": [{"run": r, "kendall": num(k), "pearson": num(p)}
                              for r, k, p in zip(runs, tc.run_kendall.tolist(), tc.run_pearson.tolist())],
                     "disagreeing": disagreeing, "notes": list(tc.notes)}
    else:
        notes.append("no run was evaluated under both versions: no score figure")
    if n == 1:
        notes.append("one run only was evaluated under both versions: the ranking figures are undefined")
    return {"runs": rows, "ranking": ranking, "bland_altman": bland, "topics": topic_doc, "notes": notes}


def significance_figures(runs: Sequence[str], means_a: np.ndarray, means_b: np.ndarray, p_a: np.ndarray,
                         p_b: np.ndarray, alpha_a: float, alpha_b: float) -> dict[str, Any]:
    """The agreement of two tests' verdicts on every pair (i, j), i < j, of ``runs``
    (``pair_indices`` order): ``p_*`` the adjusted p-values (NaN: not tested), significant
    below each test's own alpha, the direction from the runs' means under each version."""
    i, j = pair_indices(len(runs))
    pa, pb = np.asarray(p_a, dtype=np.float64), np.asarray(p_b, dtype=np.float64)
    tested = ~(np.isnan(pa) | np.isnan(pb))
    ma, mb = np.asarray(means_a, dtype=np.float64), np.asarray(means_b, dtype=np.float64)
    sa, sb = (pa < alpha_a)[tested], (pb < alpha_b)[tested]
    agreement = significance_agreement(sa, sb, (ma[i] - ma[j])[tested], (mb[i] - mb[j])[tested])
    return {"pairs": agreement.pairs, "untested": int((~tested).sum()),
            "kept_significant": agreement.kept_significant, "kept_not_significant": agreement.kept_not_significant,
            "lost": agreement.lost, "gained": agreement.gained, "flipped": agreement.flipped,
            "agreement": num(agreement.agreement), "kept_of_significant": num(agreement.kept_of_significant),
            "significant_a": int(sa.sum()), "significant_b": int(sb.sum())}


# --------------------------------------------------------------------------- the stored versions
def _judged(s: Session, version_id: int) -> dict[tuple[str, str], int]:
    return {(t, d): lv for t, d, lv in s.execute(select(Judgment.topic, Judgment.docno, Judgment.level)
                                                 .where(Judgment.qrels_version_id == version_id))}


def _require_evaluated(s: Session, coll: Collection, version: QrelsVersion, config: CollectionConfig,
                       notes: list[str]) -> None:
    """409 when the collection has runs but none has a result on ``version`` under the current
    configuration; a note when that version's evaluation is still running."""
    evaluated = s.scalar(select(func.count(RunEvaluation.id)).join(Run, Run.id == RunEvaluation.run_id).where(
        Run.collection_id == coll.id, current_result(coll, version.id)))
    running = s.scalar(select(Job).where(Job.collection_id == coll.id, Job.qrels_version_id == version.id,
                                         Job.config_id == config.id, Job.status.in_(("running", "testing")))
                       .order_by(Job.id.desc()).limit(1))
    if evaluated:
        if running is not None and running.done + running.failed < running.total:  # (not: its tests only)
            notes.append(f"qrels version {version.version} is still being evaluated (job {running.id}: "
                         f"{running.done + running.failed} of {running.total} runs): the figures cover the runs "
                         "evaluated so far")
        return
    has_runs = s.scalar(select(func.count(Run.id)).where(Run.collection_id == coll.id))
    if not has_runs:
        return
    if running is not None:
        raise Conflict(f"qrels version {version.version} is still being evaluated (job {running.id}: "
                       f"{running.done + running.failed} of {running.total} runs): compare it when the job is done")
    raise Conflict(f"qrels version {version.version} has no results under the collection's current configuration "
                   f"(version {config.version}): it was evaluated under an earlier configuration, or its evaluation "
                   "failed; only versions evaluated under the current configuration can be compared")


def _per_topic(s: Session, coll: Collection, version_id: int, metric: str) -> dict[str, dict[str, float]]:
    """run tag -> topic -> stored per-topic score (NaN: not scored) of ``metric`` on a version."""
    found: dict[str, dict[str, float]] = {}
    for tag, topics, blob in s.execute(
            select(Run.tag, RunEvaluation.topics, Score.values).join(Score).join(Run, Run.id == RunEvaluation.run_id)
            .where(Run.collection_id == coll.id, current_result(coll, version_id), Score.metric == metric)):
        found[tag] = dict(zip(topics, unpack(blob).tolist()))
    return found


def _stored_test(s: Session, coll: Collection, metric: str, version: int) -> Any:
    return significance_for(s, coll, metric, qrels_version=version)


def _test_doc(test: Any) -> dict[str, Any]:
    return {"test": test.test, "alpha": test.alpha, "correction": test.correction, "resamples": test.resamples,
            "topics": test.n_topics}


def compare_versions(s: Session, coll: Collection, me: Principal, a: int, b: int, metric: str | None = None,
                     top_k: int = 10) -> dict[str, Any]:
    """Every agreement figure of qrels versions ``a`` (the reference) and ``b`` of ``coll`` for
    ``metric`` (default: the official one), read from the stored judgments, scores and tests
    (organisers). 404 for an unknown version, 400 for a bad metric or top_k, 409 for a version
    without results under the current configuration."""
    policy.require(policy.may_see_qrels(me, coll), me, f"the qrels of collection {coll.id}")
    if not 1 <= top_k <= MAX_TOP_K:
        raise BadRequest(f"top_k is a whole number from 1 to {MAX_TOP_K}, not {top_k}")
    va, vb = versions.readable(s, coll, me, a), versions.readable(s, coll, me, b)
    config = s.get(CollectionConfig, coll.current_config_id)
    assert config is not None
    notes: list[str] = []
    if a == b:
        notes.append("a version compared with itself: every figure shows perfect agreement")
    name, rows_a = read_leaderboard(s, coll.name, metric, a)  # the metric checked: 400 when unknown
    _, rows_b = read_leaderboard(s, coll.name, name, b)
    _require_evaluated(s, coll, va, config, notes)
    _require_evaluated(s, coll, vb, config, notes)
    judged_a, judged_b = _judged(s, va.id), _judged(s, vb.id)
    configured = [int(lv["level"]) for lv in config.levels if "level" in lv]
    labels = label_figures(judged_a, judged_b, configured)
    changes = {t["topic"]: t for t in labels["topics"]}

    by_b = {r.run: r for r in rows_b}
    common = [r for r in rows_a if r.run in by_b]  # a's board order
    runs = [r.run for r in common]
    only_a = sorted(r.run for r in rows_a if r.run not in by_b)
    only_b = sorted(r.run for r in rows_b if r.run not in {x.run for x in rows_a})
    if only_a or only_b:
        one = len(only_a) + len(only_b) == 1
        notes.append(f"{len(only_a) + len(only_b)} run{'' if one else 's'} evaluated under one version only "
                     f"{'is' if one else 'are'} left out")
    topics_a, topics_b = _per_topic(s, coll, va.id, name), _per_topic(s, coll, vb.id, name)
    topics = list(dict.fromkeys(t for run in runs for per in (topics_a, topics_b) for t in per.get(run, {})))
    per_a = np.array([[topics_a.get(r, {}).get(t, math.nan) for r in runs] for t in topics], dtype=np.float64)
    per_b = np.array([[topics_b.get(r, {}).get(t, math.nan) for r in runs] for t in topics], dtype=np.float64)
    per_a, per_b = per_a.reshape(len(topics), len(runs)), per_b.reshape(len(topics), len(runs))
    teams = {r.run: r.team for r in common}
    runs, means_a, means_b, topics, per_a, per_b, compared = on_common_topics(
        runs, topics, per_a, per_b, judged_topics(judged_a), judged_topics(judged_b), notes)
    scores = score_figures(runs, means_a, means_b, topics, per_a, per_b, top_k=top_k, changes=changes,
                           teams=[teams[r] for r in runs])
    notes.extend(scores.pop("notes"))

    significance: dict[str, Any] | None = None
    reason: str | None = None
    test_a, test_b = _stored_test(s, coll, name, a), _stored_test(s, coll, name, b)
    missing = [v for v, t in ((a, test_a), (b, test_b)) if t is None]
    if missing:
        reason = (f"qrels version{'s' if len(missing) > 1 else ''} {' and '.join(map(str, missing))} "
                  f"{'have' if len(missing) > 1 else 'has'} no stored significance test of {name} under the current "
                  "configuration (the workers test every pair of runs once all of a version's runs are evaluated)")
    elif len(runs) < 2:
        reason = "fewer than two runs were evaluated under both versions: there is no pair to compare"
    else:
        i, j = pair_indices(len(runs))
        p_a = np.array([math.nan if (p := test_a.p(runs[x], runs[y])) is None else p for x, y in zip(i, j)])
        p_b = np.array([math.nan if (p := test_b.p(runs[x], runs[y])) is None else p for x, y in zip(i, j)])
        # A pair undecided at its B under either test has no verdict to compare: left out, counted.
        undecided = np.array([test_a.is_undecided(runs[x], runs[y]) or test_b.is_undecided(runs[x], runs[y])
                              for x, y in zip(i, j)], dtype=bool)
        if undecided.any():
            p_a[undecided] = p_b[undecided] = math.nan
            one = int(undecided.sum()) == 1
            notes.append(f"{int(undecided.sum())} pair{'' if one else 's'} undecided at {'its' if one else 'their'} "
                         f"B under a stored test (issue 25) {'is' if one else 'are'} left out of the verdicts compared")
        significance = {**significance_figures(runs, means_a, means_b, p_a, p_b, test_a.alpha, test_b.alpha),
                        "test_a": _test_doc(test_a), "test_b": _test_doc(test_b)}
        if compared["left_out"] or compared["zero_a"] or compared["zero_b"]:
            notes.append(f"the stored significance tests are each version's own, over its own topics "
                         f"({test_a.n_topics} under a, {test_b.n_topics} under b), not only the "
                         f"{compared['compared']} compared")
        if (test_a.test, test_a.correction, test_a.alpha) != (test_b.test, test_b.correction, test_b.alpha):
            notes.append("the two versions' stored tests differ in their test, correction or alpha")

    names = {i: n for i, n in s.execute(select(JudgmentSet.id, JudgmentSet.name)
                                         .where(JudgmentSet.collection_id == coll.id))}

    def version_doc(v: QrelsVersion) -> dict[str, Any]:
        return {"version": v.version, "judgment_set": names.get(v.judgment_set_id), "assessor": None,
                "judgments": v.n_judgments,
                "uploaded_by": v.uploaded_by, "uploaded_at": collections.iso(v.uploaded_at)}

    return {"collection": coll.id, "a": version_doc(va), "b": version_doc(vb), "metric": name,
            "configuration": config.version, "labels": labels, **scores, "compared_topics": compared,
            "only_a": only_a, "only_b": only_b,
            "significance": significance, "significance_reason": reason, "notes": notes}


# --------------------------------------------------------------------------- judgment sets
def compare_references(s: Session, coll: Collection, me: Principal, a: str, b: str, metric: str | None = None,
                       top_k: int = 10) -> dict[str, Any]:
    """:func:`compare_versions` of two references to judgment sets (a set's name: its newest
    version; ``name:N``; a version number), or the label figures of a set against one
    assessor's labels (``assessor@name``), which are kept but never evaluated on their own."""
    from service.evaluation.judging import judgment_sets, labels

    policy.require(policy.may_see_qrels(me, coll), me, f"the qrels of collection {coll.id}")
    ref_a, ref_b = judgment_sets.resolve(s, coll, me, a), judgment_sets.resolve(s, coll, me, b)
    if ref_a.version is not None and ref_b.version is not None:
        return compare_versions(s, coll, me, ref_a.version.version, ref_b.version.version, metric, top_k)
    if not 1 <= top_k <= MAX_TOP_K:
        raise BadRequest(f"top_k is a whole number from 1 to {MAX_TOP_K}, not {top_k}")
    config = s.get(CollectionConfig, coll.current_config_id)
    assert config is not None
    name, _ = read_leaderboard(s, coll.name, metric)  # the metric checked: 400 when unknown

    def judged(ref: Any) -> tuple[dict[tuple[str, str], int], dict[str, Any]]:
        if ref.version is not None:
            v = ref.version
            return _judged(s, v.id), {"version": v.version, "judgment_set": ref.judgment_set.name,
                                      "judgments": v.n_judgments, "uploaded_by": v.uploaded_by,
                                      "uploaded_at": collections.iso(v.uploaded_at)}
        found = {k: v[-1] for k, v in labels.labels_of_set(s, ref.judgment_set, ref.assessor).items()}
        return found, {"version": None, "judgment_set": ref.judgment_set.name, "assessor": ref.assessor,
                       "judgments": len(found), "uploaded_by": ref.assessor, "uploaded_at": None}

    (judged_a, doc_a), (judged_b, doc_b) = judged(ref_a), judged(ref_b)
    configured = [int(lv["level"]) for lv in config.levels if "level" in lv]
    reason = "an assessor's labels are kept, not evaluated: only the label figures compare them"
    return {"collection": coll.id, "a": doc_a, "b": doc_b, "metric": name, "configuration": config.version,
            "labels": label_figures(judged_a, judged_b, configured), "runs": [], "ranking": None,
            "compared_topics": None,
            "bland_altman": None, "topics": None, "only_a": [], "only_b": [], "significance": None,
            "significance_reason": reason, "notes": [reason]}
