"""The submission checks: what a valid run may still get wrong, as warnings.

A run that parses is stored; these checks say what in it is likely a mistake, so the team
sees it at once rather than on the board:

``missing_topics``
    topics of the collection the run has no list for (each scores as the collection's
    missing-topic rule says, usually 0);
``short_lists``
    topics whose list is shorter than the warning depth (:func:`warning_depth`);
``ties_at_cutoff``
    topics whose documents at ranks k and k + 1 have equal scores, k the official metric's
    cutoff: which of them counts then depends on the tie rule (trec_eval's docno order), not
    on the system;
``rank_disagrees``
    topics where a document with a higher score does not have a smaller rank in the file's
    rank column (ties in score may be ranked either way).

Every check is a few passes over the run's arrays (linear in its lines, the rank check's
fallback for runs not held in score order aside, which sorts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.formats.types import Run

#: A warning lists at most this many topics (its ``count`` says how many there are).
MAX_LISTED = 20
#: TREC's customary list length: the warning depth when a metric reads the whole list.
TREC_DEPTH = 1000


@dataclass(frozen=True)
class RunWarning:
    """One kind of likely mistake: a stable ``code``, a sentence, the first topics concerned."""

    code: str
    message: str
    topics: tuple[str, ...]
    count: int

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "topics": list(self.topics), "count": self.count}


def warning_depth(evaluation_depth: int | None, cutoffs: Sequence[int | None]) -> int:
    """How long a list should be: the collection's evaluation depth when it has one; else the
    largest cutoff when every metric has one (nothing below it is read); else TREC's 1000,
    since a metric without a cutoff (AP, Q) reads the whole list and a short list loses it
    recall."""
    if evaluation_depth is not None:
        return int(evaluation_depth)
    if cutoffs and all(k is not None for k in cutoffs):
        return max(int(k) for k in cutoffs if k is not None)
    return max([TREC_DEPTH, *(int(k) for k in cutoffs if k is not None)])


def depth_reason(evaluation_depth: int | None, cutoffs: Sequence[int | None]) -> str:
    """Where :func:`warning_depth` took its depth from, in words (the ``short_lists`` warning)."""
    if evaluation_depth is not None:
        return "the collection's evaluation depth"
    if cutoffs and all(k is not None for k in cutoffs):
        return "the largest cutoff of the collection's metrics"
    return "TREC's customary depth: a metric without a cutoff reads the whole list"


def _topics(n: int) -> str:
    return f"{n} topic{'' if n == 1 else 's'}"


def tie_cutoff(official_cutoff: int | None, evaluation_depth: int | None) -> int | None:
    """Where a tie changes the official score: the official metric's cutoff, or the evaluation
    depth when that cuts the list shorter (or the metric has no cutoff); None when the whole
    list is evaluated (no tie then straddles a cut)."""
    cuts = [k for k in (official_cutoff, evaluation_depth) if k is not None]
    return min(cuts) if cuts else None


def check_run(run: Run, topics: Iterable[str], *, depth: int, cutoff: int | None,
              ranked_by_score: bool = True, depth_source: str = "the evaluation depth") -> list[RunWarning]:
    """The warnings of ``run`` against the collection's ``topics``: lists shorter than
    ``depth``, ties at ``cutoff`` (only when ``ranked_by_score``: under the rank or file order
    scores do not order the lists), a rank column that disagrees with the scores (when the
    run carries its ``ranks``); ``depth_source`` says where ``depth`` comes from
    (:func:`depth_reason`). Each message is a sentence. An empty list: nothing to warn of."""
    return [*missing_topics(run.topics, topics),
            *list_warnings(run, depth=depth, cutoff=cutoff, ranked_by_score=ranked_by_score, depth_source=depth_source)]


def missing_topics(run_topics: Iterable[str], topics: Iterable[str]) -> list[RunWarning]:
    """:func:`check_run`'s ``missing_topics`` warning (the collection's topics the run has no
    list for), if any: the one check that needs the collection, not the run's arrays."""
    missing = sorted(set(topics) - set(run_topics))
    if not missing:
        return []
    return [_warning("missing_topics", missing, f"{len(missing)} of the collection's topics "
                     f"{'has' if len(missing) == 1 else 'have'} no list in the run; "
                     "they score as the collection's missing-topic rule says.")]


def list_warnings(run: Run, *, depth: int, cutoff: int | None, ranked_by_score: bool = True,
                  depth_source: str = "the evaluation depth") -> list[RunWarning]:
    """:func:`check_run`'s warnings about the lists themselves (short lists, ties at the cutoff,
    the rank column), in its order: what a submission computes before it lets the parsed run go."""
    if depth < 1 or (cutoff is not None and cutoff < 1):
        raise ValueError("depth and cutoff are positive integers")
    lengths = np.diff(run.offsets)
    found: list[RunWarning] = []
    short = _topics_where(run, lengths < depth)
    if short:
        found.append(_warning("short_lists", short, f"{_topics(len(short))} {'has' if len(short) == 1 else 'have'} fewer "
                              f"than {depth} documents ({depth_source}); the shortest list has "
                              f"{int(lengths.min())}."))
    if cutoff is not None and ranked_by_score:
        tied = _ties_at(run, lengths, cutoff)
        if tied:
            found.append(_warning("ties_at_cutoff", tied, f"In {_topics(len(tied))} the documents at ranks "
                                  f"{cutoff} and {cutoff + 1} have equal scores: which one counts at the cutoff "
                                  f"{cutoff} depends on the tie rule (docno order), not on the run."))
    if run.ranks is not None:
        disagree = _rank_disagreements(run, lengths)
        if disagree:
            found.append(_warning("rank_disagrees", disagree, f"In {_topics(len(disagree))} the rank column "
                                  "disagrees with the scores (a higher score with a rank that is not smaller); "
                                  + ("the scores decide the order." if ranked_by_score else
                                     "the collection ranks by the rank column or the file's order, not the "
                                     "scores.")))
    return found


def _warning(code: str, topics: Sequence[str], message: str) -> RunWarning:
    return RunWarning(code, message, tuple(topics[:MAX_LISTED]), len(topics))


def _topics_where(run: Run, flags: np.ndarray) -> list[str]:
    return [run.topics[i] for i in np.flatnonzero(flags).tolist()]


def _ties_at(run: Run, lengths: np.ndarray, k: int) -> list[str]:
    """Topics whose scores at ranks k and k + 1 (1-based) are equal; the lists are in score order."""
    has = np.flatnonzero(lengths > k)
    at = run.offsets[:-1][has] + (k - 1)
    tied = run.scores[at] == run.scores[at + 1]
    return [run.topics[i] for i in has[tied].tolist()]


def _rank_disagreements(run: Run, lengths: np.ndarray) -> list[str]:
    """Topics with two documents whose scores and ranks are ordered differently.

    In score order (descending within each topic), the documents of equal (topic, score) form
    blocks; the ranks agree with the scores when every block's largest rank is below the next
    block's smallest (strictly: equal ranks for different scores disagree). Checking
    neighbouring blocks suffices, since the inequalities chain.
    """
    assert run.ranks is not None
    if run.scores.shape[0] < 2:
        return []
    found: list[str] = []
    for first, last in _topic_chunks(run.offsets):
        found += _rank_disagreements_in(run, lengths, first, last)
    return found


#: Lines per step of the rank check (a topic longer than this is a step of its own): its
#: scratch arrays (a few per line) stay this small, whatever the run's size.
_CHECK_LINES = 1 << 16


def _topic_chunks(offsets: np.ndarray) -> list[tuple[int, int]]:
    """[first, last) topic ranges of about ``_CHECK_LINES`` lines each, in topic order."""
    out = []
    first, topics = 0, offsets.shape[0] - 1
    while first < topics:
        last = int(np.searchsorted(offsets, int(offsets[first]) + _CHECK_LINES, side="right")) - 1
        last = min(max(last, first + 1), topics)
        out.append((first, last))
        first = last
    return out


def _rank_disagreements_in(run: Run, lengths: np.ndarray, first: int, last: int) -> list[str]:
    """:func:`_rank_disagreements` of topics ``first`` to ``last - 1`` (blocks never span topics)."""
    assert run.ranks is not None
    lo, hi = int(run.offsets[first]), int(run.offsets[last])
    n = hi - lo
    if n < 2:
        return []
    codes = np.repeat(np.arange(first, last), lengths[first:last])
    scores, ranks = run.scores[lo:hi], run.ranks[lo:hi]
    same_topic = codes[1:] == codes[:-1]
    if not bool(np.all(~same_topic | (scores[1:] <= scores[:-1]))):
        # the rank or file order: put each topic's documents in score order first
        perm = np.lexsort((-scores, codes))
        codes, scores, ranks = codes[perm], scores[perm], ranks[perm]
    head = np.ones(n, dtype=bool)  # the first document of each (topic, score) block
    head[1:] = (codes[1:] != codes[:-1]) | (scores[1:] != scores[:-1])
    starts = np.flatnonzero(head)
    low = np.minimum.reduceat(ranks, starts)
    high = np.maximum.reduceat(ranks, starts)
    block_topic = codes[starts]
    bad = (block_topic[1:] == block_topic[:-1]) & (high[:-1] >= low[1:])
    return [run.topics[i] for i in np.unique(block_topic[1:][bad]).tolist()]
