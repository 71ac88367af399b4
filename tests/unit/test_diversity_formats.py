"""Readers of intent-aware judgments (service/formats/diversity.py): TREC diversity qrels,
NTCIR intent qrels and NTCIR intent probabilities; errors name the file and the line.

Expected values are read off the input lines themselves. The NTCIR examples are shaped like
NTCIREVAL's sample files ``Dtest.Iprob`` and ``Dtest.Dqrels`` (README.diversity of NTCIREVAL:
``<topicid> <intent_number> <docno> <rel level>``, intent 0 with L0 for a document relevant to
no intent; ``<topicid> <intent_number> <prob>`` with an optional ``inf``/``nav`` column).
"""

from __future__ import annotations

import tracemalloc

import pytest

from service.errors import InvalidInput
from service.formats.diversity import (
    IntentQrels,
    intent_sort_key,
    parse_diversity_qrels,
    parse_intent_probabilities,
    read_diversity_qrels,
)

TREC = b"""\
# topic subtopic docno rel
1 1 d1 1
1 1 d2 0
1 2 d2 1
1 3 d3 -1
2 1 d9 2
"""

NTCIR_QRELS = b"""\
0001 0 doc-a L0
0001 2 doc-b L1
0001 3 doc-b L2
0001 1 doc-c L1
0002 4 doc-x L1
0002 3 doc-y 2
"""

NTCIR_PROBS = b"""\
0001 1 0.5714
0001 2 0.2857 inf
0001 3 0.1429 nav
0002 3 0.75
0002 4 0.25
"""


def refused(fn, *args, **kwargs) -> InvalidInput:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput) as err:
        fn(*args, **kwargs)
    return err.value


# --------------------------------------------------------------------------- reading


def test_trec_diversity_qrels() -> None:
    q = parse_diversity_qrels(TREC, "q.txt")
    assert q.topics == ("1", "2") and q.uniform and q.source == "q.txt"
    t1 = q["1"]
    assert t1.intents == ("1", "2", "3")
    # A negative label is "not relevant": stored as level 0.
    assert [dict(j) for j in t1.judgments] == [{"d1": 1, "d2": 0}, {"d2": 1}, {"d3": 0}]
    # Uniform over the intents that have a relevant document (1 and 2); intent 3 has none.
    assert t1.probabilities == (0.5, 0.5, 0.0)
    assert t1.relevant_intents() == (0, 1) and t1.has_relevant
    assert q["2"].probabilities == (1.0,) and q["2"].relevant_intents(rel=2) == (0,)


def test_ntcir_qrels_with_probabilities() -> None:
    probs = parse_intent_probabilities(NTCIR_PROBS, "p.txt")
    q = parse_diversity_qrels(NTCIR_QRELS, "d.txt", fmt="ntcir", probabilities=probs)
    assert not q.uniform
    t = q["0001"]
    # Intent 0 (the "relevant to no intent" marker of NTCIR files) is an intent without a
    # relevant document: it needs no probability and gets 0.
    assert t.intents == ("0", "1", "2", "3")
    assert t.probabilities == (0.0, 0.5714, 0.2857, 0.1429)
    assert [dict(j) for j in t.judgments] == [{"doc-a": 0}, {"doc-c": 1}, {"doc-b": 1}, {"doc-b": 2}]
    # Plain integers are read as levels too ("0002 3 doc-y 2").
    assert dict(q["0002"].judgments[0]) == {"doc-y": 2}
    assert q["0002"].probabilities == (0.75, 0.25)


def test_ntcir_qrels_without_probabilities_are_uniform() -> None:
    q = parse_diversity_qrels(NTCIR_QRELS, fmt="ntcir")
    assert q["0001"].probabilities == (0.0, 1 / 3, 1 / 3, 1 / 3)


def test_intent_order_is_numeric_then_bytes() -> None:
    assert sorted(["10", "9", "b", "007", "a", "7"], key=intent_sort_key) == ["007", "7", "9", "10", "a", "b"]
    q = parse_diversity_qrels(b"t 10 d 1\nt 9 d 1\nt x d 1\n", fmt="ntcir")  # (TREC subtopics are numbers)
    assert q["t"].intents == ("9", "10", "x")


def test_read_from_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    qp, pp = tmp_path / "q", tmp_path / "p"
    qp.write_bytes(NTCIR_QRELS)
    pp.write_bytes(NTCIR_PROBS)
    q = read_diversity_qrels(qp, "ntcir", pp)
    assert q.source == str(qp) and q["0002"].probabilities == (0.75, 0.25)
    err = refused(read_diversity_qrels, tmp_path / "absent")
    assert err.source.endswith("absent") and err.line is None


def test_from_mapping_matches_the_reader() -> None:
    q = IntentQrels.from_mapping(
        {"0001": {"0": {"doc-a": 0}, "2": {"doc-b": 1}, "3": {"doc-b": 2}, "1": {"doc-c": 1}},
         "0002": {"4": {"doc-x": 1}, "3": {"doc-y": 2}}},
        {"0001": {"1": 0.5714, "2": 0.2857, "3": 0.1429}, "0002": {"3": 0.75, "4": 0.25}},
    )
    r = parse_diversity_qrels(NTCIR_QRELS, fmt="ntcir", probabilities=parse_intent_probabilities(NTCIR_PROBS))
    for t in r.topics:
        assert q[t] == r[t]
    with pytest.raises(InvalidInput, match="sum to"):
        IntentQrels.from_mapping({"t": {"1": {"d": 1}}}, {"t": {"1": 0.5}})


def test_linear_memory() -> None:
    """Each judgment is stored once: the qrels of 50k judgments take a small multiple of
    the file's size (a dict entry per judgment), not a topic x intent x document table."""
    lines = b"".join(b"%d %d doc-%06d %d\n" % (i % 50, i % 7, i, i % 3) for i in range(50_000))
    tracemalloc.start()
    try:
        q = parse_diversity_qrels(lines)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sum(len(j) for t in q.topics for j in q[t].judgments) == 50_000
    assert peak < 40 * len(lines)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("data", "fmt", "line", "reason"),
    [
        (b"1 1 d1 1\n1 1 d1 1\n", "trec", 2, "judged twice for intent '1' of topic '1' (first on line 1)"),
        (b"1 1 d1 1\n1 2 d1 0\n\n1 1 d1 0\n", "trec", 4, "first on line 1"),
        (b"1 1 d1 1\n1 1 d2 L1\n", "trec", 2, "relevance label 'L1' is not an integer"),
        (b"1 1 d1 1.5\n", "trec", 1, "relevance label '1.5' is not an integer"),
        (b"1 1 d1 1\n1 1 d2\n", "trec", 2, "expected exactly 4"),
        (b"1 1 d1 1 extra\n", "ntcir", 1, "expected exactly 4"),
        (b"1 1 d1 L1\n1 1 d2 LL2\n", "ntcir", 2, "'LL2' is not L<n> or an integer"),
        (b"1 1 d1 L\n", "ntcir", 1, "'L' is not L<n> or an integer"),
        (b"1 1 d1 L1\n1 1 d2 l2\n", "ntcir", 2, "'l2' is not L<n> or an integer"),
        (b"1 1 d1 L1\n1 1 d2 L99999\n", "ntcir", 2, "above the largest supported level 10000"),
        (b"1 1 d1 99999\n", "trec", 1, "above the largest supported level 10000"),
        (b"1 1 d1 L1\n1 1 d2 L99999999999999999999\n", "ntcir", 2, "is not L<n> or an integer"),
        (b"1 1 d1 1\n1 1 " + b"d" * 201 + b" 1\n", "trec", 2, "docno is 201 bytes long"),
        (b"1 " + b"i" * 101 + b" d 1\n", "trec", 1, "intent id is 101 bytes long"),
        (b"1 1 d1 1\n1 1 d\xff 1\n", "trec", 2, "not UTF-8"),
        (b"1 1 d1 1\n1 1 d\x00 1\n", "trec", 2, "control"),
        # TREC subtopics are ndeval's numbers, 0 to 2^31 - 1 (issue 34, item 6): -5 and 10^30 were read
        (b"1 1 d1 1\n1 -5 d2 1\n", "trec", 2, "subtopic '-5' is not a subtopic number"),
        (b"1 1 d1 1\n1 1" + b"0" * 30 + b" d2 1\n", "trec", 2, "subtopic '1" + "0" * 30 + "' is not a subtopic number"),
        (b"1 2147483648 d1 1\n", "trec", 1, "integers from 0 to 2,147,483,647, without a sign or leading zeros"),
        (b"1 2147483647 d1 1\n1 +5 d1 1\n", "trec", 2, "subtopic '+5'"),
        (b"1 7 d1 1\n1 07 d1 1\n", "trec", 2, "subtopic '07'"),
        (b"1 1 d1 1\n1 x d2 1\n", "trec", 2, "subtopic 'x'"),
        (b"1 1 d1 1\n1 1.5 d2 1\n", "trec", 2, "subtopic '1.5'"),
        (b"1 1 d1 1\n1 \xd9\xa3 d2 1\n", "trec", 2, "is not a subtopic number"),  # an Arabic-Indic 3
    ],
)
def test_qrels_errors_name_the_line(data: bytes, fmt: str, line: int, reason: str) -> None:
    err = refused(parse_diversity_qrels, data, "div.qrels", fmt)
    assert err.source == "div.qrels"
    assert err.line == line, err
    assert reason in err.reason, err


def test_subtopic_numbers_at_their_limits_are_read() -> None:
    """0 (judged relevant to no subtopic) and 2^31 - 1 are subtopics; NTCIR intent ids stay free
    text (NTCIREVAL compares them as strings), -5 included."""
    q = parse_diversity_qrels(b"1 0 d0 0\n1 2147483647 d1 1\n1 1 d1 1\n")
    assert q["1"].intents == ("0", "1", "2147483647") and q["1"].probabilities == (0.0, 0.5, 0.5)
    assert parse_diversity_qrels(b"1 -5 d1 L1\n1 x d1 L1\n", fmt="ntcir")["1"].intents == ("-5", "x")


def test_empty_and_comment_only_files() -> None:
    assert "empty" in refused(parse_diversity_qrels, b"").reason
    assert "no data lines" in refused(parse_diversity_qrels, b"# only a comment\n\n").reason
    assert "no data lines" in refused(parse_intent_probabilities, b"\n").reason


@pytest.mark.parametrize(
    ("data", "line", "reason"),
    [
        (b"1 1 0.5\n1 2 0.4\n", 1, "topic '1' sum to 0.9, not 1"),
        (b"1 1 0.5\n1 2 0.5\n2 1 1.0000011\n", 3, "not in [0, 1]"),
        (b"1 1 -0.0\n1 2 1\n2 1 -0.5\n2 2 1.5\n", 3, "not in [0, 1]"),
        (b"1 1 0.5\n1 1 0.5\n", 2, "second probability (first on line 1)"),
        (b"1 1 half\n", 1, "probability 'half' is not a number"),
        (b"1 1 nan\n", 1, "is not a finite number"),
        (b"1 1 inf\n", 1, "is not a finite number"),
        (b"1 1 1 nav extra\n", 1, "expected 3 or 4"),
        (b"1 1 0.5 inf\n1 2 0.5 navigational\n", 2, "inf or nav, not 'navigational'"),
        (b"1 1\n", 1, "expected at least 3"),
    ],
)
def test_probability_errors_name_the_line(data: bytes, line: int, reason: str) -> None:
    err = refused(parse_intent_probabilities, data, "p.txt")
    assert err.source == "p.txt" and err.line == line, err
    assert reason in err.reason, err


def test_probabilities_sum_within_tolerance() -> None:
    # 1 - 1e-7: within 1e-6 of 1; NTCIREVAL's four-decimal probabilities add up exactly.
    p = parse_intent_probabilities(b"1 a 0.3333333\n1 b 0.3333333\n1 c 0.3333333\n")
    assert set(p.topics["1"]) == {"a", "b", "c"}
    err = refused(parse_intent_probabilities, b"1 a 0.333333\n1 b 0.333333\n1 c 0.333332\n")
    assert "sum to" in err.reason


def test_probability_without_judgments_is_refused() -> None:
    probs = parse_intent_probabilities(b"0001 1 0.5\n0001 9 0.5\n", "p.txt")
    err = refused(parse_diversity_qrels, b"0001 1 d1 L1\n", "q.txt", "ntcir", probs)
    assert (err.source, err.line) == ("p.txt", 2)
    assert "intent '9' of topic '0001' has a probability but no judgments in q.txt" in err.reason
    probs = parse_intent_probabilities(b"0001 1 1\n0002 1 1\n", "p.txt")
    err = refused(parse_diversity_qrels, b"0001 1 d1 L1\n", "q.txt", "ntcir", probs)
    assert (err.source, err.line) == ("p.txt", 2) and "topic '0002' has intent probabilities but no judgments" in err.reason


def test_relevant_intent_without_probability_is_refused() -> None:
    probs = parse_intent_probabilities(b"0001 1 1.0\n", "p.txt")
    qrels = b"0001 1 d1 L1\n0001 0 d2 L0\n0001 2 d3 L0\n0001 2 d4 L2\n"
    err = refused(parse_diversity_qrels, qrels, "q.txt", "ntcir", probs)
    # Intents 0 and 2 lack a probability; 0 has no relevant document (fine), 2 has one on line 4.
    assert (err.source, err.line) == ("q.txt", 4)
    assert "intent '2' of topic '0001' has relevant documents but no probability in p.txt" in err.reason


def test_crlf_bom_and_comments() -> None:
    data = b"\xef\xbb\xbf# header\r\n0001 1 d1 L1\r\n\r\n0001 2 d2 L2\r\n"
    q = parse_diversity_qrels(data, fmt="ntcir")
    assert q.topics == ("0001",) and q["0001"].intents == ("1", "2")
    p = parse_intent_probabilities(b"\xef\xbb\xbf0001 1 0.5\r0001 2 0.5 nav\r")
    assert dict(p.topics["0001"]) == {"1": 0.5, "2": 0.5}
    err = refused(parse_diversity_qrels, b"0001 1 d1 L1\r0001 1 d1 L1\r", "q", "ntcir")
    assert err.line == 2


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown diversity qrels format"):
        parse_diversity_qrels(TREC, fmt="ndeval")  # type: ignore[arg-type]


def test_huge_topic_of_one_line_per_document_is_read_quickly() -> None:
    """A hostile shape: one topic, 100k intents, a document each. Reading stays linear."""
    data = b"".join(b"t %d d%d 1\n" % (i, i) for i in range(100_000))
    q = parse_diversity_qrels(data)
    assert len(q["t"].intents) == 100_000
    assert q["t"].probabilities[0] == pytest.approx(1e-5)
