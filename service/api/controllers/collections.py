"""Collections: create, list, read, configure (with a preview), topics, re-evaluation, the audit log."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, get, patch, post
from litestar.params import JSONBody, Parameter

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors
from service.api.params import CollectionId, Limit, Offset
from service.api.schemas import out, present
from service.api.schemas.collections import (
    AuditPage,
    CollectionCreate,
    CollectionOut,
    CollectionPage,
    CollectionUpdate,
    ReevaluateIn,
    Reevaluation,
    SettingsPreview,
    TopicList,
    TopicsIn,
    TopicsOut,
)
from service.evaluation.organising import collections, topics
from service.evaluation.publishing import console

AuditLimit = Annotated[int, Parameter(description="Events to return (at most 500).", ge=1, le=500)]


def _settings(body: msgspec.Struct) -> dict[str, object]:
    """The fields a body carries, nested schemas as plain values (what the use case reads)."""
    return {k: (msgspec.to_builtins(v) if isinstance(v, (msgspec.Struct, list)) else v)
            for k, v in present(body).items()}


class CollectionsController(Controller):
    """Collections and their settings."""

    path = "/api/collections"
    tags = ["collections"]

    @post("/", operation_id="createCollection", summary="Create a collection", sync_to_thread=True,
          responses=errors(400, 401, 403, 409, 422))
    def create(self, data: JSONBody[CollectionCreate], uow: Uow, me: Caller) -> CollectionOut:
        """A new collection (admins). Settings left out take their defaults: AP official, the
        default metric set, Sakai's bootstrap at alpha 0.05, private, invite-only enrolment."""
        settings = {k: v for k, v in _settings(data).items() if k != "name"}
        coll = collections.create(uow.session, me, data.name, settings)
        return out(CollectionOut, collections.document(coll, me))

    @get("/", operation_id="listCollections", summary="List collections", sync_to_thread=True,
         responses=errors(401, 422))
    def list_all(self, uow: Uow, me: Caller, offset: Offset = 0, limit: Limit = 50) -> CollectionPage:
        """The collections the caller may read: public ones, its team's, the ones it organises."""
        rows = collections.visible(uow.session, me)
        page = rows[offset: offset + min(limit, 200)]
        return CollectionPage(total=len(rows), offset=offset,
                              items=[out(CollectionOut, collections.document(c, me)) for c in page])

    @get("/{cid:int}", operation_id="getCollection", summary="Read a collection", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def read(self, coll: Coll, uow: Uow, me: Caller) -> CollectionOut:
        """One collection; organisers also see its levels, evaluation and significance settings."""
        return out(CollectionOut, collections.document(coll, me))

    @patch("/{cid:int}", operation_id="updateCollection", summary="Change a collection's settings",
           sync_to_thread=True, responses=errors(*WRITE_ERRORS))
    def update(self, coll: Coll, data: JSONBody[CollectionUpdate], uow: Uow, me: Caller) -> CollectionOut:
        """Organisers change settings; fields left out stay. A new configuration (metrics,
        levels, evaluation, significance, topic split) re-evaluates the stored results now."""
        coll = uow.collect(collections.update(uow.session, coll, me, _settings(data)))
        return out(CollectionOut, collections.document(coll, me))

    @post("/{cid:int}/topics", operation_id="addTopics", summary="Register topics", sync_to_thread=True,
          responses=errors(*WRITE_ERRORS))
    def add_topics(self, coll: Coll, data: JSONBody[TopicsIn], uow: Uow, me: Caller) -> TopicsOut:
        """Register topics before any judgment exists, so runs can be submitted and pooled: ids,
        or `{id, title, description}` objects (which also set a known topic's texts)."""
        items = [t if isinstance(t, str) else msgspec.to_builtins(t) for t in data.topics]
        return TopicsOut(topics=topics.add(uow.session, coll, me, items))

    @get("/{cid:int}/topics", operation_id="listTopics", summary="List topics", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def list_topics(self, cid: CollectionId, uow: Uow, me: Caller) -> TopicList:
        """The collection's topics with their titles and descriptions, for whoever reads the
        collection; under an unrevealed topic split the hidden topics' texts are null for all
        but the organisers. Assessors list their assigned topics (with texts) only."""
        return out(TopicList, {"items": topics.of_collection(uow.session, cid, me)[1]})

    @post("/{cid:int}/settings-preview", operation_id="previewSettings", summary="Preview a change of settings",
          sync_to_thread=True, status_code=200, responses=errors(*WRITE_ERRORS))
    def preview(self, coll: Coll, data: JSONBody[CollectionUpdate], uow: Uow, me: Caller) -> SettingsPreview:
        """What the same body sent to `PATCH /api/collections/{cid}` would do, without doing it:
        the settings that change, the new configuration version, how many runs it re-evaluates,
        whether the board's order changes, what a topic split hides (organisers). Refused as the
        change itself would be."""
        uow.changes_boards = False  # nothing is stored
        return out(SettingsPreview, console.preview_settings(uow.session, coll, me, _settings(data)))

    @post("/{cid:int}/reevaluate", operation_id="reevaluateCollection", summary="Re-evaluate now", sync_to_thread=True,
          status_code=202, responses=errors(*WRITE_ERRORS))
    def reevaluate(self, coll: Coll, data: JSONBody[ReevaluateIn], uow: Uow, me: Caller) -> Reevaluation:
        """Organisers queue the evaluation of every run lacking current results, then the
        pairwise tests (as `cranfield reevaluate`); answers the job, to follow at `/api/jobs/{id}`."""
        uow.changes_boards = False  # the board changes once the workers are done
        return out(Reevaluation, uow.collect(console.reevaluate(uow.session, coll, me, data.retry_failed)))

    @get("/{cid:int}/audit", operation_id="listAuditEvents", summary="Read the audit log", sync_to_thread=True,
         responses=errors(401, 403, 404, 422))
    def audit(self, coll: Coll, uow: Uow, me: Caller, offset: Offset = 0, limit: AuditLimit = 50) -> AuditPage:
        """Who did what when in the collection, newest first (organisers): settings, releases,
        qrels uploads, runs submitted and deleted, teams enrolled, tokens created, ..."""
        return out(AuditPage, console.audit_log(uow.session, coll, me, offset, limit))
