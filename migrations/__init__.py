"""Alembic migrations of the store (run them with `cranfield db upgrade`)."""
