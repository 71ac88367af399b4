"""Organisers' comparison of two qrels versions (judging the judges, issue 16): a GET form to
pick the versions and the metric, the label, ranking, significance and per-topic agreement
figures (``judge_comparison.compare_versions``), and the topics where the versions disagree
most as CSV, to send back to the assessors."""

from __future__ import annotations

import csv
import io
from typing import Any

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Template

from service.errors import BadRequest
from service.evaluation import judge_comparison, qrels
from service.evaluation.work import Outcome
from service.portal.forms import whole_number
from service.portal.pages import Page, attempt, download
from service.store.models import Collection


def _choices(page: Page, coll: Collection, a: str | None, b: str | None) -> tuple[list[int], int | None, int | None]:
    """The versions (organisers only: ``qrels.versions`` asks the policy) and the two compared:
    by default the one before the newest and the newest."""
    numbers = [v["version"] for v in qrels.versions(page.session, coll, page.me)["items"]]
    va, vb = whole_number(a, "version a"), whole_number(b, "version b")
    if vb is None and len(numbers) >= 2:
        vb = numbers[-1]
    if va is None and vb is not None:
        earlier = [n for n in numbers if n < vb]
        va = earlier[-1] if earlier else None
    return numbers, va, vb


def _compare(page: Page, coll: Collection, a: int, b: int, metric: str | None, top_k: int | None) -> dict[str, Any]:
    return judge_comparison.compare_versions(page.session, coll, page.me, a, b, metric or None, top_k or 10)


def disagreeing_csv(doc: dict[str, Any]) -> str:
    """The topics by disagreement, most first, with the judgments changed in each."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["topic", "tau", "disagreement", "mean_a", "mean_b", "mean_difference", "added", "removed", "changed",
                "kappa", "documents_both"])
    labels = {t["topic"]: t for t in doc["labels"]["topics"]}

    def cell(v: Any) -> str:
        return "" if v is None else (f"{v:.6f}" if isinstance(v, float) else str(v))

    for t in (doc["topics"] or {}).get("disagreeing", []):
        lab = labels.get(t["topic"], {})
        w.writerow([t["topic"], *(cell(t[k]) for k in ("tau", "disagreement", "mean_a", "mean_b", "mean_difference",
                                                        "added", "removed", "changed")),
                    cell(lab.get("kappa")), cell(lab.get("documents"))])
    return buf.getvalue()


class JudgesController(Controller):
    @get("/c/{cid:int}/qrels/compare", sync_to_thread=True)
    def compare_page(self, cid: FromPath[int], page: NamedDependency[Page], a: FromQuery[str | None] = None,
                     b: FromQuery[str | None] = None, metric: FromQuery[str | None] = None,
                     top_k: FromQuery[str | None] = None) -> Template:
        """``policy.may_see_qrels`` (organisers); by default the last two versions, the official metric."""
        coll = page.collection(cid)
        numbers, va, vb = _choices(page, coll, a, b)
        k = whole_number(top_k, "top k")
        doc, refused = None, None
        if va is not None and vb is not None:
            # a bad metric, a version without results (409): shown above the form, to choose again
            doc, refused = attempt(page.uow, lambda: Outcome(_compare(page, coll, va, vb, metric, k)))
        config = coll.current_config
        return page.show(coll, "judges_compare.html", status=refused.status if refused else 200, error=refused,
                         versions=numbers, a=va, b=vb, metric=metric or "", top_k=k or 10, doc=doc,
                         metrics=list(config.metrics) if config else [],
                         official=config.official_metric if config else "")

    @get("/c/{cid:int}/qrels/compare.csv", sync_to_thread=True)
    def compare_csv(self, cid: FromPath[int], page: NamedDependency[Page], a: FromQuery[str | None] = None,
                    b: FromQuery[str | None] = None, metric: FromQuery[str | None] = None) -> Response[str]:
        """The topics where the two versions disagree most, as CSV (organisers)."""
        coll = page.collection(cid)
        _, va, vb = _choices(page, coll, a, b)
        if va is None or vb is None:
            raise BadRequest("choose two qrels versions to compare (a and b)")
        doc = _compare(page, coll, va, vb, metric, None)
        return download(disagreeing_csv(doc), "text/csv", f"{coll.name}-qrels-{va}-{vb}-{doc['metric']}-topics.csv")
