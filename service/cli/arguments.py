"""Argument types shared by the commands (standard library only)."""

from __future__ import annotations

import argparse

#: ``cranfield eval --qrels-format``: service.formats.qrels_files.FILE_FORMATS (kept here so that
#: parsing the command line imports no numpy; a unit test holds the two equal).
QRELS_FILE_FORMATS = ("auto", "adhoc", "trec", "ntcir", "diversity-trec", "diversity-ntcir", "sampled")


def parse_gains(text: str) -> tuple[tuple[int, float], ...]:
    """``1=1,2=5,3=10`` (or ``1:1,...``) -> ((1, 1.0), (2, 5.0), (3, 10.0))."""
    pairs = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        sep = "=" if "=" in part else ":"
        level, _, gain = part.partition(sep)
        try:
            pairs.append((int(level), float(gain)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"--gains: {part!r} is not LEVEL=GAIN") from None
    if not pairs:
        raise argparse.ArgumentTypeError("--gains: give LEVEL=GAIN pairs, e.g. 1=1,2=5,3=10")
    return tuple(sorted(pairs))


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return v
