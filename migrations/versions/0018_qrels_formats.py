"""qrels formats: intent-aware (diversity) and stratified-sample (sampled) judgments

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-24 07:30:00

A qrels version records the format it was uploaded in (issue 17): ``adhoc`` (every version
stored before, and the default), ``diversity`` (TREC diversity or NTCIR intent qrels: one
judgment per topic, intent and document) or ``sampled`` (NIST's five-column stratified-sample
qrels). The verbatim upload stays in ``file``; an NTCIR upload's intent probability file is
kept beside it (zlib-compressed, verbatim) in ``intent_probabilities``.

Both columns are added in place (ALTER TABLE ADD COLUMN): on SQLite a batch would rebuild
``qrels_versions``, which holds data and is the target of foreign keys (see 0017).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0018'
down_revision: str | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('qrels_versions', sa.Column('format', sa.String(length=20), server_default='adhoc',
                                              nullable=False))
    op.add_column('qrels_versions', sa.Column('intent_probabilities', sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    # A version of another format would be read as ad hoc qrels, which its file is not: its file
    # becomes its judgment rows (the flattened view every reader used) as TREC ad hoc qrels, so
    # the version, its judgments and its scores stay and read as before.
    bind = op.get_bind()
    versions = bind.execute(sa.text("SELECT id FROM qrels_versions WHERE format <> 'adhoc'")).scalars().all()
    for vid in versions:
        rows = bind.execute(sa.text("SELECT topic, docno, level FROM judgments WHERE qrels_version_id = :v "
                                    "ORDER BY topic, docno"), {"v": vid}).all()
        text = "".join(f"{t} 0 {d} {lv}\n" for t, d, lv in rows).encode("utf-8")
        bind.execute(sa.text("UPDATE qrels_versions SET file = :f WHERE id = :v"),
                     {"f": zlib.compress(text, 6), "v": vid})
    if bind.dialect.name == "sqlite":  # in place: a rebuild would trip the foreign keys (see 0017)
        for column in ("intent_probabilities", "format"):
            op.execute(f"ALTER TABLE qrels_versions DROP COLUMN {column}")
    else:
        op.drop_column('qrels_versions', 'intent_probabilities')
        op.drop_column('qrels_versions', 'format')
