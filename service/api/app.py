"""The Litestar application: thin handlers over service.evaluation, one error table.

The API never computes a metric: uploads are validated and stored, evaluation work is
handed to the workers through ``dispatch`` (injected by the composition root, so this
package does not import the workers), and reads come from stored results.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from litestar import Litestar, Request, Response, delete, get, patch, post, put
from litestar.di import NamedDependency, Provide
from litestar.exceptions import HTTPException
from litestar.openapi import OpenAPIConfig
from litestar.serialization import encode_json
from litestar.params import FromPath, FromQuery, JSONBody
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import service
from service.errors import InvalidInput, InvalidMeasure
from service.evaluation import access, analyses, judging, views
from service.evaluation.exports import board_csv, board_latex
from service.evaluation.access import Conflict, Forbidden, NotFound, Principal, Unauthenticated
from service.evaluation.pipeline import Followup, plan_job
from service.evaluation.reading import qrels_diff
from service.evaluation.reading import jobs as list_jobs
from service.evaluation.setup import ConfigSpec, audit, set_config
from service.store.db import session_factory, transaction
from service.store.models import ApiToken, Collection, Job, Team

Dispatch = Callable[[list[Followup]], None]
DEFAULT_MAX_BODY = 256 * 1024 * 1024


# ------------------------------------------------------------------------------- errors
def _error(status: int, code: str, message: str, **details: Any) -> Response[dict[str, Any]]:
    return Response({"error": {"code": code, "message": message, **details}}, status_code=status)


def _handlers() -> dict[Any, Callable[[Request, Exception], Response[Any]]]:
    def invalid_input(_: Request, exc: Exception) -> Response[Any]:
        assert isinstance(exc, InvalidInput)
        return _error(422, "invalid_input", exc.reason, source=exc.source, line=exc.line)

    def table(status: int, code: str) -> Callable[[Request, Exception], Response[Any]]:
        return lambda _, exc: _error(status, code, str(exc))

    def http(_: Request, exc: Exception) -> Response[Any]:
        assert isinstance(exc, HTTPException)
        return _error(exc.status_code, "http_error", str(exc.detail))

    from sqlalchemy.exc import DataError, IntegrityError

    return {
        InvalidInput: invalid_input,
        InvalidMeasure: table(400, "bad_request"),
        ValueError: table(400, "bad_request"),
        OverflowError: lambda _, exc: _error(400, "bad_request", "a number in the request is out of range"),
        DataError: lambda _, exc: _error(400, "bad_request", "a value in the request is out of range"),
        IntegrityError: lambda _, exc: _error(409, "conflict", "a concurrent change got there first; try again"),
        Unauthenticated: table(401, "unauthenticated"),
        Forbidden: table(403, "forbidden"),
        NotFound: table(404, "not_found"),
        Conflict: table(409, "conflict"),
        HTTPException: http,
    }


# ------------------------------------------------------------------------- dependencies
def create_app(database_url: str, dispatch: Dispatch, *, max_body: int = DEFAULT_MAX_BODY,
               readiness: Callable[[], dict[str, bool]] | None = None, board_ttl: float = 1.0) -> Litestar:
    """``board_ttl``: seconds a rendered leaderboard is served from memory (per collection,
    metric, format and audience); new results show within that time."""
    factory: sessionmaker[Session] = session_factory(database_url)
    board_cache: dict[tuple[Any, ...], tuple[float, bytes, str]] = {}

    def db(request: Request) -> Iterator[Session]:
        with factory() as s:
            if request.method not in ("GET", "HEAD"):
                # A writing request takes SQLite's write lock when it begins (no lock upgrade
                # to fail midway); a no-op on PostgreSQL.
                s.connection(execution_options={"sqlite_immediate": True})
            yield s
            if request.method not in ("GET", "HEAD"):
                board_cache.clear()  # this instance's own changes show at once

    def caller(request: Request, s: NamedDependency[Session]) -> Principal:
        return access.principal_for(s, request.headers.get("authorization"))

    def send(followups: list[Followup]) -> None:
        dispatch(followups)
        board_cache.clear()

    # ------------------------------------------------------------------- health
    @get("/health/live", sync_to_thread=False)
    def live() -> dict[str, str]:
        return {"status": "ok", "version": service.__version__}

    @get("/health/ready", sync_to_thread=True)
    def ready(s: NamedDependency[Session]) -> Response[dict[str, Any]]:
        checks = {"database": True}
        try:
            s.execute(select(1))
        except Exception:  # noqa: BLE001
            checks["database"] = False
        if readiness is not None:
            checks.update(readiness())
        return Response({"ready": all(checks.values()), "checks": checks},
                        status_code=200 if all(checks.values()) else 503)

    # --------------------------------------------------------------- teams, tokens
    @post("/api/teams", sync_to_thread=True)
    def create_team(data: JSONBody[dict[str, Any]], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        if not (me.is_admin or me.role == "organiser"):
            me.require_authenticated()
            raise Forbidden("only admins and organisers create teams")
        name = str(data.get("name", "")).strip()
        if not name:
            raise InvalidMeasure("a team needs a name")
        if s.scalar(select(Team.id).where(Team.name == name)) is not None:
            raise Conflict(f"team {name!r} exists")
        team = Team(name=name)
        s.add(team)
        s.commit()
        return {"id": team.id, "name": team.name}

    @post("/api/tokens", sync_to_thread=True)
    def create_token(data: JSONBody[dict[str, Any]], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        role = data.get("role")
        collections = [int(c) for c in data.get("collections", [])]
        me.require_authenticated()
        if me.is_admin:
            pass
        elif me.role == "organiser" and role == "participant":
            pass  # organisers give their participants tokens
        elif me.role == "organiser" and role == "assessor" and collections and all(me.can_organise(c) for c in collections):
            pass  # and their assessors, for their own collections
        else:
            raise Forbidden("admins create any token; organisers create participant tokens, and assessor tokens "
                            "for their collections")
        topics = data.get("topics")
        if topics is not None and (not isinstance(topics, list) or not all(isinstance(x, str) for x in topics)):
            raise InvalidMeasure("topics is a list of topic ids")
        secret, token = access.create_token(s, str(role), name=str(data.get("name", "")), team=data.get("team"),
                                            collections=collections, topics=topics, actor=me.name)
        s.commit()
        return {"id": token.id, "token": secret, "role": token.role, "prefix": token.prefix,
                "note": "the token is shown only once"}

    # ----------------------------------------------------------------- collections
    _collection, _collection_doc, _denied = views.collection, views.collection_doc, views.denied
    _public_view, _hidden, _run, _run_doc = views.public_view, views.hidden_topics, views.run, views.run_doc

    @post("/api/collections", sync_to_thread=True)
    def create_collection(data: JSONBody[dict[str, Any]], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        me.require_admin()
        name = str(data.get("name", "")).strip()
        if not name:
            raise InvalidMeasure("a collection needs a name")
        if s.scalar(select(Collection.id).where(Collection.name == name)) is not None:
            raise Conflict(f"collection {name!r} exists")
        coll = Collection(name=name, description=str(data.get("description", "")))
        s.add(coll)
        s.flush()
        _apply_settings(s, coll, data, me, new=True)
        audit(s, me.name, "collection.create", coll.id, name=name)
        s.commit()
        return _collection_doc(coll, me)

    @get("/api/collections", sync_to_thread=True)
    def list_collections(s: NamedDependency[Session], me: NamedDependency[Principal], offset: FromQuery[int] = 0, limit: FromQuery[int] = 50) -> dict[str, Any]:
        rows = views.visible_collections(s, me)
        page = rows[max(offset, 0): max(offset, 0) + min(max(limit, 1), 200)]
        return {"total": len(rows), "offset": offset, "items": [_collection_doc(c, me) for c in page]}

    @get("/api/collections/{cid:int}", sync_to_thread=True)
    def get_collection(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        return _collection_doc(_collection(s, cid, me), me)

    @patch("/api/collections/{cid:int}", sync_to_thread=True)
    def update_collection(cid: FromPath[int], data: JSONBody[dict[str, Any]], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        coll = _collection(s, cid, me)
        me.require_organiser(coll.id)
        before = coll.current_config_id
        _apply_settings(s, coll, data, me, new=False)
        followups: list[Followup] = []
        if coll.current_config_id != before and coll.current_qrels_id is not None:
            # a new configuration: bring the stored results up to date now, not at the next refresh
            _, followups = plan_job(s, coll, "config")
        s.commit()
        send(followups)
        return _collection_doc(coll, me)

    def _apply_settings(s: Session, coll: Collection, data: dict[str, Any], me: Principal, new: bool) -> None:
        cfg = coll.current_config
        keys = ("official_metric", "metrics", "levels", "evaluation", "significance", "hidden_topics")
        if "hidden_topics" in data:  # shorthand for the configuration's evaluation.hidden_topics
            data = {**data, "evaluation": {**(data.get("evaluation") or (cfg.evaluation if cfg else {})),
                                           "hidden_topics": data["hidden_topics"]}}
        if new or any(k in data for k in keys):
            spec = ConfigSpec(
                official_metric=data.get("official_metric", cfg.official_metric if cfg else "AP"),
                metrics=tuple(data.get("metrics", cfg.metrics if cfg else ConfigSpec().metrics)),
                levels=tuple(data.get("levels", cfg.levels if cfg else ())),
                evaluation=data.get("evaluation", cfg.evaluation if cfg else {}),
                significance=data.get("significance", cfg.significance if cfg else {}),
            )
            set_config(s, coll, spec, me.name)
        if "visibility" in data:
            if data["visibility"] not in ("public", "private"):
                raise InvalidMeasure("visibility is public or private")
            coll.visibility = data["visibility"]
        for key in ("submission_opens_at", "submission_closes_at"):
            if key in data:
                setattr(coll, key, _parse_time(data[key], key))
        if "daily_run_quota" in data:
            quota = data["daily_run_quota"]
            if quota is not None and (not isinstance(quota, int) or quota < 1):
                raise InvalidMeasure("daily_run_quota is a positive integer or null")
            coll.daily_run_quota = quota
        if "topics_revealed" in data:
            coll.topics_revealed = bool(data["topics_revealed"])
            audit(s, me.name, "topics.reveal", coll.id, revealed=coll.topics_revealed)
        if "leaderboard_released" in data:
            coll.leaderboard_released = bool(data["leaderboard_released"])
            audit(s, me.name, "leaderboard.release", coll.id, released=coll.leaderboard_released)
        if "description" in data:
            coll.description = str(data["description"])

    # ------------------------------------------------------------------------ qrels
    @get("/api/collections/{cid:int}/qrels", sync_to_thread=True)
    def list_qrels(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        coll = _collection(s, cid, me)
        return views.qrels_versions(s, coll, me)

    # ------------------------------------------------------------------------- runs
    @get("/api/collections/{cid:int}/runs", sync_to_thread=True)
    def list_runs(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal], offset: FromQuery[int] = 0, limit: FromQuery[int] = 100) -> dict[str, Any]:
        coll = _collection(s, cid, me)
        runs = views.runs_of(s, coll, me)
        page = runs[max(offset, 0): max(offset, 0) + min(max(limit, 1), 500)]
        return {"total": len(runs), "offset": offset, "items": [_run_doc(r) for r in page],
                **views.quota_doc(s, coll, me)}

    @get("/api/runs/{rid:int}", sync_to_thread=True)
    def get_run(rid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        return _run_doc(_run(s, rid, me)[0])

    @get("/api/runs/{rid:int}/file", sync_to_thread=True, media_type="text/plain")
    def download_run(rid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> Response[bytes]:
        run, coll = _run(s, rid, me)
        if not (me.can_organise(coll.id) or (me.role == "participant" and run.team_id == me.team_id)):
            raise Forbidden("only the submitting team and the organisers may download a run")
        import zlib

        return Response(zlib.decompress(run.file), media_type="text/plain")

    @delete("/api/runs/{rid:int}", sync_to_thread=True, status_code=200)
    def delete_run(rid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        run, coll = _run(s, rid, me)
        me.require_organiser(coll.id)
        audit(s, me.name, "run.delete", coll.id, run=run.tag, checksum=run.checksum)
        s.delete(run)
        s.commit()
        return {"deleted": rid}

    # -------------------------------------------------------------------- reading
    @get("/api/collections/{cid:int}/leaderboard", sync_to_thread=True)
    def leaderboard(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal],
                    metric: FromQuery[str | None] = None, format: FromQuery[str] = "json",  # noqa: A002
                    primary_only: FromQuery[bool] = False, qrels_version: FromQuery[int | None] = None,
                    test: FromQuery[str | None] = None) -> Response[Any]:
        # Served from memory for board_ttl seconds per caller identity: the rendered bytes,
        # after the access checks that produced them (so a change of visibility also shows
        # within board_ttl). Token checks (principal_for) still run on every request.
        key = (cid, metric, format, primary_only, qrels_version, test, me.role, me.team_id, me.organises)
        # (the public/private split depends on the collection's state: covered by board_ttl)
        hit = board_cache.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return Response(hit[1], media_type=hit[2])
        coll = _collection(s, cid, me)
        response = _leaderboard_response(s, coll, me, metric, format, primary_only, qrels_version, test)
        body = response.content if isinstance(response.content, (bytes, str)) else encode_json(response.content)
        body = body.encode() if isinstance(body, str) else body
        media = response.media_type if isinstance(response.content, (bytes, str)) else "application/json"
        if len(board_cache) > 1024:
            board_cache.clear()
        board_cache[key] = (time.monotonic() + board_ttl, body, media)
        return Response(body, media_type=media)

    def _leaderboard_response(s: Session, coll: Collection, me: Principal, metric: str | None, format: str,  # noqa: A002
                              primary_only: bool, qrels_version: int | None = None,
                              test: str | None = None) -> Response[Any]:
        doc = views.leaderboard_doc(s, coll, me, metric, primary_only, qrels_version, test)
        if format == "csv":
            return Response(board_csv(doc), media_type="text/csv")
        if format == "latex":
            return Response(board_latex(doc), media_type="text/plain")
        if format != "json":
            raise InvalidMeasure("format is json, csv or latex")
        return Response(doc)

    @post("/api/collections/{cid:int}/snapshots", sync_to_thread=True)
    def freeze(cid: FromPath[int], data: JSONBody[dict[str, Any]], s: NamedDependency[Session],
               me: NamedDependency[Principal]) -> dict[str, Any]:
        coll = _collection(s, cid, me)
        me.require_organiser(coll.id)
        doc = views.freeze(s, coll, me, data.get("metric"), str(data.get("label", "")))
        s.commit()
        return doc

    @get("/api/collections/{cid:int}/snapshots", sync_to_thread=True)
    def list_snapshots(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        return {"items": views.snapshots(s, _collection(s, cid, me), me)}

    @get("/api/snapshots/{sid:int}", sync_to_thread=True)
    def get_snapshot(sid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        doc = views.snapshot(s, sid, me)
        doc.pop("collection_id")
        return doc

    @delete("/api/tokens/{tid:int}", sync_to_thread=True, status_code=200)
    def revoke_token(tid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        me.require_admin()
        token = s.get(ApiToken, tid)
        if token is None:
            raise NotFound(f"no token {tid}")
        token.revoked_at = datetime.now(UTC)
        audit(s, me.name, "token.revoke", None, token=token.prefix)
        s.commit()
        return {"revoked": tid}

    @get("/api/collections/{cid:int}/qrels/diff", sync_to_thread=True)
    def diff_qrels(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal],
                   old: FromQuery[int], new: FromQuery[int]) -> dict[str, Any]:
        coll = _collection(s, cid, me)
        me.require_organiser(coll.id)
        return qrels_diff(s, cid, old, new)

    @get("/api/runs/{rid:int}/scores", sync_to_thread=True)
    def run_scores(rid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal],
                   metric: FromQuery[str | None] = None) -> dict[str, Any]:
        return views.run_scores(s, rid, me, metric)

    @get("/api/collections/{cid:int}/compare", sync_to_thread=True)
    def compare(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal],
                a: FromQuery[int], b: FromQuery[int], metric: FromQuery[str | None] = None) -> dict[str, Any]:
        doc = views.compare(s, _collection(s, cid, me), me, a, b, metric)
        for key in ("a", "b", "test"):
            doc.pop(key)
        return doc

    @get("/api/runs/{rid:int}/curve", sync_to_thread=True)
    def run_curve(rid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        """J&K's average gain curves of a run on the current qrels, stored by the workers."""
        return views.run_curve(s, rid, me)

    @get("/api/collections/{cid:int}/metaeval", sync_to_thread=True)
    def metaeval(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        """Discriminative power and Kendall's tau of the collection's metrics (stored by the workers)."""
        return views.metaeval(s, _collection(s, cid, me), me)

    @get("/api/collections/{cid:int}/significance", sync_to_thread=True)
    def significance_matrix(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal],
                            metric: FromQuery[str | None] = None) -> dict[str, Any]:
        return views.significance_matrix(s, _collection(s, cid, me), me, metric)

    # A path of its own: with a PATCH on /api/runs/{rid}, Litestar 2.25 answered the GET of
    # that path with an un-awaited coroutine (a 500).
    @patch("/api/runs/{rid:int}/settings")
    async def update_run(rid: FromPath[int], request: Request) -> dict[str, Any]:
        data = await request.json()
        if not isinstance(data, dict):
            raise InvalidMeasure("send a JSON object")
        return await _in_thread(lambda: _update_run(rid, data, request.headers.get("authorization")))

    def _update_run(rid: int, data: dict[str, Any], auth: str | None) -> dict[str, Any]:
        with transaction(factory) as s:
            me = access.principal_for(s, auth)
            run, coll = _run(s, rid, me)
            if not (me.can_organise(coll.id) or (me.role == "participant" and run.team_id == me.team_id)):
                raise _denied(me, f"run {rid}")
            if "primary" in data:
                run.is_primary = bool(data["primary"])
            if "description" in data:
                run.description = str(data["description"])
            if "priority" in data:  # TREC's judging priority within the team (1 = judge first)
                priority = data["priority"]
                if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)
                                             or priority < 1):
                    raise InvalidMeasure("priority is a positive integer or null")
                run.judging_priority = priority
            if "baseline" in data:
                if not me.can_organise(coll.id):
                    raise Forbidden("only organisers mark baselines")
                run.is_baseline = bool(data["baseline"])
            return _run_doc(run)

    @get("/api/jobs/{jid:int}", sync_to_thread=True)
    def get_job(jid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        job = s.get(Job, jid)
        if job is None:
            raise NotFound(f"no job {jid}")
        me.require_organiser(job.collection_id)
        coll = s.get(Collection, job.collection_id)
        return next(j for j in list_jobs(s, coll.name) if j["id"] == jid)

    # The uploads read the body asynchronously (size-limited), then run a sync use case.
    @post("/api/collections/{cid:int}/qrels")
    async def upload_qrels_handler(cid: FromPath[int], request: Request) -> dict[str, Any]:
        body = await _read_stream(request)
        return await _in_thread(lambda: _upload_qrels(cid, body, request.headers.get("authorization")))

    async def _read_stream(request: Request) -> bytes:
        """The body, received chunk by chunk and refused (413) as soon as it passes max_body."""
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body:
                raise HTTPException(status_code=413, detail=f"the upload is larger than {max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _upload_qrels(cid: int, body: bytes, auth: str | None) -> dict[str, Any]:
        doc, followups = views.upload_qrels(factory, lambda s: access.principal_for(s, auth), cid, body)
        doc.pop("previous_version")
        send(followups)
        return doc

    @post("/api/collections/{cid:int}/runs")
    async def submit_run_handler(cid: FromPath[int], request: Request) -> dict[str, Any]:
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            form = await request.form()
            upload = form.get("file")
            if upload is None or isinstance(upload, str):
                raise InvalidMeasure("send the run as the form field 'file'")
            body = await upload.read()
        else:
            body = await _read_stream(request)
        team = request.query_params.get("team")
        return await _in_thread(lambda: _submit_run(cid, body, request.headers.get("authorization"), team))

    def _submit_run(cid: int, body: bytes, auth: str | None, team_param: str | None) -> dict[str, Any]:
        doc, followups = views.submit_run(factory, lambda s: access.principal_for(s, auth), cid, body, team_param)
        send(followups)
        return doc

    # ------------------------------------------------------------ topics, pools, judging
    @post("/api/collections/{cid:int}/topics", sync_to_thread=True)
    def add_topics(cid: FromPath[int], data: JSONBody[dict[str, Any]], s: NamedDependency[Session],
                   me: NamedDependency[Principal]) -> dict[str, Any]:
        """Register topics before any judgment exists, so runs can be submitted and pooled."""
        topics = data.get("topics")
        if not isinstance(topics, list):
            raise InvalidMeasure("send {\"topics\": [ids]}")
        out = judging.add_topics(s, _collection(s, cid, me), me, topics)
        s.commit()
        return {"topics": out}

    @post("/api/collections/{cid:int}/pools")
    async def create_pool(cid: FromPath[int], request: Request) -> dict[str, Any]:
        data = await request.json()
        if not isinstance(data, dict):
            raise InvalidMeasure("send a JSON object")
        auth = request.headers.get("authorization")
        selection = "primary" if data.get("primary_only") is True else str(data.get("selection", "all"))
        if data.get("max_priority") is not None and selection == "all":
            selection = "priority"

        def work() -> dict[str, Any]:
            from service.store.models import Pool

            def me_of(s: Session) -> Principal:
                me = access.principal_for(s, auth)
                _collection(s, cid, me)  # 401/403/404 as every collection endpoint
                return me

            pid = judging.create_pool(factory, me_of, cid, data.get("depth"), selection,  # type: ignore[arg-type]
                                      data.get("max_priority"))
            with factory() as s:
                return judging.pool_doc(s, s.get(Pool, pid), me_of(s))

        return await _in_thread(work)

    @get("/api/collections/{cid:int}/pools", sync_to_thread=True)
    def list_pools(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        from service.store.models import Pool

        _collection(s, cid, me)
        me.require_organiser(cid)
        pools = s.scalars(select(Pool).where(Pool.collection_id == cid).order_by(Pool.number))
        return {"items": [judging.pool_doc(s, p, me) for p in pools]}

    @get("/api/pools/{pid:int}", sync_to_thread=True)
    def get_pool(pid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        return judging.pool_doc(s, judging.get_pool(s, pid, me), me)

    @get("/api/pools/{pid:int}/topics/{topic:str}", sync_to_thread=True, media_type="text/plain")
    def assessment_file(pid: FromPath[int], topic: FromPath[str], s: NamedDependency[Session],
                        me: NamedDependency[Principal]) -> Response[str]:
        return Response(judging.assessment_file(s, pid, me, topic), media_type="text/plain")

    @get("/api/assessments", sync_to_thread=True)
    def list_assessments(s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        return {"items": judging.assessments(s, me)}

    @post("/api/pools/{pid:int}/judgments")
    async def upload_judgments(pid: FromPath[int], request: Request) -> dict[str, Any]:
        body = await _read_stream(request)
        auth = request.headers.get("authorization")

        def work() -> dict[str, Any]:
            doc, followups = judging.submit_judgments(factory, lambda s: access.principal_for(s, auth), pid, body)
            send(followups)
            return doc

        return await _in_thread(work)

    @get("/api/collections/{cid:int}/assessors", sync_to_thread=True)
    def list_assessors(cid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        return {"items": judging.assignments(s, _collection(s, cid, me), me)}

    @put("/api/collections/{cid:int}/assessors/{tid:int}", sync_to_thread=True)
    def assign(cid: FromPath[int], tid: FromPath[int], data: JSONBody[dict[str, Any]], s: NamedDependency[Session],
               me: NamedDependency[Principal]) -> dict[str, Any]:
        topics = data.get("topics")
        if not isinstance(topics, list) or not all(isinstance(x, str) for x in topics):
            raise InvalidMeasure("send {\"topics\": [ids]}")
        out = judging.set_assignment(s, _collection(s, cid, me), me, tid, topics)
        s.commit()
        return {"token_id": tid, "topics": out}

    @post("/api/collections/{cid:int}/analyses", sync_to_thread=True, status_code=202)
    def request_analysis(cid: FromPath[int], data: JSONBody[dict[str, Any]], s: NamedDependency[Session],
                         me: NamedDependency[Principal]) -> dict[str, Any]:
        """Queue an analysis of the current qrels for the workers: ``reusability`` (pool
        statistics, leave-one-team-out) or ``reduction`` (the reduced-judgment experiment)."""
        if data.get("kind", "reusability") == "reduction":
            kept = data.get("kept")
            if kept is not None and not isinstance(kept, list):
                raise InvalidMeasure("kept is a list of percentages")
            row, followups = analyses.request_reduction(s, _collection(s, cid, me), me, kept)
            s.commit()
            send(followups)
            return analyses.doc(s, row, me)
        if data.get("kind", "reusability") != "reusability":
            raise InvalidMeasure("kind is reusability or reduction")
        pool, metric = data.get("pool"), data.get("metric")
        if pool is not None and (not isinstance(pool, int) or isinstance(pool, bool)):
            raise InvalidMeasure("pool is a pool id")
        if metric is not None and not isinstance(metric, str):
            raise InvalidMeasure("metric is a metric name")
        row, followups = analyses.request(s, _collection(s, cid, me), me, metric, pool, data.get("depth"))
        s.commit()
        send(followups)
        return analyses.doc(s, row, me)

    @get("/api/analyses/{aid:int}", sync_to_thread=True)
    def get_analysis(aid: FromPath[int], s: NamedDependency[Session], me: NamedDependency[Principal]) -> dict[str, Any]:
        from service.store.models import Analysis

        row = s.get(Analysis, aid)
        if row is None:
            raise NotFound(f"no analysis {aid}")
        _collection(s, row.collection_id, me)
        return analyses.doc(s, row, me)

    handlers = [live, ready, create_team, create_token, create_collection, list_collections, get_collection,
                update_collection, list_qrels, list_runs, get_run, download_run, delete_run, leaderboard, get_job,
                upload_qrels_handler, submit_run_handler, diff_qrels, run_scores, compare, significance_matrix,
                update_run, freeze, list_snapshots, get_snapshot, revoke_token, metaeval, run_curve, add_topics,
                create_pool, list_pools, get_pool, assessment_file, list_assessments, upload_judgments, list_assessors,
                assign, request_analysis, get_analysis]
    from litestar.plugins.jinja import JinjaTemplateEngine
    from litestar.static_files import create_static_files_router
    from litestar.template.config import TemplateConfig

    from service.portal.routes import STATIC, TEMPLATES, portal_router

    return Litestar(
        route_handlers=[*handlers, portal_router(factory, send),
                        create_static_files_router(path="/static", directories=[STATIC], include_in_schema=False)],
        template_config=TemplateConfig(directory=TEMPLATES, engine=JinjaTemplateEngine),
        dependencies={"s": Provide(db), "me": Provide(caller, sync_to_thread=True)},
        exception_handlers=_handlers(),
        request_max_body_size=max_body,
        openapi_config=OpenAPIConfig(title="Cranfield", version=service.__version__, path="/schema"),
    )


async def _in_thread(fn: Callable[[], Any]) -> Any:
    import anyio

    return await anyio.to_thread.run_sync(fn)


def _parse_time(value: Any, key: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise InvalidMeasure(f"{key} is an ISO 8601 time, not {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
