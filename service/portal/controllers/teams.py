"""Teams, enrolment and tokens: the organisers' Teams page (enrol a team by name, remove one,
create a team, create a participant token for an enrolled team), the "Enrol my team" button
of a collection whose enrolment is open, and the admins' Tokens page (list by prefix, team and
role; create a token of any role; revoke one).

A new token's secret is shown once, on the answer to the form that created it (not cached,
never shown again: only its hash is stored); a copy button is added by the script.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, Template

from service.errors import BadRequest, NotFound
from service.evaluation.common.work import Outcome
from service.evaluation.organising import teams
from service.evaluation.permissions import access, policy
from service.portal.controllers.console_runs import new_token_once, no_store
from service.portal.forms import PostedForm, sign_out_cookies
from service.portal.pages import ConfirmStep, Page, Refusal, answer, attempt, confirm_page, confirmed
from service.store.models import Collection

TOKENS_PAGE = 100


class TeamController(Controller):
    @get("/c/{cid:int}/teams", sync_to_thread=True)
    def teams_page(self, cid: FromPath[int], page: NamedDependency[Page]) -> Template:
        """``policy.may_manage_teams`` (organisers): the enrolled teams, with enrol and remove forms
        (the API's ``/api/collections/{id}/teams`` does the same), a new team, a new participant token."""
        return _teams_page(page, page.collection(cid), None, None)

    @post("/c/{cid:int}/teams", sync_to_thread=True)
    def change(self, cid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
               ) -> Redirect | Template:
        """Enrol the team named in the form (``action=enrol``; twice changes nothing), remove its
        enrolment (``action=remove``: its runs stay, its participants lose access), create a team
        and enrol it (``action=create``), or create a participant token of an enrolled team
        (``action=token``, with ``name``: its secret is on this answer only)."""
        s, me = page.session, page.me
        coll, name, action = page.collection(cid), form.text("team"), form.text("action") or "enrol"
        if not name or action not in ("enrol", "remove", "create", "token"):
            raise BadRequest("name the team, and enrol (action=enrol), remove (action=remove), create "
                             "(action=create) it or make a token of it (action=token)")
        if action == "create":
            done, refused = attempt(page.uow, lambda: Outcome(teams.enrol(
                s, coll, me, teams.create_team(s, me, name).name)))
            if done is None:
                return _teams_page(page, coll, refused, None)
            return answer(f"/c/{cid}/teams", "team-created", team=done["team"])
        if action == "token":
            policy.require(policy.may_manage_teams(me, coll), me, f"the teams of collection {cid}")
            if name not in {t["team"] for t in teams.enrolled_teams(s, coll, me)}:
                raise BadRequest(f"team {name!r} is not enrolled in {coll.name}")
            created, refused = new_token_once(page, form, lambda: teams.create_token(
                s, me, "participant", name=form.text("name"), team=name, made_for=coll.id))
            if created is None:
                return _teams_page(page, coll, refused, None)
            return no_store(_teams_page(page, coll, None, created))
        if action == "remove":
            return _remove(page, coll, form, name)
        enrolled_before = {t["team"] for t in teams.enrolled_teams(s, coll, me)}
        done = teams.enrol(s, coll, me, name)
        return answer(f"/c/{cid}/teams", "team-already" if done["team"] in enrolled_before else "team-enrolled",
                      team=done["team"])

    @post("/c/{cid:int}/enrolment", sync_to_thread=True)
    def enrol_self(self, cid: FromPath[int], page: NamedDependency[Page],
                   form: NamedDependency[PostedForm]) -> Redirect:
        """``policy.may_enrol_self``: a participant enrols its own team in an open collection."""
        done = teams.enrol_self(page.session, cid, page.me)
        return answer(f"/c/{cid}", "self-enrolled", team=done["team"])


class TokenController(Controller):
    @get("/tokens", sync_to_thread=True)
    def tokens(self, page: NamedDependency[Page], prefix: FromQuery[str | None] = None,
               team: FromQuery[str | None] = None, role: FromQuery[str | None] = None,
               offset: FromQuery[int] = 0) -> Template:
        """``policy.may_list_tokens`` (admins): tokens by prefix, team and role (as GET
        /api/tokens), a revoke button each, and a form creating a token of any role."""
        return _tokens_page(page, {"prefix": prefix or "", "team": team or "", "role": role or ""}, max(0, offset),
                            None, None)

    @post("/tokens", sync_to_thread=True)
    def create(self, page: NamedDependency[Page], form: NamedDependency[PostedForm]) -> Template:
        """A new token (``role``, ``name``, ``team``, ``collections`` ids, ``topics``), as POST
        /api/tokens: its secret is on this answer only."""
        policy.require(policy.may_list_tokens(page.me), page.me, "the tokens page")
        role = form.text("role")
        try:
            covered = [int(c) for c in form.text("collections").replace(",", " ").split()]
        except ValueError:
            covered = None
        created, refused = (None, Refusal(400, "collections are ids separated by spaces")) if covered is None else \
            new_token_once(page, form, lambda: teams.create_token(
                page.session, page.me, role, name=form.text("name"), team=form.optional("team"),
                collections=covered, topics=form.text("topics").replace(",", " ").split() or None))
        if created is None:
            return _tokens_page(page, {}, 0, refused, None)
        return no_store(_tokens_page(page, {}, 0, None, created))

    @post("/tokens/{tid:int}/revoke", sync_to_thread=True)
    def revoke(self, tid: FromPath[int], page: NamedDependency[Page], form: NamedDependency[PostedForm]
               ) -> Redirect | Template:
        """``policy.may_revoke_token``: the token is refused from now on, its portal sessions end.
        Irreversible: the form answers a confirmation step first (``confirm=1`` revokes); the
        token this portal session was signed in with is revoked only with ``sign_me_out=1``
        too (the visitor is then signed out)."""
        about = teams.token_to_revoke(page.session, page.me, tid)
        if not confirmed(form) or (about["own"] and form.text("sign_me_out") != "1"):
            refused = Refusal(409, "This is the token you are signed in with: tick the box to revoke it and be "
                                   "signed out.") if confirmed(form) else None
            return confirm_page(page, _revoke_step(about), refused=refused)
        token = teams.revoke_token(page.session, page.me, tid)
        if about["own"]:  # its portal sessions end, this one too: the visitor is signed out
            return answer("/", "own-token-revoked", cookies=sign_out_cookies(), token=token.prefix)
        return answer(f"/tokens?prefix={token.prefix}", "token-revoked", token=token.prefix)


def _remove(page: Page, coll: Collection, form: PostedForm, name: str) -> Redirect | Template:
    """Remove a team's enrolment after its confirmation step (``confirm=1``)."""
    if not confirmed(form):
        if name not in {t["team"] for t in teams.enrolled_teams(page.session, coll, page.me)}:
            raise NotFound(f"team {name!r} is not enrolled in collection {coll.id}")
        return confirm_page(page, ConfirmStep(
            title=f"Remove team {name} from {coll.name}?",
            consequences=[(f"Team {name}'s participants will no longer see {coll.name}, submit runs to it or read "
                          "its results; the team's runs and their evaluations stay, on the board too."),
                          "Enrolling the team again gives its participants their access back."],
            action=f"/c/{coll.id}/teams", button=f"Remove team {name}", back=f"/c/{coll.id}/teams",
            keep="Keep the team enrolled", fields={"action": "remove", "team": name}), coll)
    done = teams.unenrol(page.session, coll, page.me, name)
    return answer(f"/c/{coll.id}/teams", "team-removed", team=done["team"])


def _revoke_step(about: dict[str, Any]) -> ConfirmStep:
    holder = ", ".join(x for x in (about["name"], about["role"], about["team"] and f"team {about['team']}") if x)
    consequences = [(f"Token {about['prefix']} ({holder}) will be refused from now on, by the API and the portal, "
                    "and every portal session signed in with it ends. This cannot be undone: its holder needs a "
                    "new token.")]
    understand = None
    if about["own"]:
        consequences.append("It is the token you are signed in with: revoking it signs you out of the portal, and "
                            "you can only sign in again with another token.")
        understand = {"name": "sign_me_out", "label": "I understand that I will be signed out."}
    return ConfirmStep(title=f"Revoke token {about['prefix']}?", consequences=consequences,
                       action=f"/tokens/{about['id']}/revoke", button=f"Revoke {about['prefix']}",
                       back=f"/tokens?prefix={about['prefix']}", keep="Keep the token", understand=understand)


def _teams_page(page: Page, coll: Collection, refused: Refusal | None, created: dict[str, Any] | None) -> Template:
    s, me = page.session, page.me
    return page.show(coll, "teams.html", status=refused.status if refused else 200, error=refused,
                     teams=teams.enrolled_teams(s, coll, me), created=created,
                     can_create_team=policy.may_create_team(me))


def _tokens_page(page: Page, filters: dict[str, str], offset: int, refused: Refusal | None,
                 created: dict[str, Any] | None) -> Template:
    s, me = page.session, page.me
    listed = teams.list_tokens(s, me, filters.get("prefix") or None, filters.get("team") or None,
                               filters.get("role") or None, offset, TOKENS_PAGE)
    return page.render("tokens.html", status=refused.status if refused else 200, error=refused, tokens=listed,
                       filters=filters, created=created, roles=access.ROLES, page_size=TOKENS_PAGE)
