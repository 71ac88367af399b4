"""pools assessors analyses

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 01:32:48.273621
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('analyses',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=40), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('qrels_version_id', sa.Integer(), nullable=False),
    sa.Column('config_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('result', sa.JSON(), nullable=False),
    sa.Column('error', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_by', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_analyses_collection_id_collections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['config_id'], ['collection_configs.id'], name=op.f('fk_analyses_config_id_collection_configs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['qrels_version_id'], ['qrels_versions.id'], name=op.f('fk_analyses_qrels_version_id_qrels_versions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_analyses'))
    )
    op.create_table('assessor_assignments',
    sa.Column('token_id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('topic', sa.String(length=100), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_assessor_assignments_collection_id_collections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name=op.f('fk_assessor_assignments_token_id_api_tokens'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('token_id', 'collection_id', 'topic', name=op.f('pk_assessor_assignments'))
    )
    op.create_table('pools',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.Column('selection', sa.String(length=20), nullable=False),
    sa.Column('max_priority', sa.Integer(), nullable=True),
    sa.Column('max_level', sa.Integer(), nullable=False),
    sa.Column('base_qrels_version_id', sa.Integer(), nullable=True),
    sa.Column('run_ids', sa.JSON(), nullable=False),
    sa.Column('counts', sa.JSON(), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_by', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['base_qrels_version_id'], ['qrels_versions.id'], name=op.f('fk_pools_base_qrels_version_id_qrels_versions'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_pools_collection_id_collections'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pools')),
    sa.UniqueConstraint('collection_id', 'number', name=op.f('uq_pools_collection_id_number'))
    )
    op.create_table('pool_documents',
    sa.Column('pool_id', sa.Integer(), nullable=False),
    sa.Column('topic', sa.String(length=100), nullable=False),
    sa.Column('docno', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['pool_id'], ['pools.id'], name=op.f('fk_pool_documents_pool_id_pools'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('pool_id', 'topic', 'docno', name=op.f('pk_pool_documents'))
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('judging_priority', sa.Integer(), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('judging_priority')

    op.drop_table('pool_documents')
    op.drop_table('pools')
    op.drop_table('assessor_assignments')
    op.drop_table('analyses')
