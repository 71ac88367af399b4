"""Enrolment: the organisers' Teams page (enrol a team by name, remove one) and the
"Enrol my team" button of a collection whose enrolment is open."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect, Template

from service.errors import BadRequest
from service.evaluation import teams
from service.portal.forms import PostedForm
from service.portal.pages import Page, see_other


class TeamController(Controller):
    @get("/c/{cid:int}/teams", sync_to_thread=True)
    def teams_page(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_manage_teams`` (organisers): the enrolled teams, with enrol and remove forms
        (the API's ``/api/collections/{id}/teams`` does the same)."""
        coll = page.collection(cid)
        return page.show(coll, "teams.html", teams=teams.enrolled_teams(page.session, coll, page.me))

    @post("/c/{cid:int}/teams", sync_to_thread=True)
    def change(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]) -> Redirect:
        """Enrol the team named in the form (``action=enrol``; twice changes nothing) or remove
        its enrolment (``action=remove``: its runs stay, its participants lose access)."""
        coll, name, action = page.collection(cid), form.text("team"), form.text("action") or "enrol"
        if not name or action not in ("enrol", "remove"):
            raise BadRequest("name the team, and enrol (action=enrol) or remove it (action=remove)")
        (teams.enrol if action == "enrol" else teams.unenrol)(page.session, coll, page.me, name)
        return see_other(f"/c/{cid}/teams")

    @post("/c/{cid:int}/enrolment", sync_to_thread=True)
    def enrol_self(self, cid: FromPath[int], page: NamedDependency[Page],
                   form: NamedDependency[PostedForm]) -> Redirect:
        """``policy.may_enrol_self``: a participant enrols its own team in an open collection."""
        teams.enrol_self(page.session, cid, page.me)
        return see_other(f"/c/{cid}")
