"""Judging the judges: how far two qrels versions of a collection agree (organisers)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.params import Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import errors
from service.api.params import Metric
from service.api.schemas import out
from service.api.schemas.judges import QrelsComparison
from service.evaluation.judging import judge_comparison

VersionA = Annotated[int, Parameter(description="The reference qrels version (e.g. the assessors' first pass).",
                                    ge=1, le=2**31 - 1)]
VersionB = Annotated[int, Parameter(description="The qrels version compared with it (e.g. the corrected qrels, "
                                                "or an automatic judge's).", ge=1, le=2**31 - 1)]
TopK = Annotated[int, Parameter(description="k of the tau over the reference's top k runs (default 10).",
                                ge=1, le=judge_comparison.MAX_TOP_K)]


class JudgesController(Controller):
    """Comparisons of judgment sets (issue 16's first slice: two qrels versions)."""

    path = "/api/collections/{cid:int}/qrels"
    tags = ["qrels"]

    @get("/compare", operation_id="compareQrelsVersions", summary="Agreement of two qrels versions",
         sync_to_thread=True, responses=errors(400, 401, 403, 404, 409, 422))
    def compare(self, coll: Coll, a: VersionA, b: VersionB, uow: Uow, me: Caller, metric: Metric = None,
                top_k: TopK = 10) -> QrelsComparison:
        """How far version `b` agrees with version `a` (organisers): label agreement on the
        documents both judged (confusion matrix, Cohen's and weighted kappa, Krippendorff's
        alpha; overall and per topic), and for `metric` (default the official one) the ranking
        agreement of the runs evaluated under both (tau-b, tau_AP both ways, tau_AP_b, Spearman,
        Pearson, tau over the top k, the largest rank change), Bland-Altman of the per-topic
        means (b - a), the agreement of the stored significance tests and the topics where the
        versions disagree most. Read from stored scores; 409 when a version has no results under
        the current configuration."""
        return out(QrelsComparison, judge_comparison.compare_versions(uow.session, coll, me, a, b, metric, top_k))
