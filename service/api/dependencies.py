"""What a handler may ask for by name, besides its parameters and body.

``uow`` (the request's unit of work: one session, committed after the handler, follow-ups
sent after the commit), ``me`` (the caller behind the bearer token) and ``coll`` (the
collection of the path's ``cid``, if the caller may read it: 404, 401 or 403 otherwise).
"""

from __future__ import annotations

from litestar.di import NamedDependency

from service.api.params import CollectionId
from service.evaluation.organising import collections
from service.evaluation.permissions.access import Principal
from service.http.unit_of_work import UnitOfWork
from service.store.models import Collection

Uow = NamedDependency[UnitOfWork]
Caller = NamedDependency[Principal]
Coll = NamedDependency[Collection]


def provide_collection(cid: CollectionId, uow: Uow, me: Caller) -> Collection:
    try:
        return collections.get(uow.session, cid, me)
    except BaseException:
        # A dependency that fails leaves Litestar's clean-up of the unit of work to the garbage
        # collector: give the connection back now (a crowd of 403s must not drain the pool).
        uow.close(rollback=True)
        raise
