"""collection enrolment: teams take part in a collection by enrolment

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 18:30:00

Existing databases: every team that already has a run in a collection is enrolled in it, so
no participant loses access to a collection it has submitted to.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('enrolments',
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=False),
    sa.Column('enrolled_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('enrolled_by', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_enrolments_collection_id_collections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_enrolments_team_id_teams'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('collection_id', 'team_id', name=op.f('pk_enrolments'))
    )
    with op.batch_alter_table('collections', schema=None) as batch_op:
        batch_op.add_column(sa.Column('enrolment', sa.String(length=20), server_default='invite', nullable=False))
    # Teams with runs keep their access: they are enrolled where they have submitted.
    op.execute(
        "INSERT INTO enrolments (collection_id, team_id, enrolled_at, enrolled_by) "
        "SELECT runs.collection_id, runs.team_id, MIN(runs.submitted_at), 'migration 0007' "
        "FROM runs GROUP BY runs.collection_id, runs.team_id"
    )


def downgrade() -> None:
    with op.batch_alter_table('collections', schema=None) as batch_op:
        batch_op.drop_column('enrolment')
    op.drop_table('enrolments')
