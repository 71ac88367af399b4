"""stratified-sampling pools

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-24 07:30:00

A pool is of a ``kind``: ``depth`` (every earlier pool: the union of the runs' top k) or
``stratified`` (issue 17: strata by rank range, each sampled at its rate; Yilmaz, Kanoulas &
Aslam, SIGIR 2008). A stratified pool keeps its ``strata`` (``[[first_rank, last_rank,
rate], ...]``) and the seed of its draw (``sample_seed``); each of its documents keeps its
stratum (0-based index into ``strata``), its best rank over the pooled runs, its inclusion
probability (its stratum's rate) and whether it was ``sampled``. Every pooled document is a
row, sampled or not: NIST's sampled qrels list the whole pool (the unsampled documents at
-1) and xinfAP/infNDCG count the unsampled ones. Assessors see the sampled ones only.
Earlier rows are depth pools of sampled documents (the server defaults).

SQLite: plain ALTER TABLE ADD COLUMN (``pools`` and ``pool_documents`` hold data with
foreign keys; a batch rebuild would trip them: see 0017). Downgrading drops the stratified
pools (a depth pool's rows cannot stand for them) and then the columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0019'
down_revision: str | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

POOL_COLUMNS = ('kind', 'strata', 'sample_seed')
DOCUMENT_COLUMNS = ('stratum', 'best_rank', 'inclusion_probability', 'sampled')


def upgrade() -> None:
    op.add_column('pools', sa.Column('kind', sa.String(length=20), server_default='depth', nullable=False))
    op.add_column('pools', sa.Column('strata', sa.JSON(), nullable=True))
    op.add_column('pools', sa.Column('sample_seed', sa.Integer(), nullable=True))
    op.add_column('pool_documents', sa.Column('stratum', sa.Integer(), nullable=True))
    op.add_column('pool_documents', sa.Column('best_rank', sa.Integer(), nullable=True))
    op.add_column('pool_documents', sa.Column('inclusion_probability', sa.Float(), nullable=True))
    op.add_column('pool_documents', sa.Column('sampled', sa.Boolean(), server_default=sa.true(), nullable=False))


def downgrade() -> None:
    op.execute("DELETE FROM pools WHERE kind <> 'depth'")  # their documents go with them (ON DELETE CASCADE)
    op.execute("DELETE FROM pool_documents WHERE pool_id NOT IN (SELECT id FROM pools)")  # SQLite without FKs on
    bind = op.get_bind()
    for table, columns in (('pool_documents', DOCUMENT_COLUMNS), ('pools', POOL_COLUMNS)):
        for column in columns:
            if bind.dialect.name == "sqlite":  # in place: a rebuild would trip the foreign keys
                op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
            else:
                op.drop_column(table, column)
