"""Collections: create, list, read, configure, register topics."""

from __future__ import annotations

import msgspec
from litestar import Controller, get, patch, post
from litestar.params import JSONBody

from service.api.dependencies import Caller, Coll, Uow
from service.api.openapi import WRITE_ERRORS, errors
from service.api.params import Limit, Offset
from service.api.schemas import out, present
from service.api.schemas.collections import (
    CollectionCreate,
    CollectionOut,
    CollectionPage,
    CollectionUpdate,
    TopicsIn,
    TopicsOut,
)
from service.evaluation import collections, judging


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
        """Register topics before any judgment exists, so runs can be submitted and pooled."""
        return TopicsOut(topics=judging.add_topics(uow.session, coll, me, data.topics))
