"""answer collections: a collection's task kind (ranked lists or generated answers) and answer settings

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 01:30:00

Issue 35: a collection takes TREC runs ("ranked", every collection so far) or generated answers
("answers", TREC RAG), chosen at creation; an answers collection keeps its answer format and
validation limits in ``answer_settings``. Its judgments are qrels versions of format "rag"
(nuggets, nugget assignments, citation support and retrieval qrels in one version), so no new
table. Downgrade drops both columns (an answers collection then reads as ranked lists).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0025'
down_revision: str | None = '0024'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD/DROP COLUMN, as 0017 does on this table: a batch copy of ``collections`` on SQLite
    # would restate its foreign keys and break 0017's downgrade
    op.add_column('collections', sa.Column('task_kind', sa.String(length=20), server_default='ranked',
                                           nullable=False))
    op.add_column('collections', sa.Column('answer_settings', sa.JSON(), server_default='{}', nullable=False))


def downgrade() -> None:
    op.drop_column('collections', 'answer_settings')
    op.drop_column('collections', 'task_kind')
