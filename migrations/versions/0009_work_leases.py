"""work leases: heartbeats of running attempts

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 22:00:00

A claimed job item ("evaluating") or analysis ("running") carries the time its claim expires
unless its attempt renews it from a heartbeat; only an expired claim (a dead attempt) may be
taken over, never one that merely runs long. Analyses also record when they were last sent
to the workers, so that a lost message is sent again once, not at every sweep.

Rows claimed before this migration have no lease: the sweeper treats them as before (stuck
after ``CRANFIELD_STUCK_TIMEOUT``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('job_items', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table('analyses', schema=None) as batch_op:
        batch_op.add_column(sa.Column('queued_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE analyses SET queued_at = created_at")


def downgrade() -> None:
    with op.batch_alter_table('analyses', schema=None) as batch_op:
        batch_op.drop_column('lease_expires_at')
        batch_op.drop_column('queued_at')
    with op.batch_alter_table('job_items', schema=None) as batch_op:
        batch_op.drop_column('lease_expires_at')
