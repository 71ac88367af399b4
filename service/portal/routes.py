"""The web portal: server-rendered pages over the same use cases as the API (service.evaluation.views).

Reading needs no JavaScript: every chart is an inline SVG rendered here and every control is a
plain form. A little script (static/portal.js) adds conveniences: the metric selector submits
on change, the submission form checks a run file before it is sent, progress bars refresh.

Sign-in: the visitor pastes an API token once; it is kept in an HttpOnly, SameSite=Strict
cookie and checked like a bearer token on every request. Forms that change state carry a
token derived from that cookie (checked on POST), so another site cannot post on the user's
behalf even where SameSite is not honoured.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from litestar import Request, Response, Router, get, post
from litestar.datastructures import Cookie
from litestar.di import NamedDependency, Provide
from litestar.exceptions import HTTPException
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.errors import InvalidInput, InvalidMeasure
from service.evaluation import access, views
from service.evaluation.access import Conflict, Forbidden, NotFound, Principal, Unauthenticated
from service.evaluation.exports import board_csv, board_latex
from service.evaluation.pipeline import Followup
from service.evaluation.reading import qrels_diff
from service.portal import charts
from service.store.models import Collection

COOKIE = "cranfield_token"
TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


def csrf_for(secret: str) -> str:
    """The form token of a signed-in visitor: an HMAC of a fixed label under their token."""
    return hmac.new(secret.encode(), b"cranfield portal form", hashlib.sha256).hexdigest()[:32]


def portal_router(factory: sessionmaker[Session], send: Callable[[list[Followup]], None]) -> Router:
    """``send`` hands follow-up work to the workers (after the commit)."""

    def db() -> Any:
        with factory() as s:
            yield s

    def viewer(request: Request, s: NamedDependency[Session]) -> Principal:
        secret = request.cookies.get(COOKIE)
        if not secret:
            return Principal()
        try:
            return access.principal_for(s, f"Bearer {secret}")
        except Unauthenticated:
            return Principal()  # a revoked or unknown token reads as signed out

    def page(request: Request, s: Session, me: Principal, name: str, status: int = 200, **context: Any) -> Template:
        secret = request.cookies.get(COOKIE, "")
        return Template(template_name=name, status_code=status, media_type="text/html", context={
            "me": me, "team": views.team_name(s, me), "csrf": csrf_for(secret) if me.role else "",
            "path": request.url.path, **context})

    def me_from(secret: str) -> Callable[[Session], Principal]:
        """The caller of a form post, read in the use case's own session."""
        return lambda s: access.principal_for(s, f"Bearer {secret}")

    async def checked_form(request: Request) -> tuple[Any, str]:
        """(form, the caller's token) of a state-changing form whose CSRF token is checked."""
        form = await request.form()
        check_form(request, form)
        return form, request.cookies.get(COOKIE, "")

    def check_form(request: Request, form: Any) -> None:
        secret = request.cookies.get(COOKIE, "")
        if not secret or not hmac.compare_digest(str(form.get("csrf", "")), csrf_for(secret)):
            raise Forbidden("the form is stale or from another site: reload the page and try again")

    def coll_context(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
        return {"coll": views.collection_doc(coll, me), "organiser": me.can_organise(coll.id),
                "can_board": views.can_see_board(coll, me), "can_results": me.can_organise(coll.id) or (
                    coll.leaderboard_released and not views.public_view(coll, me))}

    # ---------------------------------------------------------------- index, sign-in
    @get("/", sync_to_thread=True)
    def index(request: Request, s: NamedDependency[Session], viewer: NamedDependency[Principal]) -> Template:
        return page(request, s, viewer, "index.html",
                    collections=[views.collection_doc(c, viewer) for c in views.visible_collections(s, viewer)])

    @get("/login", sync_to_thread=True)
    def login_form(request: Request, s: NamedDependency[Session], viewer: NamedDependency[Principal],
                   next: FromQuery[str] = "/") -> Template:  # noqa: A002
        return page(request, s, viewer, "login.html", next=_local(next), error=None)

    @post("/login")
    async def login(request: Request) -> Any:
        # No session yet to derive a form token from: refuse sign-ins posted by another site
        # (login CSRF would sign the visitor in as the attacker).
        origin = request.headers.get("origin")
        if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host", ""):
            raise Forbidden("sign in from this site's own form")
        form = await request.form()
        secret, target = str(form.get("token", "")).strip(), _local(str(form.get("next", "/")))

        def check() -> Principal | None:
            with factory() as s:
                try:
                    return access.principal_for(s, f"Bearer {secret}") if secret else None
                except Unauthenticated:
                    return None

        me = await _in_thread(check)
        if me is None:
            with factory() as s:
                return page(request, s, Principal(), "login.html", status=401, next=target,
                            error="That token is unknown or revoked.")
        secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
        return Redirect(path=target, status_code=303, cookies=[Cookie(
            key=COOKIE, value=secret, httponly=True, samesite="strict", secure=secure, path="/",
            max_age=14 * 24 * 3600)])

    @post("/logout")
    async def logout(request: Request) -> Redirect:
        await checked_form(request)
        return Redirect(path="/", status_code=303, cookies=[Cookie(key=COOKIE, value="", max_age=0, path="/")])

    # --------------------------------------------------------------------- leaderboard
    def board_doc(s: Session, coll: Collection, me: Principal, metric: str | None, test: str | None,
                  qrels_version: str | None, primary_only: bool) -> dict[str, Any]:
        # Forms send empty strings for "default" choices.
        version = int(qrels_version) if qrels_version and qrels_version.strip() else None
        return views.leaderboard_doc(s, coll, me, metric or None, primary_only, version, test or None)

    @get("/c/{cid:int}", sync_to_thread=True)
    def board(request: Request, cid: FromPath[int], s: NamedDependency[Session],
              viewer: NamedDependency[Principal], metric: FromQuery[str | None] = None,
              test: FromQuery[str | None] = None, qrels_version: FromQuery[str | None] = None,
              primary_only: FromQuery[bool] = False) -> Template:
        coll = views.collection(s, cid, viewer)
        ctx = coll_context(s, coll, viewer)
        if not ctx["can_board"]:
            return page(request, s, viewer, "board.html", doc=None, chart=None, **ctx)
        doc = board_doc(s, coll, viewer, metric, test, qrels_version, primary_only)
        cfg = coll.current_config
        metrics = [cfg.official_metric] + [m for m in cfg.metrics if m != cfg.official_metric]
        chart = charts.interval_chart(doc["rows"], doc["metric"]) if doc["rows"] else None
        versions = ([v["version"] for v in reversed(views.qrels_versions(s, coll, viewer)["items"])]
                    if viewer.can_organise(cid) else [])
        return page(request, s, viewer, "board.html", doc=doc, chart=chart, metrics=metrics,
                    tests=views.stored_tests(s, coll), test=test, versions=versions,
                    qrels_version=int(qrels_version) if qrels_version else None,
                    primary_only=primary_only, **ctx)

    def board_file(cid: int, s: Session, viewer: Principal, metric: str | None, test: str | None,
                   qrels_version: str | None, primary_only: bool, kind: str) -> Response[str]:
        coll = views.collection(s, cid, viewer)
        doc = board_doc(s, coll, viewer, metric, test, qrels_version, primary_only)
        body, media = (board_csv(doc), "text/csv") if kind == "csv" else (board_latex(doc), "text/plain")
        return Response(body, media_type=media, headers={
            "Content-Disposition": f'attachment; filename="{_file(coll.name)}-{_file(doc["metric"])}.{kind}"'})

    @get("/c/{cid:int}/board.csv", sync_to_thread=True, media_type="text/csv")
    def board_csv_file(cid: FromPath[int], s: NamedDependency[Session], viewer: NamedDependency[Principal],
                       metric: FromQuery[str | None] = None, test: FromQuery[str | None] = None,
                       qrels_version: FromQuery[str | None] = None,
                       primary_only: FromQuery[bool] = False) -> Response[str]:
        return board_file(cid, s, viewer, metric, test, qrels_version, primary_only, "csv")

    @get("/c/{cid:int}/board.tex", sync_to_thread=True, media_type="text/plain")
    def board_tex_file(cid: FromPath[int], s: NamedDependency[Session], viewer: NamedDependency[Principal],
                       metric: FromQuery[str | None] = None, test: FromQuery[str | None] = None,
                       qrels_version: FromQuery[str | None] = None,
                       primary_only: FromQuery[bool] = False) -> Response[str]:
        return board_file(cid, s, viewer, metric, test, qrels_version, primary_only, "tex")

    # ------------------------------------------------------------------------ run page
    @get("/runs/{rid:int}", sync_to_thread=True)
    def run_page(request: Request, rid: FromPath[int], s: NamedDependency[Session],
                 viewer: NamedDependency[Principal], metric: FromQuery[str | None] = None) -> Template:
        run, coll = views.run(s, rid, viewer)
        doc = views.run_metrics(s, rid, viewer)
        ctx = coll_context(s, coll, viewer)
        name = metric or coll.current_config.official_metric
        topic_chart = curve_chart = None
        per_topic: list[dict[str, Any]] = []
        if views.owns_or_organises(viewer, run, coll) and doc["metrics"]:
            scores = views.run_scores(s, rid, viewer, name)
            name = scores["metric"]
            try:
                summary = views.topic_summary(s, coll, viewer, name)["topics"]
            except (Forbidden, Unauthenticated):
                summary = {}  # before the release, a team sees its own bars only
            values = scores["runs"][run.tag]["per_topic"]
            topics = list(values)
            per_topic = [{"topic": t, "value": values[t], **summary.get(t, {})} for t in topics]
            topic_chart = charts.per_topic_chart(topics, [values[t] for t in topics],
                                                 [summary.get(t, {}).get("median") for t in topics],
                                                 [summary.get(t, {}).get("best") for t in topics], run.tag, name)
        try:
            curve = views.run_curve(s, rid, viewer)
        except (Forbidden, Unauthenticated, NotFound):
            curve = None
        if curve is not None:
            series = {run.tag: {"dcg": curve["dcg"], "ndcg": curve["ndcg"]}}
            best = _best_visible_curve(s, coll, viewer, run.id)
            if best is not None:
                series[f"best run ({best['run']})"] = {"dcg": best["dcg"], "ndcg": best["ndcg"]}
            series["ideal ranking"] = {"dcg": curve["ideal_dcg"]}
            curve_chart = charts.gain_curve_chart(series, curve["depth"], curve["log_base"])
        return page(request, s, viewer, "run.html", run=doc["run"], doc=doc, metric=name, per_topic=per_topic,
                    has_summary=any("median" in t for t in per_topic),
                    topic_chart=topic_chart, curve_chart=curve_chart, own=views.owns_or_organises(viewer, run, coll),
                    metrics=list(coll.current_config.metrics), **ctx)

    def _best_visible_curve(s: Session, coll: Collection, me: Principal, exclude: int) -> dict[str, Any] | None:
        """The curves of the best run on the official metric that the caller may see (not ``exclude``)."""
        doc = views.leaderboard_doc(s, coll, me)
        for row in doc["rows"]:
            if row.get("run_id") and row["run_id"] != exclude:
                try:
                    return views.run_curve(s, row["run_id"], me)
                except (Forbidden, Unauthenticated, NotFound):
                    continue
        return None

    # ------------------------------------------------------------------------- compare
    @get("/c/{cid:int}/compare", sync_to_thread=True)
    def compare_page(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                     viewer: NamedDependency[Principal], a: FromQuery[int | None] = None,
                     b: FromQuery[int | None] = None, metric: FromQuery[str | None] = None) -> Template:
        coll = views.collection(s, cid, viewer)
        ctx = coll_context(s, coll, viewer)
        runs = [r for r in views.runs_of(s, coll, viewer) if r.status == "evaluated"] if viewer.role else []
        doc = chart = None
        if a is not None and b is not None:
            if a == b:
                raise InvalidMeasure("choose two different runs")
            doc = views.compare(s, coll, viewer, a, b, metric or None)
            chart = charts.difference_chart(doc["differences"], doc["a"], doc["b"], doc["metric"])
        first = a if a is not None else (runs[0].id if runs else None)
        b_default = next((r.id for r in runs if r.id != first), None)  # B defaults to another run than A
        return page(request, s, viewer, "compare.html", runs=runs, a=a, b=b, b_default=b_default, doc=doc, chart=chart,
                    metric=metric or coll.current_config.official_metric, metrics=list(coll.current_config.metrics),
                    **ctx)

    # -------------------------------------------------------------------- significance
    @get("/c/{cid:int}/significance", sync_to_thread=True)
    def significance_page(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                          viewer: NamedDependency[Principal], metric: FromQuery[str | None] = None,
                          test: FromQuery[str | None] = None) -> Template:
        coll = views.collection(s, cid, viewer)
        ctx = coll_context(s, coll, viewer)
        matrix, missing = None, None
        if viewer.can_organise(cid) or coll.leaderboard_released:
            try:
                matrix = views.significance_matrix(s, coll, viewer, metric or None, test or None)
            except NotFound as exc:
                missing = str(exc)  # no test stored yet (no qrels, one run, or tests still running)
        chart = None
        if matrix is not None:
            # Leaderboard order reads best: the strongest runs in the top-left corner.
            order = [r["run"] for r in views.leaderboard_doc(s, coll, viewer, matrix["metric"])["rows"]]
            index = {r: i for i, r in enumerate(matrix["runs"])}
            order = [r for r in order if r in index] + [r for r in matrix["runs"] if r not in set(order)]
            p = [[matrix["p_adjusted"][index[x]][index[y]] for y in order] for x in order]
            matrix = {**matrix, "runs": order, "p_adjusted": p}
            chart = charts.p_value_heatmap(order, p, matrix["alpha"], matrix["metric"], matrix["test"])
        sig = coll.current_config.significance
        return page(request, s, viewer, "significance.html", matrix=matrix, chart=chart, missing=missing,
                    metrics=list(sig.get("metrics") or [coll.current_config.official_metric]),
                    tests=views.stored_tests(s, coll), test=test, **ctx)

    @get("/c/{cid:int}/changes", sync_to_thread=True)
    def changes_page(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                     viewer: NamedDependency[Principal]) -> Template:
        coll = views.collection(s, cid, viewer)
        report = views.rank_change_report(s, coll, viewer)
        return page(request, s, viewer, "changes.html", report=report, **coll_context(s, coll, viewer))

    @get("/c/{cid:int}/analysis", sync_to_thread=True)
    def analysis_page(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                      viewer: NamedDependency[Principal]) -> Template:
        coll = views.collection(s, cid, viewer)
        try:
            meta = views.metaeval(s, coll, viewer)
        except NotFound:
            meta = None
        tau_chart = asl = None
        if meta is not None:
            names = [m for m in coll.current_config.metrics if m in meta["power"]]
            tau = {tuple(k.split(" | ", 1)): v for k, v in meta["tau"].items()}
            if len(names) >= 2:
                tau_chart = charts.tau_heatmap(names, tau, meta.get("tau_significant_above"))
            curves = {m: meta["power"][m]["asl_curve"] for m in names if "asl_curve" in meta["power"][m]}
            if curves:
                pairs = max(meta["power"][m].get("pairs", 0) for m in curves)
                asl = charts.asl_chart(curves, meta["alpha"], pairs)
        from service.evaluation import analyses

        reduced = None
        try:
            latest = analyses.latest(s, coll, viewer, analyses.REDUCTION)
            reduced = analyses.doc(s, latest, viewer) if latest is not None else None
        except (Forbidden, Unauthenticated):
            reduced = None
        reduction_chart = (charts.reduction_chart(reduced["result"]["rows"])
                           if reduced and reduced["status"] == "done" else None)
        return page(request, s, viewer, "analysis.html", meta=meta, tau_chart=tau_chart, asl_chart=asl,
                    reduced=reduced, reduction_chart=reduction_chart, **coll_context(s, coll, viewer))

    @post("/c/{cid:int}/analysis")
    async def analysis_action(request: Request, cid: FromPath[int]) -> Redirect:
        """Organisers: queue the reduced-judgment experiment for the workers."""
        form, secret = await checked_form(request)

        def work() -> None:
            from service.evaluation import analyses
            from service.store.db import transaction

            with transaction(factory) as s:
                me = me_from(secret)(s)
                _, followups = analyses.request_reduction(s, views.collection(s, cid, me), me)
            send(followups)

        await _in_thread(work)
        return Redirect(path=f"/c/{cid}/analysis", status_code=303)

    # -------------------------------------------------------------- submissions, my runs
    @get("/c/{cid:int}/submit", sync_to_thread=True)
    def submit_form(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                    viewer: NamedDependency[Principal]) -> Any:
        coll = views.collection(s, cid, viewer)
        if viewer.role is None:
            return Redirect(path=f"/login?next=/c/{cid}/submit", status_code=303)
        return page(request, s, viewer, "submit.html", error=None, **_submit_context(s, coll, viewer))

    def _submit_context(s: Session, coll: Collection, me: Principal) -> dict[str, Any]:
        teams = []
        if me.can_organise(coll.id):
            from service.store.models import Team

            teams = list(s.scalars(select(Team.name).order_by(Team.name)))
        return {**coll_context(s, coll, me), **views.quota_doc(s, coll, me), "teams": teams,
                "topics": views.topic_ids(s, coll), "order": (coll.current_config.evaluation or {}).get("order", "score")}

    @post("/c/{cid:int}/submit")
    async def submit(request: Request, cid: FromPath[int]) -> Any:
        form, body, filename, secret = await read_upload(request, "run")
        doc, error = await _in_thread(lambda: attempt(filename, body, "run", lambda: views.submit_run(
            factory, me_from(secret), cid, body,
            team_param=str(form.get("team") or "") or None, source=filename,
            description=str(form.get("description", "")).strip())))
        if doc is not None:
            return Redirect(path=f"/c/{cid}/runs?submitted={doc['id']}", status_code=303)
        with factory() as s:
            me = viewer(request, s)
            coll = views.collection(s, cid, me)
            return page(request, s, me, "submit.html", status=_status(error), error=_error_doc(error),
                        **_submit_context(s, coll, me))

    async def read_upload(request: Request, what: str) -> tuple[Any, bytes, str, str]:
        """(form, the uploaded file's bytes, its name, the caller's token) of a checked form."""
        form, secret = await checked_form(request)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            return form, b"", f"{what} file", secret
        return form, await upload.read(), upload.filename or f"{what} file", secret

    def attempt(filename: str, body: bytes, what: str, use_case: Callable[[], tuple[dict[str, Any], list[Followup]]]
                ) -> tuple[dict[str, Any] | None, Exception | None]:
        """Run an upload's use case; a refusal comes back to be shown on the form's page."""
        try:
            if not body:
                raise InvalidInput(filename, None, f"choose a {what} file to upload (it is empty or missing)")
            doc, followups = use_case()
        except (InvalidInput, InvalidMeasure, Conflict) as exc:
            return None, exc
        send(followups)
        return doc, None

    @get("/c/{cid:int}/runs", sync_to_thread=True)
    def my_runs(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                viewer: NamedDependency[Principal], submitted: FromQuery[int | None] = None) -> Any:
        coll = views.collection(s, cid, viewer)
        if viewer.role is None:
            return Redirect(path=f"/login?next=/c/{cid}/runs", status_code=303)
        return page(request, s, viewer, "runs.html", runs=_runs_with_ranks(s, coll, viewer), submitted=submitted,
                    **views.quota_doc(s, coll, viewer), **coll_context(s, coll, viewer))

    def _runs_with_ranks(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
        runs = views.runs_of(s, coll, me)
        ranks: dict[str, dict[str, Any]] = {}
        if coll.current_qrels_id is not None and views.can_see_board(coll, me):
            ranks = {r["run"]: r for r in views.leaderboard_doc(s, coll, me)["rows"]}
        return [{**views.run_doc(r), "rank": ranks.get(r.tag, {}).get("rank"),
                 "mean": ranks.get(r.tag, {}).get("mean")} for r in runs]

    @get("/c/{cid:int}/progress.json", sync_to_thread=True)
    def progress(cid: FromPath[int], s: NamedDependency[Session], viewer: NamedDependency[Principal]) -> dict[str, Any]:
        """What the progress bars and the "my runs" table refresh from (signed-in callers)."""
        coll = views.collection(s, cid, viewer)
        viewer.require_authenticated()
        doc: dict[str, Any] = {"runs": [{"id": r["id"], "status": r["status"], "reason": r["reason"],
                                         "rank": r["rank"], "mean": r["mean"]}
                                        for r in _runs_with_ranks(s, coll, viewer)]}
        if viewer.can_organise(cid):
            jobs = views.job_progress(s, coll, viewer)
            doc["job"] = jobs[0] if jobs else None
        return doc

    # ---------------------------------------------------------------- organisers: qrels
    @get("/c/{cid:int}/qrels", sync_to_thread=True)
    def qrels_page(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                   viewer: NamedDependency[Principal], old: FromQuery[int | None] = None,
                   new: FromQuery[int | None] = None, uploaded: FromQuery[int | None] = None) -> Any:
        coll = views.collection(s, cid, viewer)
        if viewer.role is None:
            return Redirect(path=f"/login?next=/c/{cid}/qrels", status_code=303)
        return page(request, s, viewer, "qrels.html", error=None, **_qrels_context(s, coll, viewer, old, new, uploaded))

    def _qrels_context(s: Session, coll: Collection, me: Principal, old: int | None, new: int | None,
                       uploaded: int | None) -> dict[str, Any]:
        versions = views.qrels_versions(s, coll, me)  # organisers only
        numbers = [v["version"] for v in versions["items"]]
        if new is None and len(numbers) >= 2:
            new = numbers[-1]
        if old is None and new is not None and new - 1 in numbers:
            old = new - 1
        diff = qrels_diff(s, coll.id, old, new) if old is not None and new is not None else None
        jobs = views.job_progress(s, coll, me)
        return {**coll_context(s, coll, me), "versions": versions, "diff": diff, "old": old, "new": new,
                "job": jobs[0] if jobs else None, "uploaded": uploaded}

    @post("/c/{cid:int}/qrels")
    async def qrels_upload(request: Request, cid: FromPath[int]) -> Any:
        _, body, filename, secret = await read_upload(request, "qrels")
        doc, error = await _in_thread(lambda: attempt(filename, body, "qrels", lambda: views.upload_qrels(
            factory, me_from(secret), cid, body, source=filename)))
        if doc is not None:
            query = f"uploaded={doc['version']}"
            if doc.get("previous_version"):
                query += f"&old={doc['previous_version']}&new={doc['version']}"
            return Redirect(path=f"/c/{cid}/qrels?{query}", status_code=303)
        with factory() as s:
            me = viewer(request, s)
            coll = views.collection(s, cid, me)
            return page(request, s, me, "qrels.html", status=_status(error), error=_error_doc(error),
                        **_qrels_context(s, coll, me, None, None, None))

    # ------------------------------------------------------- organisers: pools, reusability
    @get("/c/{cid:int}/pools", sync_to_thread=True)
    def pools_page(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                   viewer: NamedDependency[Principal]) -> Any:
        from service.evaluation import analyses, judging
        from service.store.models import Pool

        coll = views.collection(s, cid, viewer)
        if viewer.role is None:
            return Redirect(path=f"/login?next=/c/{cid}/pools", status_code=303)
        viewer.require_organiser(cid)
        pools = [judging.pool_doc(s, p, viewer) for p in s.scalars(
            select(Pool).where(Pool.collection_id == cid).order_by(Pool.number.desc()))]
        latest = analyses.latest(s, coll, viewer)
        analysis = analyses.doc(s, latest, viewer) if latest is not None else None
        return page(request, s, viewer, "pools.html", pools=pools, analysis=analysis,
                    assessors=judging.assignments(s, coll, viewer), metrics=list(coll.current_config.metrics),
                    **coll_context(s, coll, viewer))

    @post("/c/{cid:int}/pools")
    async def pools_action(request: Request, cid: FromPath[int]) -> Redirect:
        form, secret = await checked_form(request)

        def work() -> None:
            from service.evaluation import analyses, judging
            from service.store.db import transaction

            def me_of(s: Session) -> Principal:
                me = me_from(secret)(s)
                views.collection(s, cid, me)
                return me

            if form.get("action") == "pool":
                depth = str(form.get("depth", "")).strip()
                if not depth.isdigit():
                    raise InvalidMeasure("the pool depth is a positive integer")
                priority = str(form.get("max_priority") or "")
                judging.create_pool(factory, me_of, cid, int(depth), str(form.get("selection") or "all"),
                                    int(priority) if priority.isdigit() else None)
            elif form.get("action") == "analyse":
                with transaction(factory) as s:
                    me = me_of(s)
                    _, followups = analyses.request(s, views.collection(s, cid, me), me,
                                                    str(form.get("metric") or "") or None)
                send(followups)
            else:
                raise InvalidMeasure("unknown action")

        await _in_thread(work)
        return Redirect(path=f"/c/{cid}/pools", status_code=303)

    # ------------------------------------------------------------------------ assessors
    @get("/assess", sync_to_thread=True)
    def assess_page(request: Request, s: NamedDependency[Session], viewer: NamedDependency[Principal],
                    accepted: FromQuery[int | None] = None) -> Any:
        from service.evaluation import judging

        if viewer.role is None:
            return Redirect(path="/login?next=/assess", status_code=303)
        return page(request, s, viewer, "assess.html", items=judging.assessments(s, viewer), error=None,
                    accepted=accepted)

    @get("/assess/{pid:int}/{topic:str}", sync_to_thread=True, media_type="text/plain")
    def assess_file(pid: FromPath[int], topic: FromPath[str], s: NamedDependency[Session],
                    viewer: NamedDependency[Principal]) -> Response[str]:
        from service.evaluation import judging

        body = judging.assessment_file(s, pid, viewer, topic)
        return Response(body, media_type="text/plain", headers={
            "Content-Disposition": f'attachment; filename="pool{pid}-{_file(topic)}.txt"'})

    @post("/assess/{pid:int}")
    async def assess_upload(request: Request, pid: FromPath[int]) -> Any:
        from service.evaluation import judging

        _, body, filename, secret = await read_upload(request, "judgments")
        doc, error = await _in_thread(lambda: attempt(filename, body, "judgments", lambda: judging.submit_judgments(
            factory, me_from(secret), pid, body, source=filename)))
        if doc is not None:
            return Redirect(path=f"/assess?accepted={len(doc['topics'])}", status_code=303)
        with factory() as s:
            me = viewer(request, s)
            return page(request, s, me, "assess.html", status=_status(error), items=judging.assessments(s, me),
                        error=_error_doc(error), accepted=None)

    # ----------------------------------------------------------------------- snapshots
    @get("/c/{cid:int}/snapshots", sync_to_thread=True)
    def snapshots_page(request: Request, cid: FromPath[int], s: NamedDependency[Session],
                       viewer: NamedDependency[Principal]) -> Template:
        coll = views.collection(s, cid, viewer)
        return page(request, s, viewer, "snapshots.html", snapshots=views.snapshots(s, coll, viewer),
                    **coll_context(s, coll, viewer))

    @post("/c/{cid:int}/snapshots")
    async def freeze(request: Request, cid: FromPath[int]) -> Redirect:
        form, secret = await checked_form(request)

        def work() -> int:
            from service.store.db import transaction

            with transaction(factory) as s:
                me = me_from(secret)(s)
                return views.freeze(s, views.collection(s, cid, me), me, str(form.get("metric") or "") or None,
                                    str(form.get("label", "")).strip())["id"]

        sid = await _in_thread(work)
        return Redirect(path=f"/snapshots/{sid}", status_code=303)

    @get("/snapshots/{sid:int}", sync_to_thread=True)
    def snapshot_page(request: Request, sid: FromPath[int], s: NamedDependency[Session],
                      viewer: NamedDependency[Principal]) -> Template:
        snap = views.snapshot(s, sid, viewer)
        coll = views.collection(s, snap["collection_id"], viewer)
        chart = charts.interval_chart(snap["rows"], snap["metric"]) if snap["rows"] else None
        return page(request, s, viewer, "snapshot.html", snap=snap, chart=chart, **coll_context(s, coll, viewer))

    # --------------------------------------------------------------------------- errors
    def error_page(request: Request, exc: Exception) -> Response[Any]:
        status, title = _STATUS.get(type(exc), (500, "Something went wrong"))
        if isinstance(exc, HTTPException):
            status, title = exc.status_code, "Request not accepted"
        if isinstance(exc, InvalidInput):
            status, title = 422, "The upload is not valid"
        message = str(exc.detail) if isinstance(exc, HTTPException) else str(exc)
        with factory() as s:
            try:
                me = viewer(request, s)
            except Exception:  # noqa: BLE001  (the database itself may be the error)
                me = Principal()
            return page(request, s, me, "error.html", status=status, title=title, message=message,
                        signin=status == 401)

    handlers = [index, login_form, login, logout, board, board_csv_file, board_tex_file, run_page, compare_page,
                significance_page, changes_page, analysis_page, submit_form, submit, my_runs, progress, qrels_page,
                qrels_upload, snapshots_page, freeze, snapshot_page, pools_page, pools_action, analysis_action,
                assess_page, assess_file, assess_upload]
    return Router(path="/", route_handlers=handlers, include_in_schema=False,
                  dependencies={"s": Provide(db), "viewer": Provide(viewer, sync_to_thread=True)},
                  # every class the API maps to JSON, so that pages answer errors with a page
                  exception_handlers={cls: error_page for cls in (Exception, HTTPException, *_STATUS)})


_STATUS: dict[type, tuple[int, str]] = {
    Unauthenticated: (401, "Please sign in"), Forbidden: (403, "Not allowed"), NotFound: (404, "Not found"),
    Conflict: (409, "Not possible now"), InvalidMeasure: (400, "Bad request"), ValueError: (400, "Bad request"),
    InvalidInput: (422, "The upload is not valid"), OverflowError: (400, "Bad request"),
    IntegrityError: (409, "Not possible now"),
}


def _status(exc: Exception | None) -> int:
    return 422 if isinstance(exc, InvalidInput) else 400 if isinstance(exc, InvalidMeasure) else 409


def _error_doc(exc: Exception | None) -> dict[str, Any]:
    if isinstance(exc, InvalidInput):
        return {"source": exc.source, "line": exc.line, "reason": exc.reason}
    return {"source": None, "line": None, "reason": str(exc)}


def _local(target: str) -> str:
    """Only same-site paths as redirect targets (no open redirect through ?next=)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def _file(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in name)


async def _in_thread(fn: Callable[[], Any]) -> Any:
    import anyio

    return await anyio.to_thread.run_sync(fn)
