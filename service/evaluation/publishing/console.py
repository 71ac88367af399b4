"""The organisers' console: what a change of settings would do (before it is made), re-evaluating
a collection now, and its audit log.

``preview_settings`` applies the change exactly as :func:`service.evaluation.organising.collections.update`
would, inside a SAVEPOINT that is always rolled back: the same validation, the same new
configuration version and the same planned job, so the numbers it announces ("re-evaluates
63 runs") are the ones the change then has (unless something else changes in between).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.errors import Conflict
from service.evaluation.common.work import Outcome, TaskName
from service.evaluation.organising import collections
from service.evaluation.organising.collections import iso
from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import audit
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing.reading import jobs, leaderboard
from service.store.models import AuditEvent, Collection, Run, Topic

# The settings a preview compares, in the order it lists them (the configuration's first).
SETTINGS = ("official_metric", "metrics", "levels", "evaluation", "hidden_topics", "significance", "description",
            "visibility", "enrolment", "submission_opens_at", "submission_closes_at", "daily_run_quota",
            "leaderboard_released", "topics_revealed")
MAX_AUDIT_PAGE = 500


def settings_of(coll: Collection) -> dict[str, Any]:
    """Every setting of the collection as plain values (hidden topics apart from the rest of
    the evaluation settings, as the forms and the API's shorthand have them)."""
    cfg = coll.current_config
    evaluation = dict(cfg.evaluation) if cfg is not None else {}
    hidden = sorted(evaluation.pop("hidden_topics", None) or [])
    return {"official_metric": cfg.official_metric if cfg else None, "metrics": list(cfg.metrics) if cfg else [],
            "levels": list(cfg.levels) if cfg else [], "evaluation": evaluation, "hidden_topics": hidden,
            "significance": dict(cfg.significance) if cfg else {}, "description": coll.description,
            "visibility": coll.visibility, "enrolment": coll.enrolment,
            "submission_opens_at": iso(coll.submission_opens_at),
            "submission_closes_at": iso(coll.submission_closes_at), "daily_run_quota": coll.daily_run_quota,
            "leaderboard_released": coll.leaderboard_released, "topics_revealed": coll.topics_revealed,
            "answer_settings": _answer_settings(coll), "config_version": cfg.version if cfg else None}


def _answer_settings(coll: Collection) -> dict[str, Any]:
    """A collection of answers' format and limits as the forms read them back (a limit not set:
    None; issue 35), so that an untouched form changes none of them."""
    from service.evaluation.organising.answers import LIMIT_KEYS

    stored = coll.answer_settings or {}
    return {"format": stored.get("format", "auto"), **{k: stored.get(k) for k in LIMIT_KEYS},
            "assessed_citations": stored.get("assessed_citations", "first")}


def _scores_unchanged(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether a metric's stored means stay as they are: the same evaluation settings and gains."""
    def gains(levels: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
        return sorted((lv["level"], lv.get("gain")) for lv in levels)

    return before["evaluation"] == after["evaluation"] and gains(before["levels"]) == gains(after["levels"])


def _order(s: Session, coll: Collection, metric: str) -> list[str]:
    """The runs in board order on ``metric``, from the stored results (all topics)."""
    return [row.run for row in leaderboard(s, coll.name, metric)[1]]


def preview_settings(s: Session, coll: Collection, me: Principal, changes: Mapping[str, Any]) -> dict[str, Any]:
    """What applying ``changes`` (as :func:`collections.update` takes them) would do: the
    settings that change, the new configuration version, how many runs are re-evaluated,
    whether the board's order changes, what a topic split hides. Nothing is stored; invalid
    changes are refused as the update would refuse them."""
    policy.require(policy.may_configure(me, coll), me, f"changing collection {coll.id}")
    before = settings_of(coll)
    runs = s.scalar(select(func.count()).select_from(Run).where(Run.collection_id == coll.id)) or 0
    topics = sorted(s.scalars(select(Topic.topic_id).where(Topic.collection_id == coll.id)))
    savepoint = s.begin_nested()
    try:
        outcome = collections.update(s, coll, me, changes)
        after = settings_of(coll)
    finally:
        savepoint.rollback()  # a preview stores nothing: the configuration, the job, the audit rows go
    s.refresh(coll)
    evaluated = sum(1 for f in outcome.followups if f.task == TaskName.EVALUATE_ITEM)
    tests = any(f.task == TaskName.RUN_TESTS for f in outcome.followups) or evaluated > 0
    changed = [{"setting": k, "old": before[k], "new": after[k]} for k in SETTINGS if before[k] != after[k]]
    new_version = after["config_version"] if after["config_version"] != before["config_version"] else None
    board = None
    if before["official_metric"] != after["official_metric"] and coll.current_qrels_id is not None:
        old_order = _order(s, coll, before["official_metric"])
        known = after["official_metric"] in before["metrics"] and _scores_unchanged(before, after)
        new_order = _order(s, coll, after["official_metric"]) if known else None
        board = {"metric_before": before["official_metric"], "metric_after": after["official_metric"],
                 "before": old_order, "after": new_order,
                 "changes": None if new_order is None else new_order != old_order}
    return {"changes": changed, "config_version": {"current": before["config_version"], "new": new_version},
            "runs": runs, "reevaluated_runs": evaluated, "tests_rerun": bool(new_version is not None and tests),
            "board_order": board, "consequences": _consequences(before, after, changed, new_version, runs,
                                                                evaluated, board, topics, coll)}


def _consequences(before: dict[str, Any], after: dict[str, Any], changed: list[dict[str, Any]],
                  new_version: int | None, runs: int, evaluated: int, board: dict[str, Any] | None,
                  topics: list[str], coll: Collection) -> list[str]:
    """The preview in sentences, most consequential first."""
    keys = {c["setting"] for c in changed}
    said: list[str] = []
    if not changed:
        return ["Nothing changes."]
    if new_version is not None:
        parts = [name for key, name in (("levels", "the levels and gains"), ("metrics", "the metrics"),
                                        ("evaluation", "the evaluation settings"), ("hidden_topics", "the topic split"),
                                        ("official_metric", "the official metric"),
                                        ("significance", "the significance test")) if key in keys]
        what = ", ".join(parts) or "the configuration"
        if coll.current_qrels_id is None:
            said.append(f"Changing {what} makes configuration version {new_version}; nothing is evaluated yet "
                        "(the collection has no qrels).")
        elif evaluated:
            said.append(f"Changing {what} makes configuration version {new_version} and re-evaluates {evaluated} "
                        f"of {runs} runs; the board keeps its current figures until they are done.")
        else:
            said.append(f"Changing {what} makes configuration version {new_version}; the stored scores stay "
                        "(no run is re-evaluated) and the pairwise tests are run again.")
    if board is not None:
        if board["changes"] is None:
            said.append(f"The board is ranked by {board['metric_after']} instead of {board['metric_before']}; "
                        "its order is known once the runs are re-evaluated.")
        elif board["changes"]:
            moved = sum(1 for a, b in zip(board["before"], board["after"]) if a != b)
            said.append(f"The board is ranked by {board['metric_after']} instead of {board['metric_before']}: "
                        f"its order changes ({moved} of {len(board['after'])} positions).")
        else:
            said.append(f"The board is ranked by {board['metric_after']} instead of {board['metric_before']}; "
                        "the order of the runs stays the same.")
    if "hidden_topics" in keys:
        added = sorted(set(after["hidden_topics"]) - set(before["hidden_topics"]))
        shown = sorted(set(before["hidden_topics"]) - set(after["hidden_topics"]))
        unknown = sorted(set(after["hidden_topics"]) - set(topics))
        if added:
            visible = len(set(topics) - set(after["hidden_topics"]))
            said.append(f"Hiding topics {_listed(added)}: " + (
                "the split is revealed, so everyone still sees every topic." if after["topics_revealed"] else
                f"until they are revealed, everyone but the organisers sees figures over the {visible} visible "
                "topics only, and not the hidden topics' texts."))
        if shown:
            said.append(f"Topics {_listed(shown)} are no longer hidden.")
        if unknown:
            said.append(f"Warning: {_listed(unknown)} are not topics of the collection.")
    if "topics_revealed" in keys:
        said.append("Revealing the split shows the hidden topics' figures and texts to every reader."
                    if after["topics_revealed"] else
                    "Hiding the split again: everyone but the organisers sees the visible topics only.")
    if "leaderboard_released" in keys:
        said.append("Releasing the board shows every team's rows to every reader of the collection."
                    if after["leaderboard_released"] else
                    "Withdrawing the board: each team sees its own rows only again.")
    if "visibility" in keys:
        said.append("Making the collection public: anyone may read it, and its board once released."
                    if after["visibility"] == "public" else
                    "Making the collection private: only its organisers and enrolled teams read it.")
    if "enrolment" in keys:
        said.append("Open enrolment: participants enrol their own team (in a public collection)."
                    if after["enrolment"] == "open" else "Invite-only enrolment: organisers enrol the teams.")
    if keys & {"submission_opens_at", "submission_closes_at"}:
        opens, closes = _moment(after["submission_opens_at"]) or "now", _moment(after["submission_closes_at"])
        said.append(f"Submissions are accepted from {opens}" + (f" until {closes}" if closes else " on, with no closing time") +
                    (": the window is closed now." if not policy.window_open(_window(coll, after)) else "."))
    if "daily_run_quota" in keys:
        quota = after["daily_run_quota"]
        said.append("No daily quota: teams submit as many runs as they like." if quota is None
                    else f"Each team may submit {quota} valid runs per UTC day.")
    if "description" in keys:
        said.append("The description changes.")
    if keys & {"visibility", "enrolment"} and after["enrolment"] == "open" and after["visibility"] != "public":
        said.append("Warning: open enrolment applies to public collections only; while the collection is "
                    "private, its organisers enrol the teams.")
    return said


def _moment(value: str | None) -> str | None:
    """A stored time (ISO 8601) as a person reads it: "2031-01-01 00:00 UTC"."""
    return datetime.fromisoformat(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if value else None


def _window(coll: Collection, after: dict[str, Any]) -> Collection:
    """A detached collection carrying the previewed window (for ``policy.window_open``)."""
    opens, closes = after["submission_opens_at"], after["submission_closes_at"]
    return Collection(id=coll.id, submission_opens_at=collections.parse_time(opens, "submission_opens_at"),
                      submission_closes_at=collections.parse_time(closes, "submission_closes_at"))


def _listed(items: list[str], most: int = 10) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def overview(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
    """What the console's first page shows (organisers): every setting, how many runs and topics
    there are, the current qrels and configuration versions, the newest job."""
    policy.require(policy.may_configure(me, coll), me, f"the console of collection {coll.id}")
    newest = jobs(s, coll.name)[-1:]  # the jobs' documents, as the jobs API gives them (oldest first)
    return {"settings": settings_of(coll),
            "runs": s.scalar(select(func.count()).select_from(Run).where(Run.collection_id == coll.id)) or 0,
            "topics": s.scalar(select(func.count()).select_from(Topic).where(Topic.collection_id == coll.id)) or 0,
            "qrels_version": coll.current_qrels.version if coll.current_qrels is not None else None,
            "job": newest[0] if newest else None}


def reevaluate(s: Session, coll: Collection, me: Principal, retry_failed: bool = True) -> Outcome[dict[str, Any]]:
    """Evaluate now every run lacking current results, then the pairwise tests (what
    ``cranfield reevaluate`` does; organisers). A run that failed under the current key is
    tried again unless ``retry_failed`` is False. Answers the job (an active job that already
    covers everything is returned)."""
    policy.require(policy.may_configure(me, coll), me, f"re-evaluating collection {coll.id}")
    collections.lock(s, coll.id)  # the lock order of every write to a collection
    if coll.current_qrels_id is None:
        raise Conflict(f"collection {coll.id} has no qrels yet: there is nothing to evaluate")
    job, followups = plan_job(s, coll, "manual", retry_failed=retry_failed)
    audit(s, me.name, "collection.reevaluate", coll.id, job=job.id, runs=job.total)
    return Outcome({"job": job.id, "runs": job.total, "status": job.status}, tuple(followups))


def audit_log(s: Session, coll: Collection, me: Principal, offset: int = 0, limit: int = 50) -> dict[str, Any]:
    """The collection's audit events, newest first, a page at a time (organisers)."""
    policy.require(policy.may_see_audit(me, coll), me, f"the audit log of collection {coll.id}")
    limit = max(1, min(limit, MAX_AUDIT_PAGE))
    where = AuditEvent.collection_id == coll.id
    total = s.scalar(select(func.count()).select_from(AuditEvent).where(where)) or 0
    rows = s.scalars(select(AuditEvent).where(where).order_by(AuditEvent.id.desc()).offset(offset).limit(limit))
    return {"total": total, "offset": offset, "limit": limit,
            "items": [{"id": e.id, "at": iso(e.at), "actor": e.actor, "action": e.action, "details": e.details}
                      for e in rows]}
