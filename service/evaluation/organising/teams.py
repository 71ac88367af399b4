"""Teams, their tokens and their enrolment in collections.

A team takes part in a collection by enrolment: organisers enrol teams (``invite``, the
default), or, when a collection's enrolment is ``open``, a participant enrols its own team.
Participants list, read and submit to the collections their team is enrolled in (and read
public ones); see :mod:`service.evaluation.permissions.policy`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.errors import Forbidden, NotFound
from service.evaluation.common.lookup import existing, new_name
from service.evaluation.organising.collections import iso
from service.evaluation.organising.setup import audit
from service.evaluation.permissions import access, policy
from service.evaluation.permissions.access import Principal
from service.store.models import (
    ApiToken,
    AssessorAssignment,
    Collection,
    CollectionOrganiser,
    Enrolment,
    Run,
    Team,
)


def create_team(s: Session, me: Principal, name: str) -> Team:
    policy.require(policy.may_create_team(me), me, "creating a team")
    team = Team(name=new_name(s, Team.name, name, "team"))
    s.add(team)
    s.flush()
    audit(s, me.name, "team.create", None, team=team.name)
    return team


def create_token(s: Session, me: Principal, role: str, *, name: str = "", team: str | None = None,
                 collections: list[int] | None = None, topics: list[str] | None = None,
                 made_for: int | None = None) -> tuple[str, ApiToken]:
    """A new token (the secret is returned once and never stored). Its creation is in the audit
    log of every collection it covers, or of ``made_for`` (the collection whose page made it).

    A participant token an organiser makes is scoped to the collections that organiser organises
    whenever the token is used (or to ``collections``, theirs too), and only for a team enrolled in none but those
    (``policy.may_create_token``): a token never reaches further than its creator does."""
    enrolled_in = _enrolments(s, team) if role == "participant" and team else frozenset()
    policy.require(policy.may_create_token(me, role, list(collections or []), enrolled_in), me,
                   f"creating a {role} token (admins create any token; organisers create assessor tokens for "
                   "their collections, and participant tokens of a team that takes part in none but their "
                   "collections: a token never reaches further than its creator does)")
    # An organiser's participant token reaches what its maker organises, then and later (a
    # collection the organiser creates afterwards too), never a collection of anyone else's.
    organisers = role == "participant" and not policy.is_admin(me)
    maker = me.token_id if organisers else None
    # (a maker without a token id, which no organiser is today, gets today's collections only)
    scope = (frozenset() if maker is not None else me.organises) if organisers else None
    secret, token = access.create_token(s, role, name=name, team=team, collections=list(collections or []),
                                        topics=topics, actor=me.name, scope=scope, scoped_by=maker)
    # in the audit log of every collection it covers (the secret never: its prefix names it)
    for cid in sorted(set(collections or [])) or [made_for]:
        audit(s, me.name, "token.create", cid, token=token.prefix, role=role, name=name, team=team)
    return secret, token


def _enrolments(s: Session, team: str) -> frozenset[int]:
    """The collections the team named ``team`` is enrolled in (none when there is no such team:
    making its token then answers 404)."""
    return frozenset(s.scalars(select(Enrolment.collection_id).join(Team, Team.id == Enrolment.team_id)
                               .where(Team.name == team)))


def list_tokens(s: Session, me: Principal, prefix: str | None = None, team: str | None = None,
                role: str | None = None, offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """Tokens (admins), newest first, filtered by the start of their prefix, their team's name
    and their role: prefix, name, role, team, collections, who made them and when, whether
    revoked. Never a secret (only hashes are stored)."""
    policy.require(policy.may_list_tokens(me), me, "listing tokens")
    q = select(ApiToken, Team.name).outerjoin(Team, Team.id == ApiToken.team_id)
    if prefix:
        q = q.where(ApiToken.prefix.startswith(prefix, autoescape=True))
    if team:
        q = q.where(Team.name == team)
    if role:
        q = q.where(ApiToken.role == role)
    rows = s.execute(q.order_by(ApiToken.id.desc())).all()
    page = rows[offset: offset + max(1, min(limit, 500))]
    ids = [tok.id for tok, _ in page]
    covers: dict[int, list[int]] = {}
    for tid, cid in s.execute(select(CollectionOrganiser.token_id, CollectionOrganiser.collection_id)
                              .where(CollectionOrganiser.token_id.in_(ids))):
        covers.setdefault(tid, []).append(cid)
    for tid, cid in s.execute(select(AssessorAssignment.token_id, AssessorAssignment.collection_id).distinct()
                              .where(AssessorAssignment.token_id.in_(ids))):
        covers.setdefault(tid, []).append(cid)
    for tid, cids in access.token_reach(s, [tok for tok, _ in page]).items():  # scoped participants
        covers.setdefault(tid, []).extend(cids)
    return {"total": len(rows), "offset": offset, "items": [
        {"id": tok.id, "prefix": tok.prefix, "name": tok.name, "role": tok.role, "team": team_name_,
         "collections": sorted(set(covers.get(tok.id, []))), "scoped": tok.scoped, "created_at": iso(tok.created_at),
         "created_by": tok.created_by, "revoked_at": iso(tok.revoked_at)} for tok, team_name_ in page]}


def token_to_revoke(s: Session, me: Principal, token_id: int) -> dict[str, Any]:
    """What revoking a token would end (admins): its prefix, name, role, team, whether it is
    revoked already and whether it is the caller's own (revoking that one signs the caller out)."""
    policy.require(policy.may_revoke_token(me), me, "revoking a token")
    token = existing(s, ApiToken, token_id, "token")
    team = s.get(Team, token.team_id) if token.team_id else None
    return {"id": token.id, "prefix": token.prefix, "name": token.name, "role": token.role,
            "team": team.name if team else None, "revoked": token.revoked_at is not None,
            "own": token.id == me.token_id}


def revoke_token(s: Session, me: Principal, token_id: int) -> ApiToken:
    policy.require(policy.may_revoke_token(me), me, "revoking a token")
    token = existing(s, ApiToken, token_id, "token")
    if token.revoked_at is None:
        token.revoked_at = datetime.now(UTC)
        audit(s, me.name, "token.revoke", None, token=token.prefix)
    return token


def team_named(s: Session, name: str) -> Team:
    team = s.scalar(select(Team).where(Team.name == name))
    if team is None:
        raise NotFound(f"no team named {name!r}")
    return team


def team_name(s: Session, me: Principal) -> str | None:
    team = s.get(Team, me.team_id) if me.team_id else None
    return team.name if team else None


def enrolled_teams(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    policy.require(policy.may_manage_teams(me, coll), me, f"the teams of collection {coll.id}")
    rows = s.execute(select(Team.name, Enrolment.enrolled_at, Enrolment.enrolled_by).join(
        Enrolment, Enrolment.team_id == Team.id).where(Enrolment.collection_id == coll.id).order_by(Team.name))
    return [{"team": name, "enrolled_at": iso(at), "enrolled_by": by}
            for name, at, by in rows]


def enrol(s: Session, coll: Collection, me: Principal, team_name_: str) -> dict[str, Any]:
    """Enrol a team (organisers). Enrolling a team twice is not an error: the same answer."""
    policy.require(policy.may_manage_teams(me, coll), me, f"enrolling teams in collection {coll.id}")
    return _enrol(s, coll, team_named(s, team_name_), me)


def enrol_self(s: Session, cid: int, me: Principal) -> dict[str, Any]:
    """A participant enrols its own team in a public collection whose enrolment is open
    (``policy.may_enrol_self``: a private collection's teams are enrolled by its organisers)."""
    coll = existing(s, Collection, cid, "collection")
    policy.require(policy.may_enrol_self(me, coll), me, policy.enrolling(coll))
    team = s.get(Team, me.team_id)
    if team is None:
        raise NotFound("the token's team no longer exists")
    if not policy.within_reach(me, coll.id):
        # A scoped token (made by an organiser for their collections) that enrols its team in an
        # open collection reaches it from then on: anyone may take part there. Not where its team
        # was enrolled already by another token: that would reach the other token's runs there.
        if s.get(Enrolment, (coll.id, team.id)) is not None or s.scalar(
                select(Run.id).where(Run.collection_id == coll.id, Run.team_id == team.id).limit(1)) is not None:
            # (runs of the team there, from an enrolment since removed, would be its own again)
            raise Forbidden(f"team {team.name} takes or took part in collection {coll.id} already, and this token "
                            "was made for other collections: ask an admin for a token reaching it")
        access.widen_scope(s, me.token_id, coll.id)  # type: ignore[arg-type]
    return _enrol(s, coll, team, me)


def _enrol(s: Session, coll: Collection, team: Team, me: Principal) -> dict[str, Any]:
    row = s.get(Enrolment, (coll.id, team.id))
    if row is None:
        row = Enrolment(collection_id=coll.id, team_id=team.id, enrolled_by=me.name)
        s.add(row)
        audit(s, me.name, "team.enrol", coll.id, team=team.name)
        s.flush()
    return {"collection_id": coll.id, "team": team.name,
            "enrolled_at": iso(row.enrolled_at), "enrolled_by": row.enrolled_by}


def unenrol(s: Session, coll: Collection, me: Principal, team_name_: str) -> dict[str, Any]:
    """Remove a team's enrolment (its runs stay; its participants lose access)."""
    policy.require(policy.may_manage_teams(me, coll), me, f"removing teams from collection {coll.id}")
    team = team_named(s, team_name_)
    row = s.get(Enrolment, (coll.id, team.id))
    if row is None:
        raise NotFound(f"team {team.name!r} is not enrolled in collection {coll.id}")
    s.delete(row)
    audit(s, me.name, "team.unenrol", coll.id, team=team.name)
    return {"collection_id": coll.id, "team": team.name, "enrolled": False}
