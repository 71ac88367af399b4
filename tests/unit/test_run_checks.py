"""The submission checks (service/formats/run_checks.py) and the ir_metadata reader
(service/formats/ir_metadata.py) on crafted runs and documents.

Every expected warning follows from the run written out in the test: which topics it lacks,
how long its lists are, which scores tie where, which ranks contradict the scores.
"""

from __future__ import annotations

import numpy as np
import pytest

from service.errors import InvalidInput
from service.formats import ir_metadata
from service.formats.readers import parse_run
from service.formats.run_checks import MAX_LISTED, TREC_DEPTH, check_run, tie_cutoff, warning_depth


def run_text(lists: dict[str, list[tuple[str, int, float]]], tag: str = "r") -> bytes:
    """A TREC run: per topic, (docno, rank, score) lines in the order given."""
    return "".join(f"{t} Q0 {d} {rank} {score} {tag}\n" for t, rows in lists.items()
                   for d, rank, score in rows).encode()


def clean(topic: str, n: int) -> list[tuple[str, int, float]]:
    """n documents, ranks 1..n, strictly decreasing scores."""
    return [(f"{topic}-d{i}", i + 1, float(n - i)) for i in range(n)]


def codes(run: bytes, topics: list[str], depth: int = 5, cutoff: int | None = 3, order: str = "score"
          ) -> dict[str, tuple[list[str], int]]:
    parsed = parse_run(run, "r.txt", order, keep_ranks=True)
    return {w.code: (list(w.topics), w.count) for w in check_run(parsed, topics, depth=depth, cutoff=cutoff,
                                                                 ranked_by_score=order == "score")}


def test_a_clean_run_has_no_warning() -> None:
    assert codes(run_text({"1": clean("1", 5), "2": clean("2", 6)}), ["1", "2"]) == {}


def test_missing_topics_are_named_sorted_with_their_count() -> None:
    found = codes(run_text({"2": clean("2", 5)}), ["1", "2", "3"])
    assert found == {"missing_topics": (["1", "3"], 2)}


def test_short_lists_are_those_below_the_depth() -> None:
    found = codes(run_text({"1": clean("1", 4), "2": clean("2", 5), "3": clean("3", 2)}), ["1", "2", "3"])
    assert found == {"short_lists": (["1", "3"], 2)}  # 4 and 2 documents < depth 5; topic 2 has exactly 5


def test_ties_that_straddle_the_cutoff_and_only_those() -> None:
    # topic 1: ranks 3 and 4 tie (straddle k=3); topic 2: ranks 1 and 2 tie (inside the top 3: no
    # warning); topic 3: ranks 4 and 5 tie (below the cutoff); topic 4: three documents only
    t1 = [("a", 1, 9.0), ("b", 2, 8.0), ("c", 3, 7.0), ("d", 4, 7.0), ("e", 5, 6.0)]
    t2 = [("a", 1, 9.0), ("b", 2, 9.0), ("c", 3, 7.0), ("d", 4, 6.0), ("e", 5, 5.0)]
    t3 = [("a", 1, 9.0), ("b", 2, 8.0), ("c", 3, 7.0), ("d", 4, 6.0), ("e", 5, 6.0)]
    t4 = [("a", 1, 9.0), ("b", 2, 8.0), ("c", 3, 8.0)]
    run = run_text({"1": t1, "2": t2, "3": t3, "4": t4})
    assert codes(run, ["1", "2", "3", "4"], depth=3) == {"ties_at_cutoff": (["1"], 1)}
    assert codes(run, ["1", "2", "3", "4"], depth=3, cutoff=4)["ties_at_cutoff"] == (["3"], 1)
    assert "ties_at_cutoff" not in codes(run, ["1", "2", "3", "4"], depth=3, cutoff=None)
    # under the rank order the scores do not order the lists: ties do not matter
    assert "ties_at_cutoff" not in codes(run, ["1", "2", "3", "4"], depth=3, order="rank")


def test_a_tie_at_the_cutoff_is_found_whatever_the_file_order_of_the_tied_documents() -> None:
    # the reader orders ties by docno descending (trec_eval): the check reads the evaluated order
    t1 = [("a", 1, 9.0), ("b", 2, 8.0), ("z", 3, 7.0), ("c", 4, 7.0), ("y", 5, 6.0)]
    assert codes(run_text({"1": t1}), ["1"], depth=5) == {"ties_at_cutoff": (["1"], 1)}


def test_rank_column_that_disagrees_with_the_scores() -> None:
    swapped = [("a", 2, 9.0), ("b", 1, 8.0), ("c", 3, 7.0)]  # the higher score has the larger rank
    same_rank = [("a", 1, 9.0), ("b", 1, 8.0), ("c", 3, 7.0)]  # different scores, one rank
    tied_any_way = [("a", 1, 9.0), ("b", 3, 8.0), ("c", 2, 8.0)]  # equal scores may be ranked either way
    far = [("a", 1, 9.0), ("b", 2, 8.0), ("c", 3, 8.0), ("d", 2, 7.0)]  # d's rank ties one of the block above
    run = run_text({"1": swapped, "2": same_rank, "3": tied_any_way, "4": far, "5": clean("5", 3)})
    found = codes(run, ["1", "2", "3", "4", "5"], depth=3, cutoff=None)
    assert found == {"rank_disagrees": (["1", "2", "4"], 3)}
    # the same under the rank order (the lists then follow the rank column)
    found = codes(run, ["1", "2", "3", "4", "5"], depth=3, cutoff=None, order="rank")
    assert found == {"rank_disagrees": (["1", "2", "4"], 3)}


@pytest.mark.parametrize("order", ["score", "rank"])
def test_the_rank_check_in_steps_of_a_few_topics_finds_what_one_step_finds(order: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The rank check goes about a million lines (whole topics) at a time; in steps of one or
    two lines it names the same topics, in the same order."""
    from service.formats import run_checks

    rng = np.random.default_rng(24)
    lists = {}
    for t in range(40):
        n = int(rng.integers(1, 6))
        lists[f"{t:02d}"] = [(f"d{i}", int(rank), float(score)) for i, (rank, score) in
                             enumerate(zip(rng.permutation(n) + 1, rng.integers(0, 3, n)))]
    run = run_text(lists)
    whole = codes(run, list(lists), depth=1, cutoff=None, order=order)
    assert whole["rank_disagrees"][1] > 5  # something to find
    for step in (1, 2, 3):
        monkeypatch.setattr(run_checks, "_CHECK_LINES", step)
        assert codes(run, list(lists), depth=1, cutoff=None, order=order) == whole


def test_a_rank_column_that_is_not_numbers_is_not_checked_under_the_score_order() -> None:
    run = b"1 Q0 a x 9 r\n1 Q0 b y 8 r\n"
    assert parse_run(run, "r", "score", keep_ranks=True).ranks is None
    assert codes(run, ["1"], depth=2, cutoff=None) == {}


def test_topics_listed_are_capped_and_counted() -> None:
    topics = [f"{i:03d}" for i in range(50)]
    found = codes(run_text({"000": clean("000", 5)}), topics)
    assert found["missing_topics"] == (topics[1: MAX_LISTED + 1], 49)


def test_every_warning_of_one_run_together() -> None:
    t1 = [("a", 2, 9.0), ("b", 1, 8.0), ("c", 3, 7.0), ("d", 4, 7.0)]
    found = codes(run_text({"1": t1}), ["1", "2"], depth=5)
    assert set(found) == {"missing_topics", "short_lists", "ties_at_cutoff", "rank_disagrees"}


def test_warning_depth_and_tie_cutoff_rules() -> None:
    assert warning_depth(50, [10, None]) == 50  # the collection's depth first
    assert warning_depth(None, [10, 20]) == 20  # every metric has a cutoff: nothing below the largest is read
    assert warning_depth(None, [10, None]) == TREC_DEPTH  # AP reads the whole list
    assert warning_depth(None, [2000, None]) == 2000
    assert warning_depth(None, []) == TREC_DEPTH
    assert tie_cutoff(10, None) == 10 and tie_cutoff(10, 5) == 5 and tie_cutoff(None, 100) == 100
    assert tie_cutoff(None, None) is None  # the whole list is evaluated: no cut to straddle


def test_the_checks_are_a_few_passes_over_the_arrays() -> None:
    """Linear in the run's size, shown without timing: the checks of a run ten times longer
    touch the arrays the same number of times (counted numpy passes), and a 100k-line run's
    warnings are those its construction implies."""
    n_topics, per_topic = 100, 1000
    rows = []
    for t in range(n_topics):
        for i in range(per_topic):
            score = float(per_topic - i) if not (t % 10 == 0 and i == 9) else float(per_topic - i + 1)
            rows.append(f"{t:03d} Q0 d{i} {i + 1} {score} r\n")  # topics 000, 010...: ranks 9 and 10 tie
    parsed = parse_run("".join(rows).encode(), "big", "score", keep_ranks=True)
    found = {w.code: w.count for w in check_run(parsed, [f"{t:03d}" for t in range(n_topics)], depth=per_topic,
                                                cutoff=9)}
    assert found == {"ties_at_cutoff": 10}  # ranks 9 and 10 tie in every tenth topic; the ranks still agree
    calls = []
    original = np.lexsort

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    np.lexsort, saved = counting, np.lexsort  # type: ignore[assignment]
    try:
        check_run(parsed, [], depth=per_topic, cutoff=9)
    finally:
        np.lexsort = saved  # type: ignore[assignment]
    assert calls == []  # a run in score order is never sorted again


# ------------------------------------------------------------------------- ir_metadata
VALID = b"""schema-version: 0.1
tag: bm25-rm3
platform:
  hardware:
    cpu: {model: Xeon, number of cores: 16}
    ram: 32 GB
  software:
    libraries:
      python: [numpy==1.26]
    retrieval toolkit: [anserini==0.3.0]
research goal:
  venue: {name: ECIR, year: 2019}
  evaluation:
    reported measures: [map, P_10]
implementation:
  source: {lang: [python], repository: https://example.org/repo, commit: 9548cd6}
method:
  automatic: true
  retrieval:
  - {name: bm25, method: BM25, b: 0.4}
  - {name: rm3, reranks: bm25}
actor: {name: A. Person, team: alpha, role: experimenter, fields: [ir]}
data:
  test collection: {name: robust04}
  training data: [{name: trec45}]
"""


def test_a_valid_document_is_returned_as_submitted() -> None:
    assert ir_metadata.read(VALID) == VALID.decode()
    marked = b"ir_metadata.start\n" + VALID + b"ir_metadata.end\n"
    assert ir_metadata.read(marked) == marked.decode()
    assert ir_metadata.read(b"method:\n  automatic: false\n")  # any subset of the sections


@pytest.mark.parametrize(("data", "line", "fragment"), [
    (VALID + b"results: {}\n", VALID.count(b"\n") + 1, "unknown section 'results'"),
    (b"- platform\n- method\n", 1, "not a list"),
    (b"just words\n", 1, "not a single value"),
    (b"method:\n  automatic: [true\n", 3, "not valid YAML"),
    (b"method:\n  automatic: maybe\n", 2, "method \u2192 automatic: 'maybe' is not of type 'boolean'"),
    (b"actor: {name: x}\nmethod:\n  retrieval:\n  - name: bm25\n  - 7\n", 5, "retrieval \u2192 1"),
    (b"method: 3\n", 1, "method: 3 is not of type"),
    (b"actor: {}\nactor: {}\n", 2, "'actor' twice"),
    (b"a: &x [1, 2]\nactor: *x\n", 2, "aliases"),
    (b"actor: " + b"[" * 40 + b"]" * 40 + b"\n", 1, "nested"),
    (b"actor: !!python/object:os.system ls\n", 1, "not valid YAML"),
    (b"\xff\xfe", 1, "not UTF-8"),
    (b"  \n", None, "empty"),
    (b"#" * (ir_metadata.MAX_BYTES + 1), None, "larger than 256 KB"),
])
def test_invalid_documents_are_refused_with_their_line(data: bytes, line: int | None, fragment: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        ir_metadata.read(data, "meta.yaml")
    assert caught.value.source == "meta.yaml" and caught.value.line == line
    assert fragment in caught.value.reason


def test_an_alias_bomb_is_refused_before_it_expands() -> None:
    bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        b"%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n" % ((c,) * 2 + (c - 1,) * 9)
        for c in range(ord("b"), ord("k")))
    with pytest.raises(InvalidInput, match="aliases"):
        ir_metadata.read(bomb)


def test_the_header_of_a_run_file_is_found_with_the_run_files_line_numbers() -> None:
    run = (b"# made by us\n# ir_metadata.start\n# tag: r\n# method:\n#   automatic: nope\n# ir_metadata.end\n"
           b"1 Q0 d 1 1 r\n")
    block = ir_metadata.embedded_in_run(run)
    assert block is not None and block.splitlines()[2:] == [b"tag: r", b"method:", b"  automatic: nope"]
    with pytest.raises(InvalidInput) as caught:
        ir_metadata.read(block, "run.txt")
    assert caught.value.line == 5  # the run file's line
    assert ir_metadata.embedded_in_run(b"1 Q0 d 1 1 r\n# ir_metadata.start\n# ir_metadata.end\n") is None
    assert ir_metadata.embedded_in_run(b"# ir_metadata.start\n# tag: r\n1 Q0 d 1 1 r\n") is None  # never closed
