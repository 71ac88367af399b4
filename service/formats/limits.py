"""Bounds on the counts an uploaded file can inflate beyond its size.

A file's size is bounded (the API's upload limit), and the readers' memory and time are linear
in it; but some counts cost more than their lines downstream: 10^6 intents in one diversity
topic took 1.44 GB to read and 34.8 s and 1.75 GB to evaluate one depth-20 run (the
intent-aware measures build a documents x intents matrix per topic and loop over its intents),
a stratum costs every run's evaluation of its topic a pass, a topic costs rows and a
ranked list in every evaluation. The readers take a :class:`CountLimits` (the service's
settings, ``service.config.FileSettings``; None: no bound, for files read locally) and refuse a
file past one, naming the line where the count is first exceeded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from service.errors import InvalidInput


@dataclass(frozen=True)
class CountLimits:
    """The most of each count a file may hold (None: no bound)."""

    topics: int | None = None  # topics of one file
    intents_per_topic: int | None = None  # intents of one topic (diversity qrels, probability files)
    intent_cells: int | None = None  # judged documents x intents of one topic (diversity qrels)
    strata_per_topic: int | None = None  # strata of one topic (sampled qrels)
    assessors: int | None = None  # assessors of one label file
    labels_per_document: int | None = None  # labels of one (topic, docno) in one label file


def codes_of(values: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (equal values, equal codes)."""
    return np.unique(values, return_inverse=True)[1].reshape(-1)


def running_distinct(groups: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Per line, how many distinct items its group has had so far, that line's included (lines
    in file order; ``groups`` and ``items`` are integer codes)."""
    n = groups.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    key = groups.astype(np.int64) * (int(items.max()) + 1) + items
    first = np.unique(key, return_index=True)[1]
    del key
    new = np.zeros(n, dtype=np.int64)
    new[first] = 1
    order = np.argsort(groups, kind="stable")
    by_group = groups[order]
    count = np.cumsum(new[order])
    heads = np.flatnonzero(np.r_[True, by_group[1:] != by_group[:-1]])
    before = count[heads] - new[order][heads]  # each group's count before its first line
    count -= np.repeat(before, np.diff(np.r_[heads, n]))
    out = np.empty(n, dtype=np.int64)
    out[order] = count
    return out


def first_over(counts: np.ndarray, limit: int | None) -> int | None:
    """The first line whose count is above ``limit`` (None: none, or no limit)."""
    if limit is None:
        return None
    over = np.flatnonzero(counts > limit)
    return int(over[0]) if over.shape[0] else None


def check_topics(source: str, topics: np.ndarray, names: np.ndarray, line_of: Callable[[int], int],
                 limit: int | None) -> None:
    """Refuse a file of more than ``limit`` topics, at the line of the first topic past it.
    ``topics``: each line's topic code (0 to the number of topics - 1), ``names``: the topic
    ids by code, ``line_of``: a line's number."""
    if limit is None or topics.shape[0] == 0 or int(topics.max()) + 1 <= limit:
        return
    r = first_over(running_distinct(np.zeros_like(topics), topics), limit)
    assert r is not None
    raise InvalidInput(source, line_of(r), f"topic {_text(names[topics[r]])!r} is one more than the "
                       f"{limit:,} topics a file may hold")


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
