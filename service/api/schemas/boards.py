"""Leaderboards, significance, snapshots, per-run results, meta-evaluation."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from service.api.schemas import Items, Request, Response


class BoardRow(Response, kw_only=True):
    """One run on the board, ranked (ties share a rank)."""

    rank: int
    run: str
    team: str
    mean: float | None
    t_ci_low: Annotated[float | None, Meta(description=(
        "Lower end of the 95% Student t interval of the mean over the run's scored topics, as computed: it can "
        "lie outside the metric's range (the board's bounds), which the portal then shows truncated. Null with "
        "fewer than two topics."))] = None
    t_ci_high: Annotated[float | None, Meta(description="Upper end of the 95% t interval (see t_ci_low).")] = None
    boot_ci_low: Annotated[float | None, Meta(description=(
        "Lower end of the 95% bootstrap interval of the mean over the same topics (method boot_ci_method, "
        "boot_ci_resamples resamples, a fixed seed); always within the metric's range. Null for results stored "
        "before bootstrap intervals were, or with fewer than two topics: the board then draws the t interval."
        ))] = None
    boot_ci_high: Annotated[float | None, Meta(description="Upper end of the bootstrap interval (see boot_ci_low).")] \
        = None
    boot_ci_method: Annotated[str | None, Meta(description="bca (bias-corrected and accelerated) or percentile.",
                                               examples=["bca"])] = None
    boot_ci_resamples: Annotated[int | None, Meta(description="The bootstrap interval's B (not the test's).",
                                                  examples=[1000])] = None
    ci_low: Annotated[float | None, Meta(description="The same as t_ci_low (the name frozen snapshots hold).")] = None
    ci_high: Annotated[float | None, Meta(description="The same as t_ci_high.")] = None
    boot_low: Annotated[float | None, Meta(description="The same as boot_ci_low.")] = None
    boot_high: Annotated[float | None, Meta(description="The same as boot_ci_high.")] = None
    boot_method: Annotated[str | None, Meta(description="The same as boot_ci_method.")] = None
    boot_resamples: Annotated[int | None, Meta(description="The same as boot_ci_resamples.")] = None
    n_topics: int
    baseline: bool = False
    judged_at_10: Annotated[float | None, Meta(description="Share of the top 10 documents judged.")] = None
    beats_count: Annotated[int | None, Meta(description=(
        "How many runs below this one it is significantly better than (null without a stored test)."))] = None
    tied_count: Annotated[int | None, Meta(description="How many runs are not significantly different from it.")] \
        = None
    beats: Annotated[list[str] | None, Meta(description=(
        "Runs this one is significantly better than (with ?pairs=true; else null)."))] = None
    tied_with: Annotated[list[str] | None, Meta(description=(
        "Runs not significantly different (with ?pairs=true; else null)."))] = None
    groups: Annotated[str | None, Meta(description=(
        "Letters of a compact letter display (Piepho 2004): two runs share a letter if and only if the stored test "
        "finds them not significantly different. Up to 52 letters one character each (a-z, A-Z), then a1, b1, ... "
        "separated by spaces. Empty for a run the stored test did not cover."))] = None
    run_id: int | None = None
    run_type: Annotated[str | None, Meta(description="How the run was made: automatic, manual or interactive, "
                                                     "as its team said at submission.")] = None
    uses_training_data: Annotated[bool | None, Meta(description="Whether the run uses the collection's training "
                                                                "data; null: not stated.")] = None
    uses_external_resources: Annotated[bool | None, Meta(description="Whether the run uses external resources; "
                                                                     "null: not stated.")] = None


class BoardFilters(Response, kw_only=True):
    """Which runs the board shows (null: any). A filtered board ranks its runs among themselves."""

    primary_only: bool = False
    run_type: Annotated[str | None, Meta(examples=["automatic"])] = None
    training_data: Annotated[str | None, Meta(description="yes, no or unstated.")] = None
    external_resources: Annotated[str | None, Meta(description="yes, no or unstated.")] = None


class TestUsed(Response, kw_only=True):
    """The stored pairwise test behind the board's significance columns."""

    test: str
    alpha: float
    correction: str | None = None
    resamples: Annotated[int | None, Meta(
        description="B, the test's resamples or permutations as stored; null for a test that does not "
                    "resample.")] = None
    n_topics: Annotated[int | None, Meta(description="Topics the test compared the runs on.")] = None


class MetricBounds(Response, kw_only=True):
    """The range of values a metric can take on any topic (and so its mean)."""

    low: float | None = None
    high: Annotated[float | None, Meta(description="Null: unbounded above (counts, CG, DCG).")] = None


class Leaderboard(Response, kw_only=True):
    collection: str
    metric: Annotated[str, Meta(description="The metric ranked on (canonical name).", examples=["nDCG@10"])]
    rows: list[BoardRow]
    # Defaults: snapshots frozen by earlier versions stored boards without these members.
    released: bool = False
    topics: Annotated[str, Meta(description="all, or visible only under an unrevealed topic split.")] = "all"
    qrels_version: int | None = None
    newest_qrels_version: int | None = None
    judgment_set: Annotated[str | None, Meta(description="The judgment set of `qrels_version` (the official "
                                                         "one unless another version was asked for).")] = None
    computed_at: str | None = None
    reevaluation_in_progress: bool = False
    significance: TestUsed | None = None
    ranked_among: Annotated[str, Meta(
        description="all: ranks among every run on the board; filtered: among the runs the filters admit; "
                    "team: before the board is released a participant's own runs are ranked among themselves, "
                    "so the board says nothing about other teams' runs.")] = "all"
    filters: BoardFilters | None = None
    bounds: Annotated[MetricBounds | None, Meta(description=(
        "The metric's range of possible values: [0, 1] for normalised metrics and shares, [0, null) for counts "
        "and gain sums. A t interval end beyond it is returned as computed and shown truncated."))] = None
    interval: Annotated[str | None, Meta(description=(
        "The interval the board draws, in words: the bootstrap interval where stored, else the t interval."),
        examples=["95% BCa bootstrap interval, B = 1000", "95% t interval"])] = None


class MetricColumn(Response, kw_only=True):
    """A metric of the collection as a column of the multi-metric board explains it."""

    metric: Annotated[str, Meta(description="The canonical name.", examples=["nDCG@10"])]
    official: bool
    description: Annotated[str, Meta(description=(
        "From the metric registry: what it measures (which nDCG: Järvelin & Kekäläinen's discount, or trec_eval's "
        "log2(r+1) as MSnDCG), its cutoff and the parameters it is not at the default of."),
        examples=["normalised DCG, Järvelin & Kekäläinen's discount; cut at rank 10"])]
    direction: Annotated[str, Meta(description=(
        "higher: a higher mean is better; none: the metric describes the run or its judgments (NumRet, NumRel, "
        "Judged, RBPresidual), neither direction is better."))]
    bounds: MetricBounds


class MetricsBoardRow(Response, kw_only=True):
    """One run with its mean and rank on every metric of the collection."""

    rank: Annotated[int | None, Meta(description="Its rank on the sort metric (on the official one when sorted "
                                                 "by run or team); null without a mean.")] = None
    run: str
    team: str
    run_id: int | None = None
    baseline: bool = False
    run_type: str | None = None
    uses_training_data: bool | None = None
    uses_external_resources: bool | None = None
    means: Annotated[dict[str, float | None], Meta(description="Metric -> the run's mean (null: none stored).")]
    ranks: Annotated[dict[str, int | None], Meta(description="Metric -> the run's rank on that metric's board "
                                                              "(ties share a rank).")]


class MetricsBoard(Response, kw_only=True):
    """Every metric of the collection side by side: each run's mean and rank on each, the rows and
    ranks those of the single-metric boards (the same access rules and filters)."""

    collection: str
    sort: Annotated[str, Meta(description="The metric the rows are sorted by (best first), or run or team.")]
    metrics: Annotated[list[MetricColumn], Meta(description="The columns: the official metric first, then the "
                                                            "collection's other metrics in its order.")]
    rows: list[MetricsBoardRow]
    released: bool = False
    topics: str = "all"
    qrels_version: int | None = None
    ranked_among: str = "all"
    filters: BoardFilters | None = None


class TopicFigures(Response, kw_only=True):
    """One topic's scores over the runs on the caller's board."""

    topic: str
    runs: Annotated[int, Meta(description="Runs scored on the topic.")]
    median: float
    q1: Annotated[float, Meta(description="First quartile (numpy's linear interpolation).")]
    q3: Annotated[float, Meta(description="Third quartile.")]
    min: Annotated[float, Meta(description="The least score over the runs scored, a missing topic's score "
                                           "(the collection's missing-topic rule, e.g. 0) included.")]
    best: float
    best_runs: Annotated[list[str], Meta(description="The runs that reach the best score (ties: every one).")]
    missing: Annotated[int, Meta(description="Runs scored on the topic whose file has no line for it (scored by "
                                             "the missing-topic rule, not by a result).")] = 0
    min_submitted: Annotated[float | None, Meta(description="The least score over the runs that submitted the "
                                                            "topic; null if none did.")] = None
    own: Annotated[dict[str, float | None], Meta(description="The caller's team's runs on the board and their "
                                                             "scores on the topic (null: not scored).")]
    own_missing: Annotated[list[str], Meta(description="Those of the caller's runs that have no line for the "
                                                       "topic.")] = msgspec.field(default_factory=list)


class TopicRun(Response, kw_only=True):
    run: str
    team: str
    run_id: int | None = None
    own: bool = False


class TopicAnalysis(Response, kw_only=True):
    """Per-topic difficulty: each topic's spread of scores over the runs on the caller's board,
    hardest (lowest median) first."""

    collection: str
    metric: str
    released: bool = False
    topics: Annotated[str, Meta(description="all, or visible only under an unrevealed topic split.")] = "all"
    qrels_version: int | None = None
    runs_from: Annotated[str, Meta(description=(
        "all: the figures are over every run on the board; team: before the release, over the caller's own "
        "team's runs only (nothing of other teams' runs, not even in an aggregate)."))] = "all"
    runs: list[TopicRun]
    own_runs: list[str]
    items: list[TopicFigures]


class MatrixRow(Response, kw_only=True):
    run: str
    team: str
    run_id: int | None = None
    rank: int | None = None
    scores: Annotated[list[float | None], Meta(description="The run's score on each topic, in the order of "
                                                           "topics; null: not scored.")]


class ScoreMatrix(Response, kw_only=True):
    """The run x topic matrix of a metric: the runs on the caller's board by the topics it may see."""

    collection: str
    metric: str
    qrels_version: int | None = None
    topics: list[str]
    runs_from: str = "all"
    rows: list[MatrixRow]


class SignificanceMatrix(Response, kw_only=True):
    metric: str
    test: str
    alpha: float
    correction: str | None = None
    correction_name: Annotated[str, Meta(
        description="The correction in words: Holm, Benjamini-Hochberg, 'none: unadjusted', or 'family-wise, by "
                    "the test itself' (tukey, friedman).", examples=["Holm"])] = ""
    resamples: Annotated[int | None, Meta(description="B as stored; null for a test that does not resample.")] = None
    runs: list[str]
    p: Annotated[list[list[float | None]], Meta(
        description="The raw (unadjusted) p-value of every pair, in the order of runs; full precision.")] = \
        msgspec.field(default_factory=list)
    p_adjusted: Annotated[list[list[float | None]], Meta(
        description="p-values of every pair, in the order of runs: adjusted for the comparisons only when "
                    "correction is holm or bh (tukey and friedman control the error over all pairs themselves); "
                    "equal to p otherwise. Full precision: round for print with docs/statistics.md's rule.")]
    resamples_matrix: Annotated[list[list[int]] | None, Meta(
        description="Per pair, the B its p is over (its own under the sequential rule; the informative "
                    "resamples for the bootstrap); 0 on the diagonal; null for an exact test.")] = None
    mc_se: Annotated[list[list[float]], Meta(
        description="Per pair, the Monte Carlo standard error sqrt(p (1 - p) / B) of its p; 0 for exact tests "
                    "and on the diagonal.")] = []
    undecided: Annotated[list[list[bool]], Meta(
        description="Per pair, true when its verdict still straddled alpha when resampling stopped: "
                    "'undecided at B = resamples_matrix[i][j]'; letters count it as not significant.")] = []
    undecided_pairs: int = 0
    degenerate: Annotated[list[list[int]] | None, Meta(
        description="Bootstrap: per pair, the resamples left out for zero spread (B + degenerate = draws); "
                    "null for other tests.")] = None
    monte_carlo_rule: Annotated[str, Meta(
        description="sequential (resampled until each verdict settled, docs/statistics.md), fixed B (a test "
                    "stored before that rule) or exact.")] = ""


class PairMonteCarlo(Response, kw_only=True):
    """The Monte Carlo side of a stored test's p for one pair (docs/statistics.md, "Monte Carlo precision")."""

    resamples: Annotated[int | None, Meta(description="The B of this pair's p; null for an exact test.")] = None
    mc_se: Annotated[float, Meta(description="Monte Carlo standard error of p; 0 for an exact test.")] = 0.0
    undecided: Annotated[bool, Meta(description="The verdict straddled alpha when resampling stopped.")] = False
    degenerate: Annotated[int | None, Meta(description="Bootstrap resamples left out for zero spread.")] = None
    verdict: Annotated[str, Meta(description="significant, not significant or undecided.")] = ""


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
    metrics: Annotated[list[str] | None, Meta(description=(
        "Every metric the snapshot froze, its own first (in the answer to freezing; null in a listing)."))] = None



class SnapshotList(Items[SnapshotOut], kw_only=True):
    """A collection's frozen boards."""


class FrozenBoard(Response, kw_only=True):
    """One metric's board in a snapshot: its ranked rows as served when frozen."""

    metric: str
    rows: list[BoardRow]
    significance: TestUsed | None = None
    bounds: MetricBounds | None = None
    interval: str | None = None
    truncation_note: str | None = None


class Snapshot(Leaderboard, kw_only=True):
    """A frozen board: the rows as served when it was frozen (never changes). The top-level rows
    are those of ``metric`` (the one frozen on, or the one asked for); ``boards`` holds every
    frozen metric's."""

    id: int
    label: str
    created_at: str | None
    frozen_metric: Annotated[str | None, Meta(description="The metric the snapshot was frozen on.")] = None
    metrics: Annotated[list[str], Meta(description="Every metric the snapshot holds, its own first.")] = \
        msgspec.field(default_factory=list)
    every_metric: Annotated[bool, Meta(description=(
        "True: frozen with every metric of the board; false: frozen before snapshots kept every metric, it "
        "holds its own metric only."))] = False
    boards: Annotated[list[FrozenBoard], Meta(description="Each frozen metric's board, in the order of `metrics`.")
                      ] = msgspec.field(default_factory=list)


class TopicScores(Response, kw_only=True):
    mean: float | None
    per_topic: dict[str, float | None]


class RunScores(Response, kw_only=True):
    metric: str
    qrels_version: int | None
    judgment_set: Annotated[str | None, Meta(description="The judgment set of that version.")] = None
    runs: dict[str, TopicScores]


class ComparedTest(Response, kw_only=True):
    """The stored pairwise test of a compared pair, with every parameter it was run with."""

    test: Annotated[str, Meta(examples=["bootstrap"])]
    name: Annotated[str, Meta(description="The test in words, with B when it resamples.",
                              examples=["paired bootstrap test (studentised), B = 1000"])]
    alpha: float
    correction: Annotated[str, Meta(description="none, holm or bh, as the test was run.")]
    adjusted: Annotated[bool, Meta(description="Whether the p-values were adjusted by the correction (false for "
                                               "none, and for tukey and friedman, which need none).")]
    resamples: Annotated[int | None, Meta(description="B, the test's resamples or permutations; null when the "
                                                      "test does not resample.")] = None
    n_topics: Annotated[int, Meta(description="Topics the test compared the runs on.")]
    comparisons: Annotated[int, Meta(description="Run pairs the test covered (what a correction adjusts for).")]
    p_label: Annotated[str, Meta(description="What the p-values are.",
                                 examples=["p-values (no correction for multiple comparisons)"])]
    correction_tag: Annotated[str, Meta(description="The same, short.", examples=["Holm-adjusted"])]
    correction_name: Annotated[str, Meta(description="The correction in words.",
                                         examples=["Holm", "none: unadjusted"])] = ""


class DifferenceBootstrap(Response, kw_only=True):
    """The bootstrap interval of the mean difference (scipy's percentile or BCa interval)."""

    low: float | None
    high: float | None
    method: Annotated[str, Meta(description="bca or percentile.")]
    method_name: str
    level: float
    resamples: Annotated[int, Meta(description="B: the collection's configured significance resamples.")]
    seed: Annotated[int, Meta(description="The collection's configured significance seed.")]


class PairDifference(Response, kw_only=True):
    """The mean difference a minus b over the topics both runs were scored on, with its
    intervals and effect size (docs/statistics.md), computed from the stored per-topic scores."""

    mean: float
    n_topics: int
    level: float
    t_low: Annotated[float, Meta(description="The same as t_ci_low.")]
    t_high: Annotated[float, Meta(description="The same as t_ci_high.")]
    t_ci_low: Annotated[float, Meta(description="Student t interval of the mean difference (n - 1 df), as the "
                                                "board's t_ci_low.")]
    t_ci_high: float
    boot_ci_low: Annotated[float | None, Meta(description="Bootstrap interval of the mean difference (its kind in "
                                                          "boot_ci_method, its B in boot_ci_resamples), as the "
                                                          "board's boot_ci_low; the same as bootstrap.low.")]
    boot_ci_high: float | None
    boot_ci_method: Annotated[str, Meta(description="bca or percentile.")]
    boot_ci_resamples: Annotated[int, Meta(description="B of the interval (the collection's significance resamples).")]
    t_statistic: Annotated[float | None, Meta(description="mean / (sd / sqrt(n)); null when infinite.")] = None
    effect_size: Annotated[float | None, Meta(description="mean(d) / sd(d), the standardised effect size "
                                                          "`cranfield compare` prints; null when infinite.")] = None
    bootstrap: DifferenceBootstrap
    other_way: Annotated[list[str], Meta(description="Topics whose difference has the sign opposite to the "
                                                     "mean's, largest first.")]


class Comparison(RunScores, kw_only=True):
    differences: Annotated[dict[str, float], Meta(description="Per topic, a minus b, largest first.")]
    wins: Annotated[int, Meta(description="Topics where a scores higher, among the topics both runs submitted.")]
    ties: int
    losses: int
    missing: Annotated[dict[str, list[str]], Meta(
        description="Per run, the compared topics its file has no line for (scored by the collection's "
                    "missing-topic rule, e.g. 0): they count as no win, tie or loss.")] = \
        msgspec.field(default_factory=dict)
    not_counted: Annotated[int, Meta(description="Topics of differences left out of wins, ties and losses: "
                                                 "missing from either run.")] = 0
    p: Annotated[float | None, Meta(
        description="The stored test's raw (unadjusted) p-value of the pair; null without a stored test.")] = None
    p_adjusted: Annotated[float | None, Meta(
        description="The stored test's p-value of the pair: adjusted for multiple comparisons only when "
                    "test.adjusted (correction holm or bh), equal to p otherwise; null without a stored test.")]
    test: ComparedTest | None = None
    monte_carlo: Annotated[PairMonteCarlo | None, Meta(
        description="The pair's B, Monte Carlo SE and verdict under the stored test; null without one.")] = None
    difference: Annotated[PairDifference | None, Meta(description="Null with fewer than two shared topics.")] = None
    explanation: Annotated[str | None, Meta(description="Why the test's verdict (p < alpha) and an interval's "
                                                        "(excludes 0) disagree; null when they agree.")] = None


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
    tau: Annotated[dict[str, float | None], Meta(description="Kendall's tau-b of each pair of metrics' run "
                                                 "rankings, keyed 'A | B'; null where it is undefined: one of "
                                                 "the two metrics gives every run the same mean (a ranking of "
                                                 "ties only, as when every run finds a relevant document first "
                                                 "on every topic under RR).")]
    tau_significant_above: float | None = None
