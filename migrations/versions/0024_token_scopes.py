"""token scopes: a participant token an organiser makes reaches that organiser's collections only

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29 01:00:00

Issue 34, item 1: an organiser of one collection could make a participant token for any team,
and the token then read every collection the team was enrolled in, private ones the organiser
has no role in included. A scoped token (``api_tokens.scoped``) reaches only the collections of
``token_scopes``, and of those its maker (``api_tokens.scoped_by``) organises at the time of
use, among those its team is enrolled in. Tokens made before this migration stay
unscoped (who made them is a name, not a token: docs/operations.md says how to review them).
Downgrade drops the table and the column (every token unscoped again).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0024'
down_revision: str | None = '0023'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scoped', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column('scoped_by', sa.Integer(), nullable=True))
    op.create_table(
        'token_scopes',
        sa.Column('token_id', sa.Integer(), nullable=False),
        sa.Column('collection_id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], ondelete='CASCADE',
                                name=op.f('fk_token_scopes_token_id_api_tokens')),
        sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], ondelete='CASCADE',
                                name=op.f('fk_token_scopes_collection_id_collections')),
        sa.PrimaryKeyConstraint('token_id', 'collection_id', name=op.f('pk_token_scopes')),
    )


def downgrade() -> None:
    op.drop_table('token_scopes')
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_column('scoped_by')
        batch_op.drop_column('scoped')
