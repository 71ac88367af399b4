"""Run the Alembic migrations from code (`cranfield db upgrade|downgrade`, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

import migrations


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)


def revision(url: str, message: str) -> None:
    """Autogenerate a new migration against the database at ``url`` (developers only)."""
    command.revision(alembic_config(url), message=message, autogenerate=True)
