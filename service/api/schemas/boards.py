"""Leaderboards, significance, snapshots, per-run results, meta-evaluation."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from service.api.schemas import Items, Request, Response


class BoardRow(Response, kw_only=True):
    """One run on the board, ranked (ties share a rank)."""

    rank: int
    run: str
    team: str
    mean: float | None
    ci_low: Annotated[float | None, Meta(description="Lower end of the 95% interval of the mean.")] = None
    ci_high: float | None = None
    n_topics: int
    baseline: bool = False
    judged_at_10: Annotated[float | None, Meta(description="Share of the top 10 documents judged.")] = None
    beats: Annotated[list[str] | None, Meta(description="Runs this one is significantly better than.")] = None
    tied_with: Annotated[list[str] | None, Meta(description="Runs not significantly different.")] = None
    groups: Annotated[str | None, Meta(description="Group letters of the board.")] = None
    run_id: int | None = None


class TestUsed(Response, kw_only=True):
    """The stored pairwise test behind the board's significance columns."""

    test: str
    alpha: float
    correction: str | None = None


class Leaderboard(Response, kw_only=True):
    collection: str
    metric: Annotated[str, Meta(description="The metric ranked on (canonical name).", examples=["nDCG@10"])]
    rows: list[BoardRow]
    # Defaults: snapshots frozen by earlier versions stored boards without these members.
    released: bool = False
    topics: Annotated[str, Meta(description="all, or visible only under an unrevealed topic split.")] = "all"
    qrels_version: int | None = None
    newest_qrels_version: int | None = None
    computed_at: str | None = None
    reevaluation_in_progress: bool = False
    significance: TestUsed | None = None
    ranked_among: Annotated[str, Meta(
        description="all: ranks among every run on the board; team: before the board is released a "
                    "participant's own runs are ranked among themselves, so the board says nothing about "
                    "other teams' runs.")] = "all"


class SignificanceMatrix(Response, kw_only=True):
    metric: str
    test: str
    alpha: float
    correction: str | None = None
    runs: list[str]
    p_adjusted: Annotated[list[list[float | None]], Meta(
        description="p-values of every pair, in the order of runs (adjusted when a correction was applied).")]


class SnapshotCreate(Request, kw_only=True):
    metric: Annotated[str, Meta(max_length=200, description="Metric of the frozen board (default: official).")] | \
        None = None
    label: Annotated[str, Meta(max_length=200, description="A name for the snapshot.")] = ""


class SnapshotOut(Response, kw_only=True):
    id: int
    qrels_version: int
    metric: str
    label: str
    created_at: str | None = None



class SnapshotList(Items[SnapshotOut], kw_only=True):
    """A collection's frozen boards."""


class Snapshot(Leaderboard, kw_only=True):
    """A frozen board: the rows as served when it was frozen (never changes)."""

    id: int
    label: str
    created_at: str | None


class TopicScores(Response, kw_only=True):
    mean: float | None
    per_topic: dict[str, float | None]


class RunScores(Response, kw_only=True):
    metric: str
    qrels_version: int | None
    runs: dict[str, TopicScores]


class Comparison(RunScores, kw_only=True):
    differences: Annotated[dict[str, float], Meta(description="Per topic, a minus b, largest first.")]
    wins: int
    ties: int
    losses: int
    p_adjusted: Annotated[float | None, Meta(description="The stored test's p-value of the pair.")]


class Curves(Response, kw_only=True):
    """Järvelin & Kekäläinen's average gain curves at ranks 1..depth."""

    run: str
    depth: int
    log_base: float
    cg: list[float]
    dcg: list[float]
    ncg: list[float]
    ndcg: list[float]
    ideal_cg: list[float]
    ideal_dcg: list[float]


class MetricPower(Response, kw_only=True):
    """Sakai's discriminative power of one metric (or the error that prevented it)."""

    power: float | None = None
    significant_pairs: int | None = None
    pairs: int | None = None
    difference_required: Annotated[float | None, Meta(description="The smallest difference of means found "
                                                      "significant.")] = None
    asl_curve: Annotated[list[list[float]] | None, Meta(description="[pair rank, ASL] points, sorted by ASL.")] = None
    error: str | None = None


class MetaEvaluation(Response, kw_only=True):
    """Discriminative power and Kendall's tau of the collection's metrics, as stored by the
    workers (docs/statistics.md)."""

    qrels_version: int | None
    computed_at: str | None
    alpha: float
    resamples: int
    power: dict[str, MetricPower]
    tau: Annotated[dict[str, float], Meta(description="Kendall's tau of each pair of metrics' run rankings, "
                                          "keyed 'A | B'.")]
    tau_significant_above: float | None = None
