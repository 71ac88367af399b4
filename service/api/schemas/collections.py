"""Collections, their settings, teams, tokens and enrolment."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, UnsetType

from service.api.schemas import Items, Request, Response

Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"^[^/\x00-\x1f]+$", examples=["trec-dl-2019"],
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
    resamples: Annotated[int, Meta(ge=1, le=100_000, description="B, resamples of resampling tests.")] = 1000
    alpha: Annotated[float, Meta(gt=0, lt=1, description="Significance level.")] = 0.05
    correction: Annotated[Literal["none", "holm", "bh"], Meta(
        description="Multiple-comparison correction of the p-values.")] = "none"
    seed: Annotated[int, Meta(ge=0, le=2**63 - 1, description="Seed of the resampling (results are reproducible).")] = 0
    metrics: Annotated[list[MetricName] | None, Meta(description="Metrics tested (null: the official one).")] = None


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


class CollectionCreate(CollectionSettings, kw_only=True):
    """A new collection (admins). Settings left out take their defaults: AP official, the
    default metric set, Sakai's bootstrap at alpha 0.05, private, invite-only enrolment."""

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


class CollectionPage(Response, kw_only=True):
    total: int
    offset: int
    items: list[CollectionOut]


class TopicsIn(Request, kw_only=True):
    """Topics registered before any judgment, so runs can be submitted and pooled."""

    topics: Annotated[list[TopicId], Meta(min_length=1, max_length=100_000)]


class TopicsOut(Response, kw_only=True):
    topics: Annotated[list[str], Meta(description="The topics newly registered.")]


# ------------------------------------------------------------------- teams and tokens
class TeamCreate(Request, kw_only=True):
    name: Name


class TeamOut(Response, kw_only=True):
    id: int
    name: str


class TokenCreate(Request, kw_only=True):
    """A new API token. Admins create any; organisers create participant tokens, and assessor
    tokens for their own collections."""

    role: Annotated[Literal["admin", "organiser", "participant", "assessor"], Meta(examples=["participant"])]
    name: Annotated[str, Meta(max_length=200, description="Who holds it (shown in the audit log).")] = ""
    team: Annotated[str, Meta(max_length=200, description="Participants: the team's name.")] | None = None
    collections: Annotated[list[int], Meta(max_length=1000, description="Organisers and assessors: "
                                           "the collections it covers.")] = []
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
