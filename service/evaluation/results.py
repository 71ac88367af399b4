"""The one definition of "the current stored result" of a run.

A stored ``RunEvaluation`` is current for a collection when it was computed on the qrels
version being shown, with the collection's current settings, by this evaluator version.
Every reader (boards, run pages, tests, analyses) asks this module instead of retyping the
three conditions.
"""

from __future__ import annotations

from sqlalchemy import and_
from sqlalchemy.sql.elements import ColumnElement

from service.evaluation.setup import EVALUATOR_VERSION
from service.store.models import Collection, RunEvaluation


def current_result(coll: Collection, qrels_version_id: int | None) -> ColumnElement[bool]:
    """A WHERE clause on ``RunEvaluation``: computed on ``qrels_version_id`` with the
    collection's current configuration by this evaluator version."""
    return and_(RunEvaluation.qrels_version_id == qrels_version_id,
                RunEvaluation.settings_hash == coll.current_config.settings_hash,
                RunEvaluation.evaluator_version == EVALUATOR_VERSION)
