"""run curves

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 00:24:45.990442
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('run_curves',
    sa.Column('run_evaluation_id', sa.Integer(), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.Column('cg', sa.LargeBinary(), nullable=False),
    sa.Column('dcg', sa.LargeBinary(), nullable=False),
    sa.Column('ncg', sa.LargeBinary(), nullable=False),
    sa.Column('ndcg', sa.LargeBinary(), nullable=False),
    sa.Column('ideal_cg', sa.LargeBinary(), nullable=False),
    sa.Column('ideal_dcg', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['run_evaluation_id'], ['run_evaluations.id'], name=op.f('fk_run_curves_run_evaluation_id_run_evaluations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_evaluation_id', name=op.f('pk_run_curves'))
    )


def downgrade() -> None:
    op.drop_table('run_curves')
