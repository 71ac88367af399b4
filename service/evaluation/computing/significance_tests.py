"""A job's tests: pairwise significance on the stored scores, the meta-evaluation of the
collection's metrics, and the rank changes between two qrels versions.

The tests of a collection's current key (qrels version, configuration, evaluator version)
run in *rounds*: :func:`run_tests` runs once a job has no pending item (see
:mod:`service.evaluation.organising.planning`), and one round serves every job of the key that is
waiting for its tests ("testing"), so that a burst of submissions (one job each) costs one
round, not one per submission:

- A submission's message is sent with a debounce delay (``CRANFIELD_TESTS_DEBOUNCE``; a whole
  collection's re-evaluation, a burst of its own, is sent at once: ``planning.BURSTY``), and a round does
  not start while another job of the key still has pending items or entered "testing" later
  (that job's own message comes later; a live round chains to the jobs it did not cover),
  unless the oldest waiting job has waited ``Limits.tests_max_wait``.
- The round claims every waiting job of the key under the collection's row lock (conditional
  UPDATE of ``tests_attempts``, the claim's token, and ``tests_queued_at`` set to the lease's
  expiry, in the future while the round lives), renews that lease from a heartbeat, computes
  with no transaction open, and stores every test matrix and each job's report in one
  transaction, conditional on still holding every claim. It always finishes its jobs: a
  metric whose test cannot run is reported in ``job.report``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker, undefer

from service.evaluation.common.work import Followup, Heartbeat, LeaseLost, Limits, patiently
from service.evaluation.organising.planning import PENDING, params_hash, runs_hash, test_params, tests_followup
from service.evaluation.organising.results import evaluated_under, json_safe, tested_under
from service.evaluation.organising.setup import EVALUATOR_VERSION, unavailable_metrics
from service.evaluation.publishing.reading import ScoreTables, score_tables
from service.formats.text import counted
from service.metrics.pooling import competition_ranks
from service.metrics.stats.common import as_score_matrix
from service.metrics.stats.letters import letter_columns, members
from service.metrics.stats.meta import MetaEvaluation, MetricPower, meta_evaluation
from service.metrics.stats.pairwise import PairwiseResult, pairwise_many
from service.metrics.stats.sequential import GUARANTEE, MAX_RESAMPLES
from service.store.arrays import pack, unpack
from service.store.db import as_utc, db_now, transaction
from service.store.models import (
    Collection,
    CollectionConfig,
    Job,
    JobItem,
    QrelsVersion,
    Run,
    RunEvaluation,
    Score,
    Significance,
    utcnow,
)

LONG_AGO = datetime(1970, 1, 1, tzinfo=UTC)


def tests_gave_up(attempts: int) -> str:
    return f"the significance tests did not complete after {attempts} attempts"


def same_key(job: Job) -> tuple[Any, ...]:
    """WHERE conditions on ``Job``: the jobs whose tests one round runs (those of ``job``'s key)."""
    return (Job.collection_id == job.collection_id, Job.qrels_version_id == job.qrels_version_id,
            Job.config_id == job.config_id, Job.evaluator_version == job.evaluator_version)


def mark(job: Job) -> datetime:
    """A waiting job's ``tests_queued_at``: when its tests were last sent, or (in the future)
    until when the round that claimed them lives."""
    return as_utc(job.tests_queued_at) or LONG_AGO


def pending_elsewhere(s: Session, job: Job) -> bool:
    """Whether another job of the key still has queued or evaluating items."""
    return bool(s.scalar(select(func.count()).select_from(JobItem).join(Job).where(
        *same_key(job), Job.id != job.id, Job.status == "running", JobItem.status.in_(PENDING))))


@dataclass(frozen=True)
class _Round:
    jobs: dict[int, int]  # job id -> its tests_attempts under this round's claim
    collection_id: int
    qrels_id: int
    config_id: int


def run_tests(factory: sessionmaker[Session], job_id: int, limits: Limits = Limits()) -> list[Followup]:
    """One round of the tests of ``job_id``'s key: the pairwise significance tests of the
    configured metrics, the meta-evaluation and, per job, the rank-change report."""
    claim = _claim_round(factory, job_id, limits)
    if not isinstance(claim, _Round):
        return claim
    heartbeat = Heartbeat(_renewal(factory, claim, limits.lease), limits.lease)
    try:
        with heartbeat:
            inputs = patiently(lambda: _read(factory, claim), heartbeat)
            with heartbeat.guarded():
                results, errors, meta = _compute(*inputs)
            return patiently(lambda: _store(factory, claim, inputs[0], results, errors, meta), heartbeat)
    except LeaseLost:
        return []  # the round was taken over; the later one stores


def _claim_round(factory: sessionmaker[Session], job_id: int, limits: Limits) -> _Round | list[Followup]:
    """Claim the tests of every waiting job of the key, unless the round should wait (see
    the module's docstring); jobs whose earlier rounds all died are failed instead."""
    with transaction(factory) as s:
        collection_id = s.scalar(select(Job.collection_id).where(Job.id == job_id))
        if collection_id is None:
            return []
        s.execute(select(Collection.id).where(Collection.id == collection_id).with_for_update())
        job = s.get(Job, job_id, populate_existing=True)
        if job is None or job.status != "testing":
            return []  # a duplicate, or finished by another job's round
        now = db_now(s)  # the database's clock, as every lease
        waiting = list(s.scalars(select(Job).where(*same_key(job), Job.status == "testing")
                                 .execution_options(populate_existing=True)))
        if any(mark(j) > now for j in waiting):
            return []  # a round is alive: it covers this job or chains to it when it ends
        if min(mark(j) for j in waiting) > now - timedelta(seconds=limits.tests_max_wait):
            if any(mark(j) > mark(job) for j in waiting) or pending_elsewhere(s, job):
                return []  # a later job's message (or its last item) starts the round
        expires = now + timedelta(seconds=limits.lease)
        covered: dict[int, int] = {}
        for j in waiting:
            if j.tests_attempts >= limits.max_attempts:
                s.execute(update(Job).where(Job.id == j.id, Job.status == "testing",
                                            Job.tests_attempts == j.tests_attempts)
                          .values(status="failed", finished_at=now, error=tests_gave_up(j.tests_attempts))
                          .execution_options(synchronize_session=False))
                continue
            if s.execute(update(Job).where(Job.id == j.id, Job.status == "testing",
                                           Job.tests_attempts == j.tests_attempts)
                         .values(tests_attempts=j.tests_attempts + 1, tests_queued_at=expires)
                         .execution_options(synchronize_session=False)).rowcount:
                covered[j.id] = j.tests_attempts + 1
        if not covered:
            return []
        return _Round(covered, job.collection_id, job.qrels_version_id, job.config_id)


def _holding(job_id: int, attempt: int) -> tuple[Any, ...]:
    return (Job.id == job_id, Job.status == "testing", Job.tests_attempts == attempt)


def _renewal(factory: sessionmaker[Session], claim: _Round, lease: float):  # type: ignore[no-untyped-def]
    def renew() -> bool:
        with transaction(factory) as s:
            expires = db_now(s) + timedelta(seconds=lease)
            held = [s.execute(update(Job).where(*_holding(j, a)).values(tests_queued_at=expires)
                              .execution_options(synchronize_session=False)).rowcount for j, a in claim.jobs.items()]
            return all(held)
    return renew


def _read(factory: sessionmaker[Session], claim: _Round) -> tuple[dict[str, Any], ScoreTables, ScoreTables]:
    with factory() as s:
        config = s.get(CollectionConfig, claim.config_id)
        assert config is not None
        sig = dict(config.significance)
        # Every metric of the collection is tested unless the organisers named some.
        metrics = list(sig.get("metrics") or config.metrics)
        all_tables = score_tables(s, claim.collection_id, claim.qrels_id, config.settings_hash, list(config.metrics))
        # the tested metrics' tables are the same objects when they are among the collection's (read once)
        missing = [m for m in metrics if m not in all_tables]
        tables = {**{m: all_tables[m] for m in metrics if m in all_tables},
                  **(score_tables(s, claim.collection_id, claim.qrels_id, config.settings_hash, missing)
                     if missing else {})}
        settings = {"sig": sig, "metrics": metrics, "settings_hash": config.settings_hash,
                    "hidden": set(config.evaluation.get("hidden_topics") or []), "all_metrics": list(all_tables),
                    "earlier": _earlier_tests(s, claim, config, metrics)}
    return settings, tables, all_tables


@dataclass(frozen=True)
class _Earlier:
    """The stored tests of a version the round's jobs replaced, with the score tables they tested
    and the meta-evaluation's power entries of that version: a test whose tables are the same
    now is carried, not run again (:func:`_carried`)."""

    version_id: int
    tables: ScoreTables
    tests: dict[tuple[str, str], dict[str, Any]]  # (metric, subset) -> the row's columns
    power: dict[str, dict[str, Any]]  # metric -> the power entry of the version's job report


def _earlier_tests(s: Session, claim: _Round, config: CollectionConfig, metrics: list[str]) -> list[_Earlier]:
    phash = params_hash(dict(config.significance))
    previous = sorted({v for v in s.scalars(select(Job.previous_qrels_id).where(Job.id.in_(claim.jobs)))
                       if v is not None and v != claim.qrels_id}, reverse=True)
    out = []
    for version_id in previous:
        rows = s.scalars(select(Significance).where(
            tested_under(version_id, config.settings_hash), Significance.params_hash == phash,
            Significance.metric.in_(metrics)).options(undefer("*"))).all()
        if not rows:
            continue
        columns = [c.key for c in Significance.__table__.columns if c.key not in ("id", "qrels_version_id")]
        tests = {(r.metric, r.subset): {"id": r.id, **{c: getattr(r, c) for c in columns}} for r in rows}
        power: dict[str, dict[str, Any]] = {}
        for report in s.scalars(select(Job.report).where(Job.qrels_version_id == version_id, Job.status == "done",
                                                         Job.config_id == claim.config_id).order_by(Job.id.desc())):
            power = ((report or {}).get("meta") or {}).get("power") or {}
            if power:
                break
        out.append(_Earlier(version_id, score_tables(s, claim.collection_id, version_id, config.settings_hash,
                                                     sorted({m for m, _ in tests})), tests, power))
    return out


def _same_table(a: tuple[list[int], list[str], np.ndarray], b: tuple[list[int], list[str], np.ndarray]) -> bool:
    return list(a[0]) == list(b[0]) and list(a[1]) == list(b[1]) and a[2].shape == b[2].shape \
        and bool(np.array_equal(a[2], b[2], equal_nan=True))


def _carried(earlier: list[_Earlier], metric: str, subset: str, table: tuple[list[int], list[str], np.ndarray],
             pair_guarantee: float) -> tuple[_Earlier, dict[str, Any]] | None:
    """An earlier version's stored test of ``metric`` on ``subset`` that this round may copy: the
    same runs, topics and scores (bit for bit), the same test settings, no undecided pair, and
    settled with a per-pair error no larger than this round spends (so that the round's
    simultaneous guarantee still holds by the union bound over every pair it stores; a test's
    result does not depend on the other metrics settled beside it, docs/statistics.md)."""
    for e in earlier:
        row = e.tests.get((metric, subset))
        if row is None or metric not in e.tables or not _same_table(e.tables[metric], table):
            continue
        spent = (row["params"] or {}).get("pair_guarantee")
        undecided = row["undecided"]
        if spent is None or float(spent) > pair_guarantee * (1 + 1e-12):
            continue
        if undecided is not None and unpack(undecided).any():
            continue
        if row["runs_hash"] != runs_hash(table[0]):
            continue
        return e, row
    return None


def _compute(settings: dict[str, Any], tables: ScoreTables,
             all_tables: ScoreTables) -> tuple[list[Any], dict[str, str], MetaEvaluation]:
    sig, hidden = settings["sig"], settings["hidden"]
    results, errors = [], {}
    # Every (metric, subset) of the round, grouped by its runs and subset: a group's metrics are
    # settled together (pairwise_many: one resampling matrix per stage for all of them), and the
    # guarantee is split over every pair of the round, so that with probability at least 99% every
    # settled verdict of the round is its B -> infinity verdict at once (issue 38; docs/statistics.md).
    groups: dict[tuple[tuple[int, ...], str], dict[str, np.ndarray]] = {}
    for metric in settings["metrics"]:
        run_ids, topics, matrix = tables.get(metric, ([], [], np.zeros((0, 0))))
        if len(run_ids) < 2:
            errors[metric] = f"{counted(len(run_ids), 'evaluated run')}: nothing to compare"
            continue
        # a matrix no test can take (fewer than two topics scored by every run, say) is reported
        # here, before the guarantee is split, so that no share of it is spent on that matrix
        subsets = {"all": matrix}
        if hidden:  # the public leaderboard's test, on the visible topics only
            subsets["public"] = matrix[[t not in hidden for t in topics]]
        for subset, x in subsets.items():
            try:
                as_score_matrix(x, [str(r) for r in run_ids])
            except ValueError as exc:
                errors[metric if subset == "all" else f"{metric} (visible topics)"] = str(exc)
                continue
            groups.setdefault((tuple(run_ids), subset), {})[metric] = x
    pairs = {key: len(key[0]) * (len(key[0]) - 1) // 2 for key in groups}
    total = max(sum(pairs[key] * len(group) for key, group in groups.items()), 1)
    # A test whose scores an earlier version had, bit for bit, is carried from it (issue 35: a new
    # version re-tests only what changed); its pairs still count in the round's total.
    carried: dict[tuple[str, str], tuple[_Earlier, dict[str, Any]]] = {}
    for (run_ids, subset), group in groups.items():
        for metric in list(group):
            ids, topics, _ = tables[metric]
            found = _carried(settings.get("earlier") or [], metric, subset, (list(ids), list(topics), group[metric]),
                             GUARANTEE / total)
            if found is not None:
                carried[(metric, subset)] = found
                del group[metric]
    tested: dict[tuple[str, str], Any] = {}
    for (run_ids, subset), group in groups.items():
        if not group:
            continue
        guarantee = GUARANTEE * pairs[(run_ids, subset)] * len(group) / total
        out = pairwise_many(group, [str(r) for r in run_ids], sig["test"], resamples=int(sig["resamples"]),
                            alpha=float(sig["alpha"]), correction=sig["correction"], seed=int(sig["seed"]),
                            sequential=True, max_resamples=int(sig.get("max_resamples") or MAX_RESAMPLES),
                            guarantee=guarantee, difference_required=subset == "all")
        # the error each pair was settled with (the split of pairwise_many: over the pairs of the
        # matrices whose first stage ran), kept with the test so that a later round may carry it
        settled = sum(not isinstance(res, ValueError) for res in out.values()) * pairs[(run_ids, subset)]
        tested.update({(metric, subset): (list(run_ids), res, group[metric], guarantee / max(settled, 1))
                       for metric, res in out.items()})
    for metric in settings["metrics"]:
        for subset in ("all", "public"):
            if (metric, subset) in carried:
                earlier, row = carried[(metric, subset)]
                results.append(Carried(metric, subset, earlier.version_id, row, earlier.power.get(metric)))
                continue
            if (metric, subset) not in tested:
                continue
            run_ids, res, x, pair_guarantee = tested[(metric, subset)]
            if isinstance(res, ValueError):
                errors[metric if subset == "all" else f"{metric} (visible topics)"] = str(res)
                continue
            results.append(Tested(metric, run_ids, res, subset, stored_letters(res, x), pair_guarantee))
    # The bootstrap's ASLs and differences required of a metric tested on all topics are the
    # meta-evaluation's own (the same B, seed and alpha): not resampled twice.
    reused = [(r.metric, r.res) for r in results
              if isinstance(r, Tested) and r.subset == "all" and r.res.test == "bootstrap"
              and r.res.required is not None and tables[r.metric][2] is all_tables.get(r.metric, (0, 0, None))[2]]
    # a carried test's discriminative power is its version's (the same scores, B, seed and alpha)
    known = {r.metric: power_of(r.power) for r in results
             if isinstance(r, Carried) and r.subset == "all" and r.power and "power" in r.power
             and tables[r.metric][2] is all_tables.get(r.metric, (0, 0, None))[2]}
    meta = meta_evaluation({m: (ids, matrix) for m, (ids, _, matrix) in all_tables.items()},
                           alpha=float(sig["alpha"]), resamples=int(sig["resamples"]), seed=int(sig["seed"]),
                           asl={metric: res.p for metric, res in reused},
                           required={metric: res.required for metric, res in reused}, power=known)
    return results, errors, meta


@dataclass(frozen=True)
class Tested:
    """A test this round ran, with the error each of its pairs was settled with."""

    metric: str
    run_ids: list[int]
    res: PairwiseResult
    subset: str
    letters: list[list[int]]
    pair_guarantee: float


@dataclass(frozen=True)
class Carried:
    """A test carried from an earlier version (its stored row's columns) and its power entry."""

    metric: str
    subset: str
    version_id: int
    row: dict[str, Any]
    power: dict[str, Any] | None


def power_of(entry: dict[str, Any]) -> MetricPower:
    """A stored meta-evaluation power entry (:func:`meta_document`) as the core's MetricPower."""
    return MetricPower(entry["power"], entry["significant_pairs"], entry["pairs"], entry["difference_required"],
                       [(int(i), float(asl)) for i, asl in entry["asl_curve"]])


def _store(factory: sessionmaker[Session], claim: _Round, settings: dict[str, Any], results: list[Any],
           errors: dict[str, str], meta: MetaEvaluation) -> list[Followup]:
    """Store the round's matrices and finish its jobs, if it still holds every claim; then
    chain a round for the jobs of the key that started waiting after this one was claimed."""
    sig, settings_hash = settings["sig"], settings["settings_hash"]
    phash = params_hash(sig)
    try:
        with transaction(factory) as s:
            s.execute(select(Collection.id).where(Collection.id == claim.collection_id).with_for_update())
            jobs = [s.get(Job, j, populate_existing=True) for j in claim.jobs]
            if any(job is None or job.status != "testing" or job.tests_attempts != claim.jobs[job.id]
                   for job in jobs):
                return []  # taken over by a later round, which stores instead
            for r in results:
                if isinstance(r, Carried):
                    _store_carried(s, claim, settings_hash, phash, r)
                    continue
                metric, run_ids, res, subset, letters = r.metric, r.run_ids, r.res, r.subset, r.letters
                rhash = runs_hash(run_ids)
                exists = s.scalar(select(Significance.id).where(
                    tested_under(claim.qrels_id, settings_hash), Significance.metric == metric,
                    Significance.test == res.test, Significance.runs_hash == rhash,
                    Significance.params_hash == phash, Significance.subset == subset))
                if exists is None:
                    # A test of the same key over an earlier set of runs is superseded: boards read the
                    # newest, and at 1,000 runs each one is megabytes per metric (docs/statistics.md).
                    s.execute(delete(Significance).where(
                        tested_under(claim.qrels_id, settings_hash), Significance.metric == metric,
                        Significance.test == res.test, Significance.params_hash == phash,
                        Significance.subset == subset, Significance.runs_hash != rhash)
                        .execution_options(synchronize_session=False))
                    s.add(Significance(
                        collection_id=claim.collection_id, qrels_version_id=claim.qrels_id, metric=metric,
                        test=res.test, subset=subset, settings_hash=settings_hash,
                        evaluator_version=EVALUATOR_VERSION, runs_hash=rhash, params_hash=phash,
                        params={**test_params(sig), "pair_guarantee": r.pair_guarantee},
                        run_ids=list(run_ids), n_topics=res.n_topics,
                        letters=letters, **stored_arrays(res)))
            config = s.get(CollectionConfig, claim.config_id)
            meta_doc = meta_document(meta, settings["all_metrics"])
            version = s.get(QrelsVersion, claim.qrels_id)
            # metrics the version's format cannot score (NaN on every topic), each with why
            warnings = unavailable_metrics(config.metrics, version.format if version is not None else "adhoc")
            now = utcnow()
            for job in jobs:
                report = rank_changes(s, job, config) if job.previous_qrels_id else {}
                if (job.report or {}).get("carried_runs"):  # planning.carry_unchanged's count
                    report = {**report, "carried_runs": job.report["carried_runs"]}
                carried = sorted({r.metric for r in results if isinstance(r, Carried)})
                if carried:
                    report = {**report, "carried_tests": carried}
                if errors:
                    report = {**report, "test_errors": errors}
                if warnings:
                    report = {**report, "warnings": warnings}
                report = {**report, "meta": meta_doc}
                job.report = json_safe(report)
                job.error = "; ".join(filter(None, [
                    f"{job.failed} of {job.total} runs failed; see their status" if job.failed else "",
                    "tests not run for " + ", ".join(errors) if errors else "",
                    ", ".join(warnings) + " not computed on this qrels version's format (see the report's warnings)"
                    if warnings else ""]))
                job.status, job.finished_at = "done", now
            s.flush()
            later = s.scalars(select(Job.id).where(*same_key(jobs[0]), Job.status == "testing")
                              .order_by(Job.tests_queued_at.desc(), Job.id.desc())).first()
            return [tests_followup(s, later)] if later is not None else []
    except IntegrityError:
        return []  # a concurrent round stored the same matrices and finished the jobs


def _store_carried(s: Session, claim: _Round, settings_hash: str, phash: str, r: Carried) -> None:
    """A carried test stored under the round's version: its earlier row's columns, naming it."""
    row = {k: v for k, v in r.row.items() if k not in ("id", "computed_at")}
    exists = s.scalar(select(Significance.id).where(
        tested_under(claim.qrels_id, settings_hash), Significance.metric == r.metric,
        Significance.test == row["test"], Significance.runs_hash == row["runs_hash"],
        Significance.params_hash == phash, Significance.subset == r.subset))
    if exists is not None:
        return
    s.execute(delete(Significance).where(
        tested_under(claim.qrels_id, settings_hash), Significance.metric == r.metric,
        Significance.test == row["test"], Significance.params_hash == phash, Significance.subset == r.subset,
        Significance.runs_hash != row["runs_hash"]).execution_options(synchronize_session=False))
    s.add(Significance(**{**row, "collection_id": claim.collection_id, "qrels_version_id": claim.qrels_id,
                          "carried_from_id": r.row["id"]}))


def stored_arrays(res: PairwiseResult) -> dict[str, bytes | None]:
    """What a Significance row keeps of a test's per-pair arrays: what is read of it. The adjusted
    p (boards, letters, verdicts); the raw p only where a correction changed it (NULL: the same
    bytes as p_adjusted, as without one: ``reading.raw_p``); the Monte Carlo columns. Not the
    differences or the test statistics, which nothing reads (a comparison recomputes its
    difference from the stored scores): 8 bytes a pair each, 4 MB per metric at 1,000 runs."""
    p_adjusted, p = pack(res.p_adjusted), pack(res.p)
    return {"p_adjusted": p_adjusted, "p": None if p == p_adjusted else p, **monte_carlo_columns(res)}


def monte_carlo_columns(res: PairwiseResult) -> dict[str, bytes | None]:
    """A resampling test's per-pair B, Monte Carlo SE, undecided flags (1.0/0.0) and the bootstrap's
    degenerate resamples, packed for the Significance row; None for an exact test."""
    if res.pair_resamples is None:
        return {"resamples": None, "mc_se": None, "undecided": None, "degenerate": None}
    undecided = res.undecided if res.undecided is not None else np.zeros(len(res.p), dtype=bool)
    return {"resamples": pack(res.pair_resamples), "mc_se": pack(res.mc_se if res.mc_se is not None else
                                                                  np.zeros(len(res.p))),
            "undecided": pack(undecided.astype(np.float64)),
            "degenerate": pack(res.degenerate) if res.degenerate is not None else None}


def stored_letters(res: PairwiseResult, scores: np.ndarray) -> list[list[int]]:
    """The compact letter display of a test (letters as positions in its runs), taken and
    labelled best mean first, as boards show it (see :mod:`service.metrics.stats.letters`).
    Settled verdicts only: an undecided pair counts as not significantly different (its runs
    may share a letter), the conservative reading (docs/statistics.md)."""
    with np.errstate(invalid="ignore"):
        means = np.nan_to_num(np.nanmean(scores, axis=0), nan=-np.inf)
    order = np.argsort(-means, kind="stable")
    columns = letter_columns(res.significant_matrix(), order)
    return [members(c) for c in columns]


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
