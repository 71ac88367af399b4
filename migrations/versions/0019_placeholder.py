"""placeholder (to be written)

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-24 07:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = '0019'
down_revision: str | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
