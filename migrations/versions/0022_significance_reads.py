"""a stored test keeps what is read of it

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 00:50:00

Issue 26, item 4: a significance row kept four float64 arrays over the pairs (8 bytes a pair
each: 4 MB per metric at 1,000 runs), of which nothing ever read the differences (``diff``)
or the test statistics (``statistic``): a comparison of two runs recomputes its difference
from the stored scores. They are dropped. The raw ``p`` is read only where a correction made
it differ from ``p_adjusted`` (``reading.raw_p``; Monte Carlo SE of rows from before 0020);
it becomes nullable, NULL meaning "the same as p_adjusted", and is set to NULL here wherever
its bytes equal p_adjusted's (every test without a correction: the default). See
docs/decisions.md, "A stored test keeps what is read".

SQLite: one rebuild of ``significance`` (a batch: a column cannot become nullable in place);
nothing refers to the table, so dropping the old copy cascades nowhere. The freed pages stay
in the file until a VACUUM. Downgrade: the columns come back holding empty arrays (nothing
read them) and every NULL ``p`` gets p_adjusted's bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0022'
down_revision: str | None = '0021'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DROPPED = ('diff', 'statistic')


def upgrade() -> None:
    with op.batch_alter_table('significance') as batch:
        for column in DROPPED:
            batch.drop_column(column)
        batch.alter_column('p', existing_type=sa.LargeBinary(), nullable=True)
    op.execute("UPDATE significance SET p = NULL WHERE p = p_adjusted")


def downgrade() -> None:
    op.execute("UPDATE significance SET p = p_adjusted WHERE p IS NULL")
    with op.batch_alter_table('significance') as batch:
        batch.alter_column('p', existing_type=sa.LargeBinary(), nullable=False)
        for column in DROPPED:
            batch.add_column(sa.Column(column, sa.LargeBinary(), nullable=True))
    significance = sa.table('significance', *(sa.column(c, sa.LargeBinary()) for c in DROPPED))
    op.execute(significance.update().values({c: b"" for c in DROPPED}))
    with op.batch_alter_table('significance') as batch:
        for column in DROPPED:
            batch.alter_column(column, existing_type=sa.LargeBinary(), nullable=False)
