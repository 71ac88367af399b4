"""Runs, qrels versions and jobs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from service.api.schemas import Items, Request, Response

RunTypeName = Literal["automatic", "manual", "interactive"]


class RunWarning(Response, kw_only=True):
    """A likely mistake in a valid run, found when it was submitted (the run is stored all the same)."""

    code: Annotated[str, Meta(description="missing_topics, short_lists, ties_at_cutoff or rank_disagrees.")]
    message: str
    topics: Annotated[list[str], Meta(description="The first topics concerned (at most 20; `count` says how many).")]
    count: Annotated[int, Meta(description="How many topics are concerned.")]


class RunOut(Response, kw_only=True):
    """A submitted run: its validation summary and evaluation status."""

    id: int
    collection_id: int
    tag: Annotated[str, Meta(description="The run tag of the file.", examples=["bm25-rm3"])]
    team: str
    status: Annotated[str, Meta(description="pending, evaluating, evaluated or failed.")]
    reason: Annotated[str | None, Meta(description="Why evaluation failed, if it did.")]
    submitted_at: str | None
    topics: int
    depth: int
    lines: int
    baseline: bool
    primary: bool
    description: str | None
    priority: Annotated[int | None, Meta(description="TREC's judging priority within the team (1 = first).")] = None
    # defaults: the stored answers of idempotent retries from before run metadata lack them
    run_type: Annotated[str, Meta(description="automatic, manual or interactive.")] = "automatic"
    uses_training_data: Annotated[bool | None, Meta(
        description="Whether the run used the collection's training data (null: not stated).")] = None
    uses_external_resources: Annotated[bool | None, Meta(
        description="Whether the run used external resources (null: not stated).")] = None
    has_ir_metadata: Annotated[bool, Meta(
        description="Whether an ir_metadata file came with the run (GET /api/runs/{rid}/ir_metadata).")] = False
    warnings: Annotated[list[RunWarning], Meta(
        description="What the submission check warned of (empty for runs submitted before the checks).")] = \
        msgspec.field(default_factory=list)


class Submitted(RunOut, kw_only=True):
    job: Annotated[int | None, Meta(description="The evaluation job (null before the collection has qrels).")]
    reproduction: Annotated[int | None, Meta(description="The reproduction declared with `reproduces`.")] = None
    format: Annotated[str | None, Meta(description="An answer run's format as read (rag24, rag25, rag26); "
                                                   "absent for a ranked run.")] = None


class Quota(Response, kw_only=True):
    per_day: int
    used_today: int
    resets_at: str


class RunPage(Response, kw_only=True):
    total: int
    offset: int
    items: list[RunOut]
    quota: Annotated[Quota | None, Meta(description="The caller's team's daily quota, when one is set.")] = None


class RunUpdate(Request, kw_only=True):
    """Changes to a run. Its team and organisers change the description, primary flag,
    priority, run type and resource statements; organisers mark baselines. A field left out
    stays as it is; ``null`` clears description, priority and the statements."""

    primary: bool | UnsetType = UNSET
    description: Annotated[str, Meta(max_length=20_000)] | None | UnsetType = UNSET
    priority: Annotated[int, Meta(ge=1, le=1000)] | None | UnsetType = UNSET
    baseline: bool | UnsetType = UNSET
    run_type: RunTypeName | UnsetType = UNSET
    uses_training_data: bool | None | UnsetType = UNSET
    uses_external_resources: bool | None | UnsetType = UNSET


class Deleted(Response, kw_only=True):
    deleted: int


# ------------------------------------------------------------------------------ qrels
class QrelsVersionOut(Response, kw_only=True):
    version: int
    judgment_set: Annotated[str | None, Meta(description="The judgment set the version belongs to.")] = None
    uploaded_by: str | None
    uploaded_at: str | None
    checksum: str
    judgments: int
    level_counts: Annotated[dict[str, dict[str, int]], Meta(description="Per topic, judgments per level.")]
    format: Annotated[str, Meta(description="adhoc, diversity (intent-aware judgments; the counts are of the "
                                            "flattened view: a document's largest level over the intents) or "
                                            "sampled (a stratified sample; level -1: pooled, not sampled).")] = "adhoc"
    intent_probabilities: Annotated[bool, Meta(description="Whether an intent probability file came with it "
                                                           "(diversity; without one intents weigh alike).")] = False


class QrelsVersions(Response, kw_only=True):
    current: int | None
    items: list[QrelsVersionOut]


class QrelsUploaded(Response, kw_only=True):
    version: Annotated[int, Meta(description="The new qrels version.")]
    judgment_set: Annotated[str, Meta(description="The judgment set it belongs to.")] = "official"
    judgments: int
    format: Annotated[str, Meta(description="The stored format: adhoc, diversity or sampled.")] = "adhoc"
    job: Annotated[int | None, Meta(description="The re-evaluation job (none for a set that is evaluated on "
                                                "request only, or without runs).")]


class JudgmentChange(Response, kw_only=True):
    docno: str
    old: int | None
    new: int | None


class TopicChanges(Response, kw_only=True):
    added: int
    removed: int
    changed: int
    changes: Annotated[list[JudgmentChange], Meta(description="The topic's changes on this page, by docno (the "
                                                             "counts are of all of them).")]


class QrelsDiff(Response, kw_only=True):
    from_: Annotated[int, Meta(description="The older version.")] = msgspec.field(name="from")  # a keyword
    to: int
    topics: dict[str, TopicChanges]
    totals: dict[str, int]
    offset: Annotated[int, Meta(description="Changes skipped before this page (topics in order, each topic's "
                                            "changes by docno).")] = 0
    limit: int = 1000
    listed: Annotated[int, Meta(description="Changes listed on this page.")] = 0
    next_offset: Annotated[int | None, Meta(description="The next page's offset; null on the last page.")] = None


class JobOut(Response, kw_only=True):
    """An evaluation job: the runs of one qrels version and configuration."""

    id: int
    collection_id: int
    kind: Annotated[str, Meta(description="qrels, submission, config or refresh.")]
    status: Annotated[str, Meta(description="running, testing, done or failed.")]
    done: int
    failed: int
    total: int
    qrels_version: int | None
    created_at: str
    finished_at: str | None
    error: str | None
    report: Annotated[dict[str, Any] | None, Meta(description="Rank changes and the meta-evaluation, once done.")]


class JobList(Items[JobOut], kw_only=True):
    """A collection's jobs, newest first."""
