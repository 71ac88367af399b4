"""Organisers' comparison of two qrels versions or judgment sets (judging the judges, issue 16):
a GET form to pick the two and the metric, the label, ranking, significance and per-topic
agreement figures (``judge_comparison.compare_references``, as GET
``.../judgment-sets/compare``), and the topics where they disagree most as CSV, to send back to
the assessors. Each of the two is a version number (as before), a judgment set's name (its
newest version), ``name:N`` (version N of that set) or ``assessor@name`` (one assessor's labels
in that set: the label figures only)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Template

from service.errors import BadRequest, NotFound
from service.evaluation.common.work import Outcome
from service.evaluation.judging import judge_comparison, qrels
from service.evaluation.publishing.exports import disagreeing_topics_csv
from service.http.problems import problem_of
from service.portal.forms import whole_number
from service.portal.pages import Page, Refusal, attempt, download
from service.store.models import Collection


def reference(text: str | None, what: str) -> str | None:
    """A reference as given (None when blank); a number must be a version's (a positive whole number)."""
    text = (text or "").strip()
    if not text:
        return None
    if text.isdigit() or text.lstrip("+-").isdigit():
        return str(whole_number(text, what))
    return text


def _choices(page: Page, coll: Collection, a: str | None, b: str | None
             ) -> tuple[dict[str, Any], str | None, str | None]:
    """The versions (organisers only: ``qrels.versions`` asks the policy) and the two compared:
    by default the one before the newest and the newest; a set named as b alone is compared
    with the official set's newest version."""
    versions = qrels.versions(page.session, coll, page.me)
    numbers = [v["version"] for v in versions["items"]]
    ra, rb = reference(a, "version a"), reference(b, "version b")
    if rb is None and len(numbers) >= 2:
        rb = str(numbers[-1])
    if ra is None and rb is not None:
        if rb.isdigit():
            earlier = [n for n in numbers if n < int(rb)]
            ra = str(earlier[-1]) if earlier else None
        elif versions["current"] is not None:
            ra = str(versions["current"])
    return versions, ra, rb


def _compare(page: Page, coll: Collection, a: str, b: str, metric: str | None, top_k: int | None) -> dict[str, Any]:
    return judge_comparison.compare_references(page.session, coll, page.me, a, b, metric or None, top_k or 10)


def _answer_sets_page(page: Page, coll: Collection, a: str | None, b: str | None, kind: str | None) -> Template:
    """A collection of answers: its judgment sets' assessments compared (issue 36, item 3;
    ``answer_comparison.compare_answer_sets``, as GET ``.../answer-judgments/compare``); by
    default the official set against the newest other set."""
    from service.evaluation.judging import answer_comparison

    versions, _, _ = _choices(page, coll, None, None)
    sets = list(dict.fromkeys(v["judgment_set"] for v in versions["items"] if v["judgment_set"]))
    kind = kind if kind in answer_comparison.KINDS else "assignments"
    ra = reference(a, "a") or ("official" if "official" in sets else None)
    rb = reference(b, "b") or next((name for name in reversed(sets) if name != ra), None)
    doc, refused = None, None
    if ra is not None and rb is not None:
        try:
            doc, refused = attempt(page.uow, lambda: Outcome(
                answer_comparison.compare_answer_sets(page.session, coll, page.me, ra, rb, kind)))
        except NotFound as exc:
            problem = problem_of(exc)
            refused = Refusal(problem.status, problem.detail)
    return page.show(coll, "answer_sets_compare.html", status=refused.status if refused else 200, error=refused,
                     versions=versions["items"], sets=sets, a=ra or "", b=rb or "", kind=kind, doc=doc)


class JudgesController(Controller):
    @get("/c/{cid:int}/qrels/compare", sync_to_thread=True)
    def compare_page(self, cid: FromPath[int], page: NamedDependency[Page], a: FromQuery[str | None] = None,
                     b: FromQuery[str | None] = None, metric: FromQuery[str | None] = None,
                     top_k: FromQuery[str | None] = None, kind: FromQuery[str | None] = None) -> Template:
        """``policy.may_see_qrels`` (organisers); by default the last two versions, the official metric."""
        coll = page.collection(cid)
        if coll.task_kind == "answers":
            return _answer_sets_page(page, coll, a, b, kind)
        versions, ra, rb = _choices(page, coll, a, b)
        k = whole_number(top_k, "top k")
        doc, refused = None, None
        if ra is not None and rb is not None:
            # a bad metric, a version without results (409), a set or version that is not there (404):
            # shown above the form, to choose again
            try:
                doc, refused = attempt(page.uow, lambda: Outcome(_compare(page, coll, ra, rb, metric, k)))
            except NotFound as exc:
                problem = problem_of(exc)
                refused = Refusal(problem.status, problem.detail)
        config = coll.current_config
        sets = list(dict.fromkeys(v["judgment_set"] for v in versions["items"] if v["judgment_set"]))
        return page.show(coll, "judges_compare.html", status=refused.status if refused else 200, error=refused,
                         versions=versions["items"], sets=sets, a=ra or "", b=rb or "", metric=metric or "",
                         top_k=k or 10, doc=doc, metrics=list(config.metrics) if config else [],
                         official=config.official_metric if config else "")

    @get("/c/{cid:int}/qrels/compare.csv", sync_to_thread=True)
    def compare_csv(self, cid: FromPath[int], page: NamedDependency[Page], a: FromQuery[str | None] = None,
                    b: FromQuery[str | None] = None, metric: FromQuery[str | None] = None) -> Response[str]:
        """The topics where the two disagree most, as CSV (organisers)."""
        coll = page.collection(cid)
        _, ra, rb = _choices(page, coll, a, b)
        if ra is None or rb is None:
            raise BadRequest("choose two qrels versions or judgment sets to compare (a and b)")
        doc = _compare(page, coll, ra, rb, metric, None)
        return download(disagreeing_topics_csv(doc), "text/csv",
                        f"{coll.name}-qrels-{ra}-{rb}-{doc['metric']}-topics.csv")
