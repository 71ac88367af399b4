"""TREC/NTCIR readers: what they accept, how they order, and the errors they give."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.errors import InvalidInput
from service.formats.readers import parse_qrels, parse_run
from service.formats.tokenize import parse_floats, tokenize
from service.formats.types import UNJUDGED


def run_bytes(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


# ----------------------------------------------------------------------------- qrels
def test_trec_qrels_with_comments_blank_lines_and_opaque_ids() -> None:
    q = parse_qrels(b"# judged by NIST\n0001 0 d1 2\n\n0001 0 d2 0\n  0002\t0   d3   1  \n0001 0 d4 -1\n", "q.txt")
    assert q.topics == ("0001", "0002")  # "0001" stays "0001"
    assert q.to_mapping() == {"0001": {"d1": 2, "d2": 0, "d4": -1}, "0002": {"d3": 1}}
    assert q.max_level == 2


def test_ntcir_qrels_are_detected_and_read() -> None:
    q = parse_qrels(b"0001 NTC-1 L3\n0001 NTC-2 L0\n0002 NTC-3 L1\n", "q.rel")
    assert q.to_mapping() == {"0001": {"NTC-1": 3, "NTC-2": 0}, "0002": {"NTC-3": 1}}


def test_negative_labels_are_unjudged_in_lookups() -> None:
    q = parse_qrels(b"t 0 a 1\nt 0 b -1\nt 0 c 0\n")
    levels = q.lookup(0, np.array([b"a", b"b", b"c", b"zzz"]))
    assert levels.tolist() == [1, UNJUDGED, 0, UNJUDGED]


def test_repeated_identical_judgment_is_accepted() -> None:
    q = parse_qrels(b"t 0 a 1\nt 0 a 1\n")
    assert q.to_mapping() == {"t": {"a": 1}}


@pytest.mark.parametrize(
    ("data", "line", "fragment"),
    [
        (b"t 0 a 1\nt 0 a 2\n", 2, "judged 2 here but 1 on line 1"),
        (b"t 0 a 1\nt 0 b x\n", 2, "'x' is not an integer"),
        (b"t 0 a 1\nt 0 b\n", 2, "exactly 4"),
        (b"t 0 a 1\nt 0 b 1.5\n", 2, "not an integer"),
        (b"t a L1\nt b 2\n", 2, "is not L<n>"),
        (b"t a L1\nt b Lx\n", 2, "is not L<n>"),
        (b"t 0 a 1\nt 0 \xff 1\n", 2, "not UTF-8"),
        (b"t 0 a 1\nt 0 b\x00 1\n", 2, "control character"),
    ],
)
def test_bad_qrels_name_the_line(data: bytes, line: int, fragment: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_qrels(data, "judgments.txt")
    assert err.value.source == "judgments.txt"
    assert err.value.line == line
    assert fragment in str(err.value)
    assert str(err.value).startswith(f"judgments.txt:{line}: ")


@pytest.mark.parametrize("data", [b"", b"\n\n", b"# only a comment\n"])
def test_empty_files_are_errors(data: bytes) -> None:
    with pytest.raises(InvalidInput, match="empty|no data lines"):
        parse_qrels(data, "q")
    with pytest.raises(InvalidInput, match="empty|no data lines"):
        parse_run(data, "r")


def test_qrels_with_five_columns_is_neither_format() -> None:
    with pytest.raises(InvalidInput, match="TREC qrels .* or NTCIR qrels"):
        parse_qrels(b"t 0 a 1 extra\n", "q")


# ------------------------------------------------------------------------------ runs
def test_default_order_is_trec_evals_score_then_docno_descending() -> None:
    run = parse_run(
        run_bytes(
            "t Q0 b 1 1.0 tag",
            "t Q0 a 2 2.0 tag",
            "t Q0 c 3 1.0 tag",
            "t Q0 d 4 1.0 tag",
            "u Q0 x 1 5 tag",
        )
    )
    assert run.to_rankings() == {"t": ["a", "d", "c", "b"], "u": ["x"]}
    assert run.tag == "tag"


def test_rank_and_file_orders() -> None:
    data = run_bytes("t Q0 a 3 9 tag", "t Q0 b 1 1 tag", "t Q0 c 2 5 tag")
    assert parse_run(data, order="rank").to_rankings() == {"t": ["b", "c", "a"]}
    assert parse_run(data, order="file").to_rankings() == {"t": ["a", "b", "c"]}
    assert parse_run(data, order="score").to_rankings() == {"t": ["a", "c", "b"]}


def test_interleaved_topics_are_grouped_keeping_order_within_each() -> None:
    data = run_bytes("2 Q0 a 1 3 x", "1 Q0 b 1 3 x", "2 Q0 c 2 2 x", "1 Q0 d 2 2 x")
    assert parse_run(data, order="file").to_rankings() == {"1": ["b", "d"], "2": ["a", "c"]}
    assert parse_run(data).to_rankings() == {"1": ["b", "d"], "2": ["a", "c"]}


def test_extra_columns_crlf_and_exotic_numbers() -> None:
    data = b"t Q0 a 1 1e-3 tag junk more\r\nt Q0 b 2 -2.5 tag\r\nt Q0 c 3 +7 tag\r\n"
    run = parse_run(data, "r")
    assert run.to_rankings() == {"t": ["c", "a", "b"]}
    assert run.scores.tolist() == [7.0, 0.001, -2.5]


@pytest.mark.parametrize(
    ("data", "line", "fragment"),
    [
        (run_bytes("t Q0 a 1 1 tag", "t Q0 b 2 1"), 2, "at least 6"),
        (run_bytes("t Q0 a 1 1 tag", "t Q0 b 2 high tag"), 2, "score 'high' is not a number"),
        (run_bytes("t Q0 a 1 1 tag", "t Q0 b 2 nan tag"), 2, "not a finite number"),
        (run_bytes("t Q0 a 1 1 tag", "u Q0 a 1 1 tag", "t Q0 a 2 0.5 tag"), 3, "retrieved twice for topic 't' (first on line 1)"),
        (run_bytes("t Q0 a 1 1 tagA", "t Q0 b 2 1 tagB"), 2, "run tag 'tagB' differs from 'tagA'"),
        (b"t Q0 a 1 1 tag\nt Q0 \xc3\x28 2 1 tag\n", 2, "not UTF-8"),
    ],
)
def test_bad_runs_name_the_line(data: bytes, line: int, fragment: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_run(data, "run.txt")
    assert err.value.line == line
    assert fragment in str(err.value)


def test_non_numeric_rank_is_an_error_only_when_ranks_are_used() -> None:
    data = run_bytes("t Q0 a one 1 tag")
    assert parse_run(data).to_rankings() == {"t": ["a"]}
    with pytest.raises(InvalidInput, match="rank 'one' is not an integer"):
        parse_run(data, order="rank")


def test_utf8_ids_are_kept() -> None:
    run = parse_run("t Q0 dokument-ä 1 1 tag\n".encode())
    assert run.to_rankings() == {"t": ["dokument-ä"]}


# --------------------------------------------------------------- exact float parsing
decimal_text = st.builds(
    lambda sign, whole, frac: f"{sign}{whole}" + (f".{frac}" if frac is not None else ""),
    st.sampled_from(["", "-", "+"]),
    st.integers(min_value=0, max_value=10**12),
    st.one_of(st.none(), st.from_regex(r"[0-9]{1,12}", fullmatch=True)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(decimal_text, st.floats(allow_nan=False, allow_infinity=False).map(repr)), min_size=1, max_size=30))
def test_scores_parse_exactly_like_python_float(texts: list[str]) -> None:
    data = "".join(f"t Q0 d{i} {i} {t} tag\n" for i, t in enumerate(texts)).encode()
    table = tokenize(data, "x", 6)
    assert parse_floats(table, 4, "score").tolist() == [float(t) for t in texts]
