"""Pools, assessors, judgments and the analyses the workers compute."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from service.api.schemas import Items, Request, Response
from service.api.schemas.collections import TopicId


class PoolCreate(Request, kw_only=True):
    """A pool of the collection's runs, built by the workers: a depth-k pool (`depth`), or a
    stratified-sampling pool (`kind: "stratified"`, `strata`, `seed`)."""

    kind: Annotated[Literal["depth", "stratified"], Meta(
        description="depth: the union of the runs' top `depth`, less what the current qrels judge; stratified: "
                    "the runs' top ranks cut into `strata`, each sampled at its rate (only the sampled documents "
                    "are judged; the judgments make sampled qrels, evaluated with xinfAP and infNDCG).")] = "depth"
    depth: Annotated[int, Meta(ge=1, le=10_000, description="Documents per run and topic (a depth pool; a "
                                                            "stratified pool's is its last rank).",
                               examples=[100])] | None = None
    # The ranges are checked by the use case (400 naming the stratum and what is wrong), not here.
    strata: Annotated[list[tuple[int, int, float]], Meta(
        description="A stratified pool's strata, [first_rank, last_rank, rate]: at most 20, contiguous rank "
                    "ranges from rank 1, rates in (0, 1], the last rank at most 10000. A document's stratum is "
                    "that of the best rank any pooled run gives it.",
        examples=[[[1, 10, 1.0], [11, 30, 0.5], [31, 100, 0.1]]])] | None = None
    seed: Annotated[int, Meta(ge=0, le=2**31 - 1, description="A stratified pool's seed: the same runs, strata "
                                                              "and seed draw the same sample (random when left "
                                                              "out; stored with the pool).")] | None = None
    selection: Annotated[Literal["all", "primary", "priority"], Meta(
        description="all runs, each team's primary runs, or runs up to a judging priority.")] = "all"
    primary_only: Annotated[bool, Meta(description="Shorthand for selection=primary.")] = False
    max_priority: Annotated[int, Meta(ge=1, le=1000, description="With priority: runs of priority 1..N.")] | None = None


class StratumOut(Response, kw_only=True):
    """One stratum of a stratified pool, with its documents over all topics."""

    stratum: Annotated[int, Meta(description="1, 2, ... in rank order (the label in the sampled qrels).")]
    first_rank: int
    last_rank: int
    rate: Annotated[float, Meta(description="The sampling rate: each pooled document's inclusion probability.")]
    pooled: Annotated[int, Meta(description="Documents in the stratum (the population).")]
    sampled: Annotated[int, Meta(description="Documents drawn, to be judged.")]


class PoolOut(Response, kw_only=True):
    id: int
    collection_id: int
    number: int
    kind: Annotated[str, Meta(description="depth or stratified.")] = "depth"
    depth: int
    selection: str
    max_priority: int | None
    max_level: int | None
    excludes_judged_in_qrels_version: Annotated[int | None, Meta(
        description="Documents judged in this qrels version are left out (incremental pools).")]
    strata: Annotated[list[StratumOut] | None, Meta(description="A stratified pool's strata.")] = None
    seed: Annotated[int | None, Meta(description="A stratified pool's seed.")] = None
    runs: list[str]
    size: Annotated[int, Meta(description="Documents to judge.")]
    counts: Annotated[dict[str, dict[str, int | list[int]]], Meta(
        description="Per topic: new (to judge) and union (pooled) document counts; a depth pool's already_judged "
                    "(left out); a stratified pool's pooled and sampled documents per stratum, in rank order.")]
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
