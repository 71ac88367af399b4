"""indexes for the pruning passes and the board's run columns

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24 05:00:00

The scheduler's pruning (service/evaluation/computing/pruning.py) deletes idempotency keys older than
the retention and portal sessions that expired or ended a grace period ago; these indexes let
each batch find its rows without scanning the tables. A board reads each run's type and
metadata flags; on SQLite those columns (added after the run file's blob) sit behind the
file's overflow pages, so a covering index answers the board without reading the files.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0016'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# service/store/models.py, Run.__table_args__ (the same list)
BOARD_COLUMNS = ['collection_id', 'tag', 'id', 'is_primary', 'run_type', 'uses_training_data',
                 'uses_external_resources']


def upgrade() -> None:
    op.create_index('ix_idempotency_keys_created_at', 'idempotency_keys', ['created_at'])
    op.create_index('ix_portal_sessions_expires_at', 'portal_sessions', ['expires_at'])
    op.create_index('ix_portal_sessions_revoked_at', 'portal_sessions', ['revoked_at'])
    op.create_index('ix_runs_board_columns', 'runs', BOARD_COLUMNS)


def downgrade() -> None:
    op.drop_index('ix_runs_board_columns', 'runs')
    op.drop_index('ix_portal_sessions_revoked_at', 'portal_sessions')
    op.drop_index('ix_portal_sessions_expires_at', 'portal_sessions')
    op.drop_index('ix_idempotency_keys_created_at', 'idempotency_keys')
