"""The one definition of "the current stored result" of a run (and of a stored test).

A stored ``RunEvaluation`` is current for a collection when it was computed on the qrels
version being shown, with the collection's current settings, by this evaluator version.
Every reader (boards, run pages, tests, analyses) asks this module instead of retyping the
three conditions. A job evaluates under the configuration it was planned with, which may
have been replaced since: :func:`evaluated_under` names that configuration's settings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import and_
from sqlalchemy.sql.elements import ColumnElement

from service.evaluation.organising.setup import EVALUATOR_VERSION
from service.store.models import Collection, RunEvaluation, Significance


def current_result(coll: Collection, qrels_version_id: int | None) -> ColumnElement[bool]:
    """A WHERE clause on ``RunEvaluation``: computed on ``qrels_version_id`` with the
    collection's current configuration by this evaluator version."""
    return evaluated_under(qrels_version_id, coll.current_config.settings_hash)


def evaluated_under(qrels_version_id: int | None, settings_hash: str) -> ColumnElement[bool]:
    """A WHERE clause on ``RunEvaluation``: computed on ``qrels_version_id`` with the
    settings of ``settings_hash`` by this evaluator version."""
    return and_(RunEvaluation.qrels_version_id == qrels_version_id,
                RunEvaluation.settings_hash == settings_hash,
                RunEvaluation.evaluator_version == EVALUATOR_VERSION)


def tested_under(qrels_version_id: int | None, settings_hash: str) -> ColumnElement[bool]:
    """A WHERE clause on ``Significance``: a test of the results :func:`evaluated_under` the
    same qrels version and settings (by this evaluator version)."""
    return and_(Significance.qrels_version_id == qrels_version_id,
                Significance.settings_hash == settings_hash,
                Significance.evaluator_version == EVALUATOR_VERSION)


def json_safe(value: Any) -> Any:
    """A result document as JSON can store it: NaN and infinities as null (PostgreSQL's JSON,
    rightly, refuses them)."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
