"""Who the caller is: API tokens and the principal behind a request.

Roles: ``admin``, ``organiser`` (of some collections), ``participant`` (a member of a team),
``assessor`` (of some topics of a collection), and anonymous callers. What each may see or do
is decided in :mod:`service.evaluation.permissions.policy`, nowhere else.
Tokens are random secrets; only their sha256 is stored.

The portal signs a visitor in with a token but keeps a session instead (:func:`open_session`):
its cookie holds the session's own random secret (also stored as its sha256 only), which
stands for the token until it expires, the visitor signs out (:func:`close_session`) or the
token is revoked.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from service.errors import Conflict, NotFound, Unauthenticated
from service.formats.text import check_text
from service.store.db import as_utc
from service.store.models import ApiToken, Collection, CollectionOrganiser, PortalSession, Team, TokenScope

ROLES = ("admin", "organiser", "participant", "assessor")


@dataclass(frozen=True)
class Principal:
    """The caller, as its token says: ``role`` None for anonymous requests.

    Identity only: what the caller may see or do is decided in
    :mod:`service.evaluation.permissions.policy`.
    """

    role: str | None = None
    token_id: int | None = None
    team_id: int | None = None
    organises: frozenset[int] = field(default_factory=frozenset)
    name: str = "anonymous"
    assigned: frozenset[tuple[int, str]] = field(default_factory=frozenset)  # assessors: (collection, topic)
    enrolled: frozenset[int] = field(default_factory=frozenset)  # participants: their team's collections
    # participants: the collections a scoped token may act in (None: unscoped, wherever its team
    # is enrolled). ``enrolled`` is already within it; ``policy.within_reach`` asks it for the rest.
    reach: frozenset[int] | None = None


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def create_token(
    s: Session,
    role: str,
    *,
    name: str = "",
    team: str | None = None,
    collections: list[int] | None = None,
    topics: list[str] | None = None,
    actor: str = "",
    scope: frozenset[int] | None = None,
    scoped_by: int | None = None,
) -> tuple[str, ApiToken]:
    """A new token; returns (secret, row). The secret is not stored and cannot be shown again.

    Participant tokens: ``collections`` (or else ``scope``, or the collections the token
    ``scoped_by`` organises whenever it is used) scope the token, which then acts in those of its
    team's collections only (``TokenScope``); none of them: unscoped. Who may make which
    token is :func:`service.evaluation.permissions.policy.may_create_token`'s question."""
    if role not in ROLES:
        raise Conflict(f"role must be one of {', '.join(ROLES)}")
    check_text("name", name)  # shown in the audit log and the token listing
    team_id = None
    if role == "participant":
        if not team:
            raise Conflict("a participant token needs a team")
        row_team = s.scalar(select(Team).where(Team.name == team))
        if row_team is None:
            raise NotFound(f"no team named {team!r}")
        team_id = row_team.id
    if role == "assessor" and (not collections or not topics):
        raise Conflict("an assessor token needs a collection and the topics it judges")
    if role != "assessor" and topics:
        raise Conflict("only assessor tokens have topics")
    if role == "participant" and collections:
        scope, scoped_by = frozenset(collections), None  # named collections: those only
    if role != "participant":
        scoped_by = None
    secret = "cf_" + secrets.token_urlsafe(32)
    token = ApiToken(token_hash=_hash(secret), prefix=secret[:10], name=name, role=role, team_id=team_id,
                     created_by=actor, scoped=role == "participant" and (scope is not None or scoped_by is not None),
                     scoped_by=scoped_by)
    s.add(token)
    s.flush()
    for cid in collections or []:
        if s.get(Collection, cid) is None:
            raise NotFound(f"no collection {cid}")
        if role == "assessor":
            assign_topics(s, token.id, cid, topics or [])
        elif role != "participant":  # (a participant's collections are its scope, below)
            s.add(CollectionOrganiser(token_id=token.id, collection_id=cid))
    if token.scoped:
        s.add_all(TokenScope(token_id=token.id, collection_id=cid) for cid in sorted(scope or ()))
    return secret, token


def widen_scope(s: Session, token_id: int, collection_id: int) -> None:
    """A scoped token reaches ``collection_id`` too (it enrolled its team there itself)."""
    if s.get(TokenScope, (token_id, collection_id)) is None:
        s.add(TokenScope(token_id=token_id, collection_id=collection_id))
        s.flush()


def assign_topics(s: Session, token_id: int, collection_id: int, topics: list[str]) -> None:
    """Replace an assessor's topics in a collection (topics must be the collection's)."""
    from service.store.models import AssessorAssignment, Topic

    known = set(s.scalars(select(Topic.topic_id).where(Topic.collection_id == collection_id)))
    unknown = sorted(set(topics) - known)
    if unknown:
        raise Conflict(f"unknown topics of collection {collection_id}: {', '.join(unknown[:20])}")
    s.execute(delete(AssessorAssignment).where(AssessorAssignment.token_id == token_id,
                                               AssessorAssignment.collection_id == collection_id))
    s.add_all(AssessorAssignment(token_id=token_id, collection_id=collection_id, topic=t) for t in sorted(set(topics)))


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
    return _principal_of_token(s, token)


def token_reach(s: Session, tokens: list[ApiToken]) -> dict[int, frozenset[int]]:
    """The collections each scoped participant token of ``tokens`` reaches: its scope
    (``TokenScope``) and whatever its maker (``scoped_by``) organises now, while the maker's
    token is not revoked. The principal's reach and the token listing both read it here."""
    scoped = [t for t in tokens if t.scoped]
    reach: dict[int, set[int]] = {t.id: set() for t in scoped}
    for tid, cid in s.execute(select(TokenScope.token_id, TokenScope.collection_id)
                              .where(TokenScope.token_id.in_(list(reach)))):
        reach[tid].add(cid)
    made_by: dict[int, list[int]] = {}
    for t in scoped:
        if t.scoped_by is not None:
            made_by.setdefault(t.scoped_by, []).append(t.id)
    if made_by:
        for maker, cid in s.execute(
                select(CollectionOrganiser.token_id, CollectionOrganiser.collection_id)
                .join(ApiToken, ApiToken.id == CollectionOrganiser.token_id)
                .where(CollectionOrganiser.token_id.in_(list(made_by)), ApiToken.revoked_at.is_(None))):
            for tid in made_by[maker]:
                reach[tid].add(cid)
    return {tid: frozenset(cids) for tid, cids in reach.items()}


def _principal_of_token(s: Session, token: ApiToken) -> Principal:
    organises = frozenset(s.scalars(select(CollectionOrganiser.collection_id).where(
        CollectionOrganiser.token_id == token.id)))
    assigned: frozenset[tuple[int, str]] = frozenset()
    if token.role == "assessor":
        from service.store.models import AssessorAssignment

        assigned = frozenset((c, t) for c, t in s.execute(select(
            AssessorAssignment.collection_id, AssessorAssignment.topic).where(AssessorAssignment.token_id == token.id)))
    enrolled: frozenset[int] = frozenset()
    reach = token_reach(s, [token])[token.id] if token.scoped else None
    if token.team_id is not None:
        from service.store.models import Enrolment

        enrolled = frozenset(s.scalars(select(Enrolment.collection_id).where(Enrolment.team_id == token.team_id)))
        if reach is not None:  # a scoped token: its team's enrolments elsewhere are not its own
            enrolled &= reach
    return Principal(role=token.role, token_id=token.id, team_id=token.team_id, organises=organises,
                     name=token.name or token.prefix, assigned=assigned, enrolled=enrolled, reach=reach)


# ------------------------------------------------------------------ portal sessions
SESSION_PREFIX = "cs_"


def open_session(s: Session, token_id: int, lifetime: int, now: datetime | None = None) -> str:
    """A new portal session for the token ``token_id``, lasting ``lifetime`` seconds; returns its
    secret (for the cookie; only its sha256 is stored). The token's ended sessions are deleted."""
    now = now or datetime.now(UTC)
    s.execute(delete(PortalSession).where(PortalSession.token_id == token_id, or_(
        PortalSession.expires_at <= now, PortalSession.revoked_at.is_not(None))))
    secret = SESSION_PREFIX + secrets.token_urlsafe(32)
    s.add(PortalSession(secret_hash=_hash(secret), token_id=token_id, created_at=now,
                        expires_at=now + timedelta(seconds=lifetime)))
    s.flush()
    return secret


def principal_for_session(s: Session, secret: str, now: datetime | None = None) -> Principal:
    """The principal of a live portal session: Unauthenticated when the secret is unknown, the
    session expired or was closed, or its token is revoked."""
    now = now or datetime.now(UTC)
    row = s.scalar(select(PortalSession).where(PortalSession.secret_hash == _hash(secret))) if secret else None
    if row is None or row.revoked_at is not None or as_utc(row.expires_at) <= now:  # type: ignore[operator]
        raise Unauthenticated("the sign-in has ended: sign in again")
    token = s.get(ApiToken, row.token_id)
    if token is None or token.revoked_at is not None:
        raise Unauthenticated("the sign-in's token is revoked")
    return _principal_of_token(s, token)


def close_session(s: Session, secret: str, now: datetime | None = None) -> None:
    """Sign out: the session ends now (closing an unknown or ended session changes nothing)."""
    if secret:
        s.execute(update(PortalSession).where(PortalSession.secret_hash == _hash(secret),
                                              PortalSession.revoked_at.is_(None))
                  .values(revoked_at=now or datetime.now(UTC)))
