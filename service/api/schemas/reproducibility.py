"""Reproducibility tracks (issue 28): originals, declarations, the board and per-topic values."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, field

from service.api.schemas import Request, Response

RunRef = Annotated[int, Meta(ge=1, le=2**31 - 1)]


class RunBrief(Response, kw_only=True):
    id: int
    tag: str
    team: str
    collection: int | None
    collection_name: str


class OriginalOut(Response, kw_only=True):
    id: int
    collection: int
    label: str
    kind: Annotated[str, Meta(description="run or pair (baseline and advanced runs).")]
    run: RunBrief | None
    advanced_run: RunBrief | None
    registered_by: str
    registered_at: str | None


class OriginalIn(Request, kw_only=True):
    run: Annotated[RunRef, Meta(description="The original run (of a pair, its baseline): of this collection or "
                                            "of another one you organise.")]
    advanced_run: Annotated[RunRef | None, Meta(description="A pair's advanced run (same collection as run).")] = None
    label: Annotated[str, Meta(max_length=200, description="What the original is (e.g. the paper).")] = ""


class DeclarationIn(Request, kw_only=True):
    original_run: Annotated[RunRef, Meta(description="The original run this run reproduces (of a pair, the "
                                                     "original baseline).")]
    advanced_run: Annotated[RunRef | None, Meta(description="A pair: your run reproducing the original advanced "
                                                            "run (this run being the baseline's reproduction).")] = None
    original_advanced_run: Annotated[RunRef | None, Meta(description="A pair: the original advanced run.")] = None


class DeclarationOut(Response, kw_only=True):
    id: int
    collection: int
    original: OriginalOut
    kind: str
    run: RunBrief | None
    advanced_run: RunBrief | None
    declared_by: str
    declared_at: str | None


class OrderFigures(Response, kw_only=True):
    KTU: float | None = None
    RBO: float | None = None


class RunFigures(Response, kw_only=True):
    mean_original: float | None = None
    mean_reproduction: float | None = None
    RMSE: Annotated[float | None, Meta(description="null on another collection.")] = None
    nRMSE: float | None = None
    p_value: float | None = None
    test: str
    delta: Annotated[float | None, Meta(description="mean_reproduction - mean_original (a longitudinal track's "
                                                    "result delta between snapshots).")] = None
    relative_delta: Annotated[float | None, Meta(description="delta / mean_original.")] = None


class EffectFigures(Response, kw_only=True):
    ER: float | None = None
    ER_low: float | None = None
    ER_high: float | None = None
    DeltaRI: float | None = None
    DeltaRI_low: float | None = None
    DeltaRI_high: float | None = None
    RI_original: float | None = None
    RI_reproduction: float | None = None
    level: float | None = None
    resamples: int | None = None


class ReproductionRow(DeclarationOut, kw_only=True):
    same_collection: bool
    order: Annotated[dict[str, OrderFigures] | None, Meta(description="KTU and RBO per run role (same collection).")]
    baseline: RunFigures | None
    advanced: RunFigures | None
    effect: EffectFigures | None
    note: str | None
    verdict: Annotated[str, Meta(description="The verdict in words (rule: docs/reproducibility.md); "
                                             "withheld: ... when its figures are not shown to the caller.")]
    withheld: Annotated[str | None, Meta(description="What of the figures is not shown to the caller and why (each run's "
                                               "figures follow its own collection's board: enrolment, release, hidden "
                                               "topics); null when every figure is shown.")] = None
    topics: Annotated[str, Meta(description="The topics the figures are over: all, or visible only (public/private "
                                        "split: each run's collection's visible topics).")] = "all"


class ReproducibilityBoard(Response, kw_only=True):
    collection: int
    metric: str
    metrics: list[str]
    released: bool
    settings: dict[str, Any]
    computed_at: str | None
    stale: Annotated[bool, Meta(description="The stored measures are older than their inputs (the workers "
                                            "compute them again).")]
    waiting: Annotated[int, Meta(description="Runs of the declarations not evaluated yet.")]
    rows: list[ReproductionRow]


class TopicValues(Response, kw_only=True):
    topic: str
    values: dict[str, float | None]


class PerTopicPart(Response, kw_only=True):
    metric: Annotated[str | None, Meta(description="null: the document order (KTU, RBO).")]
    part: Annotated[str, Meta(description="baseline, advanced or effect.")]
    rows: list[str]
    topics: list[TopicValues]
    withheld: Annotated[dict[str, str], Meta(description="The rows not shown to the caller, with the reason (their "
                                                         "values are null).")] = field(default_factory=dict)
    left_out: Annotated[str | None, Meta(description="Whose hidden topics (an unrevealed public/private split) are "
                                                     "left out of the rows.")] = None


class ReproductionTopics(Response, kw_only=True):
    reproduction: DeclarationOut
    metric: str
    parts: list[PerTopicPart]


class MeasureIn(Request, kw_only=True):
    force: Annotated[bool, Meta(description="Compute them again even if up to date.")] = False


class MeasureRequested(Response, kw_only=True):
    analysis: int | None
    queued: bool
    status: str | None


class SnapshotPoint(RunBrief, kw_only=True):
    mean: Annotated[float | None, Meta(description="The run's stored mean on the metric in its collection, as its "
                                                   "board shows it to the caller.")]
    topics: Annotated[str, Meta(description="The topics the figures are over: all, or visible only (public/private "
                                        "split: each run's collection's visible topics).")] = "all"
    withheld: Annotated[str | None, Meta(description="What of the figures is not shown to the caller and why (each run's "
                                               "figures follow its own collection's board: enrolment, release, hidden "
                                               "topics); null when every figure is shown.")] = None


class SnapshotStep(Response, kw_only=True):
    reproduction: int
    delta: float | None = None
    relative_delta: float | None = None
    p_value: float | None = None
    ER: float | None = None
    DeltaRI: float | None = None
    topics: Annotated[str, Meta(description="The topics the figures are over: all, or visible only (public/private "
                                        "split: each run's collection's visible topics).")] = "all"
    withheld: Annotated[str | None, Meta(description="What of the figures is not shown to the caller and why (each run's "
                                               "figures follow its own collection's board: enrolment, release, hidden "
                                               "topics); null when every figure is shown.")] = None


class LongitudinalSystem(Response, kw_only=True):
    reproduction: int
    team: str
    part: Annotated[str, Meta(description="baseline or advanced (the run's role in its declaration).")]
    points: Annotated[list[SnapshotPoint], Meta(description="The system's runs, oldest snapshot first.")]
    steps: Annotated[list[SnapshotStep], Meta(description="Between consecutive points: the stored measures.")]


class Longitudinal(Response, kw_only=True):
    collection: int
    metric: str
    systems: list[LongitudinalSystem]
