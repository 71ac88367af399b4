"""reproducibility tracks: originals, declared reproductions and their measures

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 01:00:00

Issue 28: organisers register original runs (or baseline/advanced pairs, of this collection
or of another one they organise) that a collection's teams may reproduce; a team declares
which original its run (or pair of runs) reproduces; the workers store the measures of each
reproduction (service.evaluation.reproducing), per metric and part, per-topic values packed
as float64 arrays like the scores. Downgrade drops the three tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0023'
down_revision: str | None = '0022'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'reproduction_originals',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('collection_id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('advanced_run_id', sa.Integer(), nullable=True),
        sa.Column('label', sa.String(length=200), nullable=False),
        sa.Column('registered_by', sa.String(length=200), nullable=False),
        sa.Column('registered_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], ondelete='CASCADE',
                                name=op.f('fk_reproduction_originals_collection_id_collections')),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE',
                                name=op.f('fk_reproduction_originals_run_id_runs')),
        sa.ForeignKeyConstraint(['advanced_run_id'], ['runs.id'], ondelete='CASCADE',
                                name=op.f('fk_reproduction_originals_advanced_run_id_runs')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_reproduction_originals')),
    )
    op.create_index(op.f('ix_reproduction_originals_collection_id'), 'reproduction_originals', ['collection_id'])
    op.create_table(
        'reproductions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('collection_id', sa.Integer(), nullable=False),
        sa.Column('original_id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('advanced_run_id', sa.Integer(), nullable=True),
        sa.Column('declared_by', sa.String(length=200), nullable=False),
        sa.Column('declared_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], ondelete='CASCADE',
                                name=op.f('fk_reproductions_collection_id_collections')),
        sa.ForeignKeyConstraint(['original_id'], ['reproduction_originals.id'], ondelete='CASCADE',
                                name=op.f('fk_reproductions_original_id_reproduction_originals')),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE', name=op.f('fk_reproductions_run_id_runs')),
        sa.ForeignKeyConstraint(['advanced_run_id'], ['runs.id'], ondelete='CASCADE',
                                name=op.f('fk_reproductions_advanced_run_id_runs')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_reproductions')),
        sa.UniqueConstraint('run_id', name=op.f('uq_reproductions_run_id')),
        sa.UniqueConstraint('advanced_run_id', name=op.f('uq_reproductions_advanced_run_id')),
    )
    op.create_index(op.f('ix_reproductions_collection_id'), 'reproductions', ['collection_id'])
    op.create_table(
        'reproduction_measures',
        sa.Column('reproduction_id', sa.Integer(), nullable=False),
        sa.Column('metric', sa.String(length=200), nullable=False),
        sa.Column('part', sa.String(length=20), nullable=False),
        sa.Column('analysis_id', sa.Integer(), nullable=True),
        sa.Column('summary', sa.JSON(), nullable=False),
        sa.Column('topics', sa.JSON(), nullable=False),
        sa.Column('rows', sa.JSON(), nullable=False),
        sa.Column('values', sa.LargeBinary(), nullable=False),
        sa.Column('computed_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['reproduction_id'], ['reproductions.id'], ondelete='CASCADE',
                                name=op.f('fk_reproduction_measures_reproduction_id_reproductions')),
        sa.ForeignKeyConstraint(['analysis_id'], ['analyses.id'], ondelete='SET NULL',
                                name=op.f('fk_reproduction_measures_analysis_id_analyses')),
        sa.PrimaryKeyConstraint('reproduction_id', 'metric', 'part', name=op.f('pk_reproduction_measures')),
    )


def downgrade() -> None:
    op.drop_table('reproduction_measures')
    op.drop_index(op.f('ix_reproductions_collection_id'), table_name='reproductions')
    op.drop_table('reproductions')
    op.drop_index(op.f('ix_reproduction_originals_collection_id'), table_name='reproduction_originals')
    op.drop_table('reproduction_originals')
