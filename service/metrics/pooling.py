"""Pools and their reusability: depth-k pooling, unique relevant documents, leave-one-team-out.

Pure computation over the core types (numpy only). A *pool* of depth k is, per topic, the
union of the top k documents of the pooled runs (Spärck Jones & van Rijsbergen; TREC's
practice), less the documents already judged (incremental pooling). Zobel (1998) asks how
reusable the resulting judgments are: remove the relevant documents that only one team
contributed to the pool, evaluate that team's runs again, and see how far their scores and
ranks move. A run's ranking is its evaluation order (``Run`` is stored best first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from service.formats.types import Qrels, Run


@dataclass(frozen=True)
class Pool:
    """Per topic, the documents to judge (sorted) and how many runs contributed each."""

    depth: int
    documents: dict[str, list[str]]  # topic -> sorted docnos not judged yet
    contributors: dict[str, dict[str, int]]  # topic -> docno -> number of pooled runs with it in the top k
    already_judged: dict[str, int]  # topic -> documents of the top-k union judged before

    @property
    def size(self) -> int:
        return sum(len(d) for d in self.documents.values())

    def counts(self) -> dict[str, dict[str, int]]:
        return {t: {"new": len(self.documents.get(t, [])), "already_judged": self.already_judged.get(t, 0),
                    "union": len(self.documents.get(t, [])) + self.already_judged.get(t, 0)}
                for t in sorted(set(self.documents) | set(self.already_judged))}


def top_k(run: Run, depth: int) -> dict[str, list[str]]:
    """Each topic's top ``depth`` docnos of a run (best first)."""
    out = {}
    for i, topic in enumerate(run.topics):
        lo, hi = int(run.offsets[i]), int(run.offsets[i + 1])
        out[topic] = [d.decode("utf-8") for d in run.docnos[lo: min(hi, lo + depth)].tolist()]
    return out


def build_pool(runs: Iterable[Run], depth: int, judged: Qrels | None = None,
               topics: Sequence[str] | None = None) -> Pool:
    """The depth-``depth`` pool of ``runs``, less what ``judged`` already judges (any level >= 0).

    ``topics`` limits the pool to those topics (default: every topic a run retrieves for).
    """
    if depth < 1:
        raise ValueError("the pool depth is a positive number of ranks")
    wanted = set(topics) if topics is not None else None
    union: dict[str, dict[str, int]] = {}
    for run in runs:
        for topic, docs in top_k(run, depth).items():
            if wanted is not None and topic not in wanted:
                continue
            counter = union.setdefault(topic, {})
            for d in docs:
                counter[d] = counter.get(d, 0) + 1
    documents, already = {}, {}
    for topic, counter in union.items():
        known = _judged_set(judged, topic)
        documents[topic] = sorted(d for d in counter if d not in known)
        already[topic] = sum(1 for d in counter if d in known)
    return Pool(depth, documents, union, already)


def _judged_set(qrels: Qrels | None, topic: str) -> set[str]:
    if qrels is None:
        return set()
    i = qrels.topic_index(topic)
    if i is None:
        return set()
    return {d.decode("utf-8") for d, lv in zip(qrels.docnos[i].tolist(), qrels.levels[i].tolist()) if lv >= 0}


def assessment_order(documents: Sequence[str], seed: int) -> list[str]:
    """The pool of a topic in a seeded random order, so that assessors do not see rank order."""
    rng = np.random.default_rng(seed)
    return [documents[i] for i in rng.permutation(len(documents))]


def topic_seed(pool_seed: int, topic: str) -> int:
    """A per-topic seed: the same pool and topic always give the same order."""
    import hashlib

    return int.from_bytes(hashlib.sha256(f"{pool_seed}:{topic}".encode()).digest()[:8], "big")


# ------------------------------------------------------------------ contributions and LOTO
def contributions(runs: Mapping[str, Run], groups: Mapping[str, str], depth: int) -> dict[str, dict[str, set[str]]]:
    """topic -> docno -> the groups (teams, or runs when ``groups`` maps a run to itself)
    whose runs have the document in their top ``depth``."""
    out: dict[str, dict[str, set[str]]] = {}
    for tag, run in runs.items():
        group = groups[tag]
        for topic, docs in top_k(run, depth).items():
            topic_docs = out.setdefault(topic, {})
            for d in docs:
                topic_docs.setdefault(d, set()).add(group)
    return out


def unique_relevant(qrels: Qrels, contrib: Mapping[str, Mapping[str, set[str]]], rel: int = 1) -> dict[str, int]:
    """Per group, the relevant documents (level >= ``rel``) that no other group contributed."""
    counts: dict[str, int] = {}
    for topic, docs in contrib.items():
        i = qrels.topic_index(topic)
        if i is None:
            continue
        relevant = {d.decode("utf-8") for d, lv in zip(qrels.docnos[i].tolist(), qrels.levels[i].tolist())
                    if lv >= rel}
        for d, groups in docs.items():
            if len(groups) == 1 and d in relevant:
                (g,) = groups
                counts[g] = counts.get(g, 0) + 1
    return counts


def without_unique(qrels: Qrels, contrib: Mapping[str, Mapping[str, set[str]]], group: str, rel: int = 1) -> Qrels:
    """The qrels less the relevant documents only ``group`` contributed (they become unjudged,
    as if that group had never been pooled; Zobel 1998)."""
    judgments = qrels.to_mapping()
    for topic, docs in contrib.items():
        topic_judgments = judgments.get(topic)
        if not topic_judgments:
            continue
        for d, groups in docs.items():
            if groups == {group} and topic_judgments.get(d, -1) >= rel:
                del topic_judgments[d]
    return Qrels.from_mapping(judgments, source=f"{qrels.source} without {group}'s unique relevant documents")


def competition_ranks(means: Mapping[str, float]) -> dict[str, int]:
    """1, 2, 2, 4 by decreasing mean."""
    ordered = sorted(means.items(), key=lambda kv: -kv[1])
    ranks: dict[str, int] = {}
    for i, (key, value) in enumerate(ordered):
        ranks[key] = i + 1 if i == 0 or value != ordered[i - 1][1] else ranks[ordered[i - 1][0]]
    return ranks


@dataclass(frozen=True)
class LeaveOneTeamOut:
    """Each run's score and rank on the full qrels and on the qrels without the relevant
    documents only its own team contributed (Zobel 1998)."""

    metric: str
    depth: int
    runs: list[dict[str, object]]  # run, team, full, reduced, change, full_rank, reduced_rank
    unique_relevant: dict[str, int]  # team -> relevant documents only it contributed
    max_drop: float  # the largest decrease of a run's score
    mean_change: float
    max_rank_drop: int  # the largest fall in rank
    tau: float  # Kendall's tau between the full ranking and the one with every team's left-out scores


def leave_one_team_out(qrels: Qrels, runs: Sequence[Run], teams: Mapping[str, str], metric: str, depth: int,
                       settings: object | None = None, pooled: Iterable[str] | None = None) -> LeaveOneTeamOut:
    """Zobel's test of pool reusability for every team at once.

    ``teams`` maps each run's tag to its team; ``pooled`` names the runs that made the pool
    (default: all), whose top ``depth`` documents count as contributions. Each team's runs are
    evaluated on the qrels less the relevant documents that only that team contributed; topics
    are those of the full evaluation, a topic left with no relevant document scoring 0.
    """
    from service.metrics.scoring import EvalSettings, evaluate
    from service.metrics.stats.meta import kendall_tau

    # Keep the full qrels' top level: removing documents must not change the gain scale.
    base = (settings if isinstance(settings, EvalSettings) else EvalSettings()).with_max_level_of(qrels)
    by_tag = {r.tag: r for r in runs}
    pool_runs = {t: by_tag[t] for t in (pooled if pooled is not None else by_tag) if t in by_tag}
    contrib = contributions(pool_runs, {t: teams[t] for t in pool_runs}, depth)
    full = evaluate(qrels, list(runs), [metric], base)
    full_means = dict(zip(full.runs, full.means(metric).tolist()))
    full_scores = dict(zip(full.runs, full.per_topic(metric)))
    topics = full.topics
    unique = unique_relevant(qrels, contrib)
    reduced_means: dict[str, float] = {}
    for team in sorted(set(teams[r.tag] for r in runs)):
        own = [r for r in runs if teams[r.tag] == team]
        reduced_qrels = without_unique(qrels, contrib, team) if unique.get(team) else qrels
        ev = evaluate(reduced_qrels, own, [metric], base)
        per = ev.per_topic(metric)
        column = {t: i for i, t in enumerate(ev.topics)}
        for row, run in enumerate(own):
            # a topic left without relevant documents scores 0, unless the run was not scored
            # on it at all (missing="skip": NaN stays NaN, the run's topic count unchanged)
            values = np.array([per[row, column[t]] if t in column else (np.nan if np.isnan(full_scores[run.tag][k])
                                                                         else 0.0)
                               for k, t in enumerate(topics)], dtype=np.float64)
            reduced_means[run.tag] = float(np.nanmean(values)) if values.size and not np.all(np.isnan(values)) else 0.0
    full_rank = competition_ranks(full_means)
    rows: list[dict[str, object]] = []
    for run in runs:
        team = teams[run.tag]
        # this team's runs at their left-out scores, every other run at its full score
        mixed = {t: (reduced_means[t] if teams[t] == team else full_means[t]) for t in full_means}
        rows.append({"run": run.tag, "team": team, "full": full_means[run.tag], "reduced": reduced_means[run.tag],
                     "change": reduced_means[run.tag] - full_means[run.tag], "full_rank": full_rank[run.tag],
                     "reduced_rank": competition_ranks(mixed)[run.tag]})
    rows.sort(key=lambda r: (r["full_rank"], r["run"]))  # type: ignore[return-value]
    tags = [r.tag for r in runs]
    tau = kendall_tau(np.array([full_means[t] for t in tags]), np.array([reduced_means[t] for t in tags])) \
        if len(tags) >= 2 else 1.0
    changes = [float(r["change"]) for r in rows]  # type: ignore[arg-type]
    return LeaveOneTeamOut(
        metric=metric, depth=depth, runs=rows, unique_relevant=dict(sorted(unique.items())),
        max_drop=float(-min(changes, default=0.0)) if changes and min(changes) < 0 else 0.0,
        mean_change=float(np.mean(changes)) if changes else 0.0,
        max_rank_drop=max((int(r["reduced_rank"]) - int(r["full_rank"]) for r in rows), default=0),  # type: ignore[call-overload]
        tau=float(tau))


# ------------------------------------------------------------------------------ reusability
@dataclass(frozen=True)
class TopicPool:
    """One topic's pool (the union of the pooled runs' top k) against the judgments."""

    topic: str
    pool_size: int  # documents in the union
    judged: int  # of them judged (any level >= 0)
    relevant_in_pool: int  # of them relevant (level >= 1)

    @property
    def judged_share(self) -> float | None:
        return self.judged / self.pool_size if self.pool_size else None


def pool_statistics(qrels: Qrels, contrib: Mapping[str, Mapping[str, object]]) -> list[TopicPool]:
    """Per topic of ``contrib`` (topic -> docno -> contributors, see :func:`contributions`),
    in topic order: the pool's size and how much of it ``qrels`` judges and finds relevant."""
    out = []
    for topic in sorted(contrib):
        i = qrels.topic_index(topic)
        levels = dict(zip((d.decode() for d in qrels.docnos[i].tolist()), qrels.levels[i].tolist())) \
            if i is not None else {}
        union = contrib[topic]
        out.append(TopicPool(topic, len(union), sum(1 for d in union if levels.get(d, -1) >= 0),
                             sum(1 for d in union if levels.get(d, -1) >= 1)))
    return out


@dataclass(frozen=True)
class RunReusability:
    """One run: whether it was pooled, how much of its top ranks is judged, what it alone found."""

    run: str
    team: str
    pooled: bool
    judged_at_10: float  # mean share of the top 10 judged (Judged@10)
    judged_at_depth: float  # the same at the pool depth (Judged@depth)
    unique_relevant: int  # relevant documents no other pooled run contributed


@dataclass(frozen=True)
class TeamContribution:
    team: str
    unique_relevant: int  # relevant documents no other team contributed
    runs: list[str]  # the team's runs, sorted


@dataclass(frozen=True)
class Reusability:
    """How reusable a collection's judgments are: pool statistics, unique relevant documents
    per run and team, judged shares, and Zobel's leave-one-team-out test."""

    metric: str
    depth: int
    topics: list[TopicPool]
    runs: list[RunReusability]  # in the order given
    teams: list[TeamContribution]  # by team name
    leave_one_team_out: LeaveOneTeamOut

    @property
    def mean_judged_share(self) -> float | None:
        """The mean of the topics' judged shares (None without topics)."""
        if not self.topics:
            return None
        return float(np.mean([t.judged_share for t in self.topics if t.judged_share is not None]))


def reusability(qrels: Qrels, runs: Sequence[Run], teams: Mapping[str, str], metric: str, depth: int,
                settings: object | None = None, pooled: Iterable[str] | None = None) -> Reusability:
    """The reusability analysis of ``qrels`` for ``runs`` (``teams``: run tag -> team).

    ``pooled`` names the runs that made the pool (default: all); their top ``depth`` documents
    are the pool whose statistics (:func:`pool_statistics`) and unique relevant documents
    (:func:`unique_relevant`, per run and per team) are reported. Every run's Judged@10 and
    Judged@depth are evaluated with ``settings``; the metric's :func:`leave_one_team_out` test
    closes the analysis.
    """
    from service.metrics.scoring import EvalSettings, evaluate

    tags = [r.tag for r in runs]
    by_tag = {r.tag: r for r in runs}
    wanted = set(pooled) if pooled is not None else None
    pooled_tags = [t for t in tags if wanted is None or t in wanted]
    pool_runs = {t: by_tag[t] for t in pooled_tags}
    by_run = contributions(pool_runs, {t: t for t in pooled_tags}, depth)
    by_team = contributions(pool_runs, {t: teams[t] for t in pooled_tags}, depth)
    judged = evaluate(qrels, list(runs), ["Judged@10", f"Judged@{depth}"],
                      settings if isinstance(settings, EvalSettings) else EvalSettings())
    at_10, at_depth = judged.means("Judged@10"), judged.means(f"Judged@{depth}")
    unique_runs = unique_relevant(qrels, by_run)
    unique_teams = unique_relevant(qrels, by_team)
    loto = leave_one_team_out(qrels, runs, teams, metric, depth, settings, pooled=pooled_tags)
    in_pool = set(pooled_tags)
    return Reusability(
        metric=metric, depth=depth, topics=pool_statistics(qrels, by_run),
        runs=[RunReusability(t, teams[t], t in in_pool, float(at_10[i]), float(at_depth[i]), unique_runs.get(t, 0))
              for i, t in enumerate(tags)],
        teams=[TeamContribution(k, unique_teams.get(k, 0), sorted(t for t in tags if teams[t] == k))
               for k in sorted({teams[t] for t in tags})],
        leave_one_team_out=loto)
