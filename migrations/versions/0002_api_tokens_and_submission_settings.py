"""api tokens and submission settings

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 23:34:58.557672
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('api_tokens',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('role', sa.String(length=20), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_by', sa.String(length=200), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_api_tokens_team_id_teams'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_api_tokens_token_hash'))
    )
    op.create_table('collection_organisers',
    sa.Column('token_id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_collection_organisers_collection_id_collections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name=op.f('fk_collection_organisers_token_id_api_tokens'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('token_id', 'collection_id', name=op.f('pk_collection_organisers'))
    )
    with op.batch_alter_table('collections', schema=None) as batch_op:
        batch_op.add_column(sa.Column('submission_opens_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('submission_closes_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('daily_run_quota', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('leaderboard_released', sa.Boolean(), server_default=sa.false(), nullable=False))

    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('is_primary', sa.Boolean(), server_default=sa.false(), nullable=False))



def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('is_primary')

    with op.batch_alter_table('collections', schema=None) as batch_op:
        batch_op.drop_column('leaderboard_released')
        batch_op.drop_column('daily_run_quota')
        batch_op.drop_column('submission_closes_at')
        batch_op.drop_column('submission_opens_at')

    op.drop_table('collection_organisers')
    op.drop_table('api_tokens')
