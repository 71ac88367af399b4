"""Teams, API tokens, and the enrolment of teams in collections."""

from __future__ import annotations

from typing import Annotated, Literal

from litestar import Controller, delete, get, post
from litestar.params import JSONBody, Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors
from service.api.params import CollectionId, Limit, Offset, TeamName, TokenId
from service.api.schemas import out
from service.api.schemas.collections import (
    EnrolmentIn,
    EnrolmentOut,
    Revoked,
    TeamCreate,
    TeamOut,
    TeamsOut,
    TokenCreate,
    TokenOut,
    TokenPage,
)
from service.evaluation.organising import teams

TokenPrefix = Annotated[str | None, Parameter(description="The start of the tokens' prefix (e.g. `cf_AbC`).",
                                              max_length=16)]
TeamFilter = Annotated[str | None, Parameter(description="Participant tokens of this team.", max_length=200)]
RoleFilter = Annotated[Literal["admin", "organiser", "participant", "assessor"] | None,
                       Parameter(description="Tokens of this role.")]


class TeamsController(Controller):
    """Teams and their tokens, and which collections each team takes part in."""

    tags = ["teams and tokens"]

    @post("/api/teams", operation_id="createTeam", summary="Create a team", sync_to_thread=True,
          responses=errors(401, 403, 409, 422))
    def create_team(self, data: JSONBody[TeamCreate], uow: Uow, me: Caller) -> TeamOut:
        """A new team (admins and organisers). Its participants get tokens naming it."""
        team = teams.create_team(uow.session, me, data.name)
        return TeamOut(id=team.id, name=team.name)

    @post("/api/tokens", operation_id="createToken", summary="Create an API token", sync_to_thread=True,
          responses=errors(401, 403, 404, 409, 422))
    def create_token(self, data: JSONBody[TokenCreate], uow: Uow, me: Caller) -> TokenOut:
        """A new token; the secret is in this answer only (it is stored hashed)."""
        secret, token = teams.create_token(uow.session, me, data.role, name=data.name, team=data.team,
                                           collections=data.collections, topics=data.topics)
        return TokenOut(id=token.id, token=secret, role=token.role, prefix=token.prefix,
                        note="the token is shown only once")

    @get("/api/tokens", operation_id="listTokens", summary="List tokens", sync_to_thread=True,
         responses=errors(401, 403, 422))
    def list_tokens(self, uow: Uow, me: Caller, prefix: TokenPrefix = None, team: TeamFilter = None,
                    role: RoleFilter = None, offset: Offset = 0, limit: Limit = 100) -> TokenPage:
        """Admins list tokens, newest first, by the start of their prefix, their team and their
        role: prefix, name, role, team, collections, creation and revocation. Never a secret."""
        return out(TokenPage, teams.list_tokens(uow.session, me, prefix, team, role, offset, limit))

    @delete("/api/tokens/{tid:int}", operation_id="revokeToken", summary="Revoke a token", sync_to_thread=True,
            status_code=200, responses=errors(401, 403, 404, 422))
    def revoke_token(self, tid: TokenId, uow: Uow, me: Caller) -> Revoked:
        """Admins revoke a token; it is refused from then on (revoking twice is not an error)."""
        teams.revoke_token(uow.session, me, tid)
        return Revoked(revoked=tid)

    @get("/api/collections/{cid:int}/teams", operation_id="listTeams", summary="List enrolled teams",
         sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def list_enrolled(self, coll: Coll, uow: Uow, me: Caller) -> TeamsOut:
        """The teams taking part in the collection (organisers)."""
        return out(TeamsOut, {"items": teams.enrolled_teams(uow.session, coll, me)})

    @post("/api/collections/{cid:int}/teams", operation_id="enrolTeam", summary="Enrol a team", sync_to_thread=True,
          responses=errors(*WRITE_ERRORS))
    def enrol(self, coll: Coll, data: JSONBody[EnrolmentIn], uow: Uow, me: Caller) -> EnrolmentOut:
        """Organisers enrol a team: its participants may then list, read and submit to the
        collection. Enrolling a team twice answers the same."""
        return out(EnrolmentOut, teams.enrol(uow.session, coll, me, data.team))

    @delete("/api/collections/{cid:int}/teams/{team:str}", operation_id="unenrolTeam", summary="Remove a team",
            sync_to_thread=True, status_code=200, responses=errors(401, 403, 404, 422))
    def unenrol(self, coll: Coll, team: TeamName, uow: Uow, me: Caller) -> EnrolmentOut:
        """Organisers remove a team's enrolment; its runs stay, its participants lose access."""
        return out(EnrolmentOut, teams.unenrol(uow.session, coll, me, team))

    @post("/api/collections/{cid:int}/enrolment", operation_id="enrolOwnTeam", summary="Enrol my team",
          sync_to_thread=True, responses=errors(401, 403, 404, 422))
    def enrol_self(self, cid: CollectionId, uow: Uow, me: Caller) -> EnrolmentOut:
        """A participant enrols its own team in a public collection whose enrolment is open. A
        private collection's teams are enrolled by its organisers, open or not: collection ids
        are no secret, so self-enrolment would open a private collection to anyone."""
        return out(EnrolmentOut, teams.enrol_self(uow.session, cid, me))
