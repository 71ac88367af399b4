"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-21 23:21:59.507294
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('collections',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('visibility', sa.String(length=20), nullable=False),
    sa.Column('current_config_id', sa.Integer(), nullable=True),
    sa.Column('current_qrels_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_collections')),
    sa.UniqueConstraint('name', name=op.f('uq_collections_name'))
    )
    op.create_table('teams',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_teams')),
    sa.UniqueConstraint('name', name=op.f('uq_teams_name'))
    )
    op.create_table('audit_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=200), nullable=False),
    sa.Column('action', sa.String(length=60), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=True),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_audit_events_collection_id_collections'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_events'))
    )
    op.create_table('collection_configs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('levels', sa.JSON(), nullable=False),
    sa.Column('official_metric', sa.String(length=200), nullable=False),
    sa.Column('metrics', sa.JSON(), nullable=False),
    sa.Column('evaluation', sa.JSON(), nullable=False),
    sa.Column('significance', sa.JSON(), nullable=False),
    sa.Column('settings_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_by', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_collection_configs_collection_id_collections'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_collection_configs')),
    sa.UniqueConstraint('collection_id', 'version', name=op.f('uq_collection_configs_collection_id_version'))
    )
    op.create_table('qrels_versions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('uploaded_by', sa.String(length=200), nullable=False),
    sa.Column('uploaded_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('source_name', sa.String(length=500), nullable=False),
    sa.Column('checksum', sa.String(length=64), nullable=False),
    sa.Column('n_judgments', sa.Integer(), nullable=False),
    sa.Column('level_counts', sa.JSON(), nullable=False),
    sa.Column('file', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_qrels_versions_collection_id_collections'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_qrels_versions')),
    sa.UniqueConstraint('collection_id', 'version', name=op.f('uq_qrels_versions_collection_id_version'))
    )
    op.create_table('runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=False),
    sa.Column('tag', sa.String(length=200), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('is_baseline', sa.Boolean(), nullable=False),
    sa.Column('submitted_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('submitted_by', sa.String(length=200), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('status_reason', sa.Text(), nullable=False),
    sa.Column('source_name', sa.String(length=500), nullable=False),
    sa.Column('checksum', sa.String(length=64), nullable=False),
    sa.Column('file', sa.LargeBinary(), nullable=False),
    sa.Column('n_topics', sa.Integer(), nullable=False),
    sa.Column('n_lines', sa.Integer(), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_runs_collection_id_collections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_runs_team_id_teams')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_runs')),
    sa.UniqueConstraint('collection_id', 'tag', name=op.f('uq_runs_collection_id_tag'))
    )
    op.create_table('topics',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('topic_id', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_topics_collection_id_collections'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_topics')),
    sa.UniqueConstraint('collection_id', 'topic_id', name=op.f('uq_topics_collection_id_topic_id'))
    )
    op.create_table('jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('qrels_version_id', sa.Integer(), nullable=False),
    sa.Column('previous_qrels_id', sa.Integer(), nullable=True),
    sa.Column('config_id', sa.Integer(), nullable=False),
    sa.Column('evaluator_version', sa.String(length=40), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('failed', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('tests_queued_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('tests_attempts', sa.Integer(), nullable=False),
    sa.Column('report', sa.JSON(), nullable=False),
    sa.Column('error', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_jobs_collection_id_collections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['config_id'], ['collection_configs.id'], name=op.f('fk_jobs_config_id_collection_configs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['previous_qrels_id'], ['qrels_versions.id'], name=op.f('fk_jobs_previous_qrels_id_qrels_versions'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['qrels_version_id'], ['qrels_versions.id'], name=op.f('fk_jobs_qrels_version_id_qrels_versions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs'))
    )
    op.create_table('judgments',
    sa.Column('qrels_version_id', sa.Integer(), nullable=False),
    sa.Column('topic', sa.String(length=200), nullable=False),
    sa.Column('docno', sa.String(length=500), nullable=False),
    sa.Column('level', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['qrels_version_id'], ['qrels_versions.id'], name=op.f('fk_judgments_qrels_version_id_qrels_versions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('qrels_version_id', 'topic', 'docno', name=op.f('pk_judgments'))
    )
    op.create_table('run_evaluations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('qrels_version_id', sa.Integer(), nullable=False),
    sa.Column('config_id', sa.Integer(), nullable=False),
    sa.Column('settings_hash', sa.String(length=64), nullable=False),
    sa.Column('evaluator_version', sa.String(length=40), nullable=False),
    sa.Column('topics', sa.JSON(), nullable=False),
    sa.Column('computed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('seconds', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['config_id'], ['collection_configs.id'], name=op.f('fk_run_evaluations_config_id_collection_configs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['qrels_version_id'], ['qrels_versions.id'], name=op.f('fk_run_evaluations_qrels_version_id_qrels_versions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_run_evaluations_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run_evaluations')),
    sa.UniqueConstraint('run_id', 'qrels_version_id', 'settings_hash', 'evaluator_version', name=op.f('uq_run_evaluations_run_id_qrels_version_id_settings_hash_evaluator_version'))
    )
    op.create_table('significance',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('qrels_version_id', sa.Integer(), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=False),
    sa.Column('test', sa.String(length=40), nullable=False),
    sa.Column('settings_hash', sa.String(length=64), nullable=False),
    sa.Column('evaluator_version', sa.String(length=40), nullable=False),
    sa.Column('runs_hash', sa.String(length=64), nullable=False),
    sa.Column('params_hash', sa.String(length=64), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('run_ids', sa.JSON(), nullable=False),
    sa.Column('n_topics', sa.Integer(), nullable=False),
    sa.Column('diff', sa.LargeBinary(), nullable=False),
    sa.Column('statistic', sa.LargeBinary(), nullable=False),
    sa.Column('p', sa.LargeBinary(), nullable=False),
    sa.Column('p_adjusted', sa.LargeBinary(), nullable=False),
    sa.Column('computed_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_significance_collection_id_collections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['qrels_version_id'], ['qrels_versions.id'], name=op.f('fk_significance_qrels_version_id_qrels_versions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_significance')),
    sa.UniqueConstraint('qrels_version_id', 'metric', 'test', 'settings_hash', 'evaluator_version', 'runs_hash', 'params_hash', name=op.f('uq_significance_qrels_version_id_metric_test_settings_hash_evaluator_version_runs_hash_params_hash'))
    )
    op.create_table('job_items',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('queued_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('error', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_job_items_job_id_jobs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_job_items_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_items')),
    sa.UniqueConstraint('job_id', 'run_id', name=op.f('uq_job_items_job_id_run_id'))
    )
    with op.batch_alter_table('job_items', schema=None) as batch_op:
        batch_op.create_index('ix_job_items_status', ['status'], unique=False)

    op.create_table('scores',
    sa.Column('run_evaluation_id', sa.Integer(), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=False),
    sa.Column('mean', sa.Float(), nullable=True),
    sa.Column('ci_low', sa.Float(), nullable=True),
    sa.Column('ci_high', sa.Float(), nullable=True),
    sa.Column('n_topics', sa.Integer(), nullable=False),
    sa.Column('values', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['run_evaluation_id'], ['run_evaluations.id'], name=op.f('fk_scores_run_evaluation_id_run_evaluations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_evaluation_id', 'metric', name=op.f('pk_scores'))
    )

    # collections <-> collection_configs / qrels_versions reference each other: the
    # collection's pointers to its current versions are added once both tables exist.
    with op.batch_alter_table('collections', schema=None) as batch_op:
        batch_op.create_foreign_key('fk_collections_current_config', 'collection_configs', ['current_config_id'], ['id'])
        batch_op.create_foreign_key('fk_collections_current_qrels', 'qrels_versions', ['current_qrels_id'], ['id'])


def downgrade() -> None:
    with op.batch_alter_table('collections', schema=None) as batch_op:
        batch_op.drop_constraint('fk_collections_current_qrels', type_='foreignkey')
        batch_op.drop_constraint('fk_collections_current_config', type_='foreignkey')
    op.drop_table('scores')
    with op.batch_alter_table('job_items', schema=None) as batch_op:
        batch_op.drop_index('ix_job_items_status')

    op.drop_table('job_items')
    op.drop_table('significance')
    op.drop_table('run_evaluations')
    op.drop_table('judgments')
    op.drop_table('jobs')
    op.drop_table('topics')
    op.drop_table('runs')
    op.drop_table('qrels_versions')
    op.drop_table('collection_configs')
    op.drop_table('audit_events')
    op.drop_table('teams')
    op.drop_table('collections')
