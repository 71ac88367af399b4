"""The reproducibility board: every declared reproduction with its stored measures for one
metric, a verdict in words, the per-topic values of one reproduction, and the CSV export.

Role rules (the leaderboard's, :func:`service.evaluation.permissions.policy.may_see_reproducibility`):
organisers see every reproduction; an enrolled team its own until the organisers release the
board; once released, whoever may read the collection sees every one. Under an unrevealed
topic split the others see no figure on the board (they are over every topic) and a per-topic
view without the hidden topics. Nothing is computed here:
the figures are the workers' (:mod:`.measuring`).

The verdict's rule (docs/reproducibility.md, "Reading the board"): for a pair, from ER's
bootstrap interval (reproduced when it holds 1 and lies above 0, a smaller or larger effect
when it lies below or above 1 and above 0, not reproduced when it reaches 0 or below); for a
single run, from the t-test at 0.05 (no significant difference: reproduced).
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from service.errors import InvalidMeasure, NotFound
from service.evaluation.computing.work import Outcome
from service.evaluation.organising import collections
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.reproducing import declarations, measuring
from service.store.arrays import unpack
from service.store.models import (
    Collection,
    Reproduction,
    ReproductionMeasure,
    ReproductionOriginal,
    Run,
    Score,
)

ALPHA = 0.05  # the single run's verdict: the t-test at this level


def _fmt(v: float | None, digits: int = 2) -> str:
    return "undefined" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def verdict(row: dict[str, Any], metric: str) -> str:
    """The reproduction's verdict in words (the rule is in the module's docstring)."""
    effect, base = row.get("effect"), row.get("baseline")
    if effect is not None:
        er, lo, hi, dri = effect.get("ER"), effect.get("ER_low"), effect.get("ER_high"), effect.get("DeltaRI")
        figures = f"ER {_fmt(er)} [{_fmt(lo)}, {_fmt(hi)}], DeltaRI {_fmt(dri)}"
        if er is None:
            return f"effect undefined: the original pair shows no improvement on {metric}"
        if lo is None or hi is None:
            return f"effect not judged (no interval): {figures}"
        if lo <= 0:
            return f"effect not reproduced: {figures}"
        if hi < 1:
            return f"smaller effect reproduced: {figures}"
        if lo > 1:
            return f"larger effect than the original: {figures}"
        return f"effect reproduced: {figures}"
    if base is not None:
        p = base.get("p_value")
        differ = p is not None and p < ALPHA
        if base.get("RMSE") is not None:
            head = "scores differ" if differ else "scores reproduced"
            return f"{head}: RMSE {_fmt(base['RMSE'], 3)}, {base['test']} p {_fmt(p, 3)}"
        head = "means differ" if differ else "means reproduced"
        return (f"{head}: {_fmt(base.get('mean_original'), 3)} (original) and "
                f"{_fmt(base.get('mean_reproduction'), 3)} (reproduction), {base['test']} p {_fmt(p, 3)}")
    return row.get("note") or "not measured yet"


def _metric(coll: Collection, metric: str | None) -> str:
    config = coll.current_config
    chosen = metric or config.official_metric
    if chosen not in config.metrics:
        raise InvalidMeasure(f"{chosen!r} is not a metric of collection {coll.id} (its metrics: "
                             f"{', '.join(config.metrics)})")
    return chosen


def _visible(s: Session, coll: Collection, me: Principal) -> list[Reproduction]:
    reps = [rep for rep, _ in measuring.declarations(s, coll)]
    if policy.sees_all_rows(me, coll):
        return reps
    runs = {r.id: r.team_id for r in s.scalars(select(Run).where(Run.id.in_([x.run_id for x in reps])))}
    return [r for r in reps if me.team_id is not None and runs.get(r.run_id) == me.team_id]


def board(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """Every reproduction the caller may see with its measures on ``metric`` (default the
    official one): document order (KTU, RBO), per run role the means, RMSE, nRMSE and the
    t-test's p, for a pair ER and DeltaRI with their intervals, and the verdict. ``stale``
    while the stored measures are older than their inputs (the workers are on it)."""
    policy.require(policy.may_see_reproducibility(me, coll), me, f"the reproducibility board of collection {coll.id}")
    chosen = _metric(coll, metric)
    done = measuring.newest(s, coll, "done")
    inp = measuring.inputs(s, coll)
    notes = ((done.result or {}).get("notes") or {}) if done is not None else {}
    doc: dict[str, Any] = {
        "collection": coll.id, "metric": chosen, "metrics": list(coll.current_config.metrics),
        "released": coll.leaderboard_released, "settings": dict(measuring.SETTINGS),
        "computed_at": collections.iso(done.finished_at) if done is not None else None,
        "stale": done is None or measuring.computed_key(done) != measuring.key(inp) if inp["reproductions"] else False,
        "waiting": measuring.waiting(inp), "rows": []}
    reps = _visible(s, coll, me)
    # Under an unrevealed topic split the measures (over every topic) are the organisers' only:
    # the others see who reproduces what, and the per-topic values of the visible topics.
    hidden = policy.sees_visible_topics_only(me, coll)
    stored: dict[int, dict[tuple[str, str], ReproductionMeasure]] = {}
    if reps:
        for m in s.scalars(select(ReproductionMeasure).where(
                ReproductionMeasure.reproduction_id.in_([r.id for r in reps]),
                ReproductionMeasure.metric.in_([chosen, measuring.ORDER]))):
            stored.setdefault(m.reproduction_id, {})[(m.metric, m.part)] = m
    for rep in reps:
        row = declarations.declaration_doc(s, rep)
        mine = stored.get(rep.id, {})
        orig_coll = row["original"]["run"]["collection"] if row["original"]["run"] else None
        row["same_collection"] = orig_coll == coll.id
        order = {p: {k: mine[(measuring.ORDER, p)].summary.get(k) for k in ("KTU", "RBO")}
                 for p in measuring.PARTS if (measuring.ORDER, p) in mine}
        row["order"] = order or None
        for part in (*measuring.PARTS, "effect"):
            m = mine.get((chosen, part))
            row[part] = dict(m.summary) if m is not None else None
        row["note"] = notes.get(str(rep.id))
        row["verdict"] = verdict(row, chosen)
        if hidden:
            row.update(order=None, baseline=None, advanced=None, effect=None,
                       verdict="shown once the organisers reveal the topic split (measured on every topic)")
        doc["rows"].append(row)
    return doc


def per_topic(s: Session, coll: Collection, me: Principal, reproduction_id: int,
              metric: str | None = None) -> dict[str, Any]:
    """One reproduction's per-topic values on ``metric``: each part's rows (the original's and
    the reproduction's scores, a pair's improvements) and KTU/RBO, topic by topic."""
    policy.require(policy.may_see_reproducibility(me, coll), me, f"the reproducibility board of collection {coll.id}")
    chosen = _metric(coll, metric)
    rep = s.get(Reproduction, reproduction_id)
    if rep is None or rep.collection_id != coll.id or rep.id not in {r.id for r in _visible(s, coll, me)}:
        raise NotFound(f"no reproduction {reproduction_id} in collection {coll.id}")
    hidden = policy.hidden_topics(coll) if policy.sees_visible_topics_only(me, coll) else frozenset()
    parts = []
    for m in s.scalars(select(ReproductionMeasure).where(
            ReproductionMeasure.reproduction_id == rep.id,
            ReproductionMeasure.metric.in_([chosen, measuring.ORDER])).order_by(ReproductionMeasure.metric,
                                                                                 ReproductionMeasure.part)):
        values = unpack(m.values).reshape(len(m.rows), len(m.topics))
        parts.append({"metric": m.metric or None, "part": m.part, "rows": list(m.rows), "topics": [
            {"topic": t, "values": {name: (float(values[i, j]) if math.isfinite(values[i, j]) else None)
                                    for i, name in enumerate(m.rows)}}
            for j, t in enumerate(m.topics) if t not in hidden]})
    return {"reproduction": declarations.declaration_doc(s, rep), "metric": chosen, "parts": parts}


def request(s: Session, coll: Collection, me: Principal, force: bool = False) -> Outcome[dict[str, Any]]:
    """Have the workers measure the reproductions now (organisers) unless up to date."""
    policy.require(policy.may_configure(me, coll), me, f"the reproducibility board of collection {coll.id}")
    followups = measuring.queue_if_stale(s, coll, me.name, force)
    row = measuring.newest(s, coll)
    return Outcome({"analysis": row.id if row else None, "queued": bool(followups),
                    "status": row.status if row else None}, tuple(followups))


def _mean(s: Session, run_id: int, metric: str) -> float | None:
    """The run's stored mean on ``metric`` under its own collection's current evaluation."""
    ev = measuring.current_evaluation(s, run_id)
    if ev is None:
        return None
    return s.scalar(select(Score.mean).where(Score.run_evaluation_id == ev, Score.metric == metric))


def longitudinal(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """Each system the caller may see on the board, followed back along its declarations
    (snapshot t+1's run reproducing snapshot t's, and so on): its stored mean on ``metric`` in
    every snapshot, oldest first, and per step the stored result delta, the t-test's p and, for
    a pair, ER and DeltaRI (issue 28, item 4). Read from stored figures only."""
    policy.require(policy.may_see_reproducibility(me, coll), me, f"the reproducibility board of collection {coll.id}")
    chosen = _metric(coll, metric)
    hidden = policy.sees_visible_topics_only(me, coll)
    systems = []
    for rep in _visible(s, coll, me):
        orig = s.get(ReproductionOriginal, rep.original_id)
        _, mine = measuring.runs_of(rep, orig)
        for i, part in enumerate(measuring.PARTS[:len(mine)]):
            run_id, link, role, seen = mine[i], rep, part, set()
            points, steps = [], []
            while link is not None and link.id not in seen and len(seen) < 100:
                seen.add(link.id)
                o = s.get(ReproductionOriginal, link.original_id)
                stored = {m.part: m.summary for m in s.scalars(select(ReproductionMeasure).where(
                    ReproductionMeasure.reproduction_id == link.id, ReproductionMeasure.metric == chosen))}
                figures = stored.get(role) or {}
                effect = stored.get("effect") or {}
                steps.append({"reproduction": link.id, "delta": figures.get("delta"),
                              "relative_delta": figures.get("relative_delta"), "p_value": figures.get("p_value"),
                              "ER": effect.get("ER"), "DeltaRI": effect.get("DeltaRI")})
                points.append(run_id)
                run_id = o.run_id if role == "baseline" or o.advanced_run_id is None else o.advanced_run_id
                link = s.scalar(select(Reproduction).where(or_(Reproduction.run_id == run_id,
                                                               Reproduction.advanced_run_id == run_id)))
                if link is not None:
                    role = "advanced" if link.advanced_run_id == run_id else "baseline"
            points.append(run_id)
            points.reverse()
            steps.reverse()
            docs = []
            for rid in points:
                brief = declarations.run_brief(s, rid)
                docs.append({**brief, "mean": None if hidden else _mean(s, rid, chosen)})
            systems.append({"reproduction": rep.id, "team": docs[-1]["team"], "part": part, "points": docs,
                            "steps": [] if hidden else steps})
    return {"collection": coll.id, "metric": chosen, "systems": systems}
