"""The workers' part of a reproducibility track: every declared reproduction of a collection
measured against its original, stored in one transaction, recomputed when its inputs change.

Like the judge board, the computation is an ``Analysis`` row of kind ``reproducibility`` per
collection. Its *inputs* are the declarations and, for every run they name, the id of its
current stored evaluation (under its own collection's current qrels version and
configuration: an original of another collection is scored on that collection's qrels). A
change of any of them (a declaration, a qrels correction, a re-evaluation) makes the stored
measures stale; :func:`queue_if_stale` is called when a declaration is made, when the last
item of an evaluation job completes (:func:`after_evaluations`, for the job's collection and
every collection reproducing one of its runs) and by the scheduled refresh.

The worker reads the stored per-topic scores (``Score.values``) and, on the same collection,
the two run files (for KTU and RBO, read with the core's reader in the collection's rank
order), computes with :mod:`service.metrics.stats.reproducibility` outside any transaction,
and replaces the collection's ``ReproductionMeasure`` rows with the new ones in the
transaction that marks the analysis done: storing twice stores the same rows. Nothing is
computed in a request.

Each row's ``summary`` carries, besides the figures over every topic, the same figures over
the *visible* topics (``summary["visible"]``) when a collection involved (the reproduction's
or the original's) has a public/private topic split: every run's scores restricted to the
topics its own collection shows to those who may see its visible topics only. The board
gives a caller the variant that run's own board would show it (:mod:`.board`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.analysing import analyses
from service.evaluation.common.work import Followup, Heartbeat, LeaseLost, Limits, patiently
from service.evaluation.organising.results import current_result, json_safe
from service.evaluation.organising.setup import load_run
from service.evaluation.permissions import policy
from service.metrics.stats import reproducibility as rp
from service.store.arrays import pack
from service.store.db import transaction
from service.store.models import (
    Analysis,
    Collection,
    CollectionConfig,
    Job,
    Reproduction,
    ReproductionMeasure,
    ReproductionOriginal,
    Run,
    RunEvaluation,
    Score,
)

KIND = analyses.REPRODUCIBILITY
#: The measures' parameters: repro_eval's (and ``cranfield repro``'s) defaults, so that a stored
#: figure is the one the file-mode command prints for the same runs and qrels.
SETTINGS: dict[str, Any] = {"ktu_depth": rp.KTU_DEPTH, "ktu_variant": "repro_eval", "rbo_p": rp.RBO_P,
                            "rbo_depth": rp.RBO_DEPTH, "welch": False, "resamples": 10_000, "level": 0.95,
                            "seed": 0}
ORDER = ""  # the metric of the document-order rows (KTU, RBO)
PARTS = ("baseline", "advanced")
VISIBLE = "visible"  # the summary's key of the figures over the visible topics of each run's collection


# --- inputs and queueing ----------------------------------------------------------------------


def declarations(s: Session, coll: Collection) -> list[tuple[Reproduction, ReproductionOriginal]]:
    return list(s.execute(select(Reproduction, ReproductionOriginal)
                          .join(ReproductionOriginal, ReproductionOriginal.id == Reproduction.original_id)
                          .where(Reproduction.collection_id == coll.id).order_by(Reproduction.id)).all())


def runs_of(rep: Reproduction, orig: ReproductionOriginal) -> tuple[list[int], list[int]]:
    """(original runs, reproduction runs), in the roles baseline[, advanced]."""
    if rep.advanced_run_id is not None and orig.advanced_run_id is not None:
        return [orig.run_id, orig.advanced_run_id], [rep.run_id, rep.advanced_run_id]
    return [orig.run_id], [rep.run_id]


def current_evaluation(s: Session, run_id: int) -> int | None:
    """The run's current stored evaluation under its own collection's qrels and configuration."""
    run = s.get(Run, run_id)
    coll = s.get(Collection, run.collection_id) if run is not None else None
    if coll is None or coll.current_config_id is None or coll.current_qrels_id is None:
        return None
    return s.scalar(select(RunEvaluation.id).where(RunEvaluation.run_id == run_id,
                                                   current_result(coll, coll.current_qrels_id))
                    .order_by(RunEvaluation.id.desc()).limit(1))


def hidden_of(coll: Collection | None) -> list[str]:
    """The hidden topics of a collection's public/private split (sorted; [] without one)."""
    return sorted(policy.hidden_topics(coll)) if coll is not None else []


def inputs(s: Session, coll: Collection) -> dict[str, Any]:
    """What the collection's measures are computed from (a change of any of it: stale),
    including each involved collection's topic split (the visible topics' figures)."""
    reps, results, hidden = [], {}, {}
    for rep, orig in declarations(s, coll):
        o, r = runs_of(rep, orig)
        reps.append([rep.id, r, o])
        for run_id in (*o, *r):
            results[str(run_id)] = current_evaluation(s, run_id)
            run = s.get(Run, run_id)
            if run is not None and str(run.collection_id) not in hidden:
                hidden[str(run.collection_id)] = hidden_of(s.get(Collection, run.collection_id))
    return {"config": coll.current_config_id, "reproductions": reps, "results": results, "settings": SETTINGS,
            "hidden": hidden}


def waiting(inp: Mapping[str, Any]) -> int:
    """Runs of the declarations with no current evaluation yet (their measures wait for it)."""
    return sum(1 for v in inp["results"].values() if v is None)


def key(inp: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inp, sort_keys=True).encode()).hexdigest()


def newest(s: Session, coll: Collection, *statuses: str) -> Analysis | None:
    q = select(Analysis).where(Analysis.collection_id == coll.id, Analysis.kind == KIND)
    if statuses:
        q = q.where(Analysis.status.in_(statuses))
    return s.scalars(q.order_by(Analysis.id.desc()).limit(1)).first()


def computed_key(row: Analysis) -> str | None:
    return (row.result or {}).get("key") or row.params.get("key")


def queue_if_stale(s: Session, coll: Collection, actor: str = "refresh", force: bool = False) -> list[Followup]:
    """Queue the computation of the collection's reproductions unless one is queued (its
    worker reads the inputs when it starts), the one running started from the same inputs, or
    the newest done one is up to date (``force``: even then). Nothing without declarations."""
    if coll.current_config_id is None:
        return []
    row = newest(s, coll, "done", "queued", "running")
    if row is not None:  # serialise the callers of one collection on its newest row (PostgreSQL)
        s.scalar(select(Analysis.id).where(Analysis.id == row.id).with_for_update())
        row = newest(s, coll, "done", "queued", "running")
    if row is not None and row.status == "queued":
        return []
    inp = inputs(s, coll)
    if not inp["reproductions"]:
        return []
    k = key(inp)
    if row is not None and not (force and row.status == "done") and k == (
            row.params.get("key") if row.status == "running" else computed_key(row)):
        return []
    fresh = Analysis(collection_id=coll.id, kind=KIND, params={"key": k}, qrels_version_id=coll.current_qrels_id,
                     config_id=coll.current_config_id, created_by=actor)
    s.add(fresh)
    s.flush()
    return [analyses.followup(fresh)]


def after_evaluations(s: Session, job: Job) -> list[Followup]:
    """When the last item of ``job`` completed: the measures of the job's collection and of
    every collection reproducing one of its runs, if their inputs changed."""
    coll = s.get(Collection, job.collection_id)
    if coll is None or job.config_id != coll.current_config_id or job.qrels_version_id != coll.current_qrels_id:
        return []
    ids = {coll.id} | set(s.scalars(
        select(Reproduction.collection_id).join(ReproductionOriginal, ReproductionOriginal.id == Reproduction.original_id)
        .join(Run, Run.id == ReproductionOriginal.run_id).where(Run.collection_id == coll.id)))
    out: list[Followup] = []
    for cid in sorted(ids):
        c = s.get(Collection, cid)
        if c is not None:
            out += queue_if_stale(s, c, "evaluations")
    return out


# --- the computation --------------------------------------------------------------------------


def compute(factory: sessionmaker[Session], analysis_id: int, max_attempts: int = 3,
            lease: float = Limits.lease) -> list[Followup]:
    """The worker's part: claim the row, read the inputs, compute (no transaction open), store."""
    return analyses.run_claimed(factory, analysis_id, (KIND,), max_attempts, lease, _compute)


def _scores(s: Session, evaluation_id: int | None, metrics: list[str]) -> dict[str, dict[str, float]]:
    """metric -> {topic: score} of a stored evaluation, topics not scored (NaN) left out."""
    if evaluation_id is None:
        return {}
    ev = s.get(RunEvaluation, evaluation_id)
    out = {}
    for metric, blob in s.execute(select(Score.metric, Score.values).where(
            Score.run_evaluation_id == evaluation_id, Score.metric.in_(metrics))):
        values = np.frombuffer(blob, dtype="<f8")
        out[metric] = {t: float(v) for t, v in zip(ev.topics, values) if not math.isnan(v)}
    return out


def _read_task(s: Session, coll: Collection, rep_id: int, rep_runs: list[int], orig_runs: list[int],
               results: Mapping[str, Any]) -> dict[str, Any]:
    orig_coll = s.get(Collection, s.get(Run, orig_runs[0]).collection_id)
    config = s.get(CollectionConfig, coll.current_config_id)
    orig_config = s.get(CollectionConfig, orig_coll.current_config_id)
    metrics = [m for m in config.metrics if m in set(orig_config.metrics)]
    task: dict[str, Any] = {"id": rep_id, "same_collection": orig_coll.id == coll.id, "metrics": metrics,
                            "missing": [r for r in (*orig_runs, *rep_runs) if results.get(str(r)) is None],
                            "hidden": (hidden_of(orig_coll), hidden_of(coll))}
    if task["missing"]:
        return task
    task["original"] = [_scores(s, results[str(r)], metrics) for r in orig_runs]
    task["reproduction"] = [_scores(s, results[str(r)], metrics) for r in rep_runs]
    if task["same_collection"]:
        order = config.evaluation.get("order", "score")
        files = dict(s.execute(select(Run.id, Run.file).where(Run.id.in_([*orig_runs, *rep_runs]))).all())
        names = dict(s.execute(select(Run.id, Run.source_name).where(Run.id.in_([*orig_runs, *rep_runs]))).all())
        task["files"] = ([(files[r], names[r] or str(r)) for r in orig_runs],
                         [(files[r], names[r] or str(r)) for r in rep_runs], order)
    return task


def _compute(factory: sessionmaker[Session], analysis_id: int, attempt: int, heartbeat: Heartbeat) -> list[Followup]:
    def read() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        with factory() as s:
            row = s.get(Analysis, analysis_id)
            coll = s.get(Collection, row.collection_id)
            inp = inputs(s, coll)
            return inp, [_read_task(s, coll, rid, r, o, inp["results"]) for rid, r, o in inp["reproductions"]]

    inp, tasks = patiently(read, heartbeat)
    measured: dict[int, list[dict[str, Any]]] = {}
    notes: dict[str, str] = {}
    with heartbeat.guarded():
        for task in tasks:
            if task["missing"]:
                notes[str(task["id"])] = "waiting for the evaluation of runs " + ", ".join(map(str, task["missing"]))
                continue
            try:
                rankings = None
                if task["same_collection"]:
                    orig_files, rep_files, order = task["files"]
                    rankings = ([load_run(b, n, order).to_rankings() for b, n in orig_files],
                                [load_run(b, n, order).to_rankings() for b, n in rep_files])
                measured[task["id"]] = measure_visible(task, rankings)
            except LeaseLost:
                raise
            except Exception as exc:  # noqa: BLE001  (one reproduction's failure is its note)
                notes[str(task["id"])] = f"{type(exc).__name__}: {exc}"
    result = {"key": key(inp), "waiting": waiting(inp), "notes": notes, "settings": SETTINGS}
    return _store(factory, analysis_id, attempt, [rid for rid, _, _ in inp["reproductions"]], measured, result,
                  heartbeat)


def _store(factory: sessionmaker[Session], analysis_id: int, attempt: int, rep_ids: list[int],
           measured: dict[int, list[dict[str, Any]]], result: dict[str, Any], heartbeat: Heartbeat) -> list[Followup]:
    """The new rows in place of the collection's reproductions' old ones, and the analysis
    done, in one transaction, if this attempt still holds the claim."""
    def store() -> list[Followup]:
        with transaction(factory) as s:
            fresh = analyses.claimed(s, analysis_id, attempt)
            if fresh is None:
                return []
            alive = set(s.scalars(select(Reproduction.id).where(Reproduction.id.in_(rep_ids))))
            if rep_ids:
                s.execute(delete(ReproductionMeasure).where(ReproductionMeasure.reproduction_id.in_(rep_ids))
                          .execution_options(synchronize_session=False))
            for rid, rows in measured.items():
                if rid not in alive:  # withdrawn meanwhile
                    continue
                for r in rows:
                    s.add(ReproductionMeasure(reproduction_id=rid, analysis_id=analysis_id, metric=r["metric"],
                                              part=r["part"], summary=json_safe(r["summary"]), topics=r["topics"],
                                              rows=r["rows"], values=pack(r["values"])))
            analyses.finish(fresh, result, "")
        return []

    return patiently(store, heartbeat)


def measure_visible(task: Mapping[str, Any],
                    rankings: tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]] | None) -> list[dict[str, Any]]:
    """:func:`measure` of one task, each row's summary with its figures over the visible topics
    (``summary[VISIBLE]``) when the original's or the reproduction's collection hides topics:
    the original's scores and rankings without its collection's hidden topics, the
    reproduction's without its own's. A variant that cannot be measured (too few visible
    topics) is left out: the board then withholds the figure and says why."""
    rows = measure(task["original"], task["reproduction"], task["metrics"], task["same_collection"], rankings)
    hide_o, hide_r = (frozenset(h) for h in task["hidden"])
    if not hide_o and not hide_r:
        return rows

    def scores(side: list[dict[str, dict[str, float]]], hide: frozenset[str]) -> list[dict[str, dict[str, float]]]:
        return [{m: {t: v for t, v in per.items() if t not in hide} for m, per in run.items()} for run in side]

    def ranked(side: list[Mapping[str, Any]], hide: frozenset[str]) -> list[Mapping[str, Any]]:
        return [{t: v for t, v in run.items() if t not in hide} for run in side]

    try:
        visible = measure(scores(task["original"], hide_o), scores(task["reproduction"], hide_r), task["metrics"],
                          task["same_collection"], None if rankings is None else
                          (ranked(rankings[0], hide_o), ranked(rankings[1], hide_r)))
    except LeaseLost:
        raise
    except Exception:  # noqa: BLE001  (no visible variant: the board withholds what needs it)
        return rows
    by_key = {(v["metric"], v["part"]): v["summary"] for v in visible}
    for row in rows:
        if (row["metric"], row["part"]) in by_key:
            row["summary"] = {**row["summary"], VISIBLE: by_key[(row["metric"], row["part"])]}
    return rows


def _relative(change: float, base: float) -> float:
    return change / base if base and math.isfinite(base) else math.nan


def _matrix(topics: list[str], *series: Mapping[str, float]) -> np.ndarray:
    return np.array([[x.get(t, math.nan) for t in topics] for x in series], dtype=np.float64).reshape(
        len(series), len(topics))


def measure(original: list[dict[str, dict[str, float]]], reproduction: list[dict[str, dict[str, float]]],
            metrics: list[str], same_collection: bool,
            rankings: tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """Every stored row of one reproduction: ``original``/``reproduction`` hold, per run role
    (baseline[, advanced]), metric -> {topic: score}; ``rankings`` the runs' ranked lists in
    the same roles (same collection). The figures are the core's on exactly these inputs."""
    st = SETTINGS
    rows: list[dict[str, Any]] = []
    parts = PARTS[:len(original)]
    if same_collection and rankings is not None:
        for i, part in enumerate(parts):
            d = rp.document_order(rankings[0][i], rankings[1][i], ktu_depth=st["ktu_depth"],
                                  ktu_variant=st["ktu_variant"], rbo_p=st["rbo_p"], rbo_depth=st["rbo_depth"])
            topics = list(d.topics)
            rows.append({"metric": ORDER, "part": part, "topics": topics, "rows": ["KTU", "RBO"],
                         "values": _matrix(topics, d.ktu, d.rbo),
                         "summary": {"KTU": d.ktu_mean, "RBO": d.rbo_mean, "left_out": list(d.left_out)}})
    for m in metrics:
        per_part = [(original[i].get(m), reproduction[i].get(m)) for i in range(len(parts))]
        if any(o is None or r is None for o, r in per_part):
            continue
        for part, (o, r) in zip(parts, per_part):
            c = rp.compare_run(o, r, same_collection=same_collection, welch=st["welch"])
            topics = list(o) if same_collection else sorted(set(o) | set(r))
            rows.append({"metric": m, "part": part, "topics": topics, "rows": ["original", "reproduction"],
                         "values": _matrix(topics, o, r),
                         "summary": {"mean_original": c.original_mean, "mean_reproduction": c.reproduction_mean,
                                     "RMSE": c.rmse, "nRMSE": c.nrmse, "p_value": c.p_value, "test": c.test,
                                     # LongEval's result delta between snapshots, absolute and relative
                                     "delta": c.reproduction_mean - c.original_mean,
                                     "relative_delta": _relative(c.reproduction_mean - c.original_mean,
                                                                 c.original_mean)}})
        if len(per_part) == 2:
            (ob, rb), (oa, ra) = per_part
            e = rp.compare_effect(ob, oa, rb, ra, same_collection=same_collection, resamples=st["resamples"],
                                  level=st["level"], seed=st["seed"])
            iv = e.intervals
            topics = list(oa) if same_collection else sorted(set(oa) | set(ra))
            gain_o = {t: oa[t] - ob[t] for t in oa if t in ob}
            gain_r = {t: ra[t] - rb[t] for t in ra if t in rb}
            rows.append({"metric": m, "part": "effect", "topics": topics,
                         "rows": ["improvement_original", "improvement_reproduction"],
                         "values": _matrix(topics, gain_o, gain_r),
                         "summary": {"ER": e.er, "ER_low": iv.er_low, "ER_high": iv.er_high, "DeltaRI": e.delta_ri,
                                     "DeltaRI_low": iv.dri_low, "DeltaRI_high": iv.dri_high,
                                     "RI_original": e.ri_original, "RI_reproduction": e.ri_reproduction,
                                     "level": iv.level, "resamples": iv.resamples,
                                     "undefined_resamples": {"ER": iv.er_undefined, "DeltaRI": iv.dri_undefined}}})
    return rows
