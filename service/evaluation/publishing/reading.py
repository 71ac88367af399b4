"""Reading stored results: leaderboards and jobs. Nothing here computes a metric."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import InvalidMeasure
from service.evaluation.organising.planning import params_hash
from service.evaluation.organising.results import current_result, evaluated_under, tested_under
from service.evaluation.organising.setup import get_collection
from service.metrics import parse_measure
from service.metrics.stats.common import condensed_index
from service.metrics.stats.letters import compact_letters, label_letters, sweep_letters
from service.store.arrays import unpack
from service.store.db import as_utc
from service.store.models import CollectionConfig, Job, QrelsVersion, Run, RunEvaluation, Score, Significance, Team


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    run: str
    team: str
    mean: float
    ci_low: float | None  # None when fewer than two topics were scored
    ci_high: float | None
    n_topics: int
    qrels_version: int
    baseline: bool
    judged_at_10: float | None = None  # share of the top 10 judged (stored with every evaluation)
    # The bootstrap interval of the mean with its method and B (None on results stored before it was).
    boot_low: float | None = None
    boot_high: float | None = None
    boot_method: str | None = None
    boot_resamples: int | None = None


def leaderboard(
    s: Session, collection: str, metric: str | None = None, qrels_version: int | None = None, public: bool = False
) -> tuple[str, list[LeaderboardRow]]:
    """Runs ranked by ``metric`` (default: the official one) on the current qrels version, or
    on an earlier ``qrels_version`` (its results are kept) under the current configuration."""
    coll = get_collection(s, collection)
    config = s.get(CollectionConfig, coll.current_config_id)
    assert config is not None
    name = str(parse_measure(metric)) if metric else config.official_metric
    if name not in config.metrics:
        raise InvalidMeasure(f"{name} is not among the collection's metrics: {', '.join(config.metrics)}")
    if coll.current_qrels_id is None:
        return name, []  # no judgments yet: an empty board, under the metric it will rank by
    version_id = complete_version_id(s, coll)
    if qrels_version is not None:
        version_id = s.scalar(select(QrelsVersion.id).where(QrelsVersion.collection_id == coll.id,
                                                            QrelsVersion.version == qrels_version))
        if version_id is None:
            raise InvalidMeasure(f"no qrels version {qrels_version}")
    version = s.get(QrelsVersion, version_id)
    # ``public``: the visible topics of a public/private split (the workers store both sides).
    mean, low, high, n_col = ((Score.public_mean, Score.public_ci_low, Score.public_ci_high, Score.public_n) if public
                              else (Score.mean, Score.ci_low, Score.ci_high, Score.n_topics))
    boot = ((Score.public_boot_low, Score.public_boot_high) if public else (Score.boot_low, Score.boot_high))
    q = (select(Run.tag, Team.name, Run.is_baseline, mean, low, high, n_col, *boot, Score.boot_method,
                Score.boot_resamples)
         .join(RunEvaluation, RunEvaluation.id == Score.run_evaluation_id)
         .join(Run, Run.id == RunEvaluation.run_id).join(Team, Team.id == Run.team_id)
         .where(Run.collection_id == coll.id, current_result(coll, version_id), Score.metric == name,
                mean.is_not(None))
         .order_by(mean.desc(), Run.tag))
    judged_mean = Score.public_mean if public else Score.mean
    judged = dict(s.execute(
        select(Run.tag, judged_mean).join(RunEvaluation, RunEvaluation.id == Score.run_evaluation_id)
        .join(Run, Run.id == RunEvaluation.run_id)
        .where(Run.collection_id == coll.id, current_result(coll, version_id), Score.metric == "Judged@10")).all())
    rows: list[LeaderboardRow] = []
    for i, (tag, team, base, mean, lo, hi, n, b_lo, b_hi, b_method, b_resamples) in enumerate(s.execute(q)):
        rank = i + 1 if not rows or mean != rows[-1].mean else rows[-1].rank  # ties share a rank
        stored = b_lo is not None and b_hi is not None
        rows.append(LeaderboardRow(rank, tag, team, mean, lo, hi, n, version.version if version else 0, base,
                                   judged.get(tag), b_lo, b_hi, b_method if stored else None,
                                   b_resamples if stored else None))
    return name, rows


def complete_version_id(s: Session, coll) -> int | None:  # type: ignore[no-untyped-def]
    """The newest version of the official judgment set whose evaluation under the current
    configuration has finished: while a re-evaluation runs, boards keep serving the previous
    complete results (and never another set's, however new)."""
    done = s.scalar(select(Job.qrels_version_id).join(QrelsVersion, QrelsVersion.id == Job.qrels_version_id).where(
        Job.collection_id == coll.id, Job.config_id == coll.current_config_id, Job.status == "done",
        QrelsVersion.judgment_set_id == coll.official_set_id)
        .order_by(QrelsVersion.version.desc()).limit(1))
    return done if done is not None else coll.current_qrels_id


@dataclass(frozen=True)
class StoredScores:
    """One run's stored scores of one metric: per topic (in the stored order) and the means."""

    topics: list[str]
    values: np.ndarray  # float64, NaN where the run was not scored on the topic
    mean: float | None
    public_mean: float | None  # over the visible topics of an unrevealed split


def stored_scores(s: Session, coll: Any, run_ids: list[int], metrics: list[str],
                  version_id: int | None = None) -> dict[tuple[int, str], StoredScores]:
    """The one query for stored per-topic scores: (run id, metric) -> :class:`StoredScores`
    of ``run_ids`` and ``metrics`` (canonical names) under the collection's complete current
    results (:func:`complete_version_id`), or under ``version_id`` with the current
    configuration. A pair without stored scores is absent."""
    if not run_ids or not metrics:
        return {}
    version = complete_version_id(s, coll) if version_id is None else version_id
    return {(run_id, metric): StoredScores(list(topics), unpack(blob), mean, public_mean)
            for run_id, metric, topics, blob, mean, public_mean in s.execute(
                select(RunEvaluation.run_id, Score.metric, RunEvaluation.topics, Score.values, Score.mean,
                       Score.public_mean).join(Score)
                .where(RunEvaluation.run_id.in_(run_ids), current_result(coll, version), Score.metric.in_(metrics)))}


#: Per metric: (run ids, topics, (topics, runs) matrix of per-topic scores).
ScoreTables = dict[str, tuple[list[int], list[str], np.ndarray]]


def score_tables(s: Session, collection_id: int, qrels_id: int, settings: str, metrics: list[str]) -> ScoreTables:
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


def jobs(s: Session, collection: str | None = None) -> list[dict[str, Any]]:
    q = select(Job).order_by(Job.id)
    if collection:
        q = q.where(Job.collection_id == get_collection(s, collection).id)
    out = []
    for job in s.scalars(q):
        qv = s.get(QrelsVersion, job.qrels_version_id)
        out.append({"id": job.id, "collection_id": job.collection_id, "kind": job.kind, "status": job.status,
                    "done": job.done, "failed": job.failed, "total": job.total,
                    "qrels_version": qv.version if qv else None, "created_at": as_utc(job.created_at).isoformat(),
                    "finished_at": as_utc(job.finished_at).isoformat() if job.finished_at else None,
                    "error": job.error, "report": job.report})
    return out


# ------------------------------------------------------------------- significance on boards
def computed_at(s: Session, coll, version: int | None = None):  # type: ignore[no-untyped-def]
    """When the newest stored result of a qrels version (default: the current one) was computed."""
    from sqlalchemy import func

    version_id = complete_version_id(s, coll) if version is None else s.scalar(select(QrelsVersion.id).where(
        QrelsVersion.collection_id == coll.id, QrelsVersion.version == version))
    return as_utc(s.scalar(select(func.max(RunEvaluation.computed_at)).where(
        RunEvaluation.qrels_version_id == version_id)))


@dataclass(frozen=True, eq=False)
class StoredTest:
    """A stored pairwise test of one metric, as boards read it. Compared by identity: one
    decoded object per stored row and process (the annotations are cached on it).

    The p-values stay one condensed numpy array (pair (i, j), i < j, in ``pair_indices``
    order): 1,000 runs are 499,500 floats (4 MB), not half a million Python objects.
    """

    runs: list[str]  # run tags, in the stored order
    p_condensed: np.ndarray  # the stored p_adjusted of every pair i < j of ``runs``
    alpha: float  # as the stored test was run (not as the configuration says now)
    test: str  # bootstrap | t | wilcoxon | sign | randomisation | tukey | friedman
    correction: str  # none | holm | bh (as run)
    resamples: int | None = None  # the test's resamples, when it resamples
    n_topics: int = 0  # topics the test compared the runs on
    params: dict[str, Any] = field(default_factory=dict)  # every test parameter as stored
    #: The compact letter display the worker stored: letters as lists of positions in ``runs``
    #: (None for a test stored before letters were: they are computed when read).
    letters: list[list[int]] | None = None
    row_id: int | None = None  # the stored row (its unadjusted p are read from it on demand: :func:`raw_p`)
    #: Condensed as ``p_condensed``: the pairs whose verdict is undecided at their B (issue 25, item 1;
    #: None for exact tests and rows stored before migration 0020). Boards count them as not significant.
    undecided: np.ndarray | None = None
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {r: i for i, r in enumerate(self.runs)})

    def pair(self, a: str, b: str) -> int | None:
        """The pair (a, b)'s position in the condensed arrays; None if either run was not tested."""
        i, j = self.index.get(a), self.index.get(b)
        return None if i is None or j is None or i == j else int(condensed_index(len(self.runs), i, j))

    def p(self, a: str, b: str, condensed: np.ndarray | None = None) -> float | None:
        """The adjusted p of the pair (a, b) in either order (or its value in ``condensed``, the
        raw p of :func:`raw_p`); None if either run was not tested."""
        k = self.pair(a, b)
        return None if k is None else float((self.p_condensed if condensed is None else condensed)[k])

    def is_undecided(self, a: str, b: str) -> bool:
        """Whether the pair (a, b)'s verdict is undecided at its B (issue 25, item 1)."""
        k = self.pair(a, b)
        return self.undecided is not None and k is not None and bool(self.undecided[k])

    def positions(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(k, k) condensed positions of the pairs among the runs at ``positions`` (0 on the
        diagonal) and the diagonal's mask."""
        pos = np.asarray(positions, dtype=np.int64)
        diag = pos[:, None] == pos[None, :]
        return np.where(diag, 0, condensed_index(len(self.runs), pos[:, None], pos[None, :])), diag

    def matrix(self, positions: np.ndarray, condensed: np.ndarray | None = None) -> np.ndarray:
        """The (k, k) matrix of p-values among the runs at ``positions`` (1 on the diagonal): the
        adjusted ones, or those of ``condensed`` (the raw p of :func:`raw_p`)."""
        k, diag = self.positions(positions)
        return np.where(diag, 1.0, (self.p_condensed if condensed is None else condensed)[k])

    def different(self, positions: np.ndarray) -> np.ndarray:
        """(k, k) bool: the pair's settled verdict is significant (adjusted p < alpha and not
        undecided at its B); False on the diagonal."""
        out = self.matrix(positions) < self.alpha
        if self.undecided is not None and self.undecided.any():
            k, diag = self.positions(positions)
            out &= ~np.where(diag, False, self.undecided[k])
        return out

    @property
    def adjusted(self) -> bool:
        """Whether the stored p were adjusted by a correction (then the raw p differ from them)."""
        return self.correction in ("holm", "bh") and self.test not in ("tukey", "friedman")


def significance_for(s: Session, coll, metric: str, test: str | None = None,  # type: ignore[no-untyped-def]
                     qrels_version: int | None = None, subset: str = "all",
                     any_settings: bool = False) -> StoredTest | None:
    """The stored pairwise test of ``metric`` for the current (or given) results, or None.

    ``any_settings``: the newest stored test of the version, whatever configuration made it.
    """
    config = s.get(CollectionConfig, coll.current_config_id)
    version_id = complete_version_id(s, coll) if qrels_version is None else s.scalar(select(QrelsVersion.id).where(
        QrelsVersion.collection_id == coll.id, QrelsVersion.version == qrels_version))
    # Only the id first: the arrays (a few hundred kB for 100 runs) are read once per process.
    where = [Significance.metric == metric, Significance.subset == subset]
    where.append(Significance.qrels_version_id == version_id if any_settings
                 else tested_under(version_id, config.settings_hash))
    if test is None and not any_settings:
        where.append(Significance.params_hash == params_hash(config.significance))
    elif test is not None:
        where.append(Significance.test == test)
    row_id = s.scalar(select(Significance.id).where(*where).order_by(Significance.id.desc()).limit(1))
    if row_id is None:
        return None
    key = (str(s.get_bind().url), row_id)  # row ids repeat across databases (one process may serve several)
    cached = _SIG_CACHE.get(key)
    if cached is None:  # stored matrices never change: decode each once per process
        # only what boards read: not the unadjusted p (megabytes at 1,000 runs; :func:`raw_p`)
        row = s.execute(select(Significance.id, Significance.run_ids, Significance.params, Significance.test,
                               Significance.n_topics, Significance.p_adjusted, Significance.letters,
                               Significance.undecided)
                        .where(Significance.id == row_id)).one()
        cached = _stored_test(s, row, config.significance)
        if len(_SIG_CACHE) > 64:
            _SIG_CACHE.clear()
            _ANNOTATION_CACHE.clear()  # its keys use the identity of the tests cached here
        _SIG_CACHE[key] = cached
    return cached


def _stored_test(s: Session, row: Any, configured: dict[str, Any]) -> StoredTest:
    """The StoredTest of a significance row (or a row of its run_ids, params, test, n_topics,
    p_adjusted and letters columns)."""
    tags = dict(s.execute(select(Run.id, Run.tag).where(Run.id.in_(row.run_ids))).all())
    names = [tags.get(r, str(r)) for r in row.run_ids]
    params = dict(row.params or {})
    # B only for a test that resamples (the configuration stores one for every test).
    resamples = params.get("resamples") if row.test in ("bootstrap", "randomisation", "tukey") else None
    return StoredTest(runs=names, p_condensed=unpack(row.p_adjusted), letters=row.letters,
                      row_id=getattr(row, "id", None),
                      undecided=None if getattr(row, "undecided", None) is None else unpack(row.undecided) > 0.5,
                      alpha=float(params.get("alpha", configured.get("alpha", 0.05))), test=row.test,
                      correction=str(params.get("correction", "none")),
                      resamples=int(resamples) if resamples is not None else None, n_topics=int(row.n_topics or 0),
                      params=params)


_SIG_CACHE: dict[tuple[str, int], StoredTest] = {}
_RAW_P_CACHE: dict[tuple[str, int], np.ndarray] = {}


def raw_p(s: Session, sig: StoredTest) -> np.ndarray:
    """The unadjusted p of every pair of ``sig`` (condensed, as ``sig.p_condensed``): the stored
    ``p`` column, read on demand (boards need only the adjusted p; a page that shows both reads
    this), a few per process cached. For a test stored without a correction they are the
    adjusted p (its ``p`` is then NULL: stored only where it differs)."""
    if not sig.adjusted or sig.row_id is None:
        return sig.p_condensed
    key = (str(s.get_bind().url), sig.row_id)
    cached = _RAW_P_CACHE.get(key)
    if cached is None:
        stored = s.scalar(select(Significance.p).where(Significance.id == sig.row_id))
        cached = sig.p_condensed if stored is None else unpack(stored)
        if len(_RAW_P_CACHE) > 8:
            _RAW_P_CACHE.clear()
        _RAW_P_CACHE[key] = cached
    return cached
_ANNOTATION_CACHE: dict[tuple[Any, ...], list[dict[str, Any]]] = {}


def annotate(rows: list[LeaderboardRow], sig: StoredTest | None, pairs: bool = True) -> list[dict[str, Any]]:
    """Cached :func:`_annotate`: the same rows and stored test give the same annotations."""
    key = (tuple(rows), id(sig) if sig is not None else None, pairs)
    if key not in _ANNOTATION_CACHE:
        if len(_ANNOTATION_CACHE) > 256:
            _ANNOTATION_CACHE.clear()
        _ANNOTATION_CACHE[key] = _annotate(rows, sig, pairs)
    return [dict(r) for r in _ANNOTATION_CACHE[key]]


def _annotate(rows: list[LeaderboardRow], sig: StoredTest | None, pairs: bool = True) -> list[dict[str, Any]]:
    """Each row with how many runs below it it significantly beats and how many it is tied
    with (not significantly different), and its letters of a compact letter display: two runs
    share a letter if and only if they are not significantly different. With ``pairs`` the
    names of those runs too (``beats``, ``tied_with``): N rows name up to N² runs, so a board
    of 1,000 runs leaves them out unless asked (the letters carry the same relation). Rows
    without a stored test get no annotations; a run the test did not cover gets none either."""
    out = [dict(r.__dict__) for r in rows]
    if sig is None:
        return out
    for row in out:
        row["beats_count"], row["tied_count"], row["groups"] = 0, 0, ""
        if pairs:
            row["beats"], row["tied_with"] = [], []
    on_board = [k for k, r in enumerate(rows) if r.run in sig.index]
    if not on_board:
        return out
    positions = np.array([sig.index[rows[k].run] for k in on_board])
    different = sig.different(positions)  # settled verdicts: an undecided pair is not significant
    np.fill_diagonal(different, False)
    means = np.array([rows[k].mean for k in on_board])
    order = np.arange(len(on_board))
    # below[i, j]: run i significantly beats run j, which is below it on the board
    below = different & (means[:, None] > means[None, :]) & (order[:, None] < order[None, :])
    tied = ~different
    np.fill_diagonal(tied, False)
    beats_count, tied_count = below.sum(axis=1).tolist(), tied.sum(axis=1).tolist()
    names = [rows[k].run for k in on_board]
    for row_i, k in enumerate(on_board):
        out[k]["beats_count"], out[k]["tied_count"] = beats_count[row_i], tied_count[row_i]
        if pairs:
            out[k]["beats"] = [names[j] for j in np.flatnonzero(below[row_i])]
            out[k]["tied_with"] = [names[j] for j in np.flatnonzero(tied[row_i])]
    for k, letters in zip(on_board, _board_letters(sig, positions, different)):
        out[k]["groups"] = letters
    return out


def _board_letters(sig: StoredTest, positions: np.ndarray, different: np.ndarray) -> list[str]:
    """The letters of the board's runs, labelled in board order (the first run gets "a").

    The worker stores the display of every tested run; restricted to the runs on the board it
    keeps its guarantee (a pair shares a letter exactly when not significantly different), and
    the letters it leaves redundant are dropped. Older stored tests have none: computed here.
    """
    if sig.letters is None:
        return compact_letters(different)
    where = {int(p): k for k, p in enumerate(positions.tolist())}
    columns = [sum(1 << where[r] for r in letter if r in where) for letter in sig.letters]
    if len(where) < len(sig.runs):  # a part of the tested runs: drop the letters it left redundant
        columns = sweep_letters(columns, len(where))
    return label_letters(columns, len(where))


def judgment_changes(old: dict[tuple[str, str], int], new: dict[tuple[str, str], int]) -> dict[str, Any]:
    """Judgments added, removed and changed per topic from ``old`` to ``new`` ((topic, docno)
    -> level), each topic's changes sorted by docno, and the totals."""
    topics: dict[str, dict[str, Any]] = {}

    def entry(t: str) -> dict[str, Any]:
        return topics.setdefault(t, {"added": 0, "removed": 0, "changed": 0, "changes": []})

    for key in new.keys() - old.keys():
        e = entry(key[0])
        e["added"] += 1
        e["changes"].append({"docno": key[1], "old": None, "new": new[key]})
    for key in old.keys() - new.keys():
        e = entry(key[0])
        e["removed"] += 1
        e["changes"].append({"docno": key[1], "old": old[key], "new": None})
    for key in old.keys() & new.keys():
        if old[key] != new[key]:
            e = entry(key[0])
            e["changed"] += 1
            e["changes"].append({"docno": key[1], "old": old[key], "new": new[key]})
    for e in topics.values():
        e["changes"].sort(key=lambda c: c["docno"])
    return {"topics": dict(sorted(topics.items())),
            "totals": {k: sum(e[k] for e in topics.values()) for k in ("added", "removed", "changed")}}
