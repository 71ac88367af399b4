"""How the commands print documents (standard library only)."""

from __future__ import annotations

import json
from typing import Any, TextIO


def write_json(doc: Any, out: TextIO) -> int:
    """``doc`` as indented JSON and a newline (the ``--format json`` of every command); returns 0,
    the exit code of a command that has printed its answer."""
    json.dump(doc, out, indent=1)
    out.write("\n")
    return 0
