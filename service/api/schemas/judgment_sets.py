"""Judgment sets: several named sets of judgments per collection, their provenance and
versions, and assessors' labels (see service.evaluation.judging.judgment_sets)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from service.api.schemas import Request, Response

SetName = Annotated[str, Meta(pattern=r"^[A-Za-z][A-Za-z0-9._-]{0,99}$",
                              description="Begins with a letter; letters, digits, '.', '_', '-'.")]
Source = Annotated[str, Meta(description="human | automatic | merge")]
Rule = Annotated[str, Meta(description="How several assessors' labels of a document become one level: "
                                       "latest | majority | mean | max | min (docs/statistics.md).")]


class JudgmentSetCreate(Request, kw_only=True):
    name: SetName
    source: Source = "human"
    model: Annotated[str, Meta(max_length=200, description="An automatic judge's model.")] = ""
    prompt: Annotated[str, Meta(max_length=20_000, description="Its prompt, or the prompt's name or URL.")] = ""
    judged_on: Annotated[str, Meta(max_length=40, description="When it judged (an ISO date).")] = ""
    notes: Annotated[str, Meta(max_length=20_000)] = ""
    rule: Rule = "latest"
    auto_evaluate: Annotated[bool, Meta(description="Evaluate every run under each new version.")] = True


class JudgmentSetChange(Request, kw_only=True):
    source: Source | msgspec.UnsetType = msgspec.UNSET
    model: Annotated[str, Meta(max_length=200)] | msgspec.UnsetType = msgspec.UNSET
    prompt: Annotated[str, Meta(max_length=20_000)] | msgspec.UnsetType = msgspec.UNSET
    judged_on: Annotated[str, Meta(max_length=40)] | msgspec.UnsetType = msgspec.UNSET
    notes: Annotated[str, Meta(max_length=20_000)] | msgspec.UnsetType = msgspec.UNSET
    rule: Rule | msgspec.UnsetType = msgspec.UNSET
    auto_evaluate: bool | msgspec.UnsetType = msgspec.UNSET


class SetEvaluation(Response, kw_only=True):
    runs: Annotated[int, Meta(description="Runs of the collection.")]
    evaluated: Annotated[int, Meta(description="Runs with results on the set's newest version under the current "
                                               "configuration.")]
    job: int | None
    job_status: str | None


class SetVersion(Response, kw_only=True):
    version: int
    uploaded_by: str
    uploaded_at: str | None
    source_name: str
    checksum: str
    judgments: int


class JudgmentSetOut(Response, kw_only=True):
    name: str
    official: Annotated[bool, Meta(description="The set boards rank by.")]
    source: str
    model: str
    prompt: str
    judged_on: str
    notes: str
    rule: str
    auto_evaluate: bool
    team: Annotated[str | None, Meta(description="The team that submitted it (a judges track).")]
    created_by: str
    created_at: str | None
    current_version: int | None
    judgments: int
    labels: Annotated[int, Meta(description="Assessors' labels kept in the set.")]
    evaluation: SetEvaluation
    versions: list[SetVersion] | None = None
    new_version: Annotated[int | None, Meta(description="A rule change re-derived the labels: the new version.")] \
        = None


class JudgmentSets(Response, kw_only=True):
    collection: int
    accepts_judgments: bool
    items: list[JudgmentSetOut]


class SetEvaluationIn(Request, kw_only=True):
    retry_failed: Annotated[bool, Meta(description="Runs that failed under this set and the current settings are "
                                                   "tried again.")] = True


class OfficialSetIn(Request, kw_only=True):
    reason: Annotated[str, Meta(max_length=2000, description="Why, for the audit log.")] = ""


class SetEvaluationRequested(Response, kw_only=True):
    judgment_set: str
    version: int
    job: int
    status: str
    total: int


class OfficialSetChanged(Response, kw_only=True):
    official: str
    previous: str | None = None
    changed: bool
    job: int | None


class LabelsUploaded(Response, kw_only=True):
    judgment_set: str
    version: Annotated[int, Meta(description="The set's new version (its labelled documents re-derived).")]
    labels: int
    documents: int
    assessors: list[str]
    rule: str
    judgments: int
    job: int | None


# --------------------------------------------------------------------------- a judges track
Measure = Annotated[str, Meta(description="kendall | tau_ap | tau_ap_b | spearman | pearson | tau_top_k")]


class JudgeTrackChange(Request, kw_only=True):
    accepts_judgments: bool | msgspec.UnsetType = msgspec.UNSET
    metric: Annotated[str, Meta(max_length=200, description="The metric the runs are ranked by (default: the "
                                                            "official one).")] | None | msgspec.UnsetType = \
        msgspec.UNSET
    measure: Measure | msgspec.UnsetType = msgspec.UNSET
    resamples: Annotated[int, Meta(ge=100, le=100_000)] | msgspec.UnsetType = msgspec.UNSET
    level: Annotated[float, Meta(ge=0.5, lt=1)] | msgspec.UnsetType = msgspec.UNSET
    seed: Annotated[int, Meta(ge=0, le=2**31 - 1)] | msgspec.UnsetType = msgspec.UNSET
    top_k: Annotated[int, Meta(ge=2, le=10_000)] | msgspec.UnsetType = msgspec.UNSET
    max_sets_per_team: Annotated[int, Meta(ge=1, le=1000)] | msgspec.UnsetType = msgspec.UNSET
    max_versions_per_team: Annotated[int, Meta(ge=1, le=1000, description="Versions a team may submit in all, "
                                                                          "over its sets.")] | msgspec.UnsetType = \
        msgspec.UNSET
    max_versions_per_window: Annotated[int, Meta(ge=1, le=1000, description="Versions a team may submit within "
                                                                            "any window_hours.")] | \
        msgspec.UnsetType = msgspec.UNSET
    window_hours: Annotated[int, Meta(ge=1, le=24 * 366)] | msgspec.UnsetType = msgspec.UNSET
    released: bool | msgspec.UnsetType = msgspec.UNSET


class JudgeTrackSettings(Response, kw_only=True):
    accepts_judgments: bool
    metric: Annotated[str | None, Meta(description="null: the official metric.")]
    measure: str
    resamples: int
    level: float
    seed: int
    top_k: int
    max_sets_per_team: int
    max_versions_per_team: int
    max_versions_per_window: int
    window_hours: int
    released: bool


class JudgmentsSubmitted(Response, kw_only=True):
    judgment_set: str
    version: int
    judgments: Annotated[int, Meta(description="Documents labelled (a level 0 or more).")]
    unjudged: Annotated[int, Meta(description="Lines with a negative level (L-1): pooled, not judged, as in the "
                                              "official qrels; scored as unjudged.")] = 0
    judgeable: Annotated[int, Meta(description="Documents of the collection's pools.")]
    coverage: float | None
    job: int | None


class JudgeRow(Response, kw_only=True):
    rank: int | None
    judgment_set: str
    team: str | None
    source: str
    model: str
    version: int | None
    runs: int
    topics: Annotated[int, Meta(description="Topics compared: judged by both this set and the official one (issue "
                                            "25: the runs' means and the measure are over these).")]
    topics_left_out: Annotated[int, Meta(description="Topics judged by one of the two sets only, or by both without "
                                                     "a relevant document: left out.")] = 0
    compared_topics: Annotated[str | None, Meta(description="The topics' account in words.")] = None
    value: Annotated[float | None, Meta(description="The agreement measure on the runs' means (null: undefined).")]
    low: float | None
    high: float | None
    bias: Annotated[float | None, Meta(description="Mean per-topic score under the judge minus under the official "
                                                   "set (positive: more lenient).")]
    bias_low: float | None = None
    bias_high: float | None = None
    direction: str | None = None
    undefined_resamples: int | None = None
    failed_runs: Annotated[list[str], Meta(description="Runs left out because their evaluation under the official "
                                                       "set or this one failed for good (organisers; a note counts "
                                                       "them for everyone).")] = \
        msgspec.field(default_factory=list)
    notes: list[str]


class JudgeBoard(Response, kw_only=True):
    collection: int
    accepts_judgments: bool
    released: bool
    official_set: str
    computed_at: str | None
    stale: Annotated[bool, Meta(description="Its inputs changed since it was computed, or a run evaluation it "
                                            "waits for is still queued or running (the workers compute a new one "
                                            "when the evaluations of a set complete).")]
    pending: Annotated[int, Meta(description="Run evaluations still queued or running under the official set and "
                                             "the sets the caller sees.")] = 0
    metric: str
    measure: str
    resamples: int
    level: float
    rows: list[JudgeRow]


class JudgeBoardIn(Request, kw_only=True):
    force: Annotated[bool, Meta(description="Compute it again even if the stored board is up to date.")] = False


class JudgeBoardRequested(Response, kw_only=True):
    analysis: int | None
    queued: bool
    status: str | None
