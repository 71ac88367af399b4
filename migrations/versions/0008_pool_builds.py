"""pool builds: an analysis row may have no qrels version

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 10:00:00

Pools are built by the workers from an ``analyses`` row of kind "pool" (queued, claimed,
retried and swept like the other analyses). The first pool of a collection is built before
any judgment exists, so such a row has no qrels version: the column becomes nullable.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('analyses', schema=None) as batch_op:
        batch_op.alter_column('qrels_version_id', existing_type=sa.Integer(), nullable=True)


def downgrade() -> None:
    # Pool builds of collections without qrels cannot be kept under the old schema.
    op.execute("DELETE FROM analyses WHERE qrels_version_id IS NULL")
    with op.batch_alter_table('analyses', schema=None) as batch_op:
        batch_op.alter_column('qrels_version_id', existing_type=sa.Integer(), nullable=False)
