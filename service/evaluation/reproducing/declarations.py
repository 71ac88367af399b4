"""Who reproduces what: organisers register originals, teams declare their reproductions.

* An *original* is a run, or a baseline/advanced pair of runs, that a collection's organisers
  offer to be reproduced there (:func:`register_original`): runs of this collection, or of
  another collection they organise too (then the reproductions are scored on this
  collection's qrels and the original on its own: reproducibility on another collection).
* A *reproduction* is a team's run of the collection declared to reproduce a registered
  original run, or a pair of the team's runs (baseline, advanced) declared to reproduce a
  registered original pair (:func:`declare`): at submission (the API's and the portal's
  ``reproduces`` field, ``cranfield remote submit --reproduces``) or afterwards, within the
  submission window for a team (organisers at any time). A run is in one declaration at most:
  a new one replaces the declarations naming either of its runs. Every declaration is
  audited and queues the measures' computation (:mod:`.measuring`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import BadRequest, Conflict, NotFound
from service.evaluation.common.lookup import existing
from service.evaluation.common.work import Outcome
from service.evaluation.organising import collections
from service.evaluation.organising.setup import audit
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.reproducing import measuring
from service.store.db import transaction
from service.store.models import Collection, Reproduction, ReproductionOriginal, Run, Team


def _run_doc(s: Session, run_id: int | None) -> dict[str, Any] | None:
    if run_id is None:
        return None
    run = s.get(Run, run_id)
    coll = s.get(Collection, run.collection_id) if run is not None else None
    team = s.get(Team, run.team_id) if run is not None else None
    return {"id": run_id, "tag": run.tag if run else "", "team": team.name if team else "",
            "collection": coll.id if coll else None, "collection_name": coll.name if coll else ""}


def run_brief(s: Session, run_id: int) -> dict[str, Any]:
    """A run's id, tag, team and collection (as the board names runs)."""
    return _run_doc(s, run_id) or {}


def original_doc(s: Session, row: ReproductionOriginal) -> dict[str, Any]:
    return {"id": row.id, "collection": row.collection_id, "label": row.label,
            "kind": "pair" if row.advanced_run_id is not None else "run",
            "run": _run_doc(s, row.run_id), "advanced_run": _run_doc(s, row.advanced_run_id),
            "registered_by": row.registered_by, "registered_at": collections.iso(row.registered_at)}


def declaration_doc(s: Session, rep: Reproduction) -> dict[str, Any]:
    orig = s.get(ReproductionOriginal, rep.original_id)
    return {"id": rep.id, "collection": rep.collection_id, "original": original_doc(s, orig),
            "kind": "pair" if rep.advanced_run_id is not None else "run",
            "run": _run_doc(s, rep.run_id), "advanced_run": _run_doc(s, rep.advanced_run_id),
            "declared_by": rep.declared_by, "declared_at": collections.iso(rep.declared_at)}


def register_original(s: Session, coll: Collection, me: Principal, run_id: int, advanced_run_id: int | None = None,
                      label: str = "") -> Outcome[dict[str, Any]]:
    """Offer a run (or a baseline/advanced pair: ``advanced_run_id``) to be reproduced in
    ``coll``: its organisers, with runs of a collection they organise too (the same one for
    both runs of a pair). Registering the same runs again answers the existing row."""
    policy.require(policy.may_register_originals(me, coll), me, f"the originals of collection {coll.id}")
    run = existing(s, Run, run_id, "run")
    policy.require(policy.may_organise(me, run.collection_id), me, f"run {run_id} as an original")
    if advanced_run_id is not None:
        adv = existing(s, Run, advanced_run_id, "run")
        if adv.id == run.id:
            raise BadRequest("a pair's baseline and advanced runs must be two runs")
        if adv.collection_id != run.collection_id:
            raise BadRequest("a pair's baseline and advanced runs must be runs of one collection")
    same = s.scalar(select(ReproductionOriginal).where(
        ReproductionOriginal.collection_id == coll.id, ReproductionOriginal.run_id == run_id,
        ReproductionOriginal.advanced_run_id.is_(None) if advanced_run_id is None
        else ReproductionOriginal.advanced_run_id == advanced_run_id))
    if same is not None:
        return Outcome(original_doc(s, same))
    row = ReproductionOriginal(collection_id=coll.id, run_id=run_id, advanced_run_id=advanced_run_id,
                               label=label.strip()[:200], registered_by=me.name)
    s.add(row)
    s.flush()
    audit(s, me.name, "reproduction.original", coll.id, original=row.id, run=run_id, advanced_run=advanced_run_id)
    return Outcome(original_doc(s, row))


def originals(s: Session, coll: Collection, me: Principal) -> list[dict[str, Any]]:
    """The originals a collection offers: whoever reads the collection (a team names one when
    it declares a reproduction)."""
    policy.require(policy.may_read_collection(me, coll), me, f"collection {coll.id}")
    return [original_doc(s, r) for r in s.scalars(select(ReproductionOriginal).where(
        ReproductionOriginal.collection_id == coll.id).order_by(ReproductionOriginal.id))]


def _original_for(s: Session, coll: Collection, original_run: int, original_advanced: int | None
                  ) -> ReproductionOriginal:
    q = select(ReproductionOriginal).where(ReproductionOriginal.collection_id == coll.id,
                                           ReproductionOriginal.run_id == original_run)
    q = q.where(ReproductionOriginal.advanced_run_id.is_(None) if original_advanced is None
                else ReproductionOriginal.advanced_run_id == original_advanced)
    row = s.scalars(q.order_by(ReproductionOriginal.id).limit(1)).first()
    if row is None and original_advanced is None:  # one run of a registered pair, reproduced alone
        pair = s.scalars(select(ReproductionOriginal).where(
            ReproductionOriginal.collection_id == coll.id,
            or_(ReproductionOriginal.run_id == original_run, ReproductionOriginal.advanced_run_id == original_run))
            .order_by(ReproductionOriginal.id).limit(1)).first()
        row = _single(s, pair, coll, original_run) if pair is not None else None
    if row is None:
        what = f"the pair ({original_run}, {original_advanced})" if original_advanced is not None \
            else f"run {original_run}"
        raise NotFound(f"{what} is not an original of collection {coll.id} (its organisers register originals)")
    return row


def _single(s: Session, pair: ReproductionOriginal, coll: Collection, run_id: int) -> ReproductionOriginal:
    """The single-run original of one run of a registered pair (made on first use), labelled as
    that part of the pair (not with the pair's own label: the originals would show two rows of one name)."""
    part = "baseline" if run_id == pair.run_id else "advanced run"
    label = f"the {part} of {pair.label}" if pair.label else f"the {part} of the pair {pair.run_id} + {pair.advanced_run_id}"
    row = ReproductionOriginal(collection_id=coll.id, run_id=run_id, advanced_run_id=None, label=label[:200],
                               registered_by=pair.registered_by)
    s.add(row)
    s.flush()
    return row


def check_declaration(s: Session, me: Principal, run: Run, coll: Collection) -> None:
    """May the caller declare what ``run`` reproduces now (role, then the window for a team)?"""
    policy.require(policy.may_declare_reproduction(me, run, coll), me, f"declaring what run {run.id} reproduces")
    if not policy.may_organise(me, coll.id) and not policy.window_open(coll):
        raise Conflict(f"submissions are closed (window {collections.iso(coll.submission_opens_at)} - "
                       f"{collections.iso(coll.submission_closes_at)}): a reproduction is declared while they "
                       "are open")


def declare(s: Session, me: Principal, run_id: int, original_run: int, advanced_run: int | None = None,
            original_advanced_run: int | None = None) -> Outcome[dict[str, Any]]:
    """Declare that run ``run_id`` reproduces the original run ``original_run`` or, with
    ``advanced_run`` and ``original_advanced_run``, that the pair (``run_id``, ``advanced_run``)
    of the team's runs reproduces the original pair (``original_run``, ``original_advanced_run``).
    Replaces the declarations naming either run; queues the measures."""
    run = existing(s, Run, run_id, "run")
    coll = s.get(Collection, run.collection_id)
    check_declaration(s, me, run, coll)
    if (advanced_run is None) != (original_advanced_run is None):
        raise BadRequest("a pair names both runs: the advanced reproduction and the original advanced run")
    if advanced_run is not None:
        adv = existing(s, Run, advanced_run, "run")
        check_declaration(s, me, adv, coll)
        if adv.collection_id != coll.id or adv.team_id != run.team_id or adv.id == run.id:
            raise BadRequest("a reproduction pair is two runs of one team in one collection")
    original = _original_for(s, coll, original_run, original_advanced_run)
    mine = [r for r in (run_id, advanced_run) if r is not None]
    if set(mine) & {original.run_id, original.advanced_run_id}:
        raise BadRequest("a run cannot reproduce itself")
    s.execute(delete(Reproduction).where(or_(Reproduction.run_id.in_(mine), Reproduction.advanced_run_id.in_(mine)))
              .execution_options(synchronize_session=False))
    rep = Reproduction(collection_id=coll.id, original_id=original.id, run_id=run_id, advanced_run_id=advanced_run,
                       declared_by=me.name)
    s.add(rep)
    s.flush()
    audit(s, me.name, "reproduction.declare", coll.id, reproduction=rep.id, run=run_id, advanced_run=advanced_run,
          original=original.id)
    return Outcome(declaration_doc(s, rep), tuple(measuring.queue_if_stale(s, coll, me.name)))


def withdraw(s: Session, me: Principal, run_id: int) -> Outcome[dict[str, Any]]:
    """Withdraw the declaration naming run ``run_id`` (its team, within the window; its
    organisers); its stored measures go with it."""
    run = existing(s, Run, run_id, "run")
    coll = s.get(Collection, run.collection_id)
    check_declaration(s, me, run, coll)
    rep = s.scalar(select(Reproduction).where(or_(Reproduction.run_id == run_id,
                                                  Reproduction.advanced_run_id == run_id)))
    if rep is None:
        raise NotFound(f"run {run_id} is declared the reproduction of nothing")
    rid = rep.id
    s.delete(rep)
    audit(s, me.name, "reproduction.withdraw", coll.id, reproduction=rid, run=run_id)
    return Outcome({"deleted": rid}, tuple(measuring.queue_if_stale(s, coll, me.name)))


def check_original(factory: sessionmaker[Session], cid: int, original_run: int) -> None:
    """NotFound unless ``original_run`` is (a run of) an original of collection ``cid``."""
    with factory() as s:
        found = s.scalar(select(ReproductionOriginal.id).where(
            ReproductionOriginal.collection_id == cid,
            or_(ReproductionOriginal.run_id == original_run, ReproductionOriginal.advanced_run_id == original_run))
            .limit(1))
    if found is None:
        raise NotFound(f"run {original_run} is not an original of collection {cid} (its organisers register "
                       "originals)")


def declare_in_transaction(factory: sessionmaker[Session], me: Principal, run_id: int,
                           original_run: int) -> Outcome[dict[str, Any]]:
    """:func:`declare` in a transaction of its own (after a submission stored its run)."""
    with transaction(factory) as s:
        return declare(s, me, run_id, original_run)
