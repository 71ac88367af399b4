"""Per-assessor label files (service.formats.labels): good files, every error with its line, and
hostile inputs. Expected records are the files' own lines."""

from __future__ import annotations

import numpy as np
import pytest

from service.errors import InvalidInput
from service.formats.labels import (
    MAX_ASSESSOR_BYTES,
    Labels,
    labels_by_document,
    labels_of,
    parse_labels,
    read_labels,
)
from service.formats.readers import MAX_LEVEL
from service.formats.tokenize import MAX_DOCNO_BYTES, MAX_NUMBER_BYTES, MAX_TOPIC_BYTES
from service.metrics.judgment_rules import derive

GOOD = (
    b"# topic docno assessor level\n"
    b"101 doc-a alice 2\n"
    b"101 doc-a bob L1\n"
    b"\n"
    b"101\tdoc-b\talice   0\n"
    b"  # an indented comment\n"
    b"102 doc-a alice -1\n"
    b"101 doc-a carol L-1\n"
    b"102 doc-a bob +3\n"
)


def records(labels: Labels) -> list[tuple[int, str, str, str, int]]:
    return list(zip(labels.lines.tolist(), labels.topics, labels.docnos, labels.assessors, labels.levels.tolist()))


def error(data: bytes, source: str = "labels.txt") -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        parse_labels(data, source)
    assert info.value.source == source
    return info.value


# ------------------------------------------------------------------ good files
def test_a_good_file_in_file_order() -> None:
    labels = parse_labels(GOOD, "labels.txt")
    assert records(labels) == [
        (2, "101", "doc-a", "alice", 2),
        (3, "101", "doc-a", "bob", 1),
        (5, "101", "doc-b", "alice", 0),
        (7, "102", "doc-a", "alice", -1),
        (8, "101", "doc-a", "carol", -1),
        (9, "102", "doc-a", "bob", 3),
    ]
    assert len(labels) == 6 and labels.source == "labels.txt"
    assert labels.assessor_ids == ("alice", "bob", "carol")
    assert labels.levels.dtype == np.int64 and not labels.levels.flags.writeable and not labels.lines.flags.writeable


def test_labels_by_document_keeps_the_order_labels_were_given() -> None:
    by_doc = labels_by_document(parse_labels(GOOD))
    assert by_doc == {("101", "doc-a"): [2, 1, -1], ("101", "doc-b"): [0], ("102", "doc-a"): [-1, 3]}
    assert list(by_doc) == [("101", "doc-a"), ("101", "doc-b"), ("102", "doc-a")]
    # and feeds the derivation rules: latest skips carol's -1, the mean of 2 and 1 rounds up
    assert derive(by_doc, "latest") == {("101", "doc-a"): 1, ("101", "doc-b"): 0, ("102", "doc-a"): 3}
    assert derive(by_doc, "mean")[("101", "doc-a")] == 2


def test_labels_of_one_assessor() -> None:
    labels = parse_labels(GOOD)
    assert labels_of(labels, "alice") == {("101", "doc-a"): 2, ("101", "doc-b"): 0, ("102", "doc-a"): -1}
    assert labels_of(labels, "carol") == {("101", "doc-a"): -1}
    with pytest.raises(ValueError, match=r"no label by assessor 'dave' \(assessors: 'alice', 'bob', 'carol'\)"):
        labels_of(labels, "dave")


def test_line_ends_bom_and_utf8_ids() -> None:
    data = "\ufeff1 d\u00e9j\u00e0 \u00e9va 1\r\n1 d2 \u00e9va L2\r2 d1 x 0".encode()
    labels = parse_labels(data)
    assert records(labels) == [(1, "1", "d\u00e9j\u00e0", "\u00e9va", 1), (2, "1", "d2", "\u00e9va", 2),
                               (3, "2", "d1", "x", 0)]


def test_equal_ids_share_one_string() -> None:
    labels = parse_labels(b"".join(b"7 d%d judge 1\n" % i for i in range(100)))
    assert len({id(t) for t in labels.topics}) == 1 and len({id(a) for a in labels.assessors}) == 1


def test_read_labels(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "labels.txt"
    path.write_bytes(GOOD)
    labels = read_labels(path)
    assert labels.source == str(path) and len(labels) == 6
    with pytest.raises(InvalidInput) as info:
        read_labels(tmp_path / "missing.txt")
    assert info.value.line is None and "cannot read the file" in info.value.reason


def test_many_labels() -> None:
    n = 200_000
    rng = np.random.default_rng(5)
    levels = rng.integers(-1, 4, n)
    lines = [f"{i % 50} d{i // 3} a{i % 3} {'L' if i % 2 else ''}{v}" for i, v in enumerate(levels.tolist())]
    labels = parse_labels(("\n".join(lines) + "\n").encode())
    assert len(labels) == n and labels.levels.tolist() == levels.tolist()
    assert labels.lines.tolist() == list(range(1, n + 1))
    assert labels.docnos[-1] == f"d{(n - 1) // 3}" and labels.assessors[4] == "a1"


# ------------------------------------------------------------------ errors, with their lines
@pytest.mark.parametrize(("data", "line", "reason"), [
    (b"1 d1 a 1\n1 d2 a\n", 2, "expected exactly 4 whitespace-separated columns, found 3"),
    (b"1 d1 a 1\n\n# c\n1 d2 a 1 extra\n", 4, "expected exactly 4 whitespace-separated columns, found 5"),
    (b"1 d1 a 1\n1 d2\n", 2, "found 2"),
])
def test_wrong_column_count(data: bytes, line: int, reason: str) -> None:
    e = error(data)
    assert e.line == line and reason in e.reason


@pytest.mark.parametrize("level", [b"x", b"1.5", b"1e3", b"1_0", b"LL2", b"L", b"l2", b"+", b"-", b"2L", b"L+",
                                   b"0x10", b"--1", b"\xc2\xb2", b"\xd9\xa3"])
def test_non_integer_level(level: bytes) -> None:
    e = error(b"1 d1 a 1\n1 d2 a 0\n1 d3 a " + level + b"\n")
    assert e.line == 3
    assert e.reason == f"level {level.decode()!r} is not an integer (or L<n>)"


@pytest.mark.parametrize("level", [MAX_LEVEL + 1, -MAX_LEVEL - 1, 10**30, -(10**40)])
def test_level_out_of_range(level: int) -> None:
    e = error(b"1 d1 a 1\n1 d2 a %d\n" % level)
    assert e.line == 2 and f"is out of range: |level| must be at most {MAX_LEVEL}" in e.reason
    assert parse_labels(b"1 d1 a %d\n1 d2 a L%d\n" % (MAX_LEVEL, -MAX_LEVEL)).levels.tolist() == [MAX_LEVEL, -MAX_LEVEL]


def test_the_same_assessor_twice_on_a_document() -> None:
    e = error(b"1 d1 a 1\n1 d1 b 1\n1 d2 a 1\n# c\n1 d1 a 2\n")
    assert e.line == 5
    assert e.reason == "assessor 'a' labels document 'd1' of topic '1' a second time (first on line 1)"
    # the same level again is refused too, and the repeat earliest in the file is reported
    e = error(b"2 x b 0\n1 d1 a 1\n2 x b 1\n1 d1 a 1\n2 x b 0\n")
    assert e.line == 3 and "first on line 1" in e.reason and "'x' of topic '2'" in e.reason
    # different topics, docnos or assessors are not repeats
    assert len(parse_labels(b"1 d1 a 1\n2 d1 a 1\n1 d2 a 1\n1 d1 b 1\n")) == 4


def test_invalid_utf8() -> None:
    e = error(b"1 d1 a 1\n1 d\xff a 1\n")
    assert e.line == 2 and "not UTF-8" in e.reason


def test_empty_and_data_free_files() -> None:
    e = error(b"")
    assert e.line is None and e.reason == "the file is empty"
    for data in (b"\n\n  \n", b"# only a comment\n\n", b"\xef\xbb\xbf"):
        e = error(data)
        assert e.line is None and "no data lines" in e.reason


@pytest.mark.parametrize(("column", "limit", "what"), [
    (0, MAX_TOPIC_BYTES, "topic id"), (1, MAX_DOCNO_BYTES, "docno"), (2, MAX_ASSESSOR_BYTES, "assessor id"),
    (3, MAX_NUMBER_BYTES, "level"),
])
def test_field_length_limits(column: int, limit: int, what: str) -> None:
    fields = [b"1", b"d1", b"a", b"1"]
    fields[column] = b"1" * (limit + 1)
    e = error(b"1 d0 a 1\n" + b" ".join(fields) + b"\n")
    assert e.line == 2 and e.reason == f"{what} is {limit + 1} bytes long; the limit is {limit}"
    fields[column] = b"1" * limit if column != 3 else b"0" * limit  # at the limit: accepted
    assert len(parse_labels(b" ".join(fields) + b"\n")) == 1


def test_control_character() -> None:
    e = error(b"1 d1 a 1\n1 d\x072 a 1\n")
    assert e.line == 2 and "control character 0x07" in e.reason


# ------------------------------------------------------------------ hostile inputs
def test_a_huge_token_is_refused_with_its_line() -> None:
    data = b"1 d1 a 1\n" * 3 + b"1 " + b"d" * 20_000_000 + b" a 1\n" + b"1 d2 a 1\n"
    e = error(data)
    assert e.line == 4 and e.reason == f"docno is 20000000 bytes long; the limit is {MAX_DOCNO_BYTES}"


def test_a_huge_level_token_and_a_huge_gap() -> None:
    e = error(b"1 d1 a " + b"9" * 5_000_000 + b"\n")
    assert e.line == 1 and "level is 5000000 bytes long" in e.reason
    # long runs of whitespace are only separators: the line is read
    labels = parse_labels(b"1" + b" " * 5_000_000 + b"d1\t\t\ta" + b"\t" * 1_000_000 + b"L3\n")
    assert records(labels) == [(1, "1", "d1", "a", 3)]


def test_a_huge_number_of_columns() -> None:
    e = error(b"1 d1 a 1\n" + b"x " * 1_000_000 + b"\n")
    assert e.line == 2 and "found 1000000" in e.reason


@pytest.mark.parametrize("seed", range(6))
def test_binary_data_is_an_invalid_input(seed: int) -> None:
    data = np.random.default_rng(seed).integers(0, 256, 50_000, dtype=np.uint8).tobytes()
    error(data)  # InvalidInput (not UnicodeDecodeError, IndexError, ...)


def test_nul_bytes_and_lone_continuation_bytes() -> None:
    assert "control character 0x00" in error(b"1 d1 a 1\n1 d\x002 a 1\n").reason
    assert error(b"1 d1 a 1\n1 d2 a 1\n\x80\n").line == 3
