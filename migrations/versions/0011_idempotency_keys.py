"""idempotency keys of uploads

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 22:00:00

A client that retries an upload after a lost answer sends the same ``Idempotency-Key``; the
stored answer is returned instead of storing a second run or qrels version.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'idempotency_keys',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('token_id', sa.Integer(), nullable=False),
        sa.Column('scope', sa.String(length=100), nullable=False),
        sa.Column('key', sa.String(length=200), nullable=False),
        sa.Column('request_hash', sa.String(length=64), nullable=False),
        sa.Column('response', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('token_id', 'scope', 'key'),
    )


def downgrade() -> None:
    op.drop_table('idempotency_keys')
