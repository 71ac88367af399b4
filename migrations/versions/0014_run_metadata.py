"""run metadata and submission warnings

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24 04:00:00

A run states how it was made (run type; whether it used the collection's training data or
external resources, NULL when not stated), may carry an ir_metadata (PRIMAD) YAML file, and
keeps the warnings it was accepted with (a JSON list; NULL for runs submitted before them).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('run_type', sa.String(length=20), nullable=False, server_default='automatic'))
        batch.add_column(sa.Column('uses_training_data', sa.Boolean(), nullable=True))
        batch.add_column(sa.Column('uses_external_resources', sa.Boolean(), nullable=True))
        batch.add_column(sa.Column('ir_metadata', sa.Text(), nullable=True))
        batch.add_column(sa.Column('warnings', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        for name in ('warnings', 'ir_metadata', 'uses_external_resources', 'uses_training_data', 'run_type'):
            batch.drop_column(name)
