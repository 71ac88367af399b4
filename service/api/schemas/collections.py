"""Collections, their settings, teams, tokens and enrolment."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from service.api.schemas import Items, Request, Response
from service.api.schemas.runs import TopicChanges

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"^[^/]+$", examples=["trec-dl-2019"],
                           description="A unique name (no slash, no control character).")]
MetricName = Annotated[str, Meta(min_length=1, max_length=200, description="A metric in Cranfield's grammar "
                                 "(canonical form omits defaults).", examples=["nDCG@10"])]
TopicId = Annotated[str, Meta(min_length=1, max_length=100, description="A topic id.", examples=["1037798"])]
Quota = Annotated[int, Meta(ge=1, le=10_000, description="Valid runs a team may submit per UTC day.")]
Visibility = Annotated[Literal["public", "private"], Meta(
    description="public: anyone reads the released board; private: organisers and enrolled teams only.")]
EnrolmentMode = Annotated[Literal["invite", "open"], Meta(
    description="invite: organisers enrol teams; open: a participant enrols its own team.")]


class Level(Request, kw_only=True):
    """One relevance level of the collection's scale."""

    level: Annotated[int, Meta(ge=-1, le=100, description="The level as it appears in the qrels.", examples=[2])]
    label: Annotated[str, Meta(max_length=50, description="A short label (e.g. NTCIR's L2).")] = ""
    gain: Annotated[float, Meta(ge=0, le=1e6, description="Gain of the level for gain-based metrics "
                                       "(null: the level's value).")] | None = None


class Evaluation(Request, kw_only=True, omit_defaults=True):
    """How runs are scored."""

    order: Annotated[Literal["score", "rank", "file"], Meta(
        description="How a run's list is ordered: by score (trec_eval), by the rank column, or as in the file."
    )] = "score"
    missing: Annotated[Literal["zero", "skip"], Meta(
        description="A topic the run does not answer: scored 0 (zero) or left out of the mean (skip).")] = "zero"
    no_relevant: Annotated[Literal["skip", "count"], Meta(
        description="A topic with no relevant document: left out (skip) or counted.")] = "skip"
    depth: Annotated[int, Meta(ge=1, le=100_000, description="Documents per topic evaluated (null: all).")] | \
        None = None
    max_level: Annotated[int, Meta(ge=1, le=100, description="The highest relevance level (null: the "
                                          "highest judged).")] | None = None
    hidden_topics: Annotated[list[TopicId], Meta(
        description="Topics scored for organisers only until the split is revealed.", max_length=100_000)] = []


class Significance(Request, kw_only=True, omit_defaults=True):
    """The pairwise test stored with every evaluation of the board."""

    test: Annotated[Literal["bootstrap", "t", "wilcoxon", "sign", "randomisation", "tukey", "friedman"], Meta(
        description="Sakai's paired bootstrap by default.")] = "bootstrap"
    resamples: Annotated[int, Meta(ge=1, le=100_000, description=(
        "B, resamples of resampling tests: the first stage of the sequential rule (docs/statistics.md, "
        "'Monte Carlo precision')."))] = 10_000
    max_resamples: Annotated[int, Meta(ge=1, le=100_000_000, description=(
        "The sequential rule's cap: a pair whose verdict still straddles alpha is resampled up to this many "
        "times, else reported undecided at its B. At least resamples."))] = 10_000_000
    alpha: Annotated[float, Meta(gt=0, lt=1, description="Significance level.")] = 0.05
    correction: Annotated[Literal["none", "holm", "bh"], Meta(
        description="Multiple-comparison correction of the p-values.")] = "none"
    seed: Annotated[int, Meta(ge=0, le=2**63 - 1, description="Seed of the resampling (results are reproducible).")] = 0
    metrics: Annotated[list[MetricName] | None, Meta(description="Metrics tested (null: the official one).")] = None


class AnswerSettings(Request, kw_only=True, omit_defaults=True):
    """An answers collection's answer format (auto: detected where unambiguous) and validation
    limits (left out: the format's track defaults; null: no bound)."""

    format: Literal["auto", "rag24", "rag25", "rag26"] | UnsetType = UNSET
    words: Annotated[int, Meta(ge=1)] | None | UnsetType = UNSET
    references: Annotated[int, Meta(ge=1)] | None | UnsetType = UNSET
    citations_per_sentence: Annotated[int, Meta(ge=1)] | None | UnsetType = UNSET
    sentences: Annotated[int, Meta(ge=1)] | None | UnsetType = UNSET
    assessed_citations: Annotated[Literal["first", "every"], Meta(description=(
        "Which citations of a sentence the support assessment pages ask about: the first listed (TREC 2024's "
        "rule, the default) or every one."))] | UnsetType = UNSET


class CollectionSettings(Request, kw_only=True):
    """A collection's settings. A field left out is left as it is (on creation: its default);
    ``null`` clears the submission window's ends and the daily quota."""

    description: Annotated[str, Meta(max_length=20_000)] | UnsetType = UNSET
    official_metric: Annotated[MetricName, Meta(description="The metric the board ranks by.")] | UnsetType = UNSET
    metrics: Annotated[list[MetricName], Meta(max_length=200, description="Every metric stored per run.")] | \
        UnsetType = UNSET
    levels: Annotated[list[Level], Meta(max_length=101, description="The relevance scale and its gains.")] | \
        UnsetType = UNSET
    evaluation: Evaluation | UnsetType = UNSET
    significance: Significance | UnsetType = UNSET
    hidden_topics: Annotated[list[TopicId], Meta(max_length=100_000, description="Shorthand for "
                                                 "evaluation.hidden_topics.")] | UnsetType = UNSET
    visibility: Visibility | UnsetType = UNSET
    enrolment: EnrolmentMode | UnsetType = UNSET
    submission_opens_at: Annotated[datetime, Meta(description="ISO 8601; null: open now.")] | None | UnsetType = UNSET
    submission_closes_at: Annotated[datetime, Meta(description="ISO 8601; null: never closes.")] | None | \
        UnsetType = UNSET
    daily_run_quota: Quota | None | UnsetType = UNSET
    leaderboard_released: Annotated[bool, Meta(description="Every team's rows shown to every reader.")] | \
        UnsetType = UNSET
    topics_revealed: Annotated[bool, Meta(description="The hidden topics' figures shown to everyone.")] | \
        UnsetType = UNSET
    answer_settings: Annotated[AnswerSettings, Meta(description=(
        "A collection of answers' answer format and validation limits (docs/rag.md)."))] | UnsetType = UNSET


class CollectionCreate(CollectionSettings, kw_only=True):
    """A new collection (admins). Settings left out take their defaults: AP official, the
    default metric set, Sakai's bootstrap at alpha 0.05, private, invite-only enrolment; a
    collection of answers (``task_kind: answers``): Vital strict official, the RAG scores."""

    task_kind: Annotated[Literal["ranked", "answers"], Meta(description=(
        "What its runs are: ranked lists (TREC runs) or generated answers (TREC RAG); fixed at creation."))] = "ranked"

    name: Name


class CollectionUpdate(CollectionSettings, kw_only=True):
    """Changes to a collection (organisers). A field left out stays as it is; ``null`` clears
    the window's ends and the quota. A change of metrics, levels, evaluation, significance or
    topic split makes a new configuration version and re-evaluates the stored results."""


class CollectionOut(Response, kw_only=True, omit_defaults=True):
    """A collection as the caller may see it; configuration details (levels, evaluation,
    significance, config_version) for organisers only, absent for everyone else."""

    id: int
    name: str
    description: str
    visibility: str
    enrolment: str
    official_metric: str | None
    metrics: list[str]
    submission_opens_at: str | None
    submission_closes_at: str | None
    daily_run_quota: int | None
    leaderboard_released: bool
    topic_split: bool
    topics_revealed: bool
    enrolled: Annotated[bool, Meta(description="The caller's team is enrolled.")]
    levels: list[dict[str, Any]] | None = None
    evaluation: dict[str, Any] | None = None
    significance: dict[str, Any] | None = None
    config_version: int | None = None
    task_kind: Annotated[str, Meta(description="ranked (TREC runs) or answers (TREC RAG answer runs).")] = "ranked"
    answer_settings: dict[str, Any] | None = None


class CollectionPage(Response, kw_only=True):
    total: int
    offset: int
    items: list[CollectionOut]


class TopicText(Request, kw_only=True):
    """A topic with the texts participants and assessors read (a text left out stays as it is)."""

    id: TopicId
    title: Annotated[str, Meta(max_length=500, description="A short title.")] | None = None
    description: Annotated[str, Meta(max_length=100_000, description="What is relevant (the narrative).")] | \
        None = None


class TopicsIn(Request, kw_only=True):
    """Topics registered before any judgment, so runs can be submitted and pooled: ids, or
    objects with an id and texts (which also set the texts of a known topic)."""

    topics: Annotated[list[TopicId | TopicText], Meta(min_length=1, max_length=100_000)]


class TopicsOut(Response, kw_only=True):
    topics: Annotated[list[str], Meta(description="Every topic id of the collection, sorted.")]


class TopicOut(Response, kw_only=True, omit_defaults=True):
    """A topic as the caller may read it: its texts null where they are withheld (the hidden
    part of an unrevealed split, for everyone but the organisers); ``hidden`` for organisers."""

    id: str
    title: str | None
    description: str | None
    hidden: Annotated[bool | None, Meta(description="Organisers: in the unrevealed part of a split.")] = None


class TopicList(Items[TopicOut], kw_only=True):
    """A collection's topics (assessors: their assigned ones)."""


# ------------------------------------------------------------------ the organisers' console
class SettingChange(Response, kw_only=True):
    setting: Annotated[str, Meta(description="A field of the settings (hidden_topics apart from evaluation).")]
    old: Any
    new: Any


class ConfigVersions(Response, kw_only=True):
    current: int | None
    new: Annotated[int | None, Meta(description="The configuration version the change makes (null: none).")]


class BoardOrder(Response, kw_only=True):
    """The board's order before and after a change of the official metric, from stored results."""

    metric_before: str
    metric_after: str
    before: list[str]
    after: Annotated[list[str] | None, Meta(description="Null: known once the runs are re-evaluated.")]
    changes: bool | None


class SettingsPreview(Response, kw_only=True):
    """What a change of settings would do; nothing is stored."""

    changes: list[SettingChange]
    config_version: ConfigVersions
    runs: Annotated[int, Meta(description="Runs of the collection.")]
    reevaluated_runs: Annotated[int, Meta(description="Runs the change re-evaluates (the job's total).")]
    tests_rerun: Annotated[bool, Meta(description="The pairwise tests are run again.")]
    board_order: BoardOrder | None
    consequences: Annotated[list[str], Meta(description="The preview in sentences, for a person to read.")]


class ReevaluateIn(Request, kw_only=True):
    retry_failed: Annotated[bool, Meta(description="Runs that failed under the current settings are tried "
                                                   "again.")] = True


class Reevaluation(Response, kw_only=True):
    job: Annotated[int, Meta(description="The job (read it at /api/jobs/{id}).")]
    runs: Annotated[int, Meta(description="Runs it evaluates.")]
    status: str


class AuditEventOut(Response, kw_only=True):
    id: int
    at: str | None
    actor: str
    action: Annotated[str, Meta(examples=["config.update"], description="What was done, e.g. qrels.upload, "
                                "run.delete, config.update, leaderboard.release, token.create.")]
    details: dict[str, Any]


class AuditPage(Response, kw_only=True):
    """A collection's audit events, newest first."""

    total: int
    offset: int
    limit: int
    items: list[AuditEventOut]


class QrelsPreview(Response, kw_only=True):
    """What a qrels upload would change against the current version (nothing is stored)."""

    from_: Annotated[int | None, Meta(description="The current version (null: none yet).")] = \
        msgspec.field(name="from")
    topics: dict[str, TopicChanges]
    totals: dict[str, int]
    current_judgments: int
    judgments: Annotated[int, Meta(description="Judgments in the upload.")]
    removed_share: Annotated[float, Meta(description="Share of the current judgments the upload removes.")]
    large_removal: Annotated[bool, Meta(description="The share is above the threshold (the portal asks for a "
                                        "confirmation; the API refuses it with max_removal).")]
    threshold: float
    new_topics: Annotated[list[str], Meta(description="Topics the upload registers.")]
    offset: Annotated[int, Meta(description="Changes skipped before this page (topics in order, each topic's "
                                            "changes by docno).")] = 0
    limit: int = 1000
    listed: Annotated[int, Meta(description="Changes listed on this page.")] = 0
    next_offset: Annotated[int | None, Meta(description="The next page's offset; null on the last page.")] = None


# ------------------------------------------------------------------- teams and tokens
class TeamCreate(Request, kw_only=True):
    name: Name


class TeamOut(Response, kw_only=True):
    id: int
    name: str


class TokenCreate(Request, kw_only=True):
    """A new API token. Admins create any; organisers create assessor tokens for their own
    collections, and participant tokens of a team enrolled in none but their collections, which
    reach their collections only (a token never reaches further than its creator does)."""

    role: Annotated[Literal["admin", "organiser", "participant", "assessor"], Meta(examples=["participant"])]
    name: Annotated[str, Meta(max_length=200, description="Who holds it (shown in the audit log).")] = ""
    team: Annotated[str, Meta(max_length=200, description="Participants: the team's name.")] | None = None
    collections: Annotated[list[int], Meta(max_length=1000, description="Organisers and assessors: "
                                           "the collections it covers. Participants: the only collections "
                                           "it may act in (an organiser's token: theirs by default).")] = []
    topics: Annotated[list[TopicId], Meta(max_length=100_000, description="Assessors: the topics "
                                                 "it judges.")] | None = None


class TokenOut(Response, kw_only=True):
    id: int
    token: Annotated[str, Meta(description="The secret: shown only once, stored hashed.")]
    role: str
    prefix: str
    note: str


class Revoked(Response, kw_only=True):
    revoked: int


class TokenInfo(Response, kw_only=True):
    """A token as listed: never its secret (only its hash is stored)."""

    id: int
    prefix: Annotated[str, Meta(description="The secret's first characters, to recognise it.")]
    name: str
    role: str
    team: str | None
    collections: Annotated[list[int], Meta(description="Organisers and assessors: the collections it covers; "
                                           "scoped participants: the only collections it may act in.")]
    scoped: Annotated[bool, Meta(description="Participants: whether it acts only in `collections` (a token an "
                                 "organiser made) or wherever its team is enrolled.")] = False
    created_at: str | None
    created_by: str
    revoked_at: str | None


class TokenPage(Response, kw_only=True):
    total: int
    offset: int
    items: list[TokenInfo]


class EnrolmentIn(Request, kw_only=True):
    team: Name


class EnrolmentOut(Response, kw_only=True):
    collection_id: int | None = None
    team: str
    enrolled_at: str | None = None
    enrolled_by: str | None = None
    enrolled: bool = True


class TeamsOut(Items[EnrolmentOut], kw_only=True):
    """The teams enrolled in a collection."""
