"""judgment sets, assessor labels and judges tracks

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-24 07:10:00

A collection's judgments become named sets (issue 16): every earlier qrels version joins its
collection's set "official" (source "human"), which the collection points to; a set keeps
its provenance and, when several assessors label one document, every label. A collection
may accept judgment sets from teams (a judges track).

SQLite cannot add a foreign key to an existing table without rebuilding it, and rebuilding
``collections`` or ``qrels_versions`` with foreign keys enforced would cascade; the new
columns are plain ALTER TABLE ADD COLUMN ... REFERENCES there (which SQLite does support).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0017'
down_revision: str | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _add_reference(table: str, column: str, target: str, name: str, ondelete: str | None = None) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        on_delete = f" ON DELETE {ondelete}" if ondelete else ""
        op.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER "
                   f"CONSTRAINT {name} REFERENCES {target} (id){on_delete}")
    else:
        op.add_column(table, sa.Column(column, sa.Integer(), nullable=True))
        op.create_foreign_key(name, table, target, [column], ['id'], ondelete=ondelete)


def upgrade() -> None:
    op.create_table('judgment_sets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('collection_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('source', sa.String(length=20), nullable=False),
    sa.Column('model', sa.String(length=200), nullable=False),
    sa.Column('prompt', sa.Text(), nullable=False),
    sa.Column('judged_on', sa.String(length=40), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('rule', sa.String(length=20), nullable=False),
    sa.Column('auto_evaluate', sa.Boolean(), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=True),
    sa.Column('created_by', sa.String(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('current_version_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['collection_id'], ['collections.id'], name=op.f('fk_judgment_sets_collection_id_collections'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_judgment_sets_team_id_teams'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['current_version_id'], ['qrels_versions.id'], name='fk_judgment_sets_current_version'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_judgment_sets')),
    sa.UniqueConstraint('collection_id', 'name', name=op.f('uq_judgment_sets_collection_id_name'))
    )
    op.create_table('assessor_labels',
    sa.Column('judgment_set_id', sa.Integer(), nullable=False),
    sa.Column('topic', sa.String(length=200), nullable=False),
    sa.Column('docno', sa.String(length=500), nullable=False),
    sa.Column('assessor', sa.String(length=200), nullable=False),
    sa.Column('level', sa.Integer(), nullable=False),
    sa.Column('labelled_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['judgment_set_id'], ['judgment_sets.id'], name=op.f('fk_assessor_labels_judgment_set_id_judgment_sets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('judgment_set_id', 'topic', 'docno', 'assessor', name=op.f('pk_assessor_labels'))
    )
    # plain ALTER TABLE ADD COLUMN (a batch would rebuild collections on SQLite: see above)
    op.add_column('collections', sa.Column('accepts_judgments', sa.Boolean(), server_default=sa.false(),
                                           nullable=False))
    op.add_column('collections', sa.Column('judge_track', sa.JSON(), server_default='{}', nullable=False))
    _add_reference('qrels_versions', 'judgment_set_id', 'judgment_sets',
                   'fk_qrels_versions_judgment_set_id_judgment_sets')
    _add_reference('collections', 'official_set_id', 'judgment_sets', 'fk_collections_official_set')

    # Every collection gets its official set, holding every earlier version.
    op.execute(
        "INSERT INTO judgment_sets (collection_id, name, source, model, prompt, judged_on, notes, rule, "
        "auto_evaluate, created_by, created_at, current_version_id) "
        "SELECT id, 'official', 'human', '', '', '', 'the qrels versions stored before judgment sets', 'latest', "
        "true, 'migration 0017', created_at, current_qrels_id FROM collections"
    )
    op.execute(
        "UPDATE collections SET official_set_id = "
        "(SELECT judgment_sets.id FROM judgment_sets WHERE judgment_sets.collection_id = collections.id)"
    )
    op.execute(
        "UPDATE qrels_versions SET judgment_set_id = "
        "(SELECT judgment_sets.id FROM judgment_sets WHERE judgment_sets.collection_id = qrels_versions.collection_id)"
    )


def downgrade() -> None:
    # Versions of other sets than the official one go with their sets (their scores with them).
    op.execute(
        "DELETE FROM qrels_versions WHERE judgment_set_id IS NOT NULL AND judgment_set_id NOT IN "
        "(SELECT official_set_id FROM collections WHERE official_set_id IS NOT NULL)"
    )
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":  # in place: rebuilding collections would trip its foreign keys
        for table, column in (("qrels_versions", "judgment_set_id"), ("collections", "official_set_id"),
                              ("collections", "judge_track"), ("collections", "accepts_judgments")):
            op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    else:
        op.drop_constraint('fk_collections_official_set', 'collections', type_='foreignkey')
        op.drop_column('collections', 'official_set_id')
        op.drop_constraint('fk_qrels_versions_judgment_set_id_judgment_sets', 'qrels_versions', type_='foreignkey')
        op.drop_column('qrels_versions', 'judgment_set_id')
        op.drop_column('collections', 'judge_track')
        op.drop_column('collections', 'accepts_judgments')
    op.drop_table('assessor_labels')
    op.drop_table('judgment_sets')
