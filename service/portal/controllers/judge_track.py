"""A judges track in the portal (issue 16): the judge board (the submitted judgment sets ranked
by how well the runs' ranking under them agrees with the ranking under the official set), the
organisers' settings and "compute now" button, and an enrolled team's submission form while
the track is open.

The page reads what the API reads (``judge_track.board``, ``public_settings``): the board is
computed by the workers and stored, never here; its rows are those the use case gives the
visitor (organisers every row; a team its own sets' until the organisers release the board;
then whoever may read the collection). The forms are those of PUT ``.../judge-track``, POST
``.../judge-board`` and POST ``.../judge-submissions``; a submission carries the page's
one-time key as its ``Idempotency-Key`` and runs in its own transactions (the request's
session is touched only after it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Response, Template

from service.errors import BadRequest
from service.evaluation.common.work import Outcome
from service.evaluation.judging import judge_track, judgment_sets
from service.evaluation.permissions import policy
from service.metrics.stats.judge_meta import MEASURES
from service.portal.forms import PostedForm
from service.portal.pages import Page, Refusal, attempt, download, see_other
from service.store.models import Collection

# The settings form's numbers: (field, label, whole number or not).
NUMBERS = (("resamples", "Resamples", True), ("level", "Level of the interval", False),
           ("top_k", "Top k", True), ("max_sets_per_team", "Sets per team", True),
           ("max_versions_per_team", "Versions per team", True),
           ("max_versions_per_window", "Versions per window", True), ("window_hours", "Window (hours)", True))
PROVENANCE = ("model", "prompt", "judged_on", "notes")


def done_at(cid: int, **query: Any) -> Redirect:
    return see_other(f"/c/{cid}/judges?{urlencode({k: v for k, v in query.items() if v is not None})}")


class JudgeTrackController(Controller):
    @get("/c/{cid:int}/judges", sync_to_thread=True)
    def track(self, cid: FromPath[int], page: NamedDependency[Page], done: FromQuery[str | None] = None,
              name: FromQuery[str | None] = None, version: FromQuery[int | None] = None) -> Template:
        """``policy.may_see_judge_board``: the judge board (the rows the use case gives the
        visitor), the track's state; the settings form for organisers; the submission form for
        an enrolled team while the track is open."""
        return _track_page(page, page.collection(cid), None,
                           done={"done": done, "name": name, "version": version} if done else None)

    @get("/c/{cid:int}/judges/pool.txt", sync_to_thread=True)
    def pool(self, cid: FromPath[int], page: NamedDependency[Page]) -> Response[str]:
        """``policy.may_download_judge_pool``: the documents to judge, as GET ``.../judge-track/pool``."""
        coll = page.collection(cid)
        return download(judge_track.pool_file(page.session, coll, page.me), "text/plain", f"{coll.name}-to-judge.txt")

    @post("/c/{cid:int}/judges/settings", sync_to_thread=True)
    def settings(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
                 ) -> Redirect | Template:
        """Open or close the track and set what the board ranks by (``policy.may_configure``),
        as PUT ``.../judge-track``: only the settings that differ from the current ones."""
        coll = page.collection(cid)
        policy.require(policy.may_configure(page.me, coll), page.me, f"the judges track of collection {cid}")
        current = judge_track.public_settings(page.session, coll, page.me)
        try:
            changes = _changes(form, current)
        except BadRequest as exc:
            return _track_page(page, coll, Refusal(400, str(exc)), settings_values=form.fields)
        if not changes:
            return done_at(cid, done="unchanged")
        saved, refused = attempt(page.uow, lambda: Outcome(judge_track.configure(page.session, coll, page.me,
                                                                                 changes)))
        if saved is None:
            return _track_page(page, coll, refused, settings_values=form.fields)
        return done_at(cid, done="saved")

    @post("/c/{cid:int}/judges/board", sync_to_thread=True)
    def compute(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
                ) -> Redirect | Template:
        """Have the workers compute the board now (``policy.may_configure``), as POST
        ``.../judge-board``: nothing is queued when an up-to-date board is stored or on its way."""
        coll = page.collection(cid)
        doc, refused = attempt(page.uow, lambda: judge_track.request_board(page.session, coll, page.me))
        if doc is None:
            return _track_page(page, coll, refused)
        return done_at(cid, done="computing" if doc["queued"] else ("current" if doc["analysis"] else "nothing"))

    @post("/c/{cid:int}/judges/submissions", sync_to_thread=True)
    def submit(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
               ) -> Redirect | Template:
        """A team's judgments (``policy.may_submit_judgments``), as POST ``.../judge-submissions``:
        ``name`` (a new one: a new set; the team's set again: its next version), the provenance
        and ``file``; checked line by line before anything is stored."""
        upload = form.upload("file", "judgments")
        fields = {k: form.text(k) for k in PROVENANCE if form.text(k)}
        doc, refused = attempt(page.uow, lambda: judge_track.submit(
            page.uow.factory, lambda _s: page.me, cid, upload.required(), form.text("name"), fields,
            source=upload.name, idempotency_key=form.optional("once")))
        if doc is None:
            return _track_page(page, page.collection(cid), refused, submission_values=form.fields)
        return done_at(cid, done="submitted", name=doc["judgment_set"], version=doc["version"])


def _changes(form: PostedForm, current: dict[str, Any]) -> dict[str, Any]:
    """The posted settings that differ from ``current`` (a number that is none: 400 naming it)."""
    wanted: dict[str, Any] = {"accepts_judgments": form.text("accepts_judgments") == "1",
                              "released": form.text("released") == "1", "metric": form.optional("metric"),
                              "measure": form.text("measure") or current["measure"]}
    for key, label, whole in NUMBERS:
        text = form.text(key)
        try:
            wanted[key] = current[key] if not text else int(text) if whole else float(text)
        except ValueError:
            raise BadRequest(f"{label} is a {'whole ' if whole else ''}number, not {text[:40]!r}") from None
    return {k: v for k, v in wanted.items() if v != current.get(k)}


def _track_page(page: Page, coll: Collection, refused: Refusal | None = None,
                settings_values: Mapping[str, str] | None = None, submission_values: Mapping[str, str] | None = None,
                done: dict[str, Any] | None = None) -> Template:
    """The page; after a refused form, with the values the visitor entered in it (a file must
    be chosen again), the settings form otherwise with the current settings."""
    s, me = page.session, page.me
    board = judge_track.board(s, coll, me)  # policy.may_see_judge_board; the rows the visitor may see
    settings = judge_track.public_settings(s, coll, me) if policy.may_list_judgment_sets(me, coll) else None
    shown = dict(settings_values) if settings_values is not None else {
        k: "1" if v is True else "" if v is False or v is None else str(v) for k, v in (settings or {}).items()}
    can_submit = policy.may_submit_judgments(me, coll)
    own = judgment_sets.listing(s, coll, me)["items"] if can_submit else []
    used = judge_track.usage(s, coll, me.team_id) if can_submit and me.team_id is not None else None
    config = coll.current_config
    return page.show(coll, "judges.html", status=refused.status if refused else 200, error=refused, board=board,
                     settings=settings, shown=shown, values=dict(submission_values or {}), own=own, used=used,
                     done=done,
                     can_configure=policy.may_configure(me, coll), can_submit_judgments=can_submit,
                     can_download_pool=policy.may_download_judge_pool(me, coll),
                     can_sets=policy.may_list_judgment_sets(me, coll), measures=MEASURES,
                     metrics=list(config.metrics) if config else [], official=config.official_metric if config else "")
