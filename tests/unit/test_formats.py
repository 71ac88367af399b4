"""TREC/NTCIR readers: what they accept, how they order, and the errors they give."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.errors import InvalidInput
from service.formats import tokenize as tokenize_module
from service.formats.keys import KeyTable
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
        (run_bytes("t Q0 a 1 1 tag", "u Q0 a 1 1 tag", "t Q0 a 2 0.5 tag"), 3,
         "retrieved twice for topic 't' (first on line 1)"),
        # three times: the first repeat is named (line 3), not the last
        (run_bytes("t Q0 a 1 3 tag", "t Q0 b 2 2 tag", "t Q0 a 3 1 tag", "t Q0 a 4 0.5 tag"), 3,
         "retrieved twice for topic 't' (first on line 1)"),
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
@given(st.lists(st.one_of(decimal_text, st.floats(allow_nan=False, allow_infinity=False).map(repr)),
                min_size=1, max_size=30))
def test_scores_parse_exactly_like_python_float(texts: list[str]) -> None:
    data = "".join(f"t Q0 d{i} {i} {t} tag\n" for i, t in enumerate(texts)).encode()
    table = tokenize(data, "x", 6)
    assert parse_floats(table, 4, "score").tolist() == [float(t) for t in texts]


# ------------------------------------------------------- fast paths vs the careful ones
# The common file (six tokens a line, single spaces or tabs, LF ends) is read by
# tokenize._rectangular, and scores of at most 8 bytes by tokenize._floats_in_a_word. Both
# must give exactly what the general paths give, or hand the file (the rows) over to them.
def _outcome(data: bytes, order: str = "score") -> tuple[object, ...]:
    try:
        r = parse_run(data, "r", order)
    except InvalidInput as exc:
        return ("refused", exc.line, exc.reason)
    return (r.tag, r.topics, r.offsets.tolist(), r.docnos.tolist(), r.docnos.dtype.str, r.scores.tobytes(),
            None if r.doc_hashes is None else r.doc_hashes.tolist())


def _careful(data: bytes, order: str = "score") -> tuple[object, ...]:
    """The outcome with both fast paths switched off."""
    with mock.patch.object(tokenize_module, "_rectangular", lambda *a: None), \
            mock.patch.object(tokenize_module, "_floats_in_a_word", lambda *a: None):
        return _outcome(data, order)


run_token = st.sampled_from(["t1", "t2", "10", "d", "doc-1", "doc-2", "DOC-1", "x" * 9, "Q0", "1", "2", "0.5",
                             "-1.25", "7", "+3.", ".5", "1e3", "tag", "tag2", "#", "#c", "ä", "\x7f", "1.2.3"])
separator = st.sampled_from([" ", " ", " ", "\t", "  ", " \t", "\x0b", "\x0c"])
line_end = st.sampled_from(["\n", "\n", "\n", "\r\n", "\r", "\n\n", " \n"])


@st.composite
def run_files(draw: st.DrawFn) -> bytes:
    """Mostly well-formed 6-column runs, with now and then an odd separator, line end,
    column count, comment, token or final line end."""
    rows = draw(st.integers(1, 12))
    tag = draw(st.sampled_from(["tag", "tag", "a-long-run-tag", "ä"]))
    out = []
    for i in range(rows):
        cols = [draw(st.sampled_from(["t1", "t2", "10"])), "Q0", f"d{draw(st.integers(0, 15))}", str(i + 1),
                draw(st.sampled_from(["1", "0.5", "-2.25", "3.125", "10", "0.5", "1e-3", "12345678", "123456789",
                                      "-0", "+.5", "0.123456789012345678"])), tag]
        if draw(st.integers(0, 9)) == 0:  # an odd line: a token replaced, dropped or added
            k = draw(st.integers(0, 5))
            what = draw(st.integers(0, 2))
            if what == 0:
                cols[k] = draw(run_token)
            elif what == 1:
                del cols[k]
            else:
                cols.insert(k, draw(run_token))
        sep = " " if draw(st.integers(0, 4)) else draw(separator)
        end = "\n" if draw(st.integers(0, 6)) else draw(line_end)
        out.append(sep.join(cols) + end)
    text = "".join(out)
    if draw(st.integers(0, 9)) == 0:
        text = text.rstrip("\n")
    return text.encode()


@settings(max_examples=400, deadline=None)
@given(run_files(), st.sampled_from(["score", "rank", "file"]))
def test_fast_paths_read_every_file_as_the_careful_paths_do(data: bytes, order: str) -> None:
    assert _outcome(data, order) == _careful(data, order)


# ------------------------------------------------------- chunked passes vs one pass
# Whole-file passes go a few megabytes at a time and per-line passes 131,072 lines at a time,
# so that no scratch array has the file's size. Cut into chunks of a few bytes and lines,
# every file must read as in one chunk: the same table, values, order and first error.
def _in_chunks(rows: int, nbytes: int, line: int):  # type: ignore[no-untyped-def]
    return mock.patch.multiple(tokenize_module, _ROWS_PER_PASS=rows, _BYTES_PER_PASS=nbytes, _LINE_CHUNK=line)


def _everything(data: bytes, order: str) -> tuple[object, ...]:
    """The run with its rank column, its token table, and the file read as qrels."""
    try:
        r = parse_run(data, "r", order, keep_ranks=True)
        run: object = (_outcome(data, order), None if r.ranks is None else r.ranks.tobytes())
    except InvalidInput as exc:
        run = ("refused", exc.line, exc.reason)
    try:
        t = tokenize(data, "t", 3)
        table: object = (t.line_numbers.tolist(), t.starts.tolist(), t.ends.tolist(), t.field_counts.tolist(),
                         t.longest_token, tokenize_module.column_heads(t, 0).tolist())
    except InvalidInput as exc:
        table = ("refused", exc.line, exc.reason)
    qrels = []
    for fmt in ("trec", "ntcir"):
        try:
            q = parse_qrels(b"".join(b" ".join(line.split()[:4 if fmt == "trec" else 3]) + b"\n"
                                     for line in data.splitlines()), "q", fmt)
            qrels.append((q.topics, [d.tolist() for d in q.docnos], [lv.tolist() for lv in q.levels]))
        except InvalidInput as exc:
            qrels.append(("refused", exc.line, exc.reason))
    return run, table, qrels


@settings(max_examples=300, deadline=None)
@given(run_files(), st.sampled_from(["score", "rank", "file"]), st.integers(1, 4), st.integers(1, 9),
       st.integers(1, 9))
def test_chunked_passes_read_every_file_as_one_pass(data: bytes, order: str, rows: int, nbytes: int,
                                                    line: int) -> None:
    whole = _everything(data, order)
    with _in_chunks(rows, nbytes, line):
        assert _everything(data, order) == whole


@st.composite
def qrels_in_topic_blocks(draw: st.DrawFn) -> bytes:
    """TREC qrels with each topic in one block, the blocks in any order, docnos mostly in order
    within a block, now and then a repeated or contradicted judgment."""
    topics = draw(st.lists(st.sampled_from(["1", "2", "10", "9", "b", "ab"]), min_size=1, max_size=5, unique=True))
    lines = []
    for t in topics:
        docs = sorted(draw(st.lists(st.sampled_from(["d1", "d2", "d10", "x", "doc-000001"]), min_size=1, max_size=6)))
        if draw(st.integers(0, 5)) == 0:
            docs.reverse()
        lines += [f"{t} 0 {d} {draw(st.sampled_from([0, 1, 1, 2]))}" for d in docs]
    return ("\n".join(lines) + "\n").encode()


def _qrels_outcome(data: bytes) -> object:
    try:
        q = parse_qrels(data, "q")
    except InvalidInput as exc:
        return ("refused", exc.line, exc.reason)
    return (q.topics, [d.tolist() for d in q.docnos], [d.dtype.str for d in q.docnos], [lv.tolist() for lv in q.levels])


@settings(max_examples=400, deadline=None)
@given(qrels_in_topic_blocks())
def test_qrels_in_topic_blocks_read_without_a_sort_as_with_one(data: bytes) -> None:
    """Topics in blocks with docnos in order are read as views of their blocks, unsorted: the
    same qrels, and the same first contradiction, as the sort gives."""
    from service.formats import readers

    fast = _qrels_outcome(data)
    with mock.patch.object(readers, "_sorted_within_topics", lambda *a: False):
        assert _qrels_outcome(data) == fast


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"# x", b"\n", b"\r", b"\r\n", b" "]), max_size=30).map(b"".join),
       st.integers(1, 6))
def test_a_run_header_is_split_in_pieces_as_in_one(data: bytes, piece: int) -> None:
    """The ir_metadata header is looked for a piece of the file at a time (never all its lines)."""
    from service.formats.ir_metadata import _lines

    assert list(_lines(data, piece)) == data.splitlines()
    assert list(_lines(bytearray(data), piece)) == data.splitlines()


utf8ish = st.lists(st.one_of(st.sampled_from(["a", " ", "\n", "ä", "日", "😀"]).map(str.encode),
                             st.binary(min_size=1, max_size=2)), max_size=20).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(utf8ish, st.integers(1, 9))
def test_utf8_checked_in_pieces_fails_at_the_offset_of_one_decode(data: bytes, nbytes: int) -> None:
    try:
        data.decode("utf-8")
        want = None
    except UnicodeDecodeError as exc:
        want = f"bytes are not UTF-8 (byte offset {exc.start})"
    with _in_chunks(1, nbytes, 1):
        try:
            tokenize_module._check_utf8(data, "x")
            got = None
        except InvalidInput as exc:
            got = exc.reason
    assert got == want


@pytest.mark.parametrize(
    "data",
    [
        b"t Q0 a 1 1 tag\n# a comment line of six tokens\nt Q0 b 2 0.5 tag\n",
        b"t Q0 a 1 1 tag extra\nt Q0 b 2 tag\n",  # 7 + 5 tokens: 12 separators, but not 6 a line
        b"t Q0 a 1 1 tag\r\nt Q0 b 2 0.5 tag\r\n",
        b"t Q0 a 1 1 tag\nt Q0 b 2 0.5 tag",  # no final line end
        b"t Q0 a 1 1 tag\nt  Q0 b 2 0.5 tag\n",  # two spaces
        b"t Q0 a 1 1 tag\nt\x0bQ0 b 2 0.5 tag\n",  # vertical tab: whitespace
        b"t Q0 a 1 1 tag\nt Q0 b\x7f 2 0.5 tag\n",  # DEL: refused
        "t Q0 a\x7f\u00e4 1 1 tag\n".encode(),  # DEL in a non-ASCII file
        b"\xef\xbb\xbft Q0 a 1 1 tag\n",  # byte-order mark
        b"t Q0 a 1 1 tag\n\nt Q0 b 2 0.5 tag\n",  # blank line
        b" t Q0 a 1 1 tag\n",  # leading space
        b"t Q0 a 1 1 tag\nt\tQ0\tb\t2\t0.5\ttag\n",  # tabs and spaces
        b"t Q0 a 1 1 tag\nt Q0 b 2 0.5 tag\x01\n",  # control byte
    ],
)
def test_files_the_fast_tokenizer_hands_over(data: bytes) -> None:
    assert _outcome(data) == _careful(data)


def test_the_fast_tokenizer_table_is_the_general_one() -> None:
    data = b"t1 Q0 a 1 1 tag\nt1\tQ0\tbb\t2\t0.5\ttag\n10 Q0 c 3 -2 tag\n"
    fast = tokenize(data, "x", 6)
    with mock.patch.object(tokenize_module, "_rectangular", lambda *a: None):
        general = tokenize(data, "x", 6)
    for name in ("line_numbers", "starts", "ends", "field_counts"):
        assert getattr(fast, name).tolist() == getattr(general, name).tolist(), name
    assert fast.longest_token == general.longest_token


short_number = st.from_regex(r"[+-]?[0-9]{0,8}(\.[0-9]{0,8})?", fullmatch=True).filter(
    lambda t: 0 < len(t) <= 9 and any(c.isdigit() for c in t))
odd_short = st.sampled_from(["1.2.3", "--1", "1-", ".", "-", "+", "1e5", "0x10", "1_0", "١", "(1234567", "1234567)",
                             "12 34", "+-1", "1..", "inf", "nan", "-.", "00000000", "99999999", "-9999999", "9999999."])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(short_number, short_number, odd_short), min_size=1, max_size=20))
def test_word_at_a_time_scores_match_float_and_the_column_parser(texts: list[str]) -> None:
    texts = [t for t in texts if " " not in t] or ["1"]
    data = "".join(f"t Q0 d{i} {i} {t} tag\n" for i, t in enumerate(texts)).encode()
    table = tokenize(data, "x", 6)
    try:
        fast: object = parse_floats(table, 4, "score").view(np.uint64).tolist()
    except InvalidInput as exc:
        fast = (exc.line, exc.reason)
    with mock.patch.object(tokenize_module, "_floats_in_a_word", lambda *a: None):
        try:
            careful: object = parse_floats(table, 4, "score").view(np.uint64).tolist()
        except InvalidInput as exc:
            careful = (exc.line, exc.reason)
    assert fast == careful
    if isinstance(fast, list):
        assert fast == np.array([float(t) for t in texts]).view(np.uint64).tolist()  # -0.0 included


@st.composite
def blocked_runs(draw: st.DrawFn) -> list[tuple[str, str, int, float]]:
    """(topic, docno, rank, score) lines, each topic one block, the blocks in any order,
    scores descending or not, with many ties."""
    topics = draw(st.lists(st.sampled_from(["1", "2", "10", "b", "a", "ab"]), min_size=1, max_size=5, unique=True))
    lines = []
    for t in topics:
        n = draw(st.integers(1, 8))
        docs = draw(st.lists(st.sampled_from(["d1", "d2", "d10", "x", "xy", "doc-000001", "doc-000002", "D"]),
                             min_size=n, max_size=n, unique=True))
        scores = draw(st.lists(st.sampled_from([3.0, 2.5, 2.5, 1.0, 1.0, 1.0, 0.0]), min_size=n, max_size=n))
        if draw(st.booleans()):
            scores.sort(reverse=True)
        ranks = draw(st.permutations(range(1, n + 1))) if draw(st.booleans()) else list(range(1, n + 1))
        lines += [(t, d, r, s) for d, r, s in zip(docs, ranks, scores)]
    return lines


@settings(max_examples=300, deadline=None)
@given(blocked_runs())
def test_orders_of_runs_with_topic_blocks_in_any_order(lines: list[tuple[str, str, int, float]]) -> None:
    data = "".join(f"{t} Q0 {d} {r} {s} tag\n" for t, d, r, s in lines).encode()
    by_topic: dict[str, list[tuple[str, str, int, float]]] = {}
    for line in lines:
        by_topic.setdefault(line[0], []).append(line)
    expected = {
        "file": {t: [d for _, d, _, _ in ls] for t, ls in by_topic.items()},
        "rank": {t: [d for _, d, _, _ in sorted(ls, key=lambda x: x[2])] for t, ls in by_topic.items()},
        # trec_eval: score descending, ties by docno descending (bytes): two stable sorts
        "score": {t: [d for _, d, _, _ in sorted(sorted(ls, key=lambda x: x[1].encode(), reverse=True),
                                                 key=lambda x: -x[3])]
                  for t, ls in by_topic.items()},
    }
    for order, want in expected.items():
        run = parse_run(data, "r", order)
        assert run.to_rankings() == want, order
        assert list(run.topics) == sorted(by_topic, key=str.encode)
        assert _outcome(data, order) == _careful(data, order)


def test_key_table_finds_what_a_dict_finds() -> None:
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**63, 5_000, dtype=np.int64).astype(np.uint64)
    keys[100] = keys[7]  # a repeated key
    table = KeyTable(keys)
    assert [tuple(sorted(p)) for p in table.equal_pairs] == [(7, 100)]
    present = set(keys.tolist())
    queries = np.concatenate([keys[::3], rng.integers(0, 2**63, 3_000, dtype=np.int64).astype(np.uint64)])
    found = table.find(queries)
    assert [int(keys[i]) if i >= 0 else None for i in found.tolist()] == [
        q if q in present else None for q in queries.tolist()]
    assert KeyTable(np.zeros(0, dtype=np.uint64)).find(queries[:5]).tolist() == [-1] * 5


long_decimal = st.builds(
    lambda sign, digits, dot: sign + digits[:dot] + "." + digits[dot:],
    st.sampled_from(["", "-", "+"]),
    st.from_regex(r"[0-9]{16,18}", fullmatch=True),
    st.integers(0, 18),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(long_decimal, st.floats(allow_nan=False, allow_infinity=False).map(repr),
                          st.floats(-1, 1).map(lambda x: f"{x:.17g}")), min_size=1, max_size=40))
def test_scores_of_16_to_18_digits_parse_exactly_like_python_float(texts: list[str]) -> None:
    data = "".join(f"t Q0 d{i} {i} {t} tag\n" for i, t in enumerate(texts)).encode()
    values = parse_floats(tokenize(data, "x", 6), 4, "score")
    assert values.view(np.uint64).tolist() == np.array([float(t) for t in texts]).view(np.uint64).tolist()


@pytest.mark.parametrize(
    "text",
    # exact midpoints between two doubles (2**53 + 1, 2**54 + 2, ...) and their neighbours: the
    # extended-precision quotient lies on the midpoint, so numpy's conversion decides
    ["9007199254740993", "9007199254740995", "18014398509481986", "9007199254740992.5", "90071992547409930",
     "9007199254740993.0", "0.9007199254740993", "72057594037927937", "-9007199254740993", "36028797018963970"],
)
def test_long_mantissas_on_a_double_midpoint_round_like_python_float(text: str) -> None:
    data = f"t Q0 a 1 {text} tag\nt Q0 b 2 {text}1 tag\n".encode()
    values = parse_floats(tokenize(data, "x", 6), 4, "score")
    assert values.view(np.uint64).tolist() == np.array([float(text), float(text + "1")]).view(np.uint64).tolist()
