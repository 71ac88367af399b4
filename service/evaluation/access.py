"""Who may do what: API tokens, the principal behind a request, and the access rules.

Roles: ``admin`` (everything), ``organiser`` of some collections (everything about those),
``participant`` (a team member: submits runs, sees its own team's runs and scores; other
teams' scores only once the leaderboard is released), and anonymous (public, released
leaderboards only). Qrels are never shown to participants or anonymous users.
Tokens are random secrets; only their sha256 is stored.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import CranfieldError
from service.store.models import ApiToken, Collection, CollectionOrganiser, Run, Team

ROLES = ("admin", "organiser", "participant")


class Unauthenticated(CranfieldError):
    """No valid credentials (HTTP 401)."""


class Forbidden(CranfieldError):
    """Valid credentials, but not allowed (HTTP 403)."""


class NotFound(CranfieldError):
    """No such object, or one the caller may not know about (HTTP 404)."""


class Conflict(CranfieldError):
    """The request contradicts the current state (HTTP 409)."""


@dataclass(frozen=True)
class Principal:
    """The caller: ``role`` None for anonymous requests."""

    role: str | None = None
    token_id: int | None = None
    team_id: int | None = None
    organises: frozenset[int] = field(default_factory=frozenset)
    name: str = "anonymous"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def can_organise(self, collection_id: int) -> bool:
        return self.is_admin or (self.role == "organiser" and collection_id in self.organises)

    def require_authenticated(self) -> None:
        if self.role is None:
            raise Unauthenticated("a bearer token is required")

    def require_admin(self) -> None:
        self.require_authenticated()
        if not self.is_admin:
            raise Forbidden("only an admin may do this")

    def require_organiser(self, collection_id: int) -> None:
        self.require_authenticated()
        if not self.can_organise(collection_id):
            raise Forbidden("only an organiser of this collection may do this")

    def can_see_collection(self, coll: Collection) -> bool:
        return coll.visibility == "public" or self.can_organise(coll.id) or self.role == "participant"

    def can_see_run(self, run: Run, coll: Collection) -> bool:
        """Runs of the caller's team, or any run of a released leaderboard (or to organisers)."""
        if self.can_organise(coll.id):
            return True
        if self.role == "participant" and run.team_id == self.team_id:
            return True
        return coll.leaderboard_released and (coll.visibility == "public" or self.role == "participant")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def create_token(
    s: Session,
    role: str,
    *,
    name: str = "",
    team: str | None = None,
    collections: list[int] | None = None,
    actor: str = "",
) -> tuple[str, ApiToken]:
    """A new token; returns (secret, row). The secret is not stored and cannot be shown again."""
    if role not in ROLES:
        raise Conflict(f"role must be one of {', '.join(ROLES)}")
    team_id = None
    if role == "participant":
        if not team:
            raise Conflict("a participant token needs a team")
        row_team = s.scalar(select(Team).where(Team.name == team))
        if row_team is None:
            raise NotFound(f"no team named {team!r}")
        team_id = row_team.id
    secret = "cf_" + secrets.token_urlsafe(32)
    token = ApiToken(token_hash=_hash(secret), prefix=secret[:10], name=name, role=role, team_id=team_id,
                     created_by=actor)
    s.add(token)
    s.flush()
    for cid in collections or []:
        if s.get(Collection, cid) is None:
            raise NotFound(f"no collection {cid}")
        s.add(CollectionOrganiser(token_id=token.id, collection_id=cid))
    return secret, token


def principal_for(s: Session, authorization: str | None) -> Principal:
    """The principal of an ``Authorization`` header value; anonymous when there is none."""
    if not authorization:
        return Principal()
    scheme, _, secret = authorization.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Unauthenticated("use 'Authorization: Bearer <token>'")
    token = s.scalar(select(ApiToken).where(ApiToken.token_hash == _hash(secret.strip())))
    if token is None or token.revoked_at is not None:
        raise Unauthenticated("unknown or revoked token")
    organises = frozenset(s.scalars(select(CollectionOrganiser.collection_id).where(
        CollectionOrganiser.token_id == token.id)))
    return Principal(role=token.role, token_id=token.id, team_id=token.team_id, organises=organises,
                     name=token.name or token.prefix)
