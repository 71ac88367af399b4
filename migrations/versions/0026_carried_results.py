"""carried results: a new judgments version re-scores only the runs whose inputs it changed

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29 05:00:00

Issue 35 ("new assignments re-score only what changed"): a ``rag`` version stores per run tag a
digest of every input of that run's scores (``qrels_versions.run_inputs``); a run whose digest
equals the one under an earlier version it was evaluated on gets that evaluation's scores
copied, not computed (``run_evaluations.carried_from_id``: the evaluation copied). A test whose
score tables are the same as an earlier version's is carried the same way
(``significance.carried_from_id``). Both ids are plain integers, not foreign keys: the row they
name may since have been pruned, and the copy stands on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0026'
down_revision: str | None = '0025'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('qrels_versions', sa.Column('run_inputs', sa.JSON(), nullable=True))
    op.add_column('run_evaluations', sa.Column('carried_from_id', sa.Integer(), nullable=True))
    op.add_column('significance', sa.Column('carried_from_id', sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column('significance', 'carried_from_id')
    op.drop_column('run_evaluations', 'carried_from_id')
    op.drop_column('qrels_versions', 'run_inputs')
