"""The reproducibility board: every declared reproduction with its stored measures for one
metric, a verdict in words, the per-topic values of one reproduction, and the CSV export.

Role rules. Which reproductions a caller sees is the leaderboard's rule
(:func:`service.evaluation.permissions.policy.may_see_reproducibility`): organisers every
one, an enrolled team its own until the organisers release the board, then whoever may read
the collection. Which *figures* of them it sees is each run's own collection's rule, as that
run's board and run pages apply it (issue 34, item 4): a figure of a run (its per-topic
scores, its mean) is shown only to whom ``policy.may_see_run_topics`` shows that run's scores
in its own collection, and over the topics that collection shows the caller
(``run_results.hidden_from``: the visible ones of an unrevealed split); a figure of several
runs (RMSE, the t-test, KTU and RBO, ER and DeltaRI, the verdict) only when every run it is
computed from may be seen, over the visible topics of each as soon as one is seen on its
visible topics only (the workers store both variants: :mod:`.measuring`). A figure that cannot
be shown is null and the row (or the per-topic part, or the longitudinal point or step) says
why in ``withheld``. Nothing is computed here: the figures are the workers'.

The verdict's rule (docs/reproducibility.md, "Reading the board"): for a pair, from ER's
bootstrap interval (reproduced when it holds 1 and lies above 0, a smaller or larger effect
when it lies below or above 1 and above 0, not reproduced when it reaches 0 or below); for a
single run, from the t-test at 0.05 (no significant difference: reproduced).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from service.errors import InvalidMeasure, NotFound
from service.evaluation.common.work import Outcome
from service.evaluation.organising import collections
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.reproducing import declarations, measuring
from service.evaluation.runs.run_results import hidden_from
from service.store.arrays import unpack
from service.store.models import (
    Collection,
    Reproduction,
    ReproductionMeasure,
    ReproductionOriginal,
    Run,
    Score,
    Team,
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


# --- what of each run the caller may see --------------------------------------------------------

VISIBLE_ONLY = "visible only (public/private split)"
RUN_FIGURES = ("mean_original", "mean_reproduction", "RMSE", "nRMSE", "p_value", "delta", "relative_delta")
NOT_MEASURED_VISIBLE = "not measured over the visible topics yet (the workers measure it again)"


@dataclass(frozen=True)
class Sight:
    """What a caller may see of one run's figures, as the run's own collection decides on its
    board and run pages: whether its scores at all (``why`` not: the reason), and which of
    its collection's topics not (``hidden``: an unrevealed split)."""

    shown: bool
    hidden: frozenset[str]
    why: str | None
    collection: str


def sights(s: Session, me: Principal, run_ids: Iterable[int]) -> dict[int, Sight]:
    """:class:`Sight` of every run of ``run_ids`` for the caller."""
    out: dict[int, Sight] = {}
    for rid in set(run_ids):
        run = s.get(Run, rid)
        coll = s.get(Collection, run.collection_id) if run is not None else None
        if run is None or coll is None:
            out[rid] = Sight(False, frozenset(), f"run {rid} is deleted", "")
            continue
        shown = policy.may_see_run_topics(me, run, coll)
        why = None
        if not shown:
            team = s.get(Team, run.team_id)
            what = f"the scores of run {run.tag} ({team.name if team else '?'}, collection {coll.name})"
            why = (f"{what}: that collection is not open to this caller" if not policy.may_read_collection(me, coll)
                   else f"{what}: shown to its team and its organisers until that collection's board is released")
        out[rid] = Sight(shown, hidden_from(me, coll), why, coll.name)
    return out


def _pick(summary: dict[str, Any] | None, seen: list[Sight]) -> tuple[dict[str, Any] | None, str | None]:
    """The stored figures of runs ``seen`` as the caller may see them: over every topic, over
    the visible ones (``measuring.VISIBLE``) when a run is seen on its visible topics only, or
    None and the reason."""
    if summary is None:
        return None, None
    blocked = [x.why for x in seen if not x.shown]
    if blocked:
        return None, "; ".join(dict.fromkeys(w for w in blocked if w))
    if any(x.hidden for x in seen):
        visible = summary.get(measuring.VISIBLE)
        return (dict(visible), None) if visible is not None else (None, NOT_MEASURED_VISIBLE)
    return {k: v for k, v in summary.items() if k != measuring.VISIBLE}, None


def _run_figures(summary: dict[str, Any], o: Sight, r: Sight, why: list[str]) -> dict[str, Any]:
    """A run role's figures: all of them when both runs may be seen, else each run's own mean
    where that run may be seen (the reason for the rest appended to ``why``)."""
    both, reason = _pick(summary, [o, r])
    if both is not None:
        return both
    why.append(reason or "")
    alone_o, _ = _pick(summary, [o])
    alone_r, _ = _pick(summary, [r])
    figures: dict[str, Any] = dict.fromkeys(RUN_FIGURES)
    return {**figures, "test": summary.get("test", ""), "mean_original": (alone_o or {}).get("mean_original"),
            "mean_reproduction": (alone_r or {}).get("mean_reproduction")}


def _topics_word(seen: Iterable[Sight]) -> str:
    return VISIBLE_ONLY if any(x.hidden for x in seen) else "all"


def board(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """Every reproduction the caller may see with its measures on ``metric`` (default the
    official one): document order (KTU, RBO), per run role the means, RMSE, nRMSE and the
    t-test's p, for a pair ER and DeltaRI with their intervals, and the verdict, each figure
    as the runs' own collections show them to the caller (the module's rules: ``withheld``
    says what is not shown and why, ``topics`` over which topics the figures are). ``stale``
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
        orig_runs, rep_runs = measuring.runs_of(rep, s.get(ReproductionOriginal, rep.original_id))
        seen = sights(s, me, [*orig_runs, *rep_runs])
        so, sr = [seen[x] for x in orig_runs], [seen[x] for x in rep_runs]
        why: list[str] = []
        order = {}
        for i, p in enumerate(measuring.PARTS[:len(orig_runs)]):
            if (measuring.ORDER, p) in mine:
                fig, reason = _pick(mine[(measuring.ORDER, p)].summary, [so[i], sr[i]])
                why += [reason] if fig is None and reason else []
                order[p] = {k: (fig or {}).get(k) for k in ("KTU", "RBO")}
        row["order"] = order or None
        for i, part in enumerate(measuring.PARTS):
            m = mine.get((chosen, part))
            row[part] = _run_figures(m.summary, so[i], sr[i], why) if m is not None and i < len(orig_runs) else None
        m = mine.get((chosen, "effect"))
        effect, reason = _pick(m.summary if m is not None else None, [*so, *sr])
        why += [reason] if m is not None and effect is None and reason else []
        row["effect"] = effect
        row["withheld"] = "; ".join(dict.fromkeys(w for w in why if w)) or None
        row["topics"] = _topics_word(seen.values())
        row["note"] = notes.get(str(rep.id))
        row["verdict"] = f"withheld: {row['withheld']}" if row["withheld"] else verdict(row, chosen)
        doc["rows"].append(row)
    return doc


def _row_runs(m: ReproductionMeasure, i: int, so: list[Sight], sr: list[Sight]) -> dict[str, list[Sight]]:
    """The runs each row of a stored per-topic part is computed from."""
    if m.part == "effect":
        return {"improvement_original": so, "improvement_reproduction": sr}
    if m.metric == measuring.ORDER:
        return {name: [so[i], sr[i]] for name in m.rows}
    return {"original": [so[i]], "reproduction": [sr[i]]}


def per_topic(s: Session, coll: Collection, me: Principal, reproduction_id: int,
              metric: str | None = None) -> dict[str, Any]:
    """One reproduction's per-topic values on ``metric``: each part's rows (the original's and
    the reproduction's scores, a pair's improvements) and KTU/RBO, topic by topic, each row
    only where the caller may see its runs' scores on that topic (the module's rules): a row
    it may not see at all is named in the part's ``withheld`` with the reason, a hidden topic
    of a run's collection is left out (``left_out`` says whose)."""
    policy.require(policy.may_see_reproducibility(me, coll), me, f"the reproducibility board of collection {coll.id}")
    chosen = _metric(coll, metric)
    rep = s.get(Reproduction, reproduction_id)
    if rep is None or rep.collection_id != coll.id or rep.id not in {r.id for r in _visible(s, coll, me)}:
        raise NotFound(f"no reproduction {reproduction_id} in collection {coll.id}")
    orig_runs, rep_runs = measuring.runs_of(rep, s.get(ReproductionOriginal, rep.original_id))
    seen = sights(s, me, [*orig_runs, *rep_runs])
    so, sr = [seen[x] for x in orig_runs], [seen[x] for x in rep_runs]
    parts = []
    for m in s.scalars(select(ReproductionMeasure).where(
            ReproductionMeasure.reproduction_id == rep.id,
            ReproductionMeasure.metric.in_([chosen, measuring.ORDER])).order_by(ReproductionMeasure.metric,
                                                                                 ReproductionMeasure.part)):
        i = measuring.PARTS.index(m.part) if m.part in measuring.PARTS else 0
        deps = _row_runs(m, i, so, sr)
        withheld = {name: "; ".join(dict.fromkeys(x.why or "" for x in deps.get(name, []) if not x.shown))
                    for name in m.rows if not all(x.shown for x in deps.get(name, []))}
        values = unpack(m.values).reshape(len(m.rows), len(m.topics))
        topics, left_out = [], set()
        for j, t in enumerate(m.topics):
            shown = {}
            for k, name in enumerate(m.rows):
                if name in withheld:
                    continue
                hiding = [x for x in deps.get(name, []) if t in x.hidden]
                if hiding:
                    left_out.update(x.collection for x in hiding)
                    continue
                shown[name] = float(values[k, j]) if math.isfinite(values[k, j]) else None
            if shown:
                topics.append({"topic": t, "values": {name: shown.get(name) for name in m.rows}})
        parts.append({"metric": m.metric or None, "part": m.part, "rows": list(m.rows), "topics": topics,
                      "withheld": withheld,
                      "left_out": (f"the hidden topics of {', '.join(sorted(left_out))} (an unrevealed topic split)"
                                   if left_out else None)})
    return {"reproduction": declarations.declaration_doc(s, rep), "metric": chosen, "parts": parts}


def request(s: Session, coll: Collection, me: Principal, force: bool = False) -> Outcome[dict[str, Any]]:
    """Have the workers measure the reproductions now (organisers) unless up to date."""
    policy.require(policy.may_configure(me, coll), me, f"the reproducibility board of collection {coll.id}")
    followups = measuring.queue_if_stale(s, coll, me.name, force)
    row = measuring.newest(s, coll)
    return Outcome({"analysis": row.id if row else None, "queued": bool(followups),
                    "status": row.status if row else None}, tuple(followups))


def _mean(s: Session, run_id: int, metric: str, sight: Sight) -> float | None:
    """The run's stored mean on ``metric`` under its own collection's current evaluation, as
    its board shows it to the caller: over the visible topics under an unrevealed split."""
    if not sight.shown:
        return None
    ev = measuring.current_evaluation(s, run_id)
    if ev is None:
        return None
    column = Score.public_mean if sight.hidden else Score.mean
    return s.scalar(select(column).where(Score.run_evaluation_id == ev, Score.metric == metric))


def longitudinal(s: Session, coll: Collection, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """Each system the caller may see on the board, followed back along its declarations
    (snapshot t+1's run reproducing snapshot t's, and so on): its stored mean on ``metric`` in
    every snapshot, oldest first, and per step the stored result delta, the t-test's p and, for
    a pair, ER and DeltaRI (issue 28, item 4). Read from stored figures only, each as the runs'
    own collections show them to the caller (the module's rules; ``withheld`` says why not)."""
    policy.require(policy.may_see_reproducibility(me, coll), me, f"the reproducibility board of collection {coll.id}")
    chosen = _metric(coll, metric)
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
                steps.append(_step(s, me, link, o, role, run_id, stored))
                points.append(run_id)
                run_id = o.run_id if role == "baseline" or o.advanced_run_id is None else o.advanced_run_id
                link = s.scalar(select(Reproduction).where(or_(Reproduction.run_id == run_id,
                                                               Reproduction.advanced_run_id == run_id)))
                if link is not None:
                    role = "advanced" if link.advanced_run_id == run_id else "baseline"
            points.append(run_id)
            points.reverse()
            steps.reverse()
            sight_of = sights(s, me, points)
            docs = [{**declarations.run_brief(s, rid), "mean": _mean(s, rid, chosen, sight_of[rid]),
                     "topics": _topics_word([sight_of[rid]]), "withheld": sight_of[rid].why} for rid in points]
            systems.append({"reproduction": rep.id, "team": docs[-1]["team"], "part": part, "points": docs,
                            "steps": steps})
    return {"collection": coll.id, "metric": chosen, "systems": systems}


def _step(s: Session, me: Principal, link: Reproduction, o: ReproductionOriginal, role: str, run_id: int,
          stored: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One step of a system: the stored measures of the declaration ``link`` (run ``run_id``
    in the role ``role`` reproducing its original), as the caller may see them."""
    orig_runs, rep_runs = measuring.runs_of(link, o)
    seen = sights(s, me, [*orig_runs, *rep_runs])
    k = rep_runs.index(run_id) if run_id in rep_runs else 0
    figures, why = _pick(stored.get(role), [seen[orig_runs[min(k, len(orig_runs) - 1)]], seen[run_id]])
    effect, why_effect = _pick(stored.get("effect"), [seen[x] for x in (*orig_runs, *rep_runs)])
    figures, effect = figures or {}, effect or {}
    reasons = [w for w in (why, why_effect) if w]
    return {"reproduction": link.id, "delta": figures.get("delta"), "relative_delta": figures.get("relative_delta"),
            "p_value": figures.get("p_value"), "ER": effect.get("ER"), "DeltaRI": effect.get("DeltaRI"),
            "topics": _topics_word(seen.values()), "withheld": "; ".join(dict.fromkeys(reasons)) or None}
