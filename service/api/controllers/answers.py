"""Collections of generated answers (issue 35): their judgments uploaded by part (nuggets,
nugget assignments, citation support, retrieval qrels), and a run's answers with them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio.to_thread
from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.params import Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors, upload_body
from service.api.params import CollectionId, IdempotencyKeyHeader, RunId
from service.api.schemas import Response, out
from service.api.uploads import read_body
from service.evaluation.judging import answer_comparison, answer_judgments
from service.evaluation.runs import answer_view
from service.http.admission import OWN_TRANSACTIONS

Part = Annotated[Literal["nuggets", "assignments", "support", "qrels", "passages"], Parameter(
    description="nuggets (nuggetizer's create output), assignments (NIST's / nuggetizer's assign format), "
                "support (NIST's citation-support file), qrels (the retrieval qrels the references are ranked "
                "against) or passages (the cited passages' texts, {segment_id, segment} JSON lines, shown on the "
                "assessment pages).")]
SetName = Annotated[str | None, Parameter(
    description="The judgment set the version goes to (default: the official one).", max_length=100)]
Append = Annotated[bool, Parameter(description="support only: add the file to the version's support files "
                                               "instead of replacing them.")]
Grades = Annotated[Literal["auto", "2", "3"] | None, Parameter(
    description="Assignment grades: 3 (support, partial, not), 2 (refuses partial_support) or auto.")]
Source = Annotated[str | None, Parameter(description="The file's name (in errors and listings).", max_length=200)]


SetReference = Annotated[str, Parameter(
    description="A judgment set's name (its newest version), `name:N` (version N of that set) or a version number.",
    max_length=320)]
Kind = Annotated[Literal["assignments", "support"], Parameter(
    description="What is compared: the nugget assignments (default) or the citation-support judgments.")]
Scores = Annotated[list[str] | None, Parameter(
    description="RAG scores whose run rankings are compared (repeatable; default: the configuration's nugget "
                "scores, or its support scores).", max_items=20)]


class AnswerSetComparison(Response, kw_only=True):
    """Two answer judgment sets compared (docs/rag.md, "Comparing assessments")."""

    collection: int
    a: dict[str, Any]
    b: dict[str, Any]
    kind: str
    labels: list[str]
    cells: int
    answers: int
    only_first: list[list[str]]
    only_second: list[list[str]]
    unmatched_cells: int
    agreement: dict[str, Any]
    macro: dict[str, Any]
    per_topic: dict[str, Any]
    rankings: dict[str, Any]
    notes: list[str]


class AnswerJudgmentsUploaded(Response, kw_only=True):
    version: int
    judgment_set: str
    part: str
    format: str
    parts: dict[str, Any]
    job: int | None
    previous_version: int | None


class RunAnswers(Response, kw_only=True):
    run: int
    tag: str
    format: str
    qrels_version: int | None
    topics: list[dict[str, Any]]


class AnswersController(Controller):
    """Judgments of answers, and a run's answers."""

    tags = ["answers"]

    @post("/api/collections/{cid:int}/answer-judgments/{part:str}", opt={OWN_TRANSACTIONS: True},
          operation_id="uploadAnswerJudgments", summary="Upload nuggets, assignments, support or qrels",
          responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("The file as the body (gzip accepted) or as the part `file` of a form."))
    async def upload(self, request: Request[Any, Any, Any], cid: CollectionId, part: Part, uow: Uow, me: Caller,
                     state: State, idempotency_key: IdempotencyKeyHeader = None, judgment_set: SetName = None,
                     append: Append = False, grades: Grades = None, source: Source = None
                     ) -> AnswerJudgmentsUploaded:
        """A part of a collection of answers' judgments (organisers), as a new version of the
        official judgment set (or of `judgment_set`): the set's newest version with this part
        replaced (support with `append`: added), validated whole (file, line and field) before
        it is stored, then every run is scored on it by the workers as on a new qrels version."""
        body = await read_body(request, state["max_body"])
        outcome = await anyio.to_thread.run_sync(
            lambda: answer_judgments.upload(uow.factory, lambda _: me, cid, part, body, source or "",
                                            judgment_set=judgment_set, append=append, grades=grades,
                                            idempotency_key=idempotency_key),
            limiter=state.get("upload_threads"))
        return out(AnswerJudgmentsUploaded, uow.collect(outcome))

    @get("/api/collections/{cid:int}/answer-judgments/compare", operation_id="compareAnswerJudgmentSets",
         summary="Agreement of two answer judgment sets", sync_to_thread=True,
         responses=errors(400, 401, 403, 404, 409, 422))
    def compare(self, coll: Coll, a: SetReference, b: SetReference, uow: Uow, me: Caller,
                kind: Kind = "assignments", metric: Scores = None) -> AnswerSetComparison:
        """How far set `b` agrees with the reference `a` (organisers) on the nugget assignments
        (or the support judgments) of the answers both assessed: the 3x3 confusion matrix, Cohen's
        kappa, linear- and quadratic-weighted kappa, Krippendorff's ordinal alpha, each side's
        share of partial support, the same per topic; and for each score, the agreement of the
        run rankings over the topics both assessed (Kendall's tau, tau_AP, Spearman with
        bootstrap intervals over topics, Kendall's tau per topic), read from the stored scores."""
        return out(AnswerSetComparison,
                   answer_comparison.compare_answer_sets(uow.session, coll, me, a, b, kind, metric))

    @get("/api/runs/{rid:int}/answers", operation_id="getRunAnswers", summary="A run's answers and judgments",
         sync_to_thread=True, responses=errors(401, 403, 404, 409, 422))
    def answers(self, rid: RunId, uow: Uow, me: Caller) -> RunAnswers:
        """Each topic's answer (sentences, citations, references) with, for who may see the
        run's per-topic scores, its nuggets and the assignment the run got, and each citation's
        support judgment (the collection's current judgments; hidden topics left out)."""
        return out(RunAnswers, answer_view.answers_of(uow.session, rid, me))
