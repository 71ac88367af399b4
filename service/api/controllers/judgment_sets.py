"""Judgment sets of a collection: create, describe, upload into, evaluate, make official,
assessors' labels, and comparisons between any two sets (issue 16)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from litestar import Controller, Request, get, patch, post
from litestar.datastructures import State
from litestar.params import JSONBody, Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors, upload_body
from service.api.params import CollectionId, IdempotencyKeyHeader, Metric
from service.api.schemas import out, present
from service.api.schemas.judges import AssessorAgreementOut, QrelsComparison
from service.api.schemas.judgment_sets import (
    JudgmentSetChange,
    JudgmentSetCreate,
    JudgmentSetOut,
    JudgmentSets,
    LabelsUploaded,
    OfficialSetChanged,
    OfficialSetIn,
    SetEvaluationIn,
    SetEvaluationRequested,
)
from service.api.uploads import read_body
from service.evaluation.judging import judge_comparison, judgment_sets, labels
from service.http.admission import OWN_TRANSACTIONS

SetName = Annotated[str, Parameter(description="The judgment set's name.", max_length=100)]
Reference = Annotated[str, Parameter(
    description="A judgment set's name (its newest version), `name:N` (version N of that set), a version "
                "number, or `assessor@name` (one assessor's labels in that set: label figures only).",
    max_length=320)]
TopK = Annotated[int, Parameter(description="k of the tau over the reference's top k runs (default 10).",
                                ge=1, le=judge_comparison.MAX_TOP_K)]


class JudgmentSetsController(Controller):
    """Several named judgment sets per collection, each with its provenance and versions."""

    path = "/api/collections/{cid:int}/judgment-sets"
    tags = ["judgment sets"]

    @get("/", operation_id="listJudgmentSets", summary="List judgment sets", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def listing(self, coll: Coll, uow: Uow, me: Caller) -> JudgmentSets:
        """The collection's judgment sets with their provenance, newest version and how far the
        runs are evaluated under it: every set for organisers, a team's own submitted sets for
        its members (a judges track)."""
        return out(JudgmentSets, judgment_sets.listing(uow.session, coll, me))

    @post("/", operation_id="createJudgmentSet", summary="Create a judgment set", sync_to_thread=True,
          responses=errors(*WRITE_ERRORS))
    def create(self, coll: Coll, data: JSONBody[JudgmentSetCreate], uow: Uow, me: Caller) -> JudgmentSetOut:
        """A new, empty judgment set with its provenance (organisers): where its judgments come
        from (human assessors, an automatic judge with its model, prompt and date, a merge), the
        rule deriving one level from several assessors' labels, and whether every run is
        evaluated under each new version. Upload versions with `POST .../qrels?judgment_set=`."""
        fields = {k: v for k, v in present(data).items() if k != "name"}
        js = judgment_sets.create(uow.session, coll, me, data.name, fields)
        return out(JudgmentSetOut, judgment_sets.set_doc(uow.session, coll, js))

    @get("/compare", operation_id="compareJudgmentSets", summary="Agreement of two judgment sets",
         sync_to_thread=True, responses=errors(400, 401, 403, 404, 409, 422))
    def compare(self, coll: Coll, a: Reference, b: Reference, uow: Uow, me: Caller, metric: Metric = None,
                top_k: TopK = 10) -> QrelsComparison:
        """How far `b` agrees with the reference `a` (organisers), each a set (its newest
        version), `name:N`, a version number or `assessor@name`: the figures of
        `GET .../qrels/compare` (label agreement, and for `metric` the ranking, Bland-Altman,
        significance and per-topic agreement of the runs evaluated under both). An assessor's
        labels give the label figures only. Read from stored scores."""
        return out(QrelsComparison, judge_comparison.compare_references(uow.session, coll, me, a, b, metric, top_k))

    @get("/{name:str}", operation_id="getJudgmentSet", summary="Read a judgment set", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, coll: Coll, name: SetName, uow: Uow, me: Caller) -> JudgmentSetOut:
        """A set with its provenance and every version (organisers; a team its own sets)."""
        return out(JudgmentSetOut, judgment_sets.describe(uow.session, coll, me, name))

    @get("/{name:str}/agreement", operation_id="getAssessorAgreement", summary="Agreement of a set's assessors",
         sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def agreement(self, coll: Coll, name: SetName, uow: Uow, me: Caller) -> AssessorAgreementOut:
        """How far the assessors whose labels the set keeps (label files) agree (organisers):
        Krippendorff's alpha over every assessor (nominal, ordinal, interval; missing labels
        allowed), per topic, each assessor's part in the disagreement (alpha without them, their
        mean kappa) and every pair's Cohen's and weighted kappas, ordinal alpha and confusion."""
        return out(AssessorAgreementOut, labels.agreement(uow.session, coll, me, name))

    @patch("/{name:str}", operation_id="changeJudgmentSet", summary="Change a judgment set", sync_to_thread=True,
           responses=errors(*WRITE_ERRORS))
    def change(self, coll: Coll, name: SetName, data: JSONBody[JudgmentSetChange], uow: Uow,
               me: Caller) -> JudgmentSetOut:
        """Change a set's provenance, notes, rule or automatic evaluation (organisers). A new
        rule re-derives every document with assessors' labels: a new version (`new_version`),
        evaluated as the set says."""
        return out(JudgmentSetOut, uow.collect(labels.update_set(uow.session, coll, me, name, present(data))))

    @post("/{name:str}/evaluate", operation_id="evaluateJudgmentSet", summary="Evaluate the runs under a set",
          sync_to_thread=True, status_code=202, responses=errors(*WRITE_ERRORS))
    def evaluate(self, coll: Coll, name: SetName, data: JSONBody[SetEvaluationIn], uow: Uow,
                 me: Caller) -> SetEvaluationRequested:
        """Have the workers evaluate every run under the set's newest version and the current
        configuration, then test every pair (organisers). Runs with results already are not
        evaluated again; the job is the one to follow."""
        return out(SetEvaluationRequested, uow.collect(judgment_sets.request_evaluation(uow.session, coll, me, name,
                                                                                       data.retry_failed)))

    @post("/{name:str}/official", operation_id="makeJudgmentSetOfficial", summary="Make a set the official one",
          sync_to_thread=True, status_code=200, responses=errors(*WRITE_ERRORS))
    def official(self, coll: Coll, name: SetName, data: JSONBody[OfficialSetIn], uow: Uow,
                 me: Caller) -> OfficialSetChanged:
        """Boards rank by this set's newest version from now on (organisers; audited). Its
        evaluation under the current configuration must be complete (409 otherwise: evaluate
        it first), so the board moves from one complete ranking to another."""
        return out(OfficialSetChanged, uow.collect(judgment_sets.make_official(uow.session, coll, me, name,
                                                                                    data.reason)))

    @post("/{name:str}/labels", opt={OWN_TRANSACTIONS: True}, operation_id="uploadLabels",
          summary="Upload assessors' labels", responses=errors(400, 401, 403, 404, 409, 413, 422),
          operation_class=upload_body("Labels, one per line: `topic docno assessor level` (level `2` or `L2`)."))
    async def upload_labels(self, request: Request[Any, Any, Any], cid: CollectionId, name: SetName, uow: Uow,
                            me: Caller, state: State, idempotency_key: IdempotencyKeyHeader = None) -> LabelsUploaded:
        """Several assessors' labels into a set (organisers): validated whole first (every line,
        levels within the collection's scale), kept per assessor (a second label by the same
        assessor replaces the first), and every labelled document's level derived by the set's
        rule into a new version, evaluated as the set says."""
        body = await read_body(request, state["max_body"])
        outcome = await anyio.to_thread.run_sync(
            lambda: labels.upload(uow.factory, lambda _: me, cid, name, body, idempotency_key=idempotency_key),
            limiter=state.get("upload_threads"))
        return out(LabelsUploaded, uow.collect(outcome))
