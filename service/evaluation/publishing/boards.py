"""Boards: the ranked leaderboard with its significance, the significance matrix, the
meta-evaluation and rank-change reports the workers stored, and frozen snapshots.

Everything here reads stored results; nothing computes a metric.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.errors import BadRequest, InvalidMeasure, NotFound
from service.evaluation.organising import collections
from service.evaluation.organising.collections import iso
from service.evaluation.organising.setup import audit
from service.evaluation.organising.teams import team_name
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing import versions
from service.evaluation.publishing.board_intervals import (
    TRUNCATED_NOTE,
    bounds_doc,
    bounds_of,
    interval_fields,
    interval_label,
    interval_view,
)
from service.evaluation.publishing.reading import (
    LeaderboardRow,
    annotate,
    complete_version_id,
    computed_at,
    raw_p,
    significance_for,
)
from service.evaluation.publishing.reading import leaderboard as read_leaderboard
from service.formats.text import check_text
from service.metrics import parse_measure
from service.metrics.spec import format_value
from service.metrics.stats.presentation import correction_name
from service.store.models import (
    RUN_TYPES,
    Collection,
    CollectionConfig,
    Job,
    JudgmentSet,
    LeaderboardSnapshot,
    QrelsVersion,
    Run,
)


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


#: How a board filter asks about a yes/no fact a run's team may leave unstated.
STATED = ("yes", "no", "unstated")


@dataclasses.dataclass(frozen=True)
class RunFilter:
    """Which runs a board shows: each team's primary runs only, one run type, and whether the
    runs use the collection's training data or external resources ("yes", "no" or "unstated").
    A filtered board ranks its runs among themselves."""

    primary_only: bool = False
    run_type: str | None = None
    training_data: str | None = None
    external_resources: str | None = None

    def __post_init__(self) -> None:
        if self.run_type is not None and self.run_type not in RUN_TYPES:
            raise BadRequest(f"run_type is one of {', '.join(RUN_TYPES)}, not {self.run_type!r}")
        for name in ("training_data", "external_resources"):
            value = getattr(self, name)
            if value is not None and value not in STATED:
                raise BadRequest(f"{name} is one of {', '.join(STATED)}, not {value!r}")

    @property
    def active(self) -> bool:
        return bool(self.primary_only or self.run_type or self.training_data or self.external_resources)

    def admits(self, meta: RunMeta | None) -> bool:
        if meta is None:
            return not self.active
        return ((not self.primary_only or meta.primary) and (self.run_type is None or meta.run_type == self.run_type)
                and _stated(meta.training_data, self.training_data)
                and _stated(meta.external_resources, self.external_resources))

    def document(self) -> dict[str, Any]:
        return {"primary_only": self.primary_only, "run_type": self.run_type, "training_data": self.training_data,
                "external_resources": self.external_resources}


def _stated(value: bool | None, wanted: str | None) -> bool:
    return wanted is None or wanted == ("unstated" if value is None else "yes" if value else "no")


class RunMeta(NamedTuple):
    """What a board shows and filters on of a run besides its scores."""

    id: int
    primary: bool
    run_type: str | None
    training_data: bool | None
    external_resources: bool | None


def run_meta(s: Session, coll: Collection) -> dict[str, RunMeta]:
    """The collection's runs by tag: id, primary flag, run type, training data, external resources."""
    return {tag: RunMeta(*rest) for tag, *rest in s.execute(
        select(Run.tag, Run.id, Run.is_primary, Run.run_type, Run.uses_training_data, Run.uses_external_resources)
        .where(Run.collection_id == coll.id))}


def board_rows(s: Session, coll: Collection, me: Principal, rows: list[LeaderboardRow], runs: RunFilter,
               meta: dict[str, RunMeta]) -> tuple[list[LeaderboardRow], str]:
    """The rows of a board the caller may see, and what they are ranked among ("all", "filtered"
    or "team"). Every board, page and download that lists runs with their figures selects its
    rows here, so the secrecy rules are one: before the release a participant sees its own
    team's rows only, ranked among themselves (the board says nothing of other teams' runs: not
    even ranks); a filtered board ranks the runs it shows among themselves."""
    rows = [r for r in rows if runs.admits(meta.get(r.run))]
    every = policy.sees_all_rows(me, coll)
    if not every:
        mine = team_name(s, me)
        rows = [r for r in rows if r.team == mine]
    if not every or runs.active:
        rows = rerank(rows)
    return rows, "all" if every and not runs.active else "filtered" if every else "team"


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


def set_of_version(s: Session, coll: Collection, number: int | None) -> str | None:
    """The name of the judgment set a version number of ``coll`` belongs to (the official
    set's name when no version is named)."""
    q = select(JudgmentSet.name).join(QrelsVersion, QrelsVersion.judgment_set_id == JudgmentSet.id)
    if number is None:
        return s.scalar(select(JudgmentSet.name).where(JudgmentSet.id == coll.official_set_id))
    return s.scalar(q.where(QrelsVersion.collection_id == coll.id, QrelsVersion.version == number))


def leaderboard_doc(s: Session, coll: Collection, me: Principal, metric: str | None = None,
                    qrels_version: int | None = None, test: str | None = None, runs: RunFilter | None = None,
                    pairs: bool = False) -> dict[str, Any]:
    """The ranked board the caller may see (:func:`board_rows`), of the runs ``runs`` admits,
    annotated with the stored significance test (with ``pairs``: the names of the runs each
    row beats and is tied with, besides their counts)."""
    policy.require(policy.may_see_board(me, coll), me, f"the leaderboard of collection {coll.id}")
    runs = runs or RunFilter()
    public = policy.sees_visible_topics_only(me, coll)
    if qrels_version is not None:
        versions.readable(s, coll, me, qrels_version)  # another set's board: organisers only
    name, rows = read_leaderboard(s, coll.name, metric, qrels_version, public)
    meta = run_meta(s, coll)
    visible, among = board_rows(s, coll, me, rows, runs, meta)
    sig = significance_for(s, coll, name, test, qrels_version, "public" if public else "all")
    annotated = annotate(visible, sig, pairs)
    running = s.scalar(select(func.count()).select_from(Job).join(QrelsVersion, QrelsVersion.id == Job.qrels_version_id)
                       .where(Job.collection_id == coll.id, Job.status.in_(("running", "testing")),
                              QrelsVersion.judgment_set_id == coll.official_set_id))  # the board's, not another set's
    limits = bounds_of(name)
    shown = [interval_view(r, limits) for r in annotated]
    return {"collection": coll.name, "metric": name, "released": coll.leaderboard_released,
            "topics": "visible only (public/private split)" if public else "all",
            "qrels_version": rows[0].qrels_version if rows else (
                qrels_version if qrels_version is not None else version_number(s, complete_version_id(s, coll))),
            "newest_qrels_version": coll.current_qrels.version if coll.current_qrels else None,
            "judgment_set": set_of_version(s, coll, rows[0].qrels_version if rows else qrels_version),
            "computed_at": iso(computed_at(s, coll, qrels_version)),
            "reevaluation_in_progress": bool(running),
            "significance": ({"test": sig.test, "alpha": sig.alpha, "correction": sig.correction,
                              "resamples": sig.resamples, "n_topics": sig.n_topics} if sig else None),
            "ranked_among": among,
            "filters": runs.document(),
            # The metric's range; the interval drawn (bootstrap when stored, else t) in words, and
            # the note a truncated t interval end refers to (board_intervals).
            "bounds": bounds_doc(limits),
            "interval": interval_label(annotated),
            "truncation_note": (TRUNCATED_NOTE if any(v["t_low_clipped"] or v["t_high_clipped"] for v in shown)
                                else None),
            "rows": [{**{k: r[k] for k in ("rank", "run", "team", "mean", "ci_low", "ci_high", "boot_low", "boot_high",
                                           "boot_method", "boot_resamples", "n_topics", "baseline",
                                           "judged_at_10", "beats_count", "tied_count", "beats", "tied_with", "groups")
                          if k in r},
                      **interval_fields(r), **_meta_columns(meta.get(r["run"])), "shown": view}
                     for r, view in zip(annotated, shown)]}


def _meta_columns(meta: RunMeta | None) -> dict[str, Any]:
    """A board row's run columns besides its figures: its id and how it was made."""
    if meta is None:
        return {"run_id": None}
    return {"run_id": meta.id, "run_type": meta.run_type, "uses_training_data": meta.training_data,
            "uses_external_resources": meta.external_resources}


# -------------------------------------------------------------------------- every metric
#: Metrics that describe a run or its judgments rather than rate it: neither direction is better.
DESCRIPTIVE = frozenset({"NumRel", "NumRet", "Judged", "RBPresidual"})
SORT_BY_NAME = ("run", "team")


def metric_column(name: str, official: bool = False) -> dict[str, Any]:
    """A metric as a column header explains it: the registry's description with its cutoff and
    parameters (which nDCG: Järvelin & Kekäläinen's or trec_eval's), its direction and range."""
    try:
        m = parse_measure(name)
    except InvalidMeasure:  # a stored name the registry no longer knows
        return {"metric": name, "official": official, "description": name, "direction": "higher",
                "bounds": bounds_doc((0.0, math.inf))}
    d = m.definition
    parts = [d.doc]
    if m.cutoff is not None:
        parts.append(f"cut at rank {m.cutoff}")
    parts += [f"{k}={format_value(v)}: {d.param_map[k].doc}" for k, v in m.params]
    direction = "none" if d.name in DESCRIPTIVE else "higher"
    return {"metric": name, "official": official, "description": "; ".join(parts), "direction": direction,
            "bounds": bounds_doc(m.bounds)}


def metrics_board(s: Session, coll: Collection, me: Principal, sort: str | None = None,
                  runs: RunFilter | None = None) -> dict[str, Any]:
    """Every metric of the collection side by side: each run's mean and rank on each (the
    official metric first), the rows those of the single-metric boards (:func:`board_rows`, the
    same secrecy), sorted by ``sort`` (a metric, best first; or "run" or "team")."""
    policy.require(policy.may_see_board(me, coll), me, f"the leaderboard of collection {coll.id}")
    runs = runs or RunFilter()
    cfg = coll.current_config
    order = [cfg.official_metric, *(m for m in cfg.metrics if m != cfg.official_metric)]
    key = sort if sort in SORT_BY_NAME else str(parse_measure(sort)) if sort else cfg.official_metric
    if key not in order and key not in SORT_BY_NAME:
        raise InvalidMeasure(f"{key} is not among the collection's metrics: {', '.join(order)}")
    public = policy.sees_visible_topics_only(me, coll)
    meta = run_meta(s, coll)
    table: dict[str, dict[str, Any]] = {}
    among, version = "all", None
    for metric in order:
        _, rows = read_leaderboard(s, coll.name, metric, None, public)
        visible, among = board_rows(s, coll, me, rows, runs, meta)
        for r in visible:
            version = r.qrels_version
            row = table.setdefault(r.run, {"run": r.run, "team": r.team, "baseline": r.baseline,
                                           **_meta_columns(meta.get(r.run)), "means": {}, "ranks": {}})
            row["means"][metric], row["ranks"][metric] = r.mean, r.rank
    rows_out = list(table.values())
    for row in rows_out:
        for metric in order:
            row["means"].setdefault(metric, None)
            row["ranks"].setdefault(metric, None)
    by = cfg.official_metric if key in SORT_BY_NAME else key
    rows_out.sort(key=lambda r: r["run"])  # ties (and runs without the metric) in tag order, as on a board
    if key in SORT_BY_NAME:
        rows_out.sort(key=lambda r: r[key])
    else:
        rows_out.sort(key=lambda r: (r["means"][by] is None, -(r["means"][by] or 0.0)))
    for row in rows_out:
        row["rank"] = row["ranks"][by]
    return {"collection": coll.name, "sort": key, "released": coll.leaderboard_released,
            "topics": "visible only (public/private split)" if public else "all",
            "qrels_version": version if version is not None else version_number(s, complete_version_id(s, coll)),
            "ranked_among": among, "filters": runs.document(),
            "metrics": [metric_column(m, m == cfg.official_metric) for m in order], "rows": rows_out}


def significance_matrix(s: Session, coll: Collection, me: Principal, metric: str | None = None,
                        test: str | None = None, qrels_version: int | None = None) -> dict[str, Any]:
    policy.require(policy.may_see_results(me, coll), me, f"the significance matrix of collection {coll.id}")
    if qrels_version is not None:
        versions.readable(s, coll, me, qrels_version)  # as the board: another set's, organisers only
    name = str(parse_measure(metric)) if metric else coll.current_config.official_metric
    subset = "public" if policy.sees_visible_topics_only(me, coll) else "all"
    sig = significance_for(s, coll, name, test, qrels_version, subset=subset)
    if sig is None:
        raise NotFound(f"no stored test for {name} on these results")
    names = sig.runs
    everyone = np.arange(len(names))
    from service.evaluation.publishing.monte_carlo import (
        matrix_fields,  # per pair B, Monte Carlo SE, undecided (issue 25.1)
    )

    return {"metric": name, "test": sig.test, "alpha": sig.alpha, "correction": sig.correction,
            "correction_name": correction_name(sig.test, sig.correction), "resamples": sig.resamples,
            "runs": names, "p": sig.matrix(everyone, raw_p(s, sig)).tolist(),
            "p_adjusted": sig.matrix(everyone).tolist(), **matrix_fields(s, sig, everyone)}


def board_test_counts(s: Session, coll: Collection, me: Principal, metric: str) -> dict[str, Any] | None:
    """How many run pairs the board's stored test of ``metric`` finds significant (its p as
    stored, adjusted when its correction adjusts), beside the unadjusted counts of the metric
    analysis (issue 25, item 4); None without a stored test."""
    policy.require(policy.may_see_results(me, coll), me, f"the significance tests of collection {coll.id}")
    subset = "public" if policy.sees_visible_topics_only(me, coll) else "all"
    sig = significance_for(s, coll, str(parse_measure(metric)), None, None, subset=subset)
    if sig is None:
        return None
    raw = raw_p(s, sig)
    # A pair undecided at its B is not counted significant, as the board's letters count it.
    settled = np.ones(sig.p_condensed.size, dtype=bool) if sig.undecided is None else ~sig.undecided.astype(bool)
    return {"test": sig.test, "alpha": sig.alpha, "correction": sig.correction,
            "correction_name": correction_name(sig.test, sig.correction), "resamples": sig.resamples,
            "pairs": int(sig.p_condensed.size), "significant": int(((sig.p_condensed < sig.alpha) & settled).sum()),
            "undecided": int((~settled).sum()), "significant_unadjusted": int((raw < sig.alpha).sum())}


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
    job = s.scalars(select(Job).join(QrelsVersion, QrelsVersion.id == Job.qrels_version_id)
                    .where(Job.collection_id == coll.id, Job.status == "done", Job.previous_qrels_id.is_not(None),
                           QrelsVersion.judgment_set_id == coll.official_set_id)  # not another set's update
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


#: What a snapshot keeps of each metric's board besides the snapshot's own metric (whose whole
#: board document is the snapshot's content): its ranked rows and what they were ranked under.
FROZEN_PER_METRIC = ("metric", "rows", "significance", "bounds", "interval", "truncation_note")


def snapshot(s: Session, sid: int, me: Principal, metric: str | None = None) -> dict[str, Any]:
    """A frozen board: the snapshot's own metric's (or, with ``metric``, another frozen
    metric's) ranked rows as served when frozen; ``metrics`` names every metric it froze,
    ``every_metric`` is false for snapshots frozen before every metric was kept (they hold
    their own metric only), ``boards`` holds each frozen metric's rows."""
    snap = s.get(LeaderboardSnapshot, sid)
    if snap is None:
        raise NotFound(f"no snapshot {sid}")
    coll = collections.get(s, snap.collection_id, me)
    policy.require(policy.may_see_snapshot(me, coll, snap), me, f"snapshot {sid}")
    content = dict(snap.content)
    stored_boards: dict[str, dict[str, Any]] = content.pop("boards", None) or {}
    every = "metrics" in content  # frozen since snapshots keep every metric of the board
    names: list[str] = list(content.pop("metrics", None) or [content.get("metric") or snap.metric])
    boards_by_name = {name: _readable(stored_boards.get(name) or content, name) for name in names}
    chosen = snap.metric if metric is None else metric
    if chosen not in boards_by_name:
        try:
            chosen = str(parse_measure(chosen))
        except InvalidMeasure:
            pass
    if chosen not in boards_by_name:
        raise NotFound(f"snapshot {sid} holds no board of {metric}: it froze {', '.join(names)}"
                       + ("" if every else " (frozen before snapshots kept every metric of the board)"))
    shown = {**content, **{k: boards_by_name[chosen].get(k) for k in FROZEN_PER_METRIC}}
    return {"id": snap.id, "collection_id": coll.id, "label": snap.label, "created_at": iso(snap.created_at),
            **shown, "frozen_metric": snap.metric, "metrics": names, "every_metric": every,
            "boards": [{k: boards_by_name[n].get(k) for k in FROZEN_PER_METRIC} for n in names]}


def _readable(board: dict[str, Any], metric: str) -> dict[str, Any]:
    """A frozen board as today's pages read it (rows frozen by earlier versions lack the bounded
    interval and the named interval ends)."""
    board = dict(board)
    if any("shown" not in r for r in board.get("rows", [])):  # frozen before intervals were bounded
        limits = bounds_of(metric)
        board["rows"] = [{**r, "shown": r.get("shown") or interval_view(r, limits)} for r in board["rows"]]
        board.setdefault("interval", interval_label(board["rows"]))
    if any("t_ci_low" not in r for r in board.get("rows", [])):  # frozen before the intervals were named
        board["rows"] = [{**r, **interval_fields(r)} for r in board["rows"]]
    return board


def freeze(s: Session, coll: Collection, me: Principal, metric: str | None, label: str) -> dict[str, Any]:
    """Store the current board (as the organiser sees it) as an immutable snapshot."""
    policy.require(policy.may_freeze_board(me, coll), me, f"freezing the board of collection {coll.id}")
    check_text("label", label)
    board = leaderboard_doc(s, coll, me, metric, pairs=True)  # a frozen board keeps the names
    # every metric of the board, the official one first (as the board's selector lists them)
    cfg = coll.current_config
    names = [board["metric"], *(m for m in [cfg.official_metric, *cfg.metrics] if m != board["metric"])]
    names = list(dict.fromkeys(names))
    others = {}
    for name in names[1:]:
        doc = leaderboard_doc(s, coll, me, name, pairs=True)
        others[name] = {k: doc[k] for k in FROZEN_PER_METRIC}
    snap = LeaderboardSnapshot(collection_id=coll.id, qrels_version=board["qrels_version"] or 0,
                               metric=board["metric"], label=label,
                               content={**board, "metrics": names, "boards": others}, created_by=me.name)
    s.add(snap)
    audit(s, me.name, "leaderboard.freeze", coll.id, metric=board["metric"], qrels_version=board["qrels_version"],
          metrics=names)
    s.flush()
    return {"id": snap.id, "qrels_version": snap.qrels_version, "metric": snap.metric, "label": snap.label,
            "created_at": iso(snap.created_at), "metrics": names}
