"""topic splits

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 00:35:33.534934
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('collections', schema=None) as batch_op:
        batch_op.add_column(sa.Column('topics_revealed', sa.Boolean(), server_default=sa.false(), nullable=False))

    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.add_column(sa.Column('public_mean', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('public_ci_low', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('public_ci_high', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('public_n', sa.Integer(), nullable=True))

    with op.batch_alter_table('significance', schema=None) as batch_op:
        batch_op.add_column(sa.Column('subset', sa.String(length=20), server_default='all', nullable=False))
        batch_op.drop_constraint(batch_op.f('uq_significance_qrels_version_id_metric_test_settings_hash_evaluator_version_runs_hash_params_hash'), type_='unique')
        batch_op.create_unique_constraint(batch_op.f('uq_significance_qrels_version_id_metric_test_settings_hash_evaluator_version_runs_hash_params_hash_subset'), ['qrels_version_id', 'metric', 'test', 'settings_hash', 'evaluator_version', 'runs_hash', 'params_hash', 'subset'])



def downgrade() -> None:
    with op.batch_alter_table('significance', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('uq_significance_qrels_version_id_metric_test_settings_hash_evaluator_version_runs_hash_params_hash_subset'), type_='unique')
        batch_op.create_unique_constraint(batch_op.f('uq_significance_qrels_version_id_metric_test_settings_hash_evaluator_version_runs_hash_params_hash'), ['qrels_version_id', 'metric', 'test', 'settings_hash', 'evaluator_version', 'runs_hash', 'params_hash'])
        batch_op.drop_column('subset')

    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.drop_column('public_n')
        batch_op.drop_column('public_ci_high')
        batch_op.drop_column('public_ci_low')
        batch_op.drop_column('public_mean')

    with op.batch_alter_table('collections', schema=None) as batch_op:
        batch_op.drop_column('topics_revealed')

