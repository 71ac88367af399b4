"""topic titles and descriptions

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 04:00:00

A topic carries the texts participants and assessors read: a title and a description ("" for
the topics registered before, and for those registered by a qrels upload).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0015'
down_revision: str | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('topics') as batch:
        batch.add_column(sa.Column('title', sa.String(length=500), nullable=False, server_default=''))
        batch.add_column(sa.Column('description', sa.Text(), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('topics') as batch:
        batch.drop_column('description')
        batch.drop_column('title')
