"""What the service commands share: the database, the workers' queue, input files, the caller.

Configuration comes from the environment (service/config.py). Work is enqueued only after
the transaction that created it has committed. Heavy modules are imported inside the
functions, so that importing the CLI stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from service.errors import InvalidInput, InvalidMeasure
from service.formats.text import counted


def database_url() -> str:
    from service.config import settings

    return settings().store.database_url


def safe_url(url: str) -> str:
    """The URL with its password hidden, for printing."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def sessions(url: str):  # type: ignore[no-untyped-def]
    """The session factory of the database at ``url``."""
    from service.store.db import session_factory

    return session_factory(url)


def send(followups: Any) -> None:
    """Hand follow-up tasks to the workers (call after the commit that planned them)."""
    from workers.tasks import send as send_to_workers

    send_to_workers(followups)


def run_files(paths: list[str]) -> list[Path]:
    """Run files named by ``paths``: files, or every visible file of a folder."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".")))
        elif p.is_file():
            files.append(p)
        else:
            raise InvalidInput(str(p), None, "no such file or folder")
    if not files:
        raise InvalidMeasure("no run files found")
    return files


def read_bytes(path: str | Path) -> bytes | bytearray:
    """A run, qrels, label or probability file's bytes, decompressed when it is gzip (bounded by
    CRANFIELD_MAX_UPLOAD, as an upload is: service/formats/compressed.py)."""
    from service.formats.compressed import read_file

    return read_file(path)


def cli_principal():  # type: ignore[no-untyped-def]
    """The CLI acts with an administrator's rights (it runs where the database is)."""
    from service.evaluation.permissions.access import Principal

    return Principal(role="admin", name="cli")


def read_teams(path: str) -> dict[str, str]:
    """A teams file: ``run tag<TAB or spaces>team`` per line, ``#`` comments and blank lines
    skipped; a malformed or repeated tag is an error naming the file and line."""
    teams: dict[str, str] = {}
    for number, line in enumerate(read_bytes(path).decode("utf-8-sig").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = text.split()
        if len(fields) != 2:
            raise InvalidInput(path, number, f"expected 'run-tag team', got {counted(len(fields), 'field')}")
        tag, team = fields
        if tag in teams:
            raise InvalidInput(path, number, f"run {tag} is given a team twice")
        teams[tag] = team
    return teams
