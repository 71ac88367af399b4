"""Judgment sets: several named sets of judgments per collection, their provenance and
versions, and assessors' labels (see service.evaluation.judgment_sets)."""

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
