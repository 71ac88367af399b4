"""Monte Carlo precision of stored tests

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 03:50:00

Issue 25, item 1: a stored resampling test keeps, per pair (packed float64 arrays in pair
order, as ``p``): ``resamples``, the B its p is over (the sequential rule gives each pair its
own; the bootstrap's informative resamples), ``mc_se``, the Monte Carlo standard error of p,
and ``undecided`` (1.0 where the verdict still straddled alpha when resampling stopped);
``degenerate``, the bootstrap's resamples left out for zero spread. NULL for exact tests (SE 0,
never undecided) and for rows stored before this revision (their B is the params' one).

SQLite: plain ALTER TABLE ADD COLUMN (nullable, no rebuild).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0020'
down_revision: str | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ('resamples', 'mc_se', 'undecided', 'degenerate')


def upgrade() -> None:
    for column in COLUMNS:
        op.add_column('significance', sa.Column(column, sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    bind = op.get_bind()
    for column in COLUMNS:
        if bind.dialect.name == "sqlite":
            op.execute(f"ALTER TABLE significance DROP COLUMN {column}")
        else:
            op.drop_column('significance', column)
