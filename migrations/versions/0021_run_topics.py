"""the topics of each run's file, stored with the run

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 00:30:00

Issue 26, item 4: the run page, the comparison of two runs and the topic analysis tell a
topic missing from a run from a real 0 by the topics the run's file has lines for. They
decompressed and scanned the whole file (up to hundreds of MB) on every view; the list is now
stored when the run is (``add_run``, from the parsed run) and read instead.

``run_topics`` is a table of its own (run id, JSON list), not a column of ``runs``: on SQLite
a column added to ``runs`` lies after the file's blob, and reading it walks the blob's
overflow pages (7 ms for a 40 MB file, against 0.03 ms in a narrow table); rebuilding
``runs`` to put it first would, with foreign keys enforced, cascade the drop of the old table
to every run's scores.

Every run stored before this revision gets its list here, from its file, the way the pages
read it until now (the first column of each line that is not blank or a ``#`` comment, a
byte-order mark left out): the files are read a batch at a time (at most ``BATCH_BYTES`` of
compressed files, or one file if it is larger) and decompressed in ``CHUNK`` pieces, so
memory stays bounded whatever the runs' sizes. Downgrade drops the table.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator, Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0021'
down_revision: str | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH_BYTES = 64 << 20  # compressed file bytes read per query
CHUNK = 16 << 20  # decompressed bytes scanned at a time
_FIRST_COLUMN = re.compile(rb"^[ \t]*([^\s#]\S*)", re.MULTILINE)

runs = sa.table('runs', sa.column('id', sa.Integer()), sa.column('file', sa.LargeBinary()))
run_topics = sa.table('run_topics', sa.column('run_id', sa.Integer()), sa.column('topics', sa.JSON()))


def topics_in_file(compressed: bytes, chunk: int = CHUNK) -> list[str]:
    """The first column of every data line of a zlib-compressed run file, each topic once, in
    the order of their UTF-8 bytes; ``chunk`` decompressed bytes at a time (a line cut by a
    chunk's end is carried over whole to the next)."""
    found: set[bytes] = set()
    inflate = zlib.decompressobj()
    carry, pending, start = b"", compressed, True
    while True:
        piece = inflate.decompress(pending, chunk)
        pending = inflate.unconsumed_tail
        done = not pending and not piece
        data = carry + (inflate.flush() if done else piece)
        if start and (len(data) >= 3 or done):
            data, start = data.removeprefix(b"\xef\xbb\xbf"), False  # a byte-order mark is no part of a topic
        cut = len(data) if done else 0 if start else data.rfind(b"\n") + 1  # whole lines only
        found.update(_FIRST_COLUMN.findall(data, 0, cut))
        carry = data[cut:]
        if done:
            break
    return [t.decode("utf-8", "replace") for t in sorted(found)]


def _batches(bind: sa.engine.Connection) -> Iterator[list[int]]:
    """Run ids in id order, in groups of at most BATCH_BYTES of compressed file."""
    batch: list[int] = []
    size = 0
    for rid, length in bind.execute(sa.select(runs.c.id, sa.func.length(runs.c.file)).order_by(runs.c.id)).all():
        if batch and size + (length or 0) > BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(rid)
        size += length or 0
    if batch:
        yield batch


def upgrade() -> None:
    op.create_table('run_topics',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('topics', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_run_topics_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', name=op.f('pk_run_topics'))
    )
    bind = op.get_bind()
    for ids in _batches(bind):
        rows = bind.execute(sa.select(runs.c.id, runs.c.file).where(runs.c.id.in_(ids))).all()
        listed = [{"run_id": rid, "topics": topics_in_file(blob)} for rid, blob in rows]
        del rows
        bind.execute(run_topics.insert(), listed)


def downgrade() -> None:
    op.drop_table('run_topics')
