"""idempotency keys of uploads

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 22:00:00

(Placeholder in the chain: filled by the change that needs it.)
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
