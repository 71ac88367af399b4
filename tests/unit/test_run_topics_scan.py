"""Migration 0021's listing of a stored run file's topics, a piece at a time (issue 26, item 4).

It must give what the pages' reading of the whole file gave (``run_results._topics_in_file``,
the one fallback), whatever the size of the pieces it decompresses: a line, a byte-order mark
or a CRLF cut by a piece's end included.
"""

from __future__ import annotations

import importlib.util
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

from service.evaluation.runs.run_results import _topics_in_file

MIGRATION = Path(__file__).parents[2] / "migrations" / "versions" / "0021_run_topics.py"


def _migration() -> Any:
    spec = importlib.util.spec_from_file_location("migration_0021", MIGRATION)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _run_file(rng: random.Random) -> bytes:
    lines = []
    for i in range(rng.randint(0, 60)):
        k = rng.random()
        if k < 0.1:
            lines.append(b"# comment %d" % i)
        elif k < 0.15:
            lines.append(b"")
        elif k < 0.2:
            lines.append(b"  \t%d Q0 d 1 1 r" % rng.randint(1, 20))
        elif k < 0.22:
            lines.append("tópico-%d Q0 d 1 1 r".encode() % rng.randint(1, 3))
        else:
            lines.append(b"%d Q0 doc%d 1 1.0 r" % (rng.randint(1, 30), i))
    bom = b"\xef\xbb\xbf" if rng.random() < 0.3 else b""
    end = b"\r\n" if rng.random() < 0.3 else b"\n"
    return bom + end.join(lines) + (end if rng.random() < 0.5 else b"")


@pytest.mark.parametrize("seed", range(40))
def test_pieces_of_any_size_list_what_the_whole_file_lists(seed: int) -> None:
    topics_in_file = _migration().topics_in_file
    rng = random.Random(seed)
    for _ in range(5):
        blob = zlib.compress(_run_file(rng), 1)
        whole = _topics_in_file(blob)
        for chunk in (1, 2, 3, 5, 17, 64, 1 << 20):
            listed = topics_in_file(blob, chunk)
            assert set(listed) == whole and len(listed) == len(whole), chunk
            assert listed == sorted(listed, key=lambda t: t.encode("utf-8"))


def test_a_file_without_data_lines_has_no_topics() -> None:
    topics_in_file = _migration().topics_in_file
    for body in (b"", b"\xef\xbb\xbf", b"# only\n\n", b"\xef\xbb\xbf# c\r\n"):
        assert topics_in_file(zlib.compress(body), 2) == []
