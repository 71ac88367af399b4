"""Boards: the ranked leaderboard with its significance, the significance matrix, the
meta-evaluation and rank-change reports the workers stored, and frozen snapshots.

Everything here reads stored results; nothing computes a metric.
"""

from __future__ import annotations

import dataclasses

from typing import Any

import numpy as np

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.errors import NotFound
from service.evaluation import collections, policy
from service.evaluation.access import Principal
from service.evaluation.board_intervals import TRUNCATED_NOTE, bounds_doc, bounds_of, interval_label, interval_view
from service.evaluation.collections import iso
from service.evaluation.reading import LeaderboardRow, annotate, complete_version_id, computed_at, significance_for
from service.evaluation.reading import leaderboard as read_leaderboard
from service.evaluation.setup import audit
from service.evaluation.teams import team_name
from service.metrics import parse_measure
from service.store.models import Collection, CollectionConfig, Job, LeaderboardSnapshot, QrelsVersion, Run


def access_snapshot(s: Session, cid: int) -> Collection | None:
    """A session-less copy of what the access rules read of a collection (its visibility,
    release, topic split), for deciding in memory which cached board a caller may be given."""
    coll = s.get(Collection, cid)
    if coll is None:
        return None
    cfg = coll.current_config
    return Collection(id=coll.id, name=coll.name, visibility=coll.visibility, enrolment=coll.enrolment,
                      leaderboard_released=coll.leaderboard_released, topics_revealed=coll.topics_revealed,
                      current_config=CollectionConfig(evaluation=dict(cfg.evaluation)) if cfg is not None else None)


def rerank(rows: list[LeaderboardRow]) -> list[LeaderboardRow]:
    """The rows (in board order) ranked among themselves; ties still share a rank."""
    out: list[LeaderboardRow] = []
    for i, row in enumerate(rows):
        rank = i + 1 if not out or row.mean != out[-1].mean else out[-1].rank
        out.append(dataclasses.replace(row, rank=rank))
    return out


def version_number(s: Session, version_id: int | None) -> int | None:
    version = s.get(QrelsVersion, version_id) if version_id is not None else None
    return version.version if version else None


def leaderboard_doc(s: Session, coll: Collection, me: Principal, metric: str | None = None,
                    primary_only: bool = False, qrels_version: int | None = None,
                    test: str | None = None) -> dict[str, Any]:
    """The ranked board the caller may see, annotated with the stored significance test."""
    policy.require(policy.may_see_board(me, coll), me, f"the leaderboard of collection {coll.id}")
    public = policy.sees_visible_topics_only(me, coll)
    name, rows = read_leaderboard(s, coll.name, metric, qrels_version, public)
    if primary_only:
        primary = set(s.scalars(select(Run.tag).where(Run.collection_id == coll.id, Run.is_primary)))
        rows = [r for r in rows if r.run in primary]
    mine = team_name(s, me)
    every = policy.sees_all_rows(me, coll)
    visible = [r for r in rows if every or r.team == mine]
    if not every:  # before release a participant learns nothing of other teams' runs: not even ranks
        visible = rerank(visible)
    sig = significance_for(s, coll, name, test, qrels_version, "public" if public else "all")
    annotated = annotate(visible, sig)
    running = s.scalar(select(func.count()).select_from(Job).where(
        Job.collection_id == coll.id, Job.status.in_(("running", "testing"))))
    run_ids = dict(s.execute(select(Run.tag, Run.id).where(Run.collection_id == coll.id)).all())
    limits = bounds_of(name)
    shown = [interval_view(r, limits) for r in annotated]
    return {"collection": coll.name, "metric": name, "released": coll.leaderboard_released,
            "topics": "visible only (public/private split)" if public else "all",
            "qrels_version": rows[0].qrels_version if rows else (
                qrels_version if qrels_version is not None else version_number(s, complete_version_id(s, coll))),
            "newest_qrels_version": coll.current_qrels.version if coll.current_qrels else None,
            "computed_at": iso(computed_at(s, coll, qrels_version)),
            "reevaluation_in_progress": bool(running),
            "significance": ({"test": sig.test, "alpha": sig.alpha, "correction": sig.correction,
                              "resamples": sig.resamples, "n_topics": sig.n_topics} if sig else None),
            "ranked_among": "all" if every else "team",
            # The metric's range; the interval drawn (bootstrap when stored, else t) in words, and
            # the note a truncated t interval end refers to (board_intervals).
            "bounds": bounds_doc(limits),
            "interval": interval_label(annotated),
            "truncation_note": (TRUNCATED_NOTE if any(v["t_low_clipped"] or v["t_high_clipped"] for v in shown)
                                else None),
            "rows": [{**{k: r[k] for k in ("rank", "run", "team", "mean", "ci_low", "ci_high", "boot_low", "boot_high",
                                           "boot_method", "boot_resamples", "n_topics", "baseline",
                                           "judged_at_10", "beats", "tied_with", "groups") if k in r},
                      "run_id": run_ids.get(r["run"]), "shown": view}
                     for r, view in zip(annotated, shown)]}


def significance_matrix(s: Session, coll: Collection, me: Principal, metric: str | None = None,
                        test: str | None = None, qrels_version: int | None = None) -> dict[str, Any]:
    policy.require(policy.may_see_results(me, coll), me, f"the significance matrix of collection {coll.id}")
    name = str(parse_measure(metric)) if metric else coll.current_config.official_metric
    subset = "public" if policy.sees_visible_topics_only(me, coll) else "all"
    sig = significance_for(s, coll, name, test, qrels_version, subset=subset)
    if sig is None:
        raise NotFound(f"no stored test for {name} on these results")
    names = sig.runs
    return {"metric": name, "test": sig.test, "alpha": sig.alpha, "correction": sig.correction,
            "resamples": sig.resamples, "runs": names, "p_adjusted": sig.matrix(np.arange(len(names))).tolist()}


def stored_tests(s: Session, coll: Collection) -> list[str]:
    """The test names stored for the current results (for a test selector)."""
    from service.store.models import Significance

    return sorted(set(s.scalars(select(Significance.test).where(
        Significance.collection_id == coll.id, Significance.qrels_version_id == coll.current_qrels_id))))


def finished_job(s: Session, coll: Collection) -> Job | None:
    """The newest finished job of the current qrels version and configuration."""
    return s.scalars(select(Job).where(Job.collection_id == coll.id, Job.qrels_version_id == coll.current_qrels_id,
                                       Job.config_id == coll.current_config_id, Job.status == "done")
                     .order_by(Job.id.desc())).first()


def metaeval(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    """Discriminative power and Kendall's tau of the collection's metrics (stored by the workers)."""
    policy.require(policy.may_see_analyses(me, coll), me, f"the meta-evaluation of collection {coll.id}")
    job = finished_job(s, coll)
    if job is None or "meta" not in (job.report or {}):
        raise NotFound("no meta-evaluation of the current results yet")
    return {"qrels_version": coll.current_qrels.version if coll.current_qrels else None,
            "computed_at": iso(job.finished_at), **job.report["meta"]}


def rank_change_report(s: Session, coll: Collection, me: Principal) -> dict[str, Any] | None:
    """The newest qrels update's rank changes (stored by the workers), or None before any update.

    Organisers only while the board is unreleased; the report names every run.
    """
    policy.require(policy.may_see_analyses(me, coll), me, f"the rank-change report of collection {coll.id}")
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
    def relation(test: Any, a: str, b: str, key: str) -> str | None:
        value, alpha = test.p(a, b), test.alpha
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
            was = relation(before, a, b, "old_mean")
            now = relation(after, a, b, "new_mean")
            if was is not None and now is not None and was != now:
                out.append({"a": a, "b": b, "before": was, "after": now})
    return out


def snapshots(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    # A snapshot holds the organisers' board (all topics): not for others before the reveal.
    policy.require(policy.may_see_analyses(me, coll), me, f"the snapshots of collection {coll.id}")
    rows = s.scalars(select(LeaderboardSnapshot).where(LeaderboardSnapshot.collection_id == coll.id)
                     .order_by(LeaderboardSnapshot.id))
    return [{"id": r.id, "qrels_version": r.qrels_version, "metric": r.metric, "label": r.label,
             "created_at": iso(r.created_at)} for r in rows]


def snapshot(s: Session, sid: int, me: Principal) -> dict[str, Any]:
    snap = s.get(LeaderboardSnapshot, sid)
    if snap is None:
        raise NotFound(f"no snapshot {sid}")
    coll = collections.get(s, snap.collection_id, me)
    policy.require(policy.may_see_snapshot(me, coll, snap), me, f"snapshot {sid}")
    content = dict(snap.content)
    if any("shown" not in r for r in content.get("rows", [])):  # frozen before intervals were bounded
        limits = bounds_of(snap.metric)
        content["rows"] = [{**r, "shown": r.get("shown") or interval_view(r, limits)} for r in content["rows"]]
        content.setdefault("interval", interval_label(content["rows"]))
    return {"id": snap.id, "collection_id": coll.id, "label": snap.label, "created_at": iso(snap.created_at),
            **content}


def freeze(s: Session, coll: Collection, me: Principal, metric: str | None, label: str) -> dict[str, Any]:
    """Store the current board (as the organiser sees it) as an immutable snapshot."""
    policy.require(policy.may_freeze_board(me, coll), me, f"freezing the board of collection {coll.id}")
    board = leaderboard_doc(s, coll, me, metric)
    snap = LeaderboardSnapshot(collection_id=coll.id, qrels_version=board["qrels_version"] or 0,
                               metric=board["metric"], label=label, content=board, created_by=me.name)
    s.add(snap)
    audit(s, me.name, "leaderboard.freeze", coll.id, metric=board["metric"], qrels_version=board["qrels_version"])
    s.flush()
    return {"id": snap.id, "qrels_version": snap.qrels_version, "metric": snap.metric, "label": snap.label,
            "created_at": iso(snap.created_at)}
