"""indexes for the pruning passes

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24 05:00:00

The scheduler's pruning (service/evaluation/pruning.py) deletes idempotency keys older than
the retention and portal sessions that expired or ended a grace period ago; these indexes let
each batch find its rows without scanning the tables.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0016'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index('ix_idempotency_keys_created_at', 'idempotency_keys', ['created_at'])
    op.create_index('ix_portal_sessions_expires_at', 'portal_sessions', ['expires_at'])
    op.create_index('ix_portal_sessions_revoked_at', 'portal_sessions', ['revoked_at'])


def downgrade() -> None:
    op.drop_index('ix_portal_sessions_revoked_at', 'portal_sessions')
    op.drop_index('ix_portal_sessions_expires_at', 'portal_sessions')
    op.drop_index('ix_idempotency_keys_created_at', 'idempotency_keys')
