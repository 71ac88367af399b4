"""bootstrap intervals of scores

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 01:00:00

Beside the t interval, each score stores the bootstrap interval of the run's mean over its
scored topics (all, and the public ones of a split) and the interval's parameters: the method
("bca" or "percentile") and the number of resamples B. Rows stored before this revision keep
NULL there, and the board draws their t interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.add_column(sa.Column('boot_low', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('boot_high', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('public_boot_low', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('public_boot_high', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('boot_method', sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column('boot_resamples', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.drop_column('boot_resamples')
        batch_op.drop_column('boot_method')
        batch_op.drop_column('public_boot_high')
        batch_op.drop_column('public_boot_low')
        batch_op.drop_column('boot_high')
        batch_op.drop_column('boot_low')
