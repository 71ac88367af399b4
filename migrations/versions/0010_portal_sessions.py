"""portal sessions: revocable sign-in sessions

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 22:00:00

The portal's cookie holds the secret of a server-side session (stored as its sha256) instead
of the API token itself; signing out revokes the session. Existing cookies (raw API tokens)
no longer sign in: their holders sign in again.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('portal_sessions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('secret_hash', sa.String(length=64), nullable=False),
    sa.Column('token_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name=op.f('fk_portal_sessions_token_id_api_tokens'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_portal_sessions')),
    sa.UniqueConstraint('secret_hash', name=op.f('uq_portal_sessions_secret_hash'))
    )
    with op.batch_alter_table('portal_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_portal_sessions_token_id'), ['token_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('portal_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_portal_sessions_token_id'))
    op.drop_table('portal_sessions')
