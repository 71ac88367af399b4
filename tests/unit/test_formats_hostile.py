"""Hostile input files: shapes that used to cost time or memory out of proportion to their size,
CR-only line ends, and the length limits of ids, tags and numbers (docs/formats.md).

No test here times anything. Linearity is shown by scale instead: each hostile file is built
so that the old per-byte loops (once per byte of the widest whitespace gap over every token,
once per byte of the longest token over every line) would need 10^10 to 10^12 element
operations -- hours -- while a linear reader needs well under a second. The test finishing
under pytest is the check. Memory is bounded with tracemalloc (numpy reports its buffers to
it) against a small multiple of the file's size.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.errors import InvalidInput
from service.formats.readers import (
    MAX_DOCNO_BYTES,
    MAX_NUMBER_BYTES,
    MAX_TAG_BYTES,
    MAX_TOPIC_BYTES,
    parse_qrels,
    parse_run,
    qrels_records,
)
from service.formats.tokenize import consecutive_heads, gather_fixed_width, spans_equal_to, tokenize


def run_lines(n: int, tag: bytes = b"run-a") -> list[bytes]:
    """``n`` distinct run lines, 20 topics, strictly decreasing scores per topic."""
    return [b"%d Q0 doc-%07d %d %d.5 %s" % (i % 20, i, i // 20 + 1, n - i, tag) for i in range(n)]


def peak_memory(fn: Callable[[], Any]) -> tuple[Any, int]:
    """(result or raised InvalidInput, peak traced bytes) of ``fn()``."""
    tracemalloc.start()
    try:
        try:
            result: Any = fn()
        except InvalidInput as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def refused(fn: Callable[[], Any]) -> InvalidInput:
    with pytest.raises(InvalidInput) as err:
        fn()
    return err.value


def universal_lines(data: bytes) -> list[bytes]:
    """The reference line split: LF, CRLF and a lone CR end a line (Python's universal newlines)."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")


# ------------------------------------------------------------------ long whitespace gaps
def test_a_2mb_gap_inside_a_line_of_a_200k_token_run() -> None:
    """2 MB of spaces and tabs between two fields of one line, 200k tokens around it (3.2 MB).

    The old tokenizer looped once per gap byte over every token: 2e6 x 2e5 = 4e11 steps.
    """
    lines = run_lines(33_400)  # 200,400 tokens
    gap = b" \t" * (1 << 20)
    lines[20_000] = lines[20_000].replace(b" Q0 ", b" Q0" + gap)
    data = b"\n".join(lines) + b"\n"
    assert len(data) > 3_000_000
    run = parse_run(data, "gap.run")
    reference = parse_run(b"\n".join(run_lines(33_400)) + b"\n", "plain.run")
    assert run.to_rankings() == reference.to_rankings()
    assert run.docnos.shape[0] == 33_400


def test_a_2mb_gap_of_blank_lines_keeps_line_numbers() -> None:
    """2 MB of blank lines ending in LF, CRLF and lone CR between 200k tokens; the error after
    the gap names its line as a universal-newline reader counts it."""
    lines = run_lines(33_400)
    blank = (b"  \n" + b"\t\r\n" + b" \r" + b"\r\r\n") * 200_000
    head, tail = lines[:20_000], lines[20_000:]
    tail[5_000] = tail[5_000].replace(b".5 run-a", b".5x run-a")
    data = b"\n".join(head) + b"\n" + blank + b"\n".join(tail) + b"\n"
    assert len(data) > 3_000_000
    expected = universal_lines(data).index(tail[5_000]) + 1
    err = refused(lambda: parse_run(data, "blank.run"))
    assert (err.line, err.reason) == (expected, f"score {tail[5_000].split()[4].decode()!r} is not a number")
    tail[5_000] = tail[5_000].replace(b".5x", b".5")
    data = b"\n".join(head) + b"\n" + blank + b"\n".join(tail) + b"\n"
    assert parse_run(data).docnos.shape[0] == 33_400


def test_a_2mb_gap_in_qrels() -> None:
    lines = [b"%d 0 doc-%07d %d" % (i % 50, i, i % 3) for i in range(50_000)]  # 200k tokens
    data = b"\n".join(lines[:100]) + b"\n" + b" " * (2 << 20) + b"\n".join(lines[100:]) + b"\n"
    assert sum(len(d) for d in parse_qrels(data).docnos) == 50_000


# ------------------------------------------------------------------------- long tokens
def test_a_20000_byte_docno_among_200k_lines_is_refused_before_any_copy() -> None:
    """Old: one 200k x 20,000 array (4 GB, then MemoryError). Now: a 422 at its line, and the
    peak memory stays a small multiple of the file (the tokenizer's spans)."""
    lines = run_lines(200_000)
    lines[123_456] = lines[123_456].replace(b"doc-", b"d" * 20_000)
    data = b"\n".join(lines) + b"\n"
    result, peak = peak_memory(lambda: parse_run(data, "wide.run"))
    assert isinstance(result, InvalidInput)
    assert (result.source, result.line) == ("wide.run", 123_457)
    assert result.reason == f"docno is {20_000 + 7} bytes long; the limit is {MAX_DOCNO_BYTES}"
    assert peak < 12 * len(data), peak / len(data)


@pytest.mark.parametrize(
    ("field", "name"),
    [(0, "topic id"), (2, "docno"), (5, "run tag"), (4, "score")],
)
def test_a_4mb_token_in_a_run_is_refused_at_its_line(field: int, name: str) -> None:
    """Old: one numpy pass per byte of the token over every line (4e6 passes x 50k lines)."""
    lines = run_lines(50_000)
    cols = lines[31_337].split()
    cols[field] = b"7" * (4 << 20)
    lines[31_337] = b" ".join(cols)
    data = b"\n".join(lines) + b"\n"
    result, peak = peak_memory(lambda: parse_run(data, "huge.run"))
    assert isinstance(result, InvalidInput)
    assert result.line == 31_338
    assert result.reason.startswith(f"{name} is {4 << 20} bytes long; the limit is ")
    assert peak < 12 * len(data), peak / len(data)


def test_a_4mb_rank_is_refused_when_ranks_are_read() -> None:
    lines = run_lines(50_000)
    lines[77] = lines[77].replace(b" Q0 doc-0000077 4 ", b" Q0 doc-0000077 " + b"4" * (4 << 20) + b" ")
    data = b"\n".join(lines) + b"\n"
    assert parse_run(data).docnos.shape[0] == 50_000  # the rank column is not read by default
    err = refused(lambda: parse_run(data, order="rank"))
    assert (err.line, err.reason) == (78, f"rank is {4 << 20} bytes long; the limit is {MAX_NUMBER_BYTES}")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"3 0 %s 1" % (b"d" * (4 << 20)), f"docno is {4 << 20} bytes long"),
        (b"%s 0 d 1" % (b"3" * (4 << 20)), f"topic id is {4 << 20} bytes long"),
        (b"3 0 d %s" % (b"1" * (4 << 20)), f"relevance label is {4 << 20} bytes long"),
        (b"3 d %s" % (b"L" + b"1" * (4 << 20)), f"relevance label is {(4 << 20) + 1} bytes long"),
        (b"3 %s L1" % (b"d" * (4 << 20)), f"docno is {4 << 20} bytes long"),
    ],
)
def test_a_4mb_token_in_qrels_is_refused_at_its_line(line: bytes, reason: str) -> None:
    ntcir = line.count(b" ") == 2
    lines = [b"%d %s%d %s" % (i % 30, b"" if ntcir else b"0 d", i, b"L1" if ntcir else b"1") for i in range(40_000)]
    lines[9_999] = line
    data = b"\n".join(lines) + b"\n"
    result, peak = peak_memory(lambda: parse_qrels(data, "huge.qrels"))
    assert isinstance(result, InvalidInput)
    assert result.line == 10_000
    assert result.reason.startswith(reason)
    assert peak < 12 * len(data), peak / len(data)


def test_the_earliest_line_over_a_limit_is_reported() -> None:
    lines = run_lines(10)
    lines[6] = lines[6].replace(b"doc-0000006", b"d" * (MAX_DOCNO_BYTES + 1))  # line 7
    lines[4] = lines[4].replace(b"run-a", b"r" * (MAX_TAG_BYTES + 1))  # line 5
    lines[8] = b"t" * (MAX_TOPIC_BYTES + 1) + lines[8][lines[8].index(b" "):]  # line 9
    err = refused(lambda: parse_run(b"\n".join(lines)))
    assert (err.line, err.reason) == (5, f"run tag is {MAX_TAG_BYTES + 1} bytes long; the limit is {MAX_TAG_BYTES}")


# ---------------------------------------------------------------------------- limits
def _run_with(field: int, value: bytes, at: int = 3) -> bytes:
    lines = run_lines(6)
    if field == 5:  # one file holds one run: every line has the tag
        lines = run_lines(6, tag=value)
    else:
        cols = lines[at].split()
        cols[field] = value
        lines[at] = b" ".join(cols)
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize(
    ("field", "name", "limit"),
    [(0, "topic id", MAX_TOPIC_BYTES), (2, "docno", MAX_DOCNO_BYTES), (5, "run tag", MAX_TAG_BYTES)],
)
def test_run_limits_at_and_beyond(field: int, name: str, limit: int) -> None:
    run = parse_run(_run_with(field, b"x" * limit))
    if field == 0:
        assert "x" * limit in run.topics
    elif field == 2:
        assert b"x" * limit in run.docnos.tolist()
    else:
        assert run.tag == "x" * limit
    err = refused(lambda: parse_run(_run_with(field, b"x" * (limit + 1)), "r"))
    assert (err.source, err.line) == ("r", 1 if field == 5 else 4)
    assert err.reason == f"{name} is {limit + 1} bytes long; the limit is {limit}"


def test_limits_count_utf8_bytes() -> None:
    assert parse_run(_run_with(2, "ä".encode() * (MAX_DOCNO_BYTES // 2))).docnos.shape[0] == 6
    err = refused(lambda: parse_run(_run_with(2, "ä".encode() * (MAX_DOCNO_BYTES // 2 + 1))))
    assert err.reason == f"docno is {MAX_DOCNO_BYTES + 2} bytes long; the limit is {MAX_DOCNO_BYTES}"


def test_score_length_limit() -> None:
    at_limit = b"0." + b"0" * (MAX_NUMBER_BYTES - 3) + b"1"
    assert len(at_limit) == MAX_NUMBER_BYTES
    run = parse_run(_run_with(4, at_limit))
    assert float(at_limit) in run.scores.tolist()
    err = refused(lambda: parse_run(_run_with(4, at_limit + b"0")))
    assert (err.line, err.reason) == (4, f"score is {MAX_NUMBER_BYTES + 1} bytes long; the limit is {MAX_NUMBER_BYTES}")


def _trec_qrels_with(topic: bytes, docno: bytes) -> bytes:
    return b"1 0 a 1\n1 0 b 0\n%s 0 %s 2\n2 0 c 1\n" % (topic, docno)


def _ntcir_qrels_with(topic: bytes, docno: bytes) -> bytes:
    return b"1 a L1\n1 b L0\n%s %s L2\n2 c L1\n" % (topic, docno)


@pytest.mark.parametrize("make", [_trec_qrels_with, _ntcir_qrels_with])
@pytest.mark.parametrize(("which", "name", "limit"), [(0, "topic id", MAX_TOPIC_BYTES), (1, "docno", MAX_DOCNO_BYTES)])
def test_qrels_limits_at_and_beyond(make: Callable[[bytes, bytes], bytes], which: int, name: str, limit: int) -> None:
    def data(length: int) -> bytes:
        ids = [b"9", b"z"]
        ids[which] = b"x" * length
        return make(*ids)

    q = parse_qrels(data(limit))
    topic = "x" * limit if which == 0 else "9"
    docno = "x" * limit if which == 1 else "z"
    assert q.to_mapping()[topic] == {docno: 2}
    for reader in (parse_qrels, qrels_records):
        err = refused(lambda: reader(data(limit + 1), "q"))  # noqa: B023
        assert (err.source, err.line) == ("q", 3)
        assert err.reason == f"{name} is {limit + 1} bytes long; the limit is {limit}"


def test_level_length_limits() -> None:
    assert parse_qrels(b"1 0 a " + b"0" * (MAX_NUMBER_BYTES - 1) + b"2\n").to_mapping() == {"1": {"a": 2}}
    assert parse_qrels(b"1 a L" + b"0" * (MAX_NUMBER_BYTES - 2) + b"2\n").to_mapping() == {"1": {"a": 2}}
    err = refused(lambda: parse_qrels(b"1 0 b 1\n1 0 a " + b"0" * MAX_NUMBER_BYTES + b"2\n"))
    assert (err.line, err.reason) == (
        2, f"relevance label is {MAX_NUMBER_BYTES + 1} bytes long; the limit is {MAX_NUMBER_BYTES}")
    err = refused(lambda: parse_qrels(b"1 b L1\n1 a L" + b"0" * (MAX_NUMBER_BYTES - 1) + b"2\n"))
    assert (err.line, err.reason) == (
        2, f"relevance label is {MAX_NUMBER_BYTES + 1} bytes long; the limit is {MAX_NUMBER_BYTES}")


def test_every_value_within_the_limits_fits_its_column() -> None:
    """The readers' limits (bytes) are what the store relies on: a value the reader accepts
    always fits its column (characters), on every database."""
    from service.store.models import Judgment, Run, Topic

    assert Run.__table__.c.tag.type.length >= MAX_TAG_BYTES
    assert Topic.__table__.c.topic_id.type.length >= MAX_TOPIC_BYTES
    assert Judgment.__table__.c.topic.type.length >= MAX_TOPIC_BYTES
    assert Judgment.__table__.c.docno.type.length >= MAX_DOCNO_BYTES


# ---------------------------------------------------------------------- CR line ends
def _as(lines: list[bytes], end: bytes) -> bytes:
    return end.join(lines) + end


def test_cr_only_run_reads_as_its_lf_version() -> None:
    """Old: 3,000 CR-ended lines read as one line of 18,000 columns (extra columns ignored)."""
    lines = run_lines(3_000)
    lf = parse_run(_as(lines, b"\n"))
    for data in (_as(lines, b"\r"), b"\r".join(lines), _as(lines, b"\r\n"), b"\r".join(lines) + b"\n"):
        run = parse_run(data)
        assert run.docnos.shape[0] == 3_000
        assert run.to_rankings() == lf.to_rankings()
        assert run.scores.tolist() == lf.scores.tolist()
        assert run.tag == lf.tag


@pytest.mark.parametrize("fmt", ["trec", "ntcir"])
def test_cr_only_qrels_read_as_their_lf_version(fmt: str) -> None:
    if fmt == "trec":
        lines = [b"%d 0 d%d %d" % (i % 7, i, i % 3) for i in range(500)]
    else:
        lines = [b"%d d%d L%d" % (i % 7, i, i % 3) for i in range(500)]
    lf = parse_qrels(_as(lines, b"\n"))
    for data in (_as(lines, b"\r"), b"\r".join(lines), _as(lines, b"\r\n")):
        assert parse_qrels(data).to_mapping() == lf.to_mapping()
        assert qrels_records(data) == qrels_records(_as(lines, b"\n"))


def test_mixed_line_ends() -> None:
    lines = run_lines(9)
    ends = [b"\n", b"\r", b"\r\n", b"\r\r\n", b"\n\r", b"\r", b"\n\n", b"\r\r", b""]
    data = b"".join(line + end for line, end in zip(lines, ends))
    run = parse_run(data)
    assert run.to_rankings() == parse_run(_as(lines, b"\n")).to_rankings()
    table = tokenize(data, "mixed", 6)
    reference = universal_lines(data)
    assert table.line_numbers.tolist() == [reference.index(line) + 1 for line in lines]
    assert table.line_numbers.tolist() == [1, 2, 3, 4, 6, 8, 9, 11, 13]


@pytest.mark.parametrize("end", [b"\r", b"\r\n", b"\n", b"\r\r\n"])
def test_error_lines_in_cr_files(end: bytes) -> None:
    step = 2 if end == b"\r\r\n" else 1  # CR CR LF: a line end, then a blank line
    lines = run_lines(40)

    def line_of(i: int) -> int:
        return i * step + 1

    bad = lines.copy()
    bad[17] = bad[17].replace(b"run-a", b"")  # too few columns: the tokenizer's error
    assert refused(lambda: parse_run(_as(bad, end))).line == line_of(17)
    bad = lines.copy()
    bad[23] = bad[23].replace(b".5 ", b".5z ")  # a reader's error
    assert refused(lambda: parse_run(_as(bad, end))).line == line_of(23)
    bad = lines.copy()
    bad[29] = bad[29].replace(b"doc-", b"do\x01c-")  # control byte: counted from its offset
    err = refused(lambda: parse_run(_as(bad, end)))
    assert (err.line, err.reason) == (line_of(29), "control character 0x01 in the line")
    bad = lines.copy()
    bad[31] = bad[31].replace(b"doc-", b"do\xffc-")  # not UTF-8: counted from its offset
    err = refused(lambda: parse_run(_as(bad, end)))
    assert err.line == line_of(31) and err.reason.startswith("bytes are not UTF-8")
    bad = lines.copy()
    bad[11] = bad[11].replace(b"doc-", b"d" * 300)
    assert refused(lambda: parse_run(_as(bad, end))).line == line_of(11)
    qrels = [b"1 0 d%d 1" % i for i in range(40)]
    qrels[35] = b"1 0 d35 1 extra"
    assert refused(lambda: parse_qrels(_as(qrels, end))).line == line_of(35)


def test_control_byte_before_a_crlf_is_counted_once() -> None:
    err = refused(lambda: parse_run(b"t Q0 a 1 1 x\r\nt Q0 b 2 1 x\r\n\x07\r\n"))
    assert err.line == 3
    err = refused(lambda: parse_run(b"t Q0 a 1 1 x\r\r\x07\n"))
    assert err.line == 3


# ------------------------------------------------- in-place span helpers vs references
token = st.binary(min_size=1, max_size=40).map(lambda b: bytes(c % 94 + 33 for c in b))
short_tokens = st.lists(st.sampled_from([b"a", b"b", b"ab", b"abcdefgh", b"abcdefgx", b"abcdefghi", b"x" * 17]),
                        min_size=1, max_size=40)


def _spans(tokens: list[bytes], sep: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data, starts, ends = bytearray(), [], []
    for t in tokens:
        starts.append(len(data))
        data += t
        ends.append(len(data))
        data += sep
    return np.frombuffer(bytes(data), dtype=np.uint8), np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(token, min_size=1, max_size=40), short_tokens), st.sampled_from([b"", b" ", b"\n\r"]),
       st.data())
def test_span_helpers_match_python(tokens: list[bytes], sep: bytes, data: st.DataObject) -> None:
    buf, starts, ends = _spans(tokens, sep)  # sep b"": the last span ends the buffer
    assert gather_fixed_width(buf, starts, ends).tolist() == tokens
    heads = consecutive_heads(buf, starts, ends).tolist()
    assert heads == [True] + [tokens[i] != tokens[i - 1] for i in range(1, len(tokens))]
    ref = data.draw(st.integers(0, len(tokens) - 1))
    assert spans_equal_to(buf, starts, ends, ref).tolist() == [t == tokens[ref] for t in tokens]


def test_document_hashes_are_keyed_per_process() -> None:
    """The docno hash is keyed by a per-process secret: an attacker cannot precompute docnos
    whose hashes (or hash-table slots) collide, which would make the table's linear probing
    quadratic in an upload. Two processes hash the same ids differently; one process
    consistently."""
    import subprocess
    import sys

    code = ("import numpy as np; from service.formats.keys import hash_ids; "
            "print(int(hash_ids(np.array([b'clueweb09-en0000-00-00001'], dtype='S25'))[0]))")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(3)}
    assert len(seen) == 3
    from service.formats.keys import hash_ids

    ids = np.array([b"a", b"bb", b"a"], dtype="S2")
    h = hash_ids(ids)
    assert h[0] == h[2] and h[0] != h[1]


# ------------------------------------------------------------- the fast path's bounds
def test_colliding_keys_never_refuse_a_run_nor_hide_a_duplicate() -> None:
    """Duplicates are found by sorting the 64-bit (topic, docno) keys; equal keys are then
    confirmed on the bytes. With every key forced equal, a run without duplicates is still
    read, and a real duplicate is still named at its line."""
    from unittest import mock

    from service.formats import readers

    lines = run_lines(2_000)
    with mock.patch.object(readers, "topic_keys", lambda hashes, codes: np.zeros_like(hashes)):
        assert parse_run(b"\n".join(lines) + b"\n").to_rankings() == parse_run(b"\n".join(lines) + b"\n").to_rankings()
        lines[1_500] = lines[1_500].replace(b"doc-0001500", b"doc-0000020")  # topic 0, as line 21
        err = refused(lambda: parse_run(b"\n".join(lines) + b"\n", "dup.run"))
    assert (err.line, err.reason) == (
        1_501, "document 'doc-0000020' is retrieved twice for topic '0' (first on line 21)")


def test_the_fast_path_peak_memory_is_a_small_multiple_of_the_file() -> None:
    data = b"\n".join(run_lines(200_000)) + b"\n"
    run, peak = peak_memory(lambda: parse_run(data, "big.run"))
    assert run.docnos.shape[0] == 200_000
    assert peak < 12 * len(data), peak / len(data)


@pytest.mark.parametrize("subtopic", [b"-5", b"1" + b"0" * 30, b"2147483648", b"007"])
def test_a_hostile_subtopic_deep_in_large_diversity_qrels_is_refused_at_its_line(subtopic: bytes) -> None:
    """TREC diversity subtopics are ndeval's numbers (issue 34, item 6): one that is not, on line
    150,001 of a file of valid ones, is refused there, naming the file and the subtopic."""
    from service.formats.diversity import parse_diversity_qrels

    lines = [b"%d %d doc-%07d %d" % (i % 50, i % 7 + 1, i, i % 2) for i in range(200_000)]
    lines[150_000] = b"3 %s doc-x 1" % subtopic
    error = refused(lambda: parse_diversity_qrels(b"\n".join(lines) + b"\n", "web.div", "trec"))
    assert (error.source, error.line) == ("web.div", 150_001)
    assert f"subtopic {subtopic.decode()!r} is not a subtopic number" in error.reason


@pytest.mark.parametrize("bad", [b"\r", b"\x7f", b"  ", b" extra", b"\t\t"])
def test_one_odd_byte_deep_in_a_large_regular_file(bad: bytes) -> None:
    """A file that is regular but for one line is read (or refused) as the careful path reads it."""
    lines = run_lines(100_000)
    lines[77_777] = lines[77_777].replace(b" Q0 ", b" Q0" + bad + b" ") if bad != b" extra" else lines[77_777] + bad
    data = b"\n".join(lines) + b"\n"
    try:
        outcome: object = parse_run(data).to_rankings()
    except InvalidInput as exc:
        outcome = (exc.line, exc.reason)
    from unittest import mock

    from service.formats import tokenize as tokenize_module

    with mock.patch.object(tokenize_module, "_rectangular", lambda *a: None):
        try:
            careful: object = parse_run(data).to_rankings()
        except InvalidInput as exc:
            careful = (exc.line, exc.reason)
    assert outcome == careful
    if bad == b"\x7f":
        assert outcome == (77_778, "control character 0x7f in the line")
