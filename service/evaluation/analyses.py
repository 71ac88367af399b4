"""Analyses of a collection computed by the workers and stored: reusability (pool statistics
and Zobel's leave-one-team-out test) and the reduced-judgment experiment.

An organiser asks for an analysis of the current qrels (``request``, ``request_reduction``);
a worker computes it (``compute``) from the stored runs and judgments and stores the result
in one transaction.
The API only reads it. Claiming is conditional (queued -> running), so a retried or
duplicated task does nothing twice; the sweeper re-queues one stuck in "running".
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from service.errors import InvalidMeasure
from service.evaluation.access import NotFound, Principal
from service.evaluation.pipeline import Followup, _json_safe
from service.evaluation.setup import audit, eval_settings, load_qrels, load_run
from service.metrics import parse_measure, pooling
from service.metrics.scoring import evaluate
from service.store.db import as_utc, transaction
from service.store.models import utcnow
from service.store.models import Analysis, Collection, CollectionConfig, Pool, QrelsVersion, Run, Team

KIND = "reusability"
REDUCTION = "reduction"
DEFAULT_DEPTH = 100  # without a pool: the depth taken as pooled (TREC's usual)
DEFAULT_KEPT = (90, 70, 50, 30, 10)  # percent of the judgments kept (Buckley & Voorhees; Sakai)


def request(s: Session, coll: Collection, me: Principal, metric: str | None = None, pool_id: int | None = None,
            depth: int | None = None) -> tuple[Analysis, list[Followup]]:
    """Queue the reusability analysis of the current qrels (organisers)."""
    me.require_organiser(coll.id)
    if coll.current_qrels_id is None:
        raise InvalidMeasure("the collection has no qrels yet")
    config = coll.current_config
    name = str(parse_measure(metric)) if metric else config.official_metric
    pool = None
    if pool_id is not None:
        pool = s.get(Pool, pool_id)
        if pool is None or pool.collection_id != coll.id:
            raise NotFound(f"no pool {pool_id} in collection {coll.id}")
    else:
        pool = s.scalars(select(Pool).where(Pool.collection_id == coll.id).order_by(Pool.number.desc())).first()
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
        raise InvalidMeasure("depth is a positive integer")
    params = {"metric": name, "pool": pool.number if pool else None, "pool_id": pool.id if pool else None,
              "depth": depth or (pool.depth if pool else DEFAULT_DEPTH),
              "pooled_runs": list(pool.run_ids) if pool else None}
    row = Analysis(collection_id=coll.id, kind=KIND, params=params, qrels_version_id=coll.current_qrels_id,
                   config_id=coll.current_config_id, created_by=me.name)
    s.add(row)
    s.flush()
    audit(s, me.name, "analysis.request", coll.id, analysis=row.id, kind=KIND, metric=name)
    return row, [Followup("run_analysis", row.id)]


def request_reduction(s: Session, coll: Collection, me: Principal,
                      kept: list[float] | None = None) -> tuple[Analysis, list[Followup]]:
    """Queue the reduced-judgment experiment on the collection's metrics (organisers)."""
    me.require_organiser(coll.id)
    if coll.current_qrels_id is None:
        raise InvalidMeasure("the collection has no qrels yet")
    shares = list(kept) if kept else list(DEFAULT_KEPT)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 100 for v in shares):
        raise InvalidMeasure("kept is a list of percentages between 0 and 100")
    sig = coll.current_config.significance
    params = {"kept": sorted({float(v) for v in shares}, reverse=True), "metrics": list(coll.current_config.metrics),
              "alpha": float(sig["alpha"]), "resamples": int(sig["resamples"]), "seed": int(sig["seed"])}
    row = Analysis(collection_id=coll.id, kind=REDUCTION, params=params, qrels_version_id=coll.current_qrels_id,
                   config_id=coll.current_config_id, created_by=me.name)
    s.add(row)
    s.flush()
    audit(s, me.name, "analysis.request", coll.id, analysis=row.id, kind=REDUCTION)
    return row, [Followup("run_analysis", row.id)]


def compute(factory: sessionmaker[Session], analysis_id: int, max_attempts: int = 3) -> list[Followup]:
    """The worker's part: claim, compute with no transaction open, store in one transaction."""
    with transaction(factory) as s:
        row = s.get(Analysis, analysis_id)
        if row is None or row.status != "queued":
            return []
        if row.attempts >= max_attempts:
            row.status, row.error, row.finished_at = "failed", f"gave up after {row.attempts} attempts", utcnow()
            return []
        attempt = row.attempts + 1  # this claim's number: only its holder stores the result
        claimed = s.execute(update(Analysis).where(Analysis.id == analysis_id, Analysis.status == "queued",
                                                   Analysis.attempts == row.attempts)
                            .values(status="running", started_at=utcnow(), attempts=attempt)
                            .execution_options(synchronize_session=False)).rowcount
        if claimed != 1:
            return []
    with factory() as s:
        row = s.get(Analysis, analysis_id)
        params, kind = dict(row.params), row.kind
        qrels = load_qrels(s.get(QrelsVersion, row.qrels_version_id))
        config = s.get(CollectionConfig, row.config_id)
        settings, order = eval_settings(config), config.evaluation.get("order", "score")
        runs = list(s.execute(select(Run.id, Run.tag, Run.file, Run.source_name, Team.name)
                              .join(Team, Team.id == Run.team_id).where(Run.collection_id == row.collection_id)
                              .order_by(Run.id)))
    try:
        loaded = [(tag, load_run(blob, source or tag, order), team, rid) for rid, tag, blob, source, team in runs]
        if kind == REDUCTION:
            result = reduction(qrels, [r for _, r, _, _ in loaded], params, settings)
        else:
            result = reusability(qrels, loaded, params, settings)
        status, error = "done", ""
    except Exception as exc:  # noqa: BLE001  (recorded on the analysis; the worker goes on)
        result, status, error = {}, "failed", f"{type(exc).__name__}: {exc}"
    with transaction(factory) as s:
        fresh = s.get(Analysis, analysis_id)
        if fresh is None or fresh.status != "running" or fresh.attempts != attempt:
            return []  # re-queued by the sweeper meanwhile and claimed again: that attempt stores it
        fresh.result, fresh.status, fresh.error, fresh.finished_at = _json_safe(result), status, error, utcnow()
    return []


def reusability(qrels: Any, runs: list[tuple[str, Any, str, int]], params: dict[str, Any],
                settings: Any) -> dict[str, Any]:
    """Pool size and judged share per topic, unique relevant documents per run and team,
    Judged@10 and Judged@depth of every run, and the leave-one-team-out table."""
    depth = int(params["depth"])
    tags = [t for t, _, _, _ in runs]
    core = {t: r for t, r, _, _ in runs}
    teams = {t: team for t, _, team, _ in runs}
    ids = {t: rid for t, _, _, rid in runs}
    pooled_ids = params.get("pooled_runs")
    pooled = [t for t in tags if pooled_ids is None or ids[t] in set(pooled_ids)]
    by_run = pooling.contributions({t: core[t] for t in pooled}, {t: t for t in pooled}, depth)
    by_team = pooling.contributions({t: core[t] for t in pooled}, {t: teams[t] for t in pooled}, depth)
    topics = []
    for topic in sorted(by_run):
        i = qrels.topic_index(topic)
        levels = dict(zip((d.decode() for d in qrels.docnos[i].tolist()), qrels.levels[i].tolist())) if i is not None \
            else {}
        union = by_run[topic]
        judged = sum(1 for d in union if levels.get(d, -1) >= 0)
        relevant = sum(1 for d in union if levels.get(d, -1) >= 1)
        topics.append({"topic": topic, "pool_size": len(union), "judged": judged,
                       "judged_share": judged / len(union) if union else None, "relevant_in_pool": relevant})
    judged_measures = ["Judged@10", f"Judged@{depth}"]
    ev = evaluate(qrels, [core[t] for t in tags], judged_measures, settings)
    unique_runs = pooling.unique_relevant(qrels, by_run)
    unique_teams = pooling.unique_relevant(qrels, by_team)
    loto = pooling.leave_one_team_out(qrels, [core[t] for t in tags], teams, params["metric"], depth, settings,
                                      pooled=pooled)
    run_rows = []
    for i, t in enumerate(tags):
        run_rows.append({"run": t, "team": teams[t], "pooled": t in set(pooled),
                         "judged_at_10": float(ev.means("Judged@10")[i]),
                         f"judged_at_{depth}": float(ev.means(f"Judged@{depth}")[i]),
                         "unique_relevant": unique_runs.get(t, 0)})
    return {"metric": params["metric"], "depth": depth, "pool": params.get("pool"), "topics": topics,
            "runs": run_rows, "teams": [{"team": k, "unique_relevant": unique_teams.get(k, 0),
                                         "runs": sorted(t for t in tags if teams[t] == k)}
                                        for k in sorted(set(teams.values()))],
            "leave_one_team_out": {"runs": loto.runs, "max_drop": loto.max_drop, "mean_change": loto.mean_change,
                                   "max_rank_drop": loto.max_rank_drop, "kendall_tau": loto.tau},
            "mean_judged_share": float(np.mean([t["judged_share"] for t in topics if t["judged_share"] is not None]))
            if topics else None}


def reduction(qrels: Any, runs: list[Any], params: dict[str, Any], settings: Any) -> dict[str, Any]:
    """Discriminative power and tau against the full ranking of every metric, on the full
    judgments and on each reduced share (the gain scale keeps the full top level)."""
    from dataclasses import replace

    from service.metrics.stats.meta import reduction_experiment

    fixed = replace(settings, max_level=settings.max_level if settings.max_level is not None else qrels.max_level)
    rows, _ = reduction_experiment(qrels, runs, params["metrics"], fixed, params["kept"], params["alpha"],
                                   params["resamples"], params["seed"])
    return {"rows": rows, "runs": len(runs), "kept": [100.0, *params["kept"]]}


def doc(s: Session, row: Analysis, me: Principal) -> dict[str, Any]:
    if row.kind == REDUCTION:
        from service.evaluation.views import denied, public_view

        coll = s.get(Collection, row.collection_id)
        if not (me.can_organise(coll.id) or coll.leaderboard_released) or public_view(coll, me):
            raise denied(me, f"analysis {row.id}")
    else:
        me.require_organiser(row.collection_id)
    version = s.get(QrelsVersion, row.qrels_version_id)
    return {"id": row.id, "collection_id": row.collection_id, "kind": row.kind, "params": {
        k: v for k, v in row.params.items() if k != "pooled_runs"}, "qrels_version": version.version if version else None,
        "status": row.status, "error": row.error, "created_at": as_utc(row.created_at).isoformat(),
        "finished_at": as_utc(row.finished_at).isoformat() if row.finished_at else None, "result": row.result}


def latest(s: Session, coll: Collection, me: Principal, kind: str = KIND) -> Analysis | None:
    """The newest analysis of a kind (reusability: organisers; reduction: as the meta-evaluation)."""
    if kind == KIND:
        me.require_organiser(coll.id)
    return s.scalars(select(Analysis).where(Analysis.collection_id == coll.id, Analysis.kind == kind)
                     .order_by(Analysis.id.desc())).first()


def sweep(factory: sessionmaker[Session], timeout: float) -> list[Followup]:
    """Re-send analyses stuck in "running" for ``timeout`` seconds (a worker lost; analyses
    get three times the evaluation timeout, being longer) and queued ones never picked up.
    Each change is conditional on the state read, so a concurrent claim wins."""
    now = utcnow()
    out = []
    with transaction(factory) as s:
        for row in s.scalars(select(Analysis).where(Analysis.status.in_(("running", "queued")))):
            if row.status == "running" and as_utc(row.started_at) < now - timedelta(seconds=3 * timeout):
                changed = s.execute(update(Analysis).where(Analysis.id == row.id, Analysis.status == "running",
                                                           Analysis.attempts == row.attempts)
                                    .values(status="queued").execution_options(synchronize_session=False)).rowcount
                if changed:
                    out.append(Followup("run_analysis", row.id))
            elif row.status == "queued" and as_utc(row.created_at) < now - timedelta(seconds=timeout):
                out.append(Followup("run_analysis", row.id))  # lost on the way: sending twice is harmless
    return out
