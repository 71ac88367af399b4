"""Pools, assessors, judgments and the analyses the workers compute."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from service.api.schemas import Items, Request, Response
from service.api.schemas.collections import TopicId


class PoolCreate(Request, kw_only=True):
    """A depth-k pool of the collection's runs, built by the workers."""

    depth: Annotated[int, Meta(ge=1, le=10_000, description="Documents per run and topic.", examples=[100])]
    selection: Annotated[Literal["all", "primary", "priority"], Meta(
        description="all runs, each team's primary runs, or runs up to a judging priority.")] = "all"
    primary_only: Annotated[bool, Meta(description="Shorthand for selection=primary.")] = False
    max_priority: Annotated[int, Meta(ge=1, le=1000, description="With priority: runs of priority 1..N.")] | None = None


class PoolOut(Response, kw_only=True):
    id: int
    collection_id: int
    number: int
    depth: int
    selection: str
    max_priority: int | None
    max_level: int | None
    excludes_judged_in_qrels_version: Annotated[int | None, Meta(
        description="Documents judged in this qrels version are left out (incremental pools).")]
    runs: list[str]
    size: int
    counts: Annotated[dict[str, dict[str, int]], Meta(description="Per topic: new, already_judged and union "
                                                          "document counts.")]
    created_at: str | None
    created_by: str


class PoolList(Items[PoolOut], kw_only=True):
    """A collection's pools."""


class PoolRequestOut(Response, kw_only=True):
    """A pool build requested from the workers."""

    id: int
    collection_id: int
    status: Annotated[str, Meta(description="pending, running, done or failed.")]
    error: Annotated[str, Meta(description="Why the build failed, if it did.")] = ""
    pool: Annotated[int | None, Meta(description="The pool's id, once built.")] = None
    params: dict[str, Any]
    created_at: str
    finished_at: str | None = None



class Assessment(Response, kw_only=True):
    """One topic of one pool for an assessor: how much there is to judge, where to get it."""

    pool: int
    collection_id: int
    collection: str
    topic: str
    documents: int
    judged: int
    max_level: int | None
    download: str



class AssessmentList(Items[Assessment], kw_only=True):
    """An assessor's work, per pool and topic."""


class AssignmentIn(Request, kw_only=True):
    topics: Annotated[list[TopicId], Meta(max_length=100_000, description="Replaces the token's topics here.")]


class AssignmentOut(Response, kw_only=True):
    token_id: int
    topics: list[str]


class Assessor(Response, kw_only=True):
    token_id: int
    name: str
    prefix: str
    topics: list[str]



class AssessorList(Items[Assessor], kw_only=True):
    """A collection's assessors."""


class JudgmentsAccepted(Response, kw_only=True):
    """Judgments accepted: laid over the current qrels as a new version, re-evaluated."""

    qrels_version: Annotated[int, Meta(description="The new qrels version.")]
    judgments: int
    topics: Annotated[list[str], Meta(description="The topics judged in this upload.")]
    job: Annotated[int | None, Meta(description="The re-evaluation job.")]


class AnalysisRequest(Request, kw_only=True):
    """reusability: pool statistics and leave-one-team-out; reduction: the reduced-judgment
    experiment (discriminative power and tau on subsets of the judgments)."""

    kind: Literal["reusability", "reduction"] = "reusability"
    metric: Annotated[str, Meta(max_length=200)] | None = None
    pool: Annotated[int, Meta(ge=1)] | None = None
    depth: Annotated[int, Meta(ge=1, le=10_000)] | None = None
    kept: Annotated[list[Annotated[float, Meta(gt=0, le=100)]], Meta(max_length=20, description="Percentages of "
                                                                      "judgments kept.")] | None = None


class AnalysisOut(Response, kw_only=True):
    id: int
    collection_id: int
    kind: str
    params: dict[str, Any]
    qrels_version: int | None
    status: Annotated[str, Meta(description="pending, running, done or failed.")]
    error: str
    created_at: str
    finished_at: str | None
    result: dict[str, Any]
