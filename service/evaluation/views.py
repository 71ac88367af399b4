"""What a caller may see and do, as plain documents: the use cases shared by the API and the portal.

Every function takes a session and the caller (:class:`Principal`), applies the access rules
and returns JSON-ready dicts; the HTTP layers (``service.api``, ``service.portal``) only
translate requests and render. Nothing here computes a metric: it reads stored results.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import InvalidInput, InvalidMeasure
from service.evaluation.access import Conflict, Forbidden, NotFound, Principal, Unauthenticated
from service.evaluation.pipeline import Followup, plan_job
from service.evaluation.reading import annotate, complete_version_id, computed_at, significance_for
from service.evaluation.reading import leaderboard as read_leaderboard
from service.evaluation.setup import EVALUATOR_VERSION, add_qrels, add_run
from service.formats.readers import parse_qrels, parse_run
from service.metrics import parse_measure
from service.store.db import as_utc, transaction
from service.store.models import Collection, Job, LeaderboardSnapshot, QrelsVersion, Run, Team, Topic


def iso(value: datetime | None) -> str | None:
    value = as_utc(value)
    return value.isoformat() if value else None


# ------------------------------------------------------------------------ access helpers
def hidden_topics(coll: Collection) -> set[str]:
    cfg = coll.current_config
    return set(cfg.evaluation.get("hidden_topics") or []) if cfg is not None else set()


def public_view(coll: Collection, me: Principal) -> bool:
    """Callers other than organisers see the visible topics only until the split is revealed."""
    return bool(hidden_topics(coll)) and not coll.topics_revealed and not me.can_organise(coll.id)


def denied(me: Principal, what: str) -> Exception:
    """Every denial is 401 (no credentials) or 403 (not allowed), never a silent 404."""
    return Unauthenticated(f"{what} needs a bearer token") if me.role is None else Forbidden(f"{what} is not yours")


def collection(s: Session, cid: int, me: Principal) -> Collection:
    coll = s.get(Collection, cid)
    if coll is None:
        raise NotFound(f"no collection {cid}")
    if not me.can_see_collection(coll):
        raise denied(me, f"collection {cid}")
    return coll


def visible_collections(s: Session, me: Principal) -> list[Collection]:
    return [c for c in s.scalars(select(Collection).order_by(Collection.id)) if me.can_see_collection(c)]


def can_see_board(coll: Collection, me: Principal) -> bool:
    return me.can_organise(coll.id) or coll.leaderboard_released or me.role == "participant"


def run(s: Session, rid: int, me: Principal) -> tuple[Run, Collection]:
    row = s.get(Run, rid)
    coll = s.get(Collection, row.collection_id) if row is not None else None
    if row is None or coll is None:
        raise NotFound(f"no run {rid}")
    if not me.can_see_run(row, coll):
        raise denied(me, f"run {rid}")
    return row, coll


def owns_or_organises(me: Principal, row: Run, coll: Collection) -> bool:
    return me.can_organise(coll.id) or (me.role == "participant" and row.team_id == me.team_id)


def _version_number(s: Session, version_id: int | None) -> int | None:
    version = s.get(QrelsVersion, version_id) if version_id is not None else None
    return version.version if version else None


def team_name(s: Session, me: Principal) -> str | None:
    team = s.get(Team, me.team_id) if me.team_id else None
    return team.name if team else None


# ------------------------------------------------------------------------------ documents
def collection_doc(coll: Collection, me: Principal) -> dict[str, Any]:
    cfg = coll.current_config
    doc = {"id": coll.id, "name": coll.name, "description": coll.description, "visibility": coll.visibility,
           "official_metric": cfg.official_metric if cfg else None, "metrics": cfg.metrics if cfg else [],
           "submission_opens_at": iso(coll.submission_opens_at),
           "submission_closes_at": iso(coll.submission_closes_at),
           "daily_run_quota": coll.daily_run_quota, "leaderboard_released": coll.leaderboard_released,
           "topic_split": bool(cfg and cfg.evaluation.get("hidden_topics")), "topics_revealed": coll.topics_revealed}
    if me.can_organise(coll.id) and cfg is not None:
        doc.update(levels=cfg.levels, evaluation=cfg.evaluation, significance=cfg.significance,
                   config_version=cfg.version)
    return doc


def run_doc(row: Run) -> dict[str, Any]:
    return {"id": row.id, "collection_id": row.collection_id, "tag": row.tag, "team": row.team.name,
            "status": row.status, "reason": row.status_reason, "submitted_at": iso(row.submitted_at),
            "topics": row.n_topics, "depth": row.depth, "lines": row.n_lines, "baseline": row.is_baseline,
            "primary": row.is_primary, "description": row.description}


def runs_of(s: Session, coll: Collection, me: Principal) -> list[Run]:
    """The runs the caller may list: all of them for organisers, the own team's otherwise."""
    me.require_authenticated()
    return [r for r in s.scalars(select(Run).where(Run.collection_id == coll.id).order_by(Run.id))
            if me.can_organise(coll.id) or r.team_id == me.team_id]


def qrels_versions(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    me.require_organiser(coll.id)
    versions = s.scalars(select(QrelsVersion).where(QrelsVersion.collection_id == coll.id)
                         .order_by(QrelsVersion.version))
    return {"current": coll.current_qrels.version if coll.current_qrels else None, "items": [
        {"version": v.version, "uploaded_by": v.uploaded_by, "uploaded_at": iso(v.uploaded_at),
         "checksum": v.checksum, "judgments": v.n_judgments, "level_counts": v.level_counts} for v in versions]}


# ---------------------------------------------------------------------------- leaderboard
def leaderboard_doc(s: Session, coll: Collection, me: Principal, metric: str | None = None,
                    primary_only: bool = False, qrels_version: int | None = None,
                    test: str | None = None) -> dict[str, Any]:
    """The ranked board the caller may see, annotated with the stored significance test."""
    if not can_see_board(coll, me):
        raise denied(me, f"the leaderboard of collection {coll.id}")
    public = public_view(coll, me)
    name, rows = read_leaderboard(s, coll.name, metric, qrels_version, public)
    if primary_only:
        primary = set(s.scalars(select(Run.tag).where(Run.collection_id == coll.id, Run.is_primary)))
        rows = [r for r in rows if r.run in primary]
    mine = team_name(s, me)
    visible = [r for r in rows if me.can_organise(coll.id) or coll.leaderboard_released or r.team == mine]
    sig = significance_for(s, coll, name, test, qrels_version, "public" if public else "all")
    annotated = annotate(visible, sig)
    running = s.scalar(select(func.count()).select_from(Job).where(
        Job.collection_id == coll.id, Job.status.in_(("running", "testing"))))
    run_ids = dict(s.execute(select(Run.tag, Run.id).where(Run.collection_id == coll.id)).all())
    return {"collection": coll.name, "metric": name, "released": coll.leaderboard_released,
            "topics": "visible only (public/private split)" if public else "all",
            "qrels_version": rows[0].qrels_version if rows else (
                qrels_version if qrels_version is not None else _version_number(s, complete_version_id(s, coll))),
            "newest_qrels_version": coll.current_qrels.version if coll.current_qrels else None,
            "computed_at": iso(computed_at(s, coll, qrels_version)),
            "reevaluation_in_progress": bool(running),
            "significance": {"test": sig[3], "alpha": sig[2], "correction": sig[4]} if sig else None,
            "rows": [{**{k: r[k] for k in ("rank", "run", "team", "mean", "ci_low", "ci_high", "n_topics", "baseline",
                                           "judged_at_10", "beats", "tied_with", "groups") if k in r},
                      "run_id": run_ids.get(r["run"])}
                     for r in annotated]}


def significance_matrix(s: Session, coll: Collection, me: Principal, metric: str | None = None,
                        test: str | None = None, qrels_version: int | None = None) -> dict[str, Any]:
    if not (me.can_organise(coll.id) or coll.leaderboard_released):
        raise denied(me, f"the significance matrix of collection {coll.id}")
    name = str(parse_measure(metric)) if metric else coll.current_config.official_metric
    sig = significance_for(s, coll, name, test, qrels_version, subset="public" if public_view(coll, me) else "all")
    if sig is None:
        raise NotFound(f"no stored test for {name} on these results")
    names, matrix, alpha, test_name = sig[:4]
    return {"metric": name, "test": test_name, "alpha": alpha, "runs": names,
            "p_adjusted": [[1.0 if x == y else matrix.get((x, y), matrix.get((y, x))) for y in names]
                           for x in names]}


def stored_tests(s: Session, coll: Collection) -> list[str]:
    """The test names stored for the current results (for a test selector)."""
    from service.store.models import Significance

    return sorted(set(s.scalars(select(Significance.test).where(
        Significance.collection_id == coll.id, Significance.qrels_version_id == coll.current_qrels_id))))


# ------------------------------------------------------------------------ per-run views
def per_topic(s: Session, coll: Collection, runs: list[Run], metric: str | None,
              hide: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    from service.store.arrays import unpack
    from service.store.models import RunEvaluation, Score

    name = str(parse_measure(metric)) if metric else coll.current_config.official_metric
    version_id = complete_version_id(s, coll)
    out: dict[str, Any] = {"metric": name, "qrels_version": _version_number(s, version_id), "runs": {}}
    for row in runs:
        found = s.execute(select(RunEvaluation.topics, Score.values, Score.mean).join(Score).where(
            RunEvaluation.run_id == row.id, RunEvaluation.qrels_version_id == version_id,
            RunEvaluation.settings_hash == coll.current_config.settings_hash,
            RunEvaluation.evaluator_version == EVALUATOR_VERSION, Score.metric == name)).first()
        if found is None:
            raise NotFound(f"no stored {name} scores for run {row.id} (not evaluated yet?)")
        values = unpack(found.values)
        out["runs"][row.tag] = {"mean": found.mean if not hide else None, "per_topic": {
            t: (None if v != v else float(v)) for t, v in zip(found.topics, values.tolist()) if t not in hide}}
    return out


def run_scores(s: Session, rid: int, me: Principal, metric: str | None = None) -> dict[str, Any]:
    row, coll = run(s, rid, me)
    if not owns_or_organises(me, row, coll):
        raise denied(me, f"the per-topic scores of run {rid}")
    return per_topic(s, coll, [row], metric, hide=hidden_topics(coll) if public_view(coll, me) else set())


def topic_summary(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """Per topic, the median and the best score over all evaluated runs (for the run page's chart).

    Organisers always; others once the leaderboard is released (as TREC and NTCIR hand them
    out with the results): before that, with few runs, they would let a team work out another
    team's per-topic scores.
    """
    if not (me.can_organise(coll.id) or coll.leaderboard_released):
        raise denied(me, f"the per-topic medians of collection {coll.id}")
    import numpy as np

    from service.store.arrays import unpack
    from service.store.models import RunEvaluation, Score

    name = str(parse_measure(metric)) if metric else coll.current_config.official_metric
    hide = hidden_topics(coll) if public_view(coll, me) else set()
    per: dict[str, list[float]] = {}
    for topics, blob in s.execute(select(RunEvaluation.topics, Score.values).join(Score).join(
            Run, Run.id == RunEvaluation.run_id).where(
            Run.collection_id == coll.id, RunEvaluation.qrels_version_id == complete_version_id(s, coll),
            RunEvaluation.settings_hash == coll.current_config.settings_hash,
            RunEvaluation.evaluator_version == EVALUATOR_VERSION, Score.metric == name)):
        for t, v in zip(topics, unpack(blob).tolist()):
            if t not in hide and v == v:
                per.setdefault(t, []).append(v)
    return {"metric": name, "topics": {t: {"median": float(np.median(v)), "best": float(max(v))}
                                       for t, v in sorted(per.items())}}


def compare(s: Session, coll: Collection, me: Principal, a: int, b: int, metric: str | None = None) -> dict[str, Any]:
    runs = [run(s, a, me)[0], run(s, b, me)[0]]
    for row in runs:
        if row.collection_id != coll.id:
            raise NotFound(f"run {row.id} is not in collection {coll.id}")
        if not owns_or_organises(me, row, coll):
            raise denied(me, f"the per-topic scores of run {row.id}")
    public = public_view(coll, me)
    doc = per_topic(s, coll, runs, metric, hide=hidden_topics(coll) if public else set())
    x, y = (doc["runs"][r.tag]["per_topic"] for r in runs)
    diffs = {t: (x[t] - y[t]) for t in x if x[t] is not None and y.get(t) is not None}
    doc["a"], doc["b"] = runs[0].tag, runs[1].tag
    doc["differences"] = dict(sorted(diffs.items(), key=lambda kv: -kv[1]))
    doc["wins"] = sum(v > 0 for v in diffs.values())
    doc["ties"] = sum(v == 0 for v in diffs.values())
    doc["losses"] = sum(v < 0 for v in diffs.values())
    sig = significance_for(s, coll, doc["metric"], subset="public" if public else "all")
    doc["p_adjusted"] = None if sig is None else sig[1].get((runs[0].tag, runs[1].tag),
                                                             sig[1].get((runs[1].tag, runs[0].tag)))
    doc["test"] = None if sig is None else {"test": sig[3], "alpha": sig[2]}
    return doc


def run_curve(s: Session, rid: int, me: Principal) -> dict[str, Any]:
    """J&K's average gain curves of a run on the current qrels, stored by the workers."""
    from service.store.arrays import unpack
    from service.store.models import RunCurve, RunEvaluation

    row, coll = run(s, rid, me)
    if not (owns_or_organises(me, row, coll) or coll.leaderboard_released) or public_view(coll, me):
        raise denied(me, f"the curves of run {rid} (they include hidden topics)")
    curve = s.scalar(select(RunCurve).join(RunEvaluation).where(
        RunEvaluation.run_id == row.id, RunEvaluation.qrels_version_id == complete_version_id(s, coll),
        RunEvaluation.settings_hash == coll.current_config.settings_hash,
        RunEvaluation.evaluator_version == EVALUATOR_VERSION))
    if curve is None:
        raise NotFound(f"no stored curves for run {rid} (not evaluated yet?)")
    return {"run": row.tag, "depth": curve.depth, "log_base": 2,
            **{k: unpack(getattr(curve, k)).tolist() for k in ("cg", "dcg", "ncg", "ndcg", "ideal_cg", "ideal_dcg")}}


def finished_job(s: Session, coll: Collection) -> Job | None:
    """The newest finished job of the current qrels version and configuration."""
    return s.scalars(select(Job).where(Job.collection_id == coll.id, Job.qrels_version_id == coll.current_qrels_id,
                                       Job.config_id == coll.current_config_id, Job.status == "done")
                     .order_by(Job.id.desc())).first()


def metaeval(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    """Discriminative power and Kendall's tau of the collection's metrics (stored by the workers)."""
    if not (me.can_organise(coll.id) or coll.leaderboard_released) or public_view(coll, me):
        raise denied(me, f"the meta-evaluation of collection {coll.id}")
    job = finished_job(s, coll)
    if job is None or "meta" not in (job.report or {}):
        raise NotFound("no meta-evaluation of the current results yet")
    return {"qrels_version": coll.current_qrels.version if coll.current_qrels else None,
            "computed_at": iso(job.finished_at), **job.report["meta"]}


def rank_change_report(s: Session, coll: Collection, me: Principal) -> dict[str, Any] | None:
    """The newest qrels update's rank changes (stored by the workers), or None before any update.

    Organisers only while the board is unreleased; the report names every run.
    """
    if not (me.can_organise(coll.id) or coll.leaderboard_released) or public_view(coll, me):
        raise denied(me, f"the rank-change report of collection {coll.id}")
    job = s.scalars(select(Job).where(Job.collection_id == coll.id, Job.status == "done",
                                      Job.previous_qrels_id.is_not(None))
                    .order_by(Job.id.desc())).first()
    if job is None or not job.report or "runs" not in job.report:
        return None
    report = {k: v for k, v in job.report.items() if k != "meta"}
    old_v, new_v = report.get("old_qrels_version"), report.get("new_qrels_version")
    changes = None
    if old_v is not None and new_v is not None:
        before = significance_for(s, coll, report["metric"], qrels_version=old_v, any_settings=True)
        after = significance_for(s, coll, report["metric"], qrels_version=new_v)
        if before is not None and after is not None:
            changes = significance_changes(before, after, {r["run"]: r for r in report["runs"]})
    return {"job": job.id, "computed_at": iso(job.finished_at), **report, "significance_changes": changes}


def significance_changes(before: Any, after: Any, rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Run pairs whose significance relation differs between two stored tests: a pair that
    was significant and is no longer, or the reverse, or whose direction flipped."""
    old_p, old_alpha = before[1], before[2]
    new_p, new_alpha = after[1], after[2]

    def relation(p: dict[tuple[str, str], float], alpha: float, a: str, b: str, key: str) -> str | None:
        value = p.get((a, b), p.get((b, a)))
        if value is None:
            return None
        if value >= alpha:
            return "tied"
        ma, mb = rows.get(a, {}).get(key), rows.get(b, {}).get(key)
        if ma is None or mb is None:
            return None
        return "a > b" if ma > mb else "b > a"

    out = []
    runs = sorted(rows)
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            was = relation(old_p, old_alpha, a, b, "old_mean")
            now = relation(new_p, new_alpha, a, b, "new_mean")
            if was is not None and now is not None and was != now:
                out.append({"a": a, "b": b, "before": was, "after": now})
    return out


def snapshots(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    # A snapshot holds the organisers' board (all topics): not for others before the reveal.
    if not (me.can_organise(coll.id) or coll.leaderboard_released) or public_view(coll, me):
        raise denied(me, f"the snapshots of collection {coll.id}")
    rows = s.scalars(select(LeaderboardSnapshot).where(LeaderboardSnapshot.collection_id == coll.id)
                     .order_by(LeaderboardSnapshot.id))
    return [{"id": r.id, "qrels_version": r.qrels_version, "metric": r.metric, "label": r.label,
             "created_at": iso(r.created_at)} for r in rows]


def snapshot(s: Session, sid: int, me: Principal) -> dict[str, Any]:
    snap = s.get(LeaderboardSnapshot, sid)
    if snap is None:
        raise NotFound(f"no snapshot {sid}")
    coll = collection(s, snap.collection_id, me)
    if not (me.can_organise(coll.id) or coll.leaderboard_released) or public_view(coll, me):
        raise denied(me, f"snapshot {sid}")
    return {"id": snap.id, "collection_id": coll.id, "label": snap.label, "created_at": iso(snap.created_at),
            **snap.content}


def freeze(s: Session, coll: Collection, me: Principal, metric: str | None, label: str) -> dict[str, Any]:
    """Store the current board (as the organiser sees it) as an immutable snapshot."""
    from service.evaluation.setup import audit

    me.require_organiser(coll.id)
    board = leaderboard_doc(s, coll, me, metric)
    snap = LeaderboardSnapshot(collection_id=coll.id, qrels_version=board["qrels_version"] or 0,
                               metric=board["metric"], label=label, content=board, created_by=me.name)
    s.add(snap)
    audit(s, me.name, "leaderboard.freeze", coll.id, metric=board["metric"], qrels_version=board["qrels_version"])
    s.flush()
    return {"id": snap.id, "qrels_version": snap.qrels_version, "metric": snap.metric, "label": snap.label}


def topic_ids(s: Session, coll: Collection) -> list[str]:
    return sorted(s.scalars(select(Topic.topic_id).where(Topic.collection_id == coll.id)))


def job_progress(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    """The collection's jobs, newest first, for progress displays (organisers only)."""
    from service.evaluation.reading import jobs

    me.require_organiser(coll.id)
    return list(reversed(jobs(s, coll.name)))


# ------------------------------------------------------------------------------- quotas
def next_midnight() -> str:
    now = datetime.now(UTC)
    return (now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)).isoformat()


def runs_today(s: Session, cid: int, team_id: int) -> int:
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return sum(1 for t in s.scalars(select(Run.submitted_at).where(Run.collection_id == cid, Run.team_id == team_id))
               if as_utc(t) >= midnight)


def quota_doc(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    if coll.daily_run_quota is None or me.team_id is None:
        return {}
    return {"quota": {"per_day": coll.daily_run_quota, "used_today": runs_today(s, coll.id, me.team_id),
                      "resets_at": next_midnight()}}


def check_window(coll: Collection) -> None:
    now = datetime.now(UTC)
    opens, closes = as_utc(coll.submission_opens_at), as_utc(coll.submission_closes_at)
    if (opens and now < opens) or (closes and now >= closes):
        raise Conflict(f"submissions are closed (window {iso(opens)} - {iso(closes)})")


def check_quota(s: Session, coll: Collection, team_id: int) -> None:
    if coll.daily_run_quota is not None and runs_today(s, coll.id, team_id) >= coll.daily_run_quota:
        raise Conflict(f"the team's quota of {coll.daily_run_quota} runs a day is used; it resets at "
                       f"{next_midnight()}")


# ---------------------------------------------------------------------------- uploads
def upload_qrels(factory: sessionmaker[Session], me_of: Any, cid: int, body: bytes,
                 source: str = "qrels upload") -> tuple[dict[str, Any], list[Followup]]:
    """Validate, store as a new qrels version and plan the re-evaluation; returns the document
    and the work to hand to the workers after the commit. ``me_of(session)`` gives the caller."""
    with factory() as s:  # authorise and validate before taking any write lock
        me = me_of(s)
        me.require_organiser(collection(s, cid, me).id)
    parsed = parse_qrels(body, source)  # InvalidInput with the line before anything is stored
    with transaction(factory) as s:
        coll = s.get(Collection, cid)
        previous = coll.current_qrels_id
        version = add_qrels(s, coll, body, source, me.name, parsed=parsed)
        job, followups = plan_job(s, coll, "qrels", previous_qrels_id=previous)
        doc = {"version": version.version, "judgments": version.n_judgments, "job": job.id,
               "previous_version": s.get(QrelsVersion, previous).version if previous else None}
    return doc, followups


def submit_run(factory: sessionmaker[Session], me_of: Any, cid: int, body: bytes, team_param: str | None = None,
               source: str = "run upload", description: str = "") -> tuple[dict[str, Any], list[Followup]]:
    """Validate and store a run, and plan its evaluation (participants: window and quota apply)."""
    with transaction(factory) as s:
        me = me_of(s)
        coll = collection(s, cid, me)
        me.require_authenticated()
        if me.role == "participant":
            team = s.get(Team, me.team_id)
            check_window(coll)
            check_quota(s, coll, team.id)
        elif me.can_organise(cid):
            if not team_param:
                raise InvalidMeasure("organisers submit for a team: add ?team=NAME")
            team = s.scalar(select(Team).where(Team.name == team_param))
            if team is None:
                raise NotFound(f"no team named {team_param!r}")
        else:
            raise Forbidden("only participants and this collection's organisers submit runs")
        order = coll.current_config.evaluation.get("order", "score") if coll.current_config else "score"
        parsed = parse_run(body, source, order)
        known = set(s.scalars(select(Topic.topic_id).where(Topic.collection_id == cid)))
        if not known:
            raise Conflict("the collection has no topics yet (upload qrels or register its topics)")
        unknown = sorted(set(parsed.topics) - known)
        if unknown:
            raise InvalidInput(source, None, f"unknown topics: {', '.join(unknown[:20])}")
        row = add_run(s, coll, body, source, team=team.name, actor=me.name, parsed=parsed)
        if description:
            row.description = description
        if coll.current_qrels_id is None:  # before any judgment (the run waits for the pool's qrels)
            doc, followups = {**run_doc(row), "job": None}, []
        else:
            job, followups = plan_job(s, coll, "submission")
            doc = {**run_doc(row), "job": job.id}
    return doc, followups


def run_metrics(s: Session, rid: int, me: Principal) -> dict[str, Any]:
    """The run's mean and interval of every metric of the collection, on the current results
    (the visible topics' figures for callers of a public view)."""
    from service.store.models import RunEvaluation, Score

    row, coll = run(s, rid, me)
    if not (owns_or_organises(me, row, coll) or coll.leaderboard_released):
        raise denied(me, f"the scores of run {rid}")
    public = public_view(coll, me)
    cols = ((Score.metric, Score.public_mean, Score.public_ci_low, Score.public_ci_high, Score.public_n) if public
            else (Score.metric, Score.mean, Score.ci_low, Score.ci_high, Score.n_topics))
    found = {m: (mean, lo, hi, n) for m, mean, lo, hi, n in s.execute(select(*cols).join(RunEvaluation).where(
        RunEvaluation.run_id == row.id, RunEvaluation.qrels_version_id == complete_version_id(s, coll),
        RunEvaluation.settings_hash == coll.current_config.settings_hash,
        RunEvaluation.evaluator_version == EVALUATOR_VERSION))}
    order = list(coll.current_config.metrics)
    return {"run": run_doc(row), "collection": collection_doc(coll, me),
            "topics": "visible only (public/private split)" if public else "all",
            "metrics": [{"metric": m, "mean": found[m][0], "ci_low": found[m][1], "ci_high": found[m][2],
                         "n_topics": found[m][3]} for m in order if m in found]}
