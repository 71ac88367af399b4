"""A job's tests: pairwise significance on the stored scores, the meta-evaluation of the
collection's metrics, and the rank changes between two qrels versions.

:func:`run_tests` runs once a job has no pending item (see :mod:`service.evaluation.planning`),
computes with no transaction open and stores every test matrix and the job's report in one
transaction; it always finishes the job: a metric whose test cannot run is reported in
``job.report``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.planning import TEST_PARAMS, params_hash, runs_hash
from service.evaluation.results import evaluated_under, json_safe, tested_under
from service.evaluation.setup import EVALUATOR_VERSION
from service.evaluation.work import Followup
from service.metrics.pooling import competition_ranks
from service.metrics.stats.meta import MetaEvaluation, meta_evaluation
from service.metrics.stats.pairwise import pairwise
from service.store.arrays import pack, unpack
from service.store.db import transaction
from service.store.models import CollectionConfig, Job, QrelsVersion, Run, RunEvaluation, Score, Significance, utcnow

#: Per metric: (run ids, topics, (topics, runs) matrix of per-topic scores).
ScoreTables = dict[str, tuple[list[int], list[str], np.ndarray]]


def run_tests(factory: sessionmaker[Session], job_id: int) -> list[Followup]:
    """The pairwise significance tests of the job's metrics, then the rank-change report.

    Always finishes the job: a metric whose test cannot run is reported in ``job.report``.
    """
    with factory() as s:
        job = s.get(Job, job_id)
        if job is None or job.status != "testing":
            return []
        config = s.get(CollectionConfig, job.config_id)
        assert config is not None
        sig = dict(config.significance)
        metrics = sig.get("metrics") or [config.official_metric]
        tables = stored_scores(s, job.collection_id, job.qrels_version_id, config.settings_hash, metrics)
        all_tables = stored_scores(s, job.collection_id, job.qrels_version_id, config.settings_hash,
                                   list(config.metrics))
        qrels_id, collection_id, settings = job.qrels_version_id, job.collection_id, config.settings_hash
    hidden = set(config.evaluation.get("hidden_topics") or [])
    results, errors = [], {}
    for metric in metrics:
        run_ids, topics, matrix = tables.get(metric, ([], [], np.zeros((0, 0))))
        if len(run_ids) < 2:
            errors[metric] = f"{len(run_ids)} evaluated run(s): nothing to compare"
            continue
        subsets = [("all", matrix)]
        if hidden:  # the public leaderboard's test, on the visible topics only
            subsets.append(("public", matrix[[t not in hidden for t in topics]]))
        for subset, x in subsets:
            try:
                res = pairwise(x, [str(r) for r in run_ids], sig["test"], resamples=int(sig["resamples"]),
                               alpha=float(sig["alpha"]), correction=sig["correction"], seed=int(sig["seed"]))
            except ValueError as exc:
                errors[metric if subset == "all" else f"{metric} (visible topics)"] = str(exc)
                continue
            results.append((metric, run_ids, res, subset))
    meta = meta_evaluation({m: (ids, matrix) for m, (ids, _, matrix) in all_tables.items()},
                           alpha=float(sig["alpha"]), resamples=int(sig["resamples"]), seed=int(sig["seed"]))
    phash = params_hash(sig)
    try:
        with transaction(factory) as s:
            job = s.get(Job, job_id)
            if job is None or job.status != "testing":
                return []
            for metric, run_ids, res, subset in results:
                rhash = runs_hash(run_ids)
                exists = s.scalar(select(Significance.id).where(
                    tested_under(qrels_id, settings), Significance.metric == metric, Significance.test == res.test,
                    Significance.runs_hash == rhash, Significance.params_hash == phash,
                    Significance.subset == subset))
                if exists is None:
                    s.add(Significance(
                        collection_id=collection_id, qrels_version_id=qrels_id, metric=metric, test=res.test,
                        subset=subset, settings_hash=settings, evaluator_version=EVALUATOR_VERSION, runs_hash=rhash,
                        params_hash=phash, params={k: sig.get(k) for k in TEST_PARAMS}, run_ids=list(run_ids),
                        n_topics=res.n_topics, diff=pack(res.diff), statistic=pack(res.statistic), p=pack(res.p),
                        p_adjusted=pack(res.p_adjusted)))
            report = rank_changes(s, job, config) if job.previous_qrels_id else {}
            if errors:
                report = {**report, "test_errors": errors}
            report = {**report, "meta": meta_document(meta, all_tables)}
            job.report = json_safe(report)
            job.error = "; ".join(filter(None, [
                f"{job.failed} of {job.total} runs failed; see their status" if job.failed else "",
                "tests not run for " + ", ".join(errors) if errors else ""]))
            job.status, job.finished_at = "done", utcnow()
    except IntegrityError:
        return []  # a concurrent run_tests stored the same matrices and finished the job
    return []


def meta_document(meta: MetaEvaluation, metrics: Iterable[str]) -> dict[str, Any]:
    """The meta-evaluation as a job's report stores it (what the meta-evaluation view reads):
    per metric (in ``metrics``' order) its power and ASL curve or the error, tau per pair."""
    power: dict[str, Any] = {}
    for metric in metrics:
        if metric in meta.errors:
            power[metric] = {"error": meta.errors[metric]}
        elif metric in meta.power:
            p = meta.power[metric]
            power[metric] = {"power": p.power, "significant_pairs": p.significant_pairs, "pairs": p.pairs,
                             "difference_required": p.difference_required,
                             "asl_curve": [[i, asl] for i, asl in p.asl_curve]}
    out: dict[str, Any] = {"alpha": meta.alpha, "resamples": meta.resamples, "power": power,
                           "tau": {f"{a} | {b}": tau for (a, b), tau in meta.tau.items()}}
    if meta.tau_significant_above is not None:
        out["tau_significant_above"] = meta.tau_significant_above
    return out


def stored_scores(s: Session, collection_id: int, qrels_id: int, settings: str, metrics: list[str]) -> ScoreTables:
    """(run ids, topics, (topics, runs) matrix) of each metric, from the stored results."""
    q = (select(RunEvaluation.run_id, RunEvaluation.topics, Score.metric, Score.values)
         .join(Score).join(Run, Run.id == RunEvaluation.run_id)
         .where(Run.collection_id == collection_id, evaluated_under(qrels_id, settings), Score.metric.in_(metrics))
         .order_by(RunEvaluation.run_id))
    out: dict[str, tuple[list[int], list[str], list[np.ndarray]]] = {}
    for run_id, topics, metric, blob in s.execute(q):
        ids, tops, cols = out.setdefault(metric, ([], list(topics), []))
        ids.append(run_id)
        cols.append(unpack(blob))
    return {m: (ids, tops, np.column_stack(cols)) for m, (ids, tops, cols) in out.items()}


def rank_changes(s: Session, job: Job, config: CollectionConfig) -> dict[str, Any]:
    """Each run's old and new rank and mean on the official metric, between two qrels versions."""
    metric = config.official_metric

    def ranking(qrels_id: int, current: bool) -> dict[int, float]:
        q = (select(RunEvaluation.run_id, Score.mean).join(Score).join(Run, Run.id == RunEvaluation.run_id)
             .where(Run.collection_id == job.collection_id, Score.metric == metric, Score.mean.is_not(None))
             .order_by(RunEvaluation.computed_at))
        # the new version's results under the job's settings; the old version's, whatever made them
        q = q.where(evaluated_under(qrels_id, config.settings_hash) if current
                    else RunEvaluation.qrels_version_id == qrels_id)
        return {run_id: mean for run_id, mean in s.execute(q)}  # the latest evaluation wins

    assert job.previous_qrels_id is not None
    old, new = ranking(job.previous_qrels_id, False), ranking(job.qrels_version_id, True)
    old_rank, new_rank = competition_ranks(old), competition_ranks(new)  # 1, 2, 2, 4
    tags = dict(s.execute(select(Run.id, Run.tag).where(Run.id.in_(set(old) | set(new)))).all())
    rows = [{"run": tags[r], "old_rank": old_rank.get(r), "new_rank": new_rank.get(r),
             "old_mean": old.get(r), "new_mean": new.get(r)}
            for r in sorted(set(old) | set(new), key=lambda r: (new_rank.get(r, 10**9), tags[r]))]
    old_v = s.get(QrelsVersion, job.previous_qrels_id)
    new_v = s.get(QrelsVersion, job.qrels_version_id)
    return {"metric": metric, "old_qrels_version": old_v.version if old_v else None,
            "new_qrels_version": new_v.version if new_v else None, "runs": rows}
