"""Per-run results: per-topic scores, a comparison of two runs, the topic medians, the
run's metrics table and its J&K gain curves, all read from the stored current results."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import NotFound
from service.evaluation.organising import collections
from service.evaluation.organising.results import current_result
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing import boards
from service.evaluation.publishing.board_intervals import bounds_of, interval_label, interval_view
from service.evaluation.publishing.reading import (
    StoredTest,
    complete_version_id,
    raw_p,
    significance_for,
    stored_scores,
)
from service.evaluation.runs import submissions
from service.metrics import parse_measure
from service.metrics.stats.differences import (
    RESAMPLING_TESTS,
    PairedDifference,
    adjusted,
    bootstrap_method_name,
    comparisons,
    correction_tag,
    explain_disagreement,
    named_test,
    p_value_label,
    paired_difference,
)
from service.metrics.stats.presentation import correction_name
from service.store.models import Collection, Run


def hidden_from(me: Principal, coll: Collection) -> frozenset[str]:
    """The topics of ``coll`` whose figures the caller may not see (an unrevealed topic split):
    the run pages' rule, which the reproducibility views apply to every run they show."""
    return policy.hidden_topics(coll) if policy.sees_visible_topics_only(me, coll) else frozenset()


def per_topic(s: Session, coll: Collection, runs: list[Run], metric: str | None,
              hide: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    name = str(parse_measure(metric)) if metric else coll.current_config.official_metric
    version_id = complete_version_id(s, coll)
    number = boards.version_number(s, version_id)
    out: dict[str, Any] = {"metric": name, "qrels_version": number,
                           "judgment_set": boards.set_of_version(s, coll, number), "runs": {}}
    found = stored_scores(s, coll, [row.id for row in runs], [name], version_id)
    for row in runs:
        got = found.get((row.id, name))
        if got is None:
            raise NotFound(f"no stored {name} scores for run {row.id} (not evaluated yet?)")
        out["runs"][row.tag] = {"mean": got.mean if not hide else None, "per_topic": {
            t: (None if v != v else float(v)) for t, v in zip(got.topics, got.values.tolist()) if t not in hide}}
    return out


def run_scores(s: Session, rid: int, me: Principal, metric: str | None = None) -> dict[str, Any]:
    row, coll = submissions.get(s, rid, me)
    policy.require(policy.may_see_run_topics(me, row, coll), me, f"the per-topic scores of run {rid}")
    return per_topic(s, coll, [row], metric, hide=hidden_from(me, coll))


def run_scores_trec(s: Session, rid: int, me: Principal, metric: str | None = None) -> str:
    """The run's per-topic scores in trec_eval's ``-q`` layout: a first ``runid<TAB>all<TAB>TAG``
    line naming the run, then ``measure<TAB>topic<TAB>value`` lines, topic by topic (in the stored order) with every metric of the collection (or
    ``metric`` alone) in the collection's order, then one ``all`` line per metric with its
    mean; values as ``%.4f``. Measures are named by their Cranfield canonical names (``AP``,
    ``nDCG@10``), not trec_eval's (``map``, ``ndcg_cut_10``). A topic the run was not scored
    on (``missing: skip``) has no line, as in trec_eval; hidden topics of an unrevealed split
    are left out for those who may not see them, and the means are then the visible topics'.
    The same access as :func:`run_scores`."""
    row, coll = submissions.get(s, rid, me)
    policy.require(policy.may_see_run_topics(me, row, coll), me, f"the per-topic scores of run {rid}")
    cfg = coll.current_config
    names = [str(parse_measure(metric))] if metric else list(cfg.metrics)
    hide = hidden_from(me, coll)
    found = {m: (got.topics, got.values.tolist(), got.public_mean if hide else got.mean)
             for (_, m), got in stored_scores(s, coll, [row.id], names).items()}
    if metric and names[0] not in found:
        raise NotFound(f"no stored {names[0]} scores for run {rid} (not evaluated yet, or not a metric of "
                       f"the collection: {', '.join(cfg.metrics)})")
    if not found:
        raise NotFound(f"no stored scores for run {rid} (not evaluated yet?)")
    names = [m for m in names if m in found]
    topics = [t for t in found[names[0]][0] if t not in hide]
    per = {m: dict(zip(found[m][0], found[m][1])) for m in names}
    # trec_eval's runid line first: the file names its run (issue 37, item 9), as `cranfield eval --format trec`
    lines = [f"runid\tall\t{row.tag}"]
    lines += [f"{m}\t{t}\t{v:.4f}" for t in topics for m in names
              if (v := per[m].get(t)) is not None and math.isfinite(v)]
    lines += [f"{m}\tall\t{found[m][2]:.4f}" for m in names if found[m][2] is not None]
    return "\n".join(lines) + "\n"


def missing_topics(run: Run, topics: list[str]) -> set[str]:
    """Which of ``topics`` the run's file has no line for. Under ``missing: zero`` such a topic
    is scored 0, like a real 0: a page tells them apart with this. Reads the topic list stored
    with the run (``RunTopics``: ``add_run`` writes it, migration 0021 wrote the older runs'),
    not the file, which is read only for a run stored without that list."""
    if not topics:
        return set()
    listed = run.file_topics
    present = set(listed.topics) if listed is not None else _topics_in_file(run.file)
    return {t for t in topics if t not in present}


def _topics_in_file(compressed: bytes) -> set[str]:
    """The first column of every data line of a stored run file (the one fallback of
    :func:`missing_topics`; migration 0021 lists them the same way)."""
    import re
    import zlib

    data = zlib.decompress(compressed).removeprefix(b"\xef\xbb\xbf")  # a byte-order mark is no part of a topic
    return {m.decode("utf-8", "replace") for m in re.findall(rb"^[ \t]*([^\s#]\S*)", data, re.MULTILINE)}


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
    hide = hidden_from(me, coll)
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
    """Two runs on one metric: per-topic differences (a minus b), wins, ties and losses; the
    stored test's p of the pair with the parameters it was run with (test, B, alpha,
    correction); the mean difference with its t and bootstrap intervals and effect size, and
    an explanation when the test and an interval disagree.

    The difference's statistics are computed here from the two runs' stored per-topic scores
    (a few hundred numbers, not metrics), with the collection's configured significance
    resamples and seed, so that a reload gives the same numbers."""
    runs = [submissions.get(s, a, me)[0], submissions.get(s, b, me)[0]]
    for row in runs:
        if row.collection_id != coll.id:
            raise NotFound(f"run {row.id} is not in collection {coll.id}")
        policy.require(policy.may_see_run_topics(me, row, coll), me, f"the per-topic scores of run {row.id}")
    public = policy.sees_visible_topics_only(me, coll)
    doc = per_topic(s, coll, runs, metric, hide=hidden_from(me, coll))
    x, y = (doc["runs"][r.tag]["per_topic"] for r in runs)
    diffs = {t: (x[t] - y[t]) for t in x if x[t] is not None and y.get(t) is not None}
    doc["a"], doc["b"] = runs[0].tag, runs[1].tag
    # A topic a run has no line for scores 0 under ``missing: zero`` (or nothing): it is no win
    # or loss of either run, and no topic "going the other way" (issue 25, item 6).
    missing = {r.tag: sorted(missing_topics(r, [t for t, v in doc["runs"][r.tag]["per_topic"].items() if not v]))
               for r in runs}
    missing_from = {t: [tag for tag, gone in missing.items() if t in gone] for t in diffs}
    missing_from = {t: tags for t, tags in missing_from.items() if tags}
    counted = [v for t, v in diffs.items() if t not in missing_from]
    doc["differences"] = dict(sorted(diffs.items(), key=lambda kv: -kv[1]))
    doc["missing"] = missing
    doc["not_counted"] = len(diffs) - len(counted)
    doc["wins"] = sum(v > 0 for v in counted)
    doc["ties"] = sum(v == 0 for v in counted)
    doc["losses"] = sum(v < 0 for v in counted)
    sig = significance_for(s, coll, doc["metric"], subset="public" if public else "all")
    p = None if sig is None else sig.p(runs[0].tag, runs[1].tag)
    doc["p"] = None if sig is None else sig.p(runs[0].tag, runs[1].tag, raw_p(s, sig))
    doc["p_adjusted"] = p
    doc["test"] = None if sig is None else tested_with(sig)
    from service.evaluation.publishing.monte_carlo import pair_precision  # the pair's B, Monte Carlo SE, verdict (25.1)

    doc["monte_carlo"] = None if sig is None else pair_precision(s, sig, runs[0].tag, runs[1].tag)
    configured = coll.current_config.significance or {}
    difference = None
    if len(diffs) >= 2:
        topics = list(diffs)
        # the explanation names topics: a missing one says so
        names = {t: f"{t} (missing from {' and '.join(missing_from[t])})" if t in missing_from else t for t in topics}
        difference = paired_difference([x[t] for t in topics], [y[t] for t in topics],
                                       resamples=int(configured.get("resamples", 1000)),
                                       seed=int(configured.get("seed", 0)), topics=[names[t] for t in topics])
    doc["difference"] = None if difference is None else difference_document(
        difference, {names[t]: t for t in diffs}, set(missing_from))
    doc["explanation"] = None if sig is None or difference is None else explain_disagreement(
        p, sig.alpha, sig.test, difference, correction=sig.correction, n_comparisons=comparisons(len(sig.runs)))
    return doc


def stored_test(s: Session, coll: Collection, me: Principal, metric: str,
                test: str | None = None) -> dict[str, Any] | None:
    """The stored pairwise test of ``metric`` (the configured one, or ``test``) that the caller's
    view reads (the visible topics' under an unrevealed split), described by :func:`tested_with`."""
    subset = "public" if policy.sees_visible_topics_only(me, coll) else "all"
    sig = significance_for(s, coll, metric, test, subset=subset)
    return None if sig is None else tested_with(sig)


def tested_with(sig: StoredTest) -> dict[str, Any]:
    """A stored test with every parameter it was run with, and how to name its p-values."""
    n_comparisons = comparisons(len(sig.runs))
    resamples = sig.resamples if sig.test in RESAMPLING_TESTS else None
    return {"test": sig.test, "alpha": sig.alpha, "correction": sig.correction, "resamples": resamples,
            "n_topics": sig.n_topics, "comparisons": n_comparisons, "adjusted": adjusted(sig.test, sig.correction),
            "name": named_test(sig.test, resamples),
            "p_label": p_value_label(sig.test, sig.correction, n_comparisons),
            "correction_name": correction_name(sig.test, sig.correction),
            "correction_tag": correction_tag(sig.test, sig.correction)}


def difference_document(d: PairedDifference, topic_of: dict[str, str] | None = None,
                        missing: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """A run pair's difference as the API and the portal show it (NaN and infinities as None).
    ``topic_of`` maps the names ``d`` was given back to the topics; a topic of ``missing`` (a
    run has no line for it) is not listed as going the other way."""

    def real(v: float) -> float | None:
        v = float(v)
        return v if math.isfinite(v) else None

    boot = d.bootstrap
    # The intervals under the names the board, its CSV and the CLI use (t_ci_*, boot_ci_*);
    # t_low/t_high and the "bootstrap" object stay for the clients written before them.
    return {"mean": d.mean, "n_topics": d.n, "level": d.level, "t_low": d.t_low, "t_high": d.t_high,
            "t_ci_low": d.t_low, "t_ci_high": d.t_high, "boot_ci_low": real(float(boot.low)),
            "boot_ci_high": real(float(boot.high)), "boot_ci_method": boot.method, "boot_ci_resamples": boot.resamples,
            "t_statistic": real(d.t), "effect_size": real(d.effect_size),
            "bootstrap": {"low": real(float(boot.low)), "high": real(float(boot.high)), "method": boot.method,
                          "method_name": bootstrap_method_name(boot.method), "level": boot.level,
                          "resamples": boot.resamples, "seed": d.seed},
            "other_way": [t for t in ((topic_of or {}).get(name, name) for name, _ in d.other_way())
                          if t not in missing]}


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
    cols = ((Score.metric, Score.public_mean, Score.public_ci_low, Score.public_ci_high, Score.public_n,
             Score.public_boot_low, Score.public_boot_high) if public
            else (Score.metric, Score.mean, Score.ci_low, Score.ci_high, Score.n_topics, Score.boot_low,
                  Score.boot_high))
    names = ("mean", "ci_low", "ci_high", "n_topics", "boot_low", "boot_high", "boot_method", "boot_resamples")
    found = {m: dict(zip(names, values)) for m, *values in s.execute(
        select(*cols, Score.boot_method, Score.boot_resamples).join(RunEvaluation).where(
            RunEvaluation.run_id == row.id, current_result(coll, complete_version_id(s, coll))))}
    order = list(coll.current_config.metrics)
    # "shown": the interval drawn (bootstrap when stored, else t) and the t interval, never beyond the
    # metric's range (board_intervals); the raw figures stay beside it for the API.
    return {"run": submissions.document(row), "collection": collections.document(coll, me),
            "topics": "visible only (public/private split)" if public else "all",
            "metrics": [{"metric": m, **found[m], "shown": interval_view(found[m], bounds_of(m)),
                         "interval": interval_label([found[m]])} for m in order if m in found]}
