"""The right a state-changing request needs, asked before anything of the request is read.

Authorise, then validate: a caller who may not change something is told so (401 without a
token, 403 with one) whatever it sent, so that a refusal of its body, of the collection's state
or of a name never tells it about a door it may not use, nor about what is behind the door.
A door names what of the request's path its right is over (the caller alone, the collection
``cid``, the run ``rid``, the pool ``pid``) and the policy predicate; the HTTP layer
(``service/http/doors.py``) says which route is which door and asks :func:`knock` before the
route reads its query, form or body. The use cases still ask their predicates, for the exact
act, once the request is read (an organiser may create tokens, but not an admin's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from service.evaluation.common.lookup import existing
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.store.models import Collection, Pool, Run


@dataclass(frozen=True)
class Door:
    """``over``: "caller", "collection", "run" or "pool"; ``allowed`` the predicate of the
    caller and that resource (a run's predicate takes the run and its collection); ``what``
    the act, formatted with the path's values, for the refusal, or ``why``, given the
    collection, when the refusal can say why (as the use case's own would)."""

    over: str
    allowed: Callable[..., bool]
    what: str
    why: Callable[[Collection], str] | None = None


def knock(s: Session, me: Principal, door: Door, path: Mapping[str, Any]) -> None:
    """401/403 unless the caller may use ``door`` with the resource ``path`` names (404 for a
    signed-in caller when there is no such resource). No door is open to anonymous callers."""
    what = door.what.format(**path)
    policy.require(policy.is_signed_in(me), me, what)
    if door.over == "caller":
        allowed = door.allowed(me)
    elif door.over == "collection":
        coll = existing(s, Collection, path["cid"], "collection")
        allowed, what = door.allowed(me, coll), door.why(coll) if door.why else what
    elif door.over == "run":
        run = existing(s, Run, path["rid"], "run")
        allowed = door.allowed(me, run, s.get(Collection, run.collection_id))
    else:
        allowed = door.allowed(me, existing(s, Pool, path["pid"], "pool"))
    policy.require(allowed, me, what)


CREATE_COLLECTION = Door("caller", policy.may_create_collection, "creating a collection")
CREATE_TEAM = Door("caller", policy.may_create_team, "creating a team")
ISSUE_TOKENS = Door("caller", policy.may_issue_tokens, "creating a token")
REVOKE_TOKEN = Door("caller", policy.may_revoke_token, "revoking a token")
MANAGE_TOKENS = Door("caller", policy.may_list_tokens, "the tokens page")
CONFIGURE = Door("collection", policy.may_configure, "changing collection {cid}")
MANAGE_TEAMS = Door("collection", policy.may_manage_teams, "the teams of collection {cid}")
ENROL_SELF = Door("collection", policy.may_enrol_self, "enrolling in collection {cid}", policy.enrolling)
SUBMIT = Door("collection", policy.may_submit, "submitting to collection {cid} (teams take part by enrolment)")
UPLOAD_QRELS = Door("collection", policy.may_upload_qrels, "the judgments of collection {cid}")
MANAGE_POOLS = Door("collection", policy.may_manage_pools, "the pools and assessors of collection {cid}")
FREEZE_BOARD = Door("collection", policy.may_freeze_board, "freezing the board of collection {cid}")
SUBMIT_JUDGMENTS = Door("collection", lambda me, coll: policy.is_enrolled(me, coll) and me.team_id is not None,
                        "submitting judgments to collection {cid}")
EDIT_RUN = Door("run", policy.may_edit_run, "changing run {rid}")
DECLARE_REPRODUCTION = Door("run", policy.may_declare_reproduction, "declaring what run {rid} reproduces")
DELETE_RUN = Door("run", lambda me, run, coll: policy.may_delete_run(me, coll), "deleting run {rid}")
JUDGE_POOL = Door("pool", policy.may_read_pool, "judging pool {pid}")
#: an answers collection's assessment pages: its organisers, and assessors with a topic of it (the
#: use case then asks ``policy.may_assess`` of the topic posted)
ASSESS_ANSWERS = Door("collection", lambda me, coll: policy.may_organise(me, coll.id)
                      or any(c == coll.id for c, _ in me.assigned), "assessing the answers of collection {cid}")
