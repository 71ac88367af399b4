"""compact letter display of stored tests

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 01:00:00

The workers store each pairwise test's compact letter display with it (letters as lists of
positions in ``run_ids``); older tests keep NULL and boards compute their letters when read.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('significance') as batch:
        batch.add_column(sa.Column('letters', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('significance') as batch:
        batch.drop_column('letters')
