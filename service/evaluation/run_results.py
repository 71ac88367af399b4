"""Per-run results: per-topic scores, a comparison of two runs, the topic medians, the
run's metrics table and its J&K gain curves, all read from the stored current results."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import NotFound
from service.evaluation import boards, collections, policy, submissions
from service.evaluation.access import Principal
from service.evaluation.reading import complete_version_id, significance_for
from service.evaluation.results import current_result
from service.metrics import parse_measure
from service.store.models import Collection, Run


def _hidden_from(me: Principal, coll: Collection) -> frozenset[str]:
    """The topics whose figures the caller may not see (an unrevealed topic split)."""
    return policy.hidden_topics(coll) if policy.sees_visible_topics_only(me, coll) else frozenset()


def per_topic(s: Session, coll: Collection, runs: list[Run], metric: str | None,
              hide: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    from service.store.arrays import unpack
    from service.store.models import RunEvaluation, Score

    name = str(parse_measure(metric)) if metric else coll.current_config.official_metric
    version_id = complete_version_id(s, coll)
    current = current_result(coll, version_id)
    out: dict[str, Any] = {"metric": name, "qrels_version": boards.version_number(s, version_id), "runs": {}}
    for row in runs:
        found = s.execute(select(RunEvaluation.topics, Score.values, Score.mean).join(Score).where(
            RunEvaluation.run_id == row.id, current, Score.metric == name)).first()
        if found is None:
            raise NotFound(f"no stored {name} scores for run {row.id} (not evaluated yet?)")
        values = unpack(found.values)
        out["runs"][row.tag] = {"mean": found.mean if not hide else None, "per_topic": {
            t: (None if v != v else float(v)) for t, v in zip(found.topics, values.tolist()) if t not in hide}}
    return out


def run_scores(s: Session, rid: int, me: Principal, metric: str | None = None) -> dict[str, Any]:
    row, coll = submissions.get(s, rid, me)
    policy.require(policy.may_see_run_details(me, row, coll), me, f"the per-topic scores of run {rid}")
    return per_topic(s, coll, [row], metric, hide=_hidden_from(me, coll))


def topic_summary(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """Per topic, the median and the best score over all evaluated runs (for the run page's chart).

    Organisers always; others once the leaderboard is released (as TREC and NTCIR hand them
    out with the results): before that, with few runs, they would let a team work out another
    team's per-topic scores.
    """
    policy.require(policy.may_see_results(me, coll), me, f"the per-topic medians of collection {coll.id}")
    import numpy as np

    from service.store.arrays import unpack
    from service.store.models import RunEvaluation, Score

    name = str(parse_measure(metric)) if metric else coll.current_config.official_metric
    hide = _hidden_from(me, coll)
    per: dict[str, list[float]] = {}
    for topics, blob in s.execute(select(RunEvaluation.topics, Score.values).join(Score).join(
            Run, Run.id == RunEvaluation.run_id).where(
            Run.collection_id == coll.id, current_result(coll, complete_version_id(s, coll)), Score.metric == name)):
        for t, v in zip(topics, unpack(blob).tolist()):
            if t not in hide and v == v:
                per.setdefault(t, []).append(v)
    return {"metric": name, "topics": {t: {"median": float(np.median(v)), "best": float(max(v))}
                                       for t, v in sorted(per.items())}}


def compare(s: Session, coll: Collection, me: Principal, a: int, b: int, metric: str | None = None) -> dict[str, Any]:
    runs = [submissions.get(s, a, me)[0], submissions.get(s, b, me)[0]]
    for row in runs:
        if row.collection_id != coll.id:
            raise NotFound(f"run {row.id} is not in collection {coll.id}")
        policy.require(policy.may_see_run_details(me, row, coll), me, f"the per-topic scores of run {row.id}")
    public = policy.sees_visible_topics_only(me, coll)
    doc = per_topic(s, coll, runs, metric, hide=_hidden_from(me, coll))
    x, y = (doc["runs"][r.tag]["per_topic"] for r in runs)
    diffs = {t: (x[t] - y[t]) for t in x if x[t] is not None and y.get(t) is not None}
    doc["a"], doc["b"] = runs[0].tag, runs[1].tag
    doc["differences"] = dict(sorted(diffs.items(), key=lambda kv: -kv[1]))
    doc["wins"] = sum(v > 0 for v in diffs.values())
    doc["ties"] = sum(v == 0 for v in diffs.values())
    doc["losses"] = sum(v < 0 for v in diffs.values())
    sig = significance_for(s, coll, doc["metric"], subset="public" if public else "all")
    doc["p_adjusted"] = None if sig is None else sig.p_adjusted.get((runs[0].tag, runs[1].tag),
                                                                     sig.p_adjusted.get((runs[1].tag, runs[0].tag)))
    doc["test"] = None if sig is None else {"test": sig.test, "alpha": sig.alpha, "correction": sig.correction}
    return doc


def run_curve(s: Session, rid: int, me: Principal) -> dict[str, Any]:
    """J&K's average gain curves of a run on the current qrels, stored by the workers."""
    from service.store.arrays import unpack
    from service.store.models import RunCurve, RunEvaluation

    row, coll = submissions.get(s, rid, me)
    policy.require(policy.may_see_run_curve(me, row, coll), me, f"the curves of run {rid} (they include hidden topics)")
    curve = s.scalar(select(RunCurve).join(RunEvaluation).where(
        RunEvaluation.run_id == row.id, current_result(coll, complete_version_id(s, coll))))
    if curve is None:
        raise NotFound(f"no stored curves for run {rid} (not evaluated yet?)")
    return {"run": row.tag, "depth": curve.depth, "log_base": 2,
            **{k: unpack(getattr(curve, k)).tolist() for k in ("cg", "dcg", "ncg", "ndcg", "ideal_cg", "ideal_dcg")}}


def run_metrics(s: Session, rid: int, me: Principal) -> dict[str, Any]:
    """The run's mean and interval of every metric of the collection, on the current results
    (the visible topics' figures for callers of a public view)."""
    from service.store.models import RunEvaluation, Score

    row, coll = submissions.get(s, rid, me)
    policy.require(policy.may_see_run_metrics(me, row, coll), me, f"the scores of run {rid}")
    public = policy.sees_visible_topics_only(me, coll)
    cols = ((Score.metric, Score.public_mean, Score.public_ci_low, Score.public_ci_high, Score.public_n) if public
            else (Score.metric, Score.mean, Score.ci_low, Score.ci_high, Score.n_topics))
    found = {m: (mean, lo, hi, n) for m, mean, lo, hi, n in s.execute(select(*cols).join(RunEvaluation).where(
        RunEvaluation.run_id == row.id, current_result(coll, complete_version_id(s, coll))))}
    order = list(coll.current_config.metrics)
    return {"run": submissions.document(row), "collection": collections.document(coll, me),
            "topics": "visible only (public/private split)" if public else "all",
            "metrics": [{"metric": m, "mean": found[m][0], "ci_low": found[m][1], "ci_high": found[m][2],
                         "n_topics": found[m][3]} for m in order if m in found]}
