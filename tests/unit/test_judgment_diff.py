"""The qrels preview's and diff's comparison in arrays (``service.evaluation.judging.judgment_diff``)
against the straightforward one on dicts (``reading.judgment_changes``, what both used to list
whole): the same counts per topic and totals, and pages that put together give the same listing
in the same order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.evaluation.judging.judgment_diff import changes, of_qrels
from service.evaluation.publishing.reading import judgment_changes
from service.formats.readers import parse_qrels

Judged = dict[tuple[str, str], int]


def _text(judged: Judged) -> bytes:
    """A TREC qrels file of ``judged``, lines shuffled (the reader sorts them)."""
    lines = [f"{t} 0 {d} {lv}\n" for (t, d), lv in judged.items()]
    np.random.default_rng(len(lines)).shuffle(lines)
    return "".join(lines).encode("utf-8")


def _side(judged: Judged):  # type: ignore[no-untyped-def]
    return of_qrels(parse_qrels(_text(judged), "q")) if judged else {}


def _listing(doc: dict) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    return [(t, c) for t, e in doc["topics"].items() for c in e["changes"]]


def _check(old: Judged, new: Judged, limits: tuple[int, ...] = (1, 3, 7, 1000)) -> None:
    reference = judgment_changes(old, new)
    a, b = _side(old), _side(new)
    whole = changes(a, b, 0, 10**9)
    assert whole["topics"] == reference["topics"] and whole["totals"] == reference["totals"]
    assert whole["next_offset"] is None and whole["listed"] == sum(reference["totals"].values())
    listing = _listing(reference)
    for limit in limits:
        got, offset = [], 0
        while True:
            page = changes(a, b, offset, limit)
            assert {t: {k: e[k] for k in ("added", "removed", "changed")} for t, e in page["topics"].items()} == \
                {t: {k: e[k] for k in ("added", "removed", "changed")} for t, e in reference["topics"].items()}
            assert page["totals"] == reference["totals"] and page["listed"] <= limit
            got += _listing(page)
            if page["next_offset"] is None:
                break
            assert page["next_offset"] == offset + limit
            offset = page["next_offset"]
        assert got == listing, limit
    past = changes(a, b, len(listing) + 5, 10)
    assert past["listed"] == 0 and past["next_offset"] is None and not _listing(past)


def _generated(seed: int) -> tuple[Judged, Judged]:
    """Two versions: documents kept, re-judged, removed, added; a topic only in each; docnos of
    several lengths and non-ASCII (UTF-8 order is code point order), levels with ties and
    negatives (pooled, unjudged)."""
    rng = np.random.default_rng(seed)
    names = ["d", "doc-", "D", "é", "zz", "Ω-"]
    old: Judged = {}
    for t in range(int(rng.integers(1, 9))):
        for _ in range(int(rng.integers(0, 60))):
            old[(f"{t:03d}", f"{names[int(rng.integers(len(names)))]}{int(rng.integers(0, 200))}")] = int(
                rng.integers(-1, 4))
    new: Judged = {}
    for (t, d), lv in old.items():
        if t == "000":  # the first topic is gone from the new version
            continue
        roll = rng.random()
        if roll < 0.15:
            continue
        new[(t, d)] = int(rng.integers(-1, 4)) if roll < 0.35 else lv
    for _ in range(int(rng.integers(0, 40))):
        new[(f"{int(rng.integers(0, 10)):03d}", f"new{int(rng.integers(0, 500))}")] = int(rng.integers(0, 4))
    new[("999", "only-new")] = 1
    return old, new


def test_the_array_diff_is_the_set_diff_on_generated_qrels() -> None:
    for seed in range(12):
        old, new = _generated(seed)
        _check(old, new)
    old, new = _generated(0)
    _check({}, new)  # no current version
    _check(old, {})  # everything removed
    _check(old, old)  # no change


def test_a_page_is_cut_inside_a_topic_in_docno_order() -> None:
    old = {("1", "a"): 1, ("1", "c"): 1, ("1", "e"): 2, ("2", "x"): 0}
    new = {("1", "b"): 1, ("1", "c"): 2, ("1", "e"): 2, ("3", "y"): 1}
    page = changes(_side(old), _side(new), 1, 2)
    assert page["topics"]["1"]["changes"] == [{"docno": "b", "old": None, "new": 1}, {"docno": "c", "old": 1, "new": 2}]
    assert page["topics"]["2"]["changes"] == [] and page["topics"]["3"]["changes"] == []
    assert (page["offset"], page["limit"], page["listed"], page["next_offset"]) == (1, 2, 2, 3)
    assert page["totals"] == {"added": 2, "removed": 2, "changed": 1}


judged = st.dictionaries(st.tuples(st.sampled_from(["1", "2", "10", "b"]),
                                   st.text(alphabet="abcé0", min_size=1, max_size=4)),
                         st.integers(-1, 3), max_size=40)


@settings(max_examples=40, deadline=None)
@given(judged, judged)
def test_the_array_diff_is_the_set_diff_on_any_small_qrels(old: Judged, new: Judged) -> None:
    _check(old, new, limits=(1, 4))
