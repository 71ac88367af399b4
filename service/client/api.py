"""A typed client of Cranfield's public HTTP API, over httpx.

Each method is one operation of the OpenAPI document (``/schema/openapi.json``), named in its
docstring by the operation id. Nothing of the service is imported (a layering test checks it):
the client knows the server only through the API, so it works against any Cranfield server.

Errors are the domain errors of :mod:`service.errors`, rebuilt from the problem documents
(RFC 9457) the server answers with: a 401 is :class:`Unauthenticated`, a refused upload an
:class:`InvalidInput` naming its line, and so on; :func:`status_of` and :func:`problem_of` give
the answer's status and document. A request whose connection fails is sent again (reads, and
uploads with an ``Idempotency-Key``, which the server stores once), as is one answered 503,
after the Retry-After it names.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Self

import httpx

from service.errors import (
    BadRequest,
    Conflict,
    CranfieldError,
    Forbidden,
    InvalidInput,
    InvalidRequest,
    NotFound,
    TooLarge,
    Unauthenticated,
    Unavailable,
)

Json = dict[str, Any]
Progress = Callable[[int, int], None]  # (bytes sent, bytes in all)
RunType = Literal["automatic", "manual", "interactive"]

USER_AGENT = "cranfield-remote/1"
CHUNK = 64 * 1024  # upload chunk: one progress step
MAX_RETRY_WAIT = 30.0  # longest sleep before a retry, whatever Retry-After says

#: The API operations the client calls: operation id -> (method, path template), as in the
#: OpenAPI document (the integration test checks them against the served one).
OPERATIONS: dict[str, tuple[str, str]] = {
    "listCollections": ("GET", "/api/collections"),
    "getCollection": ("GET", "/api/collections/{cid}"),
    "listRuns": ("GET", "/api/collections/{cid}/runs"),
    "submitRun": ("POST", "/api/collections/{cid}/runs"),
    "getRun": ("GET", "/api/runs/{rid}"),
    "getJob": ("GET", "/api/jobs/{jid}"),
    "getLeaderboard": ("GET", "/api/collections/{cid}/leaderboard"),
    "getRunScores": ("GET", "/api/runs/{rid}/scores"),
    "submitJudgments": ("POST", "/api/collections/{cid}/judge-submissions"),
    "getJudgeBoard": ("GET", "/api/collections/{cid}/judge-board"),
    "downloadJudgePool": ("GET", "/api/collections/{cid}/judge-track/pool"),
    "declareReproduction": ("POST", "/api/runs/{rid}/reproduction"),
    "getReproducibilityBoard": ("GET", "/api/collections/{cid}/reproducibility"),
}

_BY_STATUS: dict[int, type[CranfieldError]] = {400: BadRequest, 401: Unauthenticated, 403: Forbidden, 404: NotFound,
                                                409: Conflict, 413: TooLarge, 422: InvalidRequest}


class RemoteError(CranfieldError):
    """The server could not be reached, failed (5xx), or answered something that is not the API's."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of the answer an error was rebuilt from (None: no answer)."""
    return getattr(exc, "status", None)


def problem_of(exc: BaseException) -> Json:
    """The problem document of the answer an error was rebuilt from ({} when there was none)."""
    return getattr(exc, "problem", None) or {}


def error_for(response: httpx.Response) -> CranfieldError:
    """The domain error of an error answer, carrying its ``status`` and ``problem`` document."""
    status = response.status_code
    try:
        doc = response.json()
    except ValueError:
        doc = None
    problem: Json = doc if isinstance(doc, dict) else {}
    detail = str(problem.get("detail") or "").strip()
    if not detail:  # not the API's answer (a proxy's page, say): its first line, or the reason
        detail = response.text.strip().split("\n", 1)[0][:200] if not problem else ""
        detail = detail or response.reason_phrase or "no detail"
    where = f"HTTP {status} {response.reason_phrase}".rstrip()
    exc: CranfieldError
    if status == 422 and "line" in problem:  # an upload refused: its file and line
        exc = InvalidInput(str(problem.get("source") or "upload"), problem.get("line"), detail)
    elif status == 503:
        retry = _retry_after(response)
        exc = Unavailable(f"{where}: {detail}", retry_after=int(retry) if retry is not None else 5)
    else:
        exc = _BY_STATUS.get(status, RemoteError)(f"{where}: {detail}")
    exc.status = status  # type: ignore[attr-defined]
    exc.problem = problem  # type: ignore[attr-defined]
    return exc


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


@dataclass(frozen=True)
class RunMetadata:
    """What a participant says about a run when submitting it; a field left None is not sent
    (the server's default applies)."""

    description: str | None = None
    run_type: RunType | None = None
    uses_training_data: bool | None = None
    uses_external_resources: bool | None = None
    priority: int | None = None
    primary: bool | None = None

    def form(self) -> dict[str, str]:
        """The multipart form fields of the submitRun operation."""
        fields: dict[str, str] = {}
        for name in ("description", "run_type", "uses_training_data", "uses_external_resources", "priority",
                     "primary"):
            value = getattr(self, name)
            if value is not None:
                fields[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return fields


@dataclass(frozen=True)
class Upload:
    """A file to send: its name (as the server will call it) and bytes."""

    name: str
    data: bytes
    media_type: str = "application/octet-stream"

    def __post_init__(self) -> None:
        # httpx takes bytes or a file, not a bytearray (what a gzipped file inflates to:
        # service/formats/compressed.py); the copy is one buffer, as the encoded body is
        if not isinstance(self.data, bytes):
            object.__setattr__(self, "data", bytes(self.data))


class Client:
    """Cranfield's API at ``url`` (with any path prefix), as the bearer of ``token`` (None:
    anonymous). ``retries``: how often a retryable request is sent again."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 60.0, retries: int = 3,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.retries = retries
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=httpx.Timeout(timeout, connect=10.0),
                                  transport=transport, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ transport
    def _send(self, method: str, path: str, *, params: dict[str, Any] | None = None,
              body: Callable[[], Any] | None = None, headers: dict[str, str] | None = None,
              retry: bool = True, timeout: httpx.Timeout | None = None) -> httpx.Response:
        """One operation; ``body()`` makes the content anew for each attempt (a stream is used
        up by a failed one). With ``retry``, a failed connection or a 503 is tried again."""
        attempts = 1 + (self.retries if retry else 0)
        params = {k: v for k, v in (params or {}).items() if v is not None}
        for attempt in range(attempts):
            last = attempt + 1 == attempts
            try:
                response = self._http.request(method, path, params=params, content=body() if body else None,
                                              headers=headers, timeout=timeout or httpx.USE_CLIENT_DEFAULT)
            except httpx.TransportError as exc:
                if last:
                    raise RemoteError(f"cannot reach {self.url}: {_describe(exc)}") from None
                time.sleep(min(0.5 * 2 ** attempt, MAX_RETRY_WAIT))
                continue
            if response.status_code == 503 and not last:
                wait = _retry_after(response)
                time.sleep(min(wait if wait is not None else 1.0, MAX_RETRY_WAIT))
                continue
            if response.is_error:
                raise error_for(response)
            return response
        raise AssertionError("unreachable")  # the loop returns or raises

    @staticmethod
    def _path(operation: str, **ids: int) -> str:
        return OPERATIONS[operation][1].format(**ids)

    def _json(self, path: str, **params: Any) -> Json:
        response = self._send("GET", path, params=params)
        try:
            doc = response.json()
        except ValueError:
            raise RemoteError(f"{self.url}{path} did not answer JSON: is this a Cranfield server?") from None
        if not isinstance(doc, dict):
            raise RemoteError(f"{self.url}{path} answered an unexpected document: is this a Cranfield server?")
        return doc

    def _pages(self, path: str, limit: int, **params: Any) -> tuple[list[Json], Json]:
        """Every item of a paged listing, and its first page (for the listing's other members)."""
        items: list[Json] = []
        first: Json | None = None
        while True:
            page = self._json(path, **params, offset=len(items), limit=limit)
            first = first or page
            batch = page.get("items")
            if not isinstance(batch, list):
                raise RemoteError(f"{self.url}{path} answered no items: is this a Cranfield server?")
            items.extend(batch)
            if not batch or len(items) >= int(page.get("total", 0)):
                return items, first

    # ------------------------------------------------------------------ collections
    def collections(self) -> list[Json]:
        """listCollections, every page: the collections the caller may read."""
        return self._pages(self._path("listCollections"), 200)[0]

    def collection(self, cid: int) -> Json:
        """getCollection."""
        return self._json(self._path("getCollection", cid=cid))

    def find_collection(self, ref: str) -> Json:
        """A collection by id (digits) or by name (among those listCollections shows)."""
        if ref.strip().isdigit():
            return self.collection(int(ref))
        for coll in self.collections():
            if coll.get("name") == ref:
                return coll
        raise NotFound(f"no collection named {ref!r} is visible to this caller (by id it may be: use its number)")

    # ------------------------------------------------------------------ runs
    def runs(self, cid: int) -> Json:
        """listRuns, every page: ``items`` and the caller's ``quota`` (None when none is set)."""
        items, first = self._pages(self._path("listRuns", cid=cid), 500)
        return {"total": len(items), "items": items, "quota": first.get("quota")}

    def run(self, rid: int) -> Json:
        """getRun."""
        return self._json(self._path("getRun", rid=rid))

    def submit_run(self, cid: int, run: Upload, metadata: RunMetadata | None = None, *, team: str | None = None,
                   ir_metadata: Upload | None = None, idempotency_key: str | None = None,
                   progress: Progress | None = None, reproduces: int | None = None) -> Json:
        """submitRun: the run and its metadata as a multipart form; ``progress(sent, total)``
        is called as the body goes out. The body is encoded once, so a retry (only with an
        ``idempotency_key``) sends the very same bytes under the same key."""
        files = {"file": (run.name, run.data, run.media_type)}
        if ir_metadata is not None:
            files["ir_metadata"] = (ir_metadata.name, ir_metadata.data, ir_metadata.media_type)
        encoded = httpx.Request("POST", self.url, data=(metadata or RunMetadata()).form(), files=files)
        data = encoded.read()
        headers = {"Content-Type": encoded.headers["Content-Type"], "Content-Length": str(len(data))}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key

        def chunks() -> Iterator[bytes]:
            for start in range(0, len(data), CHUNK):
                yield data[start: start + CHUNK]
                if progress is not None:
                    progress(min(start + CHUNK, len(data)), len(data))

        response = self._send("POST", self._path("submitRun", cid=cid), params={"team": team,
                                                                                "reproduces": reproduces}, body=chunks,
                              headers=headers, retry=idempotency_key is not None,
                              timeout=httpx.Timeout(600.0, connect=10.0))  # the server validates the file
        return response.json()  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ a judges track
    def submit_judgments(self, cid: int, judgments: Upload, name: str, *, model: str | None = None,
                         prompt: str | None = None, judged_on: str | None = None, notes: str | None = None,
                         idempotency_key: str | None = None) -> Json:
        """submitJudgments: an automatic judge's qrels for the collection's pool, as a version of
        the team's judgment set ``name`` (retried only with an ``idempotency_key``)."""
        headers = {"Content-Type": "text/plain"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        params = {"name": name, "model": model, "prompt": prompt, "judged_on": judged_on, "notes": notes,
                  "filename": judgments.name or None}  # errors name the file
        response = self._send("POST", self._path("submitJudgments", cid=cid), params=params,
                              body=lambda: judgments.data, headers=headers,
                              retry=idempotency_key is not None, timeout=httpx.Timeout(600.0, connect=10.0))
        return response.json()  # type: ignore[no-any-return]

    def judge_board(self, cid: int) -> Json:
        """getJudgeBoard: the submitted judges ranked by agreement with the official judgments."""
        return self._json(self._path("getJudgeBoard", cid=cid))

    def judge_pool(self, cid: int) -> str:
        """downloadJudgePool: the documents to judge, a ``topic docno`` line each."""
        return self._send("GET", self._path("downloadJudgePool", cid=cid)).text

    # ------------------------------------------------------------------ a reproducibility track
    def declare_reproduction(self, rid: int, original_run: int, advanced_run: int | None = None,
                             original_advanced_run: int | None = None) -> Json:
        """declareReproduction: run ``rid`` reproduces ``original_run``; with the two others, the
        pair (``rid``, ``advanced_run``) reproduces the original pair."""
        body = json.dumps({"original_run": original_run, "advanced_run": advanced_run,
                           "original_advanced_run": original_advanced_run}).encode()
        response = self._send("POST", self._path("declareReproduction", rid=rid), body=lambda: body,
                              headers={"Content-Type": "application/json"})
        return response.json()  # type: ignore[no-any-return]

    def reproducibility_board(self, cid: int, metric: str | None = None) -> Json:
        """getReproducibilityBoard: every reproduction with its measures and verdict."""
        return self._json(self._path("getReproducibilityBoard", cid=cid), metric=metric)

    def reproducibility_csv(self, cid: int, metric: str | None = None) -> str:
        """getReproducibilityBoard as CSV."""
        return self._send("GET", self._path("getReproducibilityBoard", cid=cid),
                          params={"format": "csv", "metric": metric}).text

    # ------------------------------------------------------------------ jobs
    def job(self, jid: int) -> Json:
        """getJob: an evaluation job's status and progress (organisers)."""
        return self._json(self._path("getJob", jid=jid))

    # ------------------------------------------------------------------ boards and results
    def leaderboard(self, cid: int, metric: str | None = None, primary_only: bool = False) -> Json:
        """getLeaderboard as JSON."""
        return self._json(self._path("getLeaderboard", cid=cid), metric=metric,
                          primary_only="true" if primary_only else None)

    def leaderboard_text(self, cid: int, fmt: Literal["csv", "latex"], metric: str | None = None,
                         primary_only: bool = False) -> str:
        """getLeaderboard as the server renders it in CSV or LaTeX."""
        return self._send("GET", self._path("getLeaderboard", cid=cid), params={
            "format": fmt, "metric": metric, "primary_only": "true" if primary_only else None}).text

    def run_scores(self, rid: int, metric: str | None = None) -> Json:
        """getRunScores: the run's per-topic scores of one metric (default: the official one)."""
        return self._json(self._path("getRunScores", rid=rid), metric=metric)

    def run_scores_trec(self, rid: int, metric: str | None = None) -> str | None:
        """getRunScores in trec_eval's ``-q`` layout, as the server writes it; None from a
        server without that format (it refuses the parameter, or answers JSON)."""
        try:
            response = self._send("GET", self._path("getRunScores", rid=rid),
                                  params={"format": "trec", "metric": metric})
        except (BadRequest, InvalidRequest) as exc:
            if metric is None or "format" in str(exc):
                return None
            raise
        if "json" in response.headers.get("content-type", ""):
            return None
        return response.text


def _describe(exc: httpx.TransportError) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
