"""Vectorised whitespace tokenisation of TREC/NTCIR text files.

A 100-run x 50-topic x depth-1000 submission round is five million run lines;
splitting them in a Python loop costs several seconds, so the readers here
treat a file as one ``uint8`` array and find token and line boundaries with
numpy. Nothing here creates a Python object per line: fields come back as
fixed-width byte-string arrays (``numpy.bytes_``) and numbers are parsed column
by column.

Whitespace is what ``bytes.split()`` splits on (space, \\t, \\n, \\v, \\f, \\r);
any other control byte is an error, as are bytes that are not UTF-8. A line
ends at LF, at CRLF (one line end) or at a CR not followed by LF (classic Mac
files), as Python's universal newlines read them. Lines whose first token
starts with ``#`` are comments (trec_eval 10 skips them too).

Every pass is linear in the file's size whatever its shape (long whitespace
gaps, long tokens): fields are copied into fixed-width arrays only after the
readers have checked their lengths against the limits below, so a copy costs
at most rows x limit bytes.

The usual file (every line exactly the expected tokens, one space or tab between
them, LF line ends, no blank or comment line) is recognised in a few whole-file
passes and its token table is the array of separator offsets reshaped, with no
per-token gather (:func:`_rectangular`); scores of at most 8 bytes are parsed a
word at a time (:func:`_floats_in_a_word`). Anything else, and any row those
fast paths cannot take, goes the general way: the fast paths never give a
different table, value or error, only the same one sooner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from service.errors import InvalidInput

#: Length limits, in bytes (UTF-8), of the fields the readers keep. Longer ones
#: are refused with the line number before any fixed-width copy (docs/formats.md).
MAX_TOPIC_BYTES = 100  # topic ids (the store's column holds 200)
MAX_DOCNO_BYTES = 200  # document ids (the store's column holds 500)
MAX_TAG_BYTES = 200  # run tags (the store's column holds 200)
MAX_NUMBER_BYTES = 64  # scores, ranks, relevance labels

# Byte classes: 0 = part of a token, 1 = whitespace, 2 = forbidden control byte.
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[:32] = 2
_CLASS[127] = 2
_CLASS[[9, 10, 11, 12, 13, 32]] = 1


@dataclass(frozen=True)
class TokenTable:
    """The data lines of a file and the byte spans of their first fields.

    ``line_numbers[i]`` is the 1-based line number of data line ``i``;
    ``starts[i, k]``/``ends[i, k]`` delimit its ``k``-th field in ``buffer``.
    """

    source: str
    buffer: np.ndarray  # uint8 view of the file
    line_numbers: np.ndarray  # int64 (n,)
    starts: np.ndarray  # int64 (n, fields)
    ends: np.ndarray  # int64 (n, fields)
    field_counts: np.ndarray  # int64 (n,): tokens on each data line
    longest_token: int | None = None  # bytes of the file's longest token (None: not known)
    _columns: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __len__(self) -> int:
        return int(self.line_numbers.shape[0])

    def column(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Field ``k``'s (starts, ends, lengths) as contiguous read-only arrays, made once.

        ``starts[:, k]`` is a strided view, and every whole-array pass over a strided
        view costs several times one over a contiguous copy.
        """
        got = self._columns.get(k)
        if got is None:
            starts = np.ascontiguousarray(self.starts[:, k])
            ends = np.ascontiguousarray(self.ends[:, k])
            got = (starts, ends, ends - starts)
            for a in got:
                a.flags.writeable = False
            self._columns[k] = got
        return got

    def field_bytes(self, k: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Field ``k`` of every data line (or of ``rows``) as a ``bytes_`` array.

        Check the field's length first (:func:`check_lengths`): the array is
        rows x the widest value.
        """
        starts, ends, _ = self.column(k)
        if rows is not None:
            starts, ends = starts[rows], ends[rows]
        return gather_fixed_width(self.buffer, starts, ends)

    def field_text(self, row: int, k: int) -> str:
        """One field as ``str`` (for error messages and small tables)."""
        lo, hi = int(self.starts[row, k]), int(self.ends[row, k])
        return self.buffer[lo:hi].tobytes().decode("utf-8")

    def field_lengths(self, k: int) -> np.ndarray:
        return self.column(k)[2]


#: The widest field :func:`gather_words` copies; callers check the limits above
#: first, so this only stops a missed check from costing rows x megabytes.
_GATHER_GUARD = 4 * max(MAX_TOPIC_BYTES, MAX_DOCNO_BYTES, MAX_TAG_BYTES, MAX_NUMBER_BYTES)


def gather_words(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, int]:
    """Byte spans as rows of little-endian 64-bit words, zero past each span's end.

    Returns the (n, ceil(width / 8)) ``<u8`` array and the width (the longest
    span, at least 1). One pass per 8 bytes, over the spans not yet copied to
    their end: the work is the total length of the spans / 8 plus a pass per
    span, whatever the longest one; the array is rows x width, which callers
    bound by checking the field's length limit first.
    """
    n = starts.shape[0]
    lengths = ends - starts
    width = max(int(lengths.max()) if n else 1, 1)
    if width > _GATHER_GUARD:
        raise ValueError(f"a {width}-byte field reached gather_words: its length was not checked")
    out = np.zeros((n, -(-width // 8)), dtype="<u8")
    if n == 0:
        return out, width
    words = _Words(buffer)
    rows: np.ndarray | None = None  # the rows still being copied (None: all)
    pos, rest = np.ascontiguousarray(starts), lengths
    shortest = int(lengths.min())  # of the rows still being copied
    for k in range(out.shape[1]):
        if k:
            pos, rest, shortest = pos + 8, rest - 8, shortest - 8
            if shortest <= 0:  # drop the spans copied to their end
                keep = rest > 0
                rows = np.flatnonzero(keep) if rows is None else rows[keep]
                pos, rest = pos[keep], rest[keep]
                shortest = int(rest.min())
        # A whole word for every row (one scalar mask, or none) when no span ends inside it.
        value = words.read(pos, 8 if shortest >= 8 else shortest if shortest == width - 8 * k else rest)
        if rows is None:
            out[:, k] = value
        else:
            out[rows, k] = value
    return out, width


def words_to_bytes(words: np.ndarray, width: int) -> np.ndarray:
    """:func:`gather_words`' result as a ``bytes_`` array of that width."""
    n = words.shape[0]
    raw = words.view(np.uint8)
    if raw.shape[1] != width:
        raw = np.ascontiguousarray(raw[:, :width])
    return raw.view(f"S{width}").reshape(n)


def gather_fixed_width(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Copy byte spans into a fixed-width ``bytes_`` array (see :func:`gather_words`)."""
    return words_to_bytes(*gather_words(buffer, starts, ends))


def check_lengths(table: TokenTable, limits: list[tuple[int, str, int]]) -> None:
    """Refuse the first line holding a field longer than its limit.

    ``limits`` holds (field, name, limit in bytes); on the earliest offending
    line the first listed field is reported. One pass over each field's spans,
    none when no token of the file is longer than the smallest limit.
    """
    if table.longest_token is not None and table.longest_token <= min(limit for _, _, limit in limits):
        return
    worst: tuple[int, int, str, int, int] | None = None  # (row, order, name, length, limit)
    for order, (k, what, limit) in enumerate(limits):
        lengths = table.field_lengths(k)
        over = np.flatnonzero(lengths > limit)
        if over.shape[0]:
            r = int(over[0])
            if worst is None or (r, order) < worst[:2]:
                worst = (r, order, what, int(lengths[r]), limit)
    if worst is not None:
        r, _, what, length, limit = worst
        raise InvalidInput(
            table.source, int(table.line_numbers[r]), f"{what} is {length} bytes long; the limit is {limit}"
        )


class _Words:
    """The 8 bytes at any offset of a buffer as one little-endian uint64 (zeros past its end).

    Spans are compared a word at a time, in place: no copy of the file, no
    fixed-width array.
    """

    _ONES = np.uint64(0xFFFFFFFFFFFFFFFF)

    def __init__(self, buffer: np.ndarray) -> None:
        if buffer.shape[0] < 8:
            padded = np.zeros(8, dtype=np.uint8)
            padded[: buffer.shape[0]] = buffer
            buffer = padded
        self.last = buffer.shape[0] - 8  # the last offset a whole word can be read at
        # Overlapping, unaligned 8-byte windows over the buffer (a read-only view).
        windows = np.lib.stride_tricks.as_strided(buffer, shape=(self.last + 1, 8), strides=(1, 1), writeable=False)
        self.words = windows.view("<u8").reshape(self.last + 1)

    def read(self, pos: np.ndarray, length: np.ndarray | int) -> np.ndarray:
        """The word at each offset, keeping its first ``min(length, 8)`` bytes (``length`` >= 1)."""
        if pos.shape[0] and int(pos.max()) > self.last:
            past = np.maximum(pos - self.last, 0).astype(np.uint64)
            out = self.words[np.minimum(pos, self.last)] >> (past * np.uint64(8))
        else:
            out = self.words[pos]
        if isinstance(length, (int, np.integer)):  # one length for every span: one mask
            if length < 8:
                out &= self._ONES >> np.uint64(8 * (8 - length))
            return out
        keep = np.minimum(length, 8)
        if np.any(keep < 8):
            out &= self._ONES >> (np.uint64(8) * (8 - keep).astype(np.uint64))
        return out


def spans_equal_to(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray, ref: int) -> np.ndarray:
    """Which spans hold the same bytes as span ``ref``: no fixed-width copy.

    One pass per 8 bytes of span ``ref`` over the spans of its length.
    """
    lengths = ends - starts
    length = int(lengths[ref])
    same = lengths == length
    if length == 0:
        return same
    every = bool(same.all())  # the usual column (one run tag): no row selection
    rows = None if every else np.flatnonzero(same)
    first = np.ascontiguousarray(starts) if rows is None else starts[rows]
    words = _Words(buffer)
    equal = np.ones(first.shape[0], dtype=bool)
    lo = np.array([starts[ref]], dtype=np.int64)
    for k in range(0, length, 8):
        equal &= words.read(first + k, length - k) == words.read(lo + k, length - k)[0]
    if rows is None:
        return equal
    same[rows] = equal
    return same


def consecutive_heads(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``head[i]``: span ``i`` differs from span ``i - 1`` (``head[0]`` is True).

    Compares the pairs of equal length in place, 8 bytes per pass, dropping
    the pairs compared to their end: the work is at most the total length of
    the spans divided by 8, plus a pass per pair, whatever the longest span.
    """
    n = starts.shape[0]
    head = np.ones(n, dtype=bool)
    if n < 2:
        return head
    words = _Words(buffer)
    lengths = ends - starts
    longest = int(lengths.max())
    uniform = int(lengths.min()) == longest
    if longest <= 8 or uniform:
        # The usual column (short ids, or ids of one length): a pass per 8 bytes over every row.
        first = np.ascontiguousarray(starts)
        differ = head[1:]
        differ[:] = lengths[1:] != lengths[:-1]
        for k in range(0, longest, 8):
            col = words.read(first + k, longest - k if uniform else lengths - k)
            differ |= col[1:] != col[:-1]
        return head
    same_length = lengths[1:] == lengths[:-1]
    head[1:] = ~same_length
    active = np.flatnonzero(same_length) + 1  # rows still equal to the previous one so far
    length = lengths[active]
    here, prev = starts[active], starts[active - 1]
    k = 0
    while active.shape[0]:
        if int(length.min()) <= k:  # drop the pairs compared to their end (equal: not heads)
            keep = length > k
            active, length, here, prev = active[keep], length[keep], here[keep], prev[keep]
            if not active.shape[0]:
                break
        differ = words.read(here + k, length - k) != words.read(prev + k, length - k)
        found = int(np.count_nonzero(differ))
        if found:
            head[active[differ]] = True
            if 2 * found > active.shape[0]:  # else comparing them on costs less than dropping them
                keep = ~differ
                active, length, here, prev = active[keep], length[keep], here[keep], prev[keep]
        k += 8
    return head


def _line_ends_before(data: bytes, offset: int) -> int:
    """Line ends (LF, CRLF, lone CR) wholly before ``offset``."""
    lf = data.count(b"\n", 0, offset)
    # A CR is a line end of its own unless an LF follows it (then the LF is the line end).
    lone_cr = data.count(b"\r", 0, offset) - data.count(b"\r\n", 0, offset + 1)
    return lf + lone_cr


def _line_of_offset(data: bytes, offset: int) -> int:
    return _line_ends_before(data, offset) + 1


def tokenize(data: bytes, source: str, fields: int, *, exact: bool = False) -> TokenTable:
    """Split ``data`` into data lines of at least ``fields`` whitespace-separated tokens.

    With ``exact`` a line must have exactly ``fields`` tokens. Blank lines and
    ``#`` comment lines are skipped. Raises :class:`InvalidInput` naming the
    first offending line.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        # A UTF-8 byte-order mark is not part of the first topic id. Blanked rather than cut,
        # so byte offsets (and line numbers) stay those of the file.
        data = b"   " + data[3:]
    ascii_only = data.isascii()
    if not ascii_only:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                source, _line_of_offset(data, exc.start), f"bytes are not UTF-8 (byte offset {exc.start})"
            ) from None
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.shape[0] == 0:
        raise InvalidInput(source, None, "the file is empty")
    table = _rectangular(buf, source, fields, ascii_only)
    if table is not None:
        return table
    spans = _regular_spans(buf)
    if spans is None:
        spans = _general_spans(data, buf, source)
    # Per line: its first token and its 0-based line number (blank lines have no token).
    tok_start, tok_end, first_tok, line_index, longest = spans
    counts = np.diff(np.append(first_tok, tok_start.shape[0]))
    is_data = buf[tok_start[first_tok]] != ord("#")
    first_tok = first_tok[is_data]
    counts = counts[is_data]
    line_numbers = line_index[is_data] + 1
    if first_tok.shape[0] == 0:
        raise InvalidInput(source, None, "the file has no data lines")
    short = np.flatnonzero(counts < fields) if not exact else np.flatnonzero(counts != fields)
    if short.shape[0]:
        r = int(short[0])
        want = f"exactly {fields}" if exact else f"at least {fields}"
        raise InvalidInput(
            source, int(line_numbers[r]), f"expected {want} whitespace-separated columns, found {int(counts[r])}"
        )
    tok_index = first_tok[:, None] + np.arange(fields)[None, :]
    return TokenTable(
        source=source,
        buffer=buf,
        line_numbers=line_numbers,
        starts=tok_start[tok_index],
        ends=tok_end[tok_index],
        field_counts=counts,
        longest_token=longest,
    )


_Spans = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]


def _rectangular(buf: np.ndarray, source: str, fields: int, ascii_only: bool) -> TokenTable | None:
    """The token table of the most common file, with no per-token gather: every line holds
    exactly ``fields`` tokens separated by one space or tab, ends with LF (the last one too),
    and none is blank or a comment.

    The separators are then ``fields`` per line, the last of them the LF, so the array of
    separator offsets reshaped to (lines, fields) *is* the table of token ends. Returns None
    for any other file (which the general paths read), never a different table.
    """
    seps = np.flatnonzero(buf <= 32)
    n_seps = seps.shape[0]
    if n_seps == 0 or n_seps % fields or buf[0] <= 32 or buf[-1] != 10:
        return None
    lines = n_seps // fields
    ends = seps.reshape(lines, fields)
    # The fields-th separator of each line is an LF...
    if not bool(np.all(buf[ends[:, -1]] == 10)):
        return None
    # ... and all the others are spaces or tabs: no other LF, no CR, VT, FF or other control
    # byte (each is <= 32, so one of `seps`, and not counted here). Then every line has
    # exactly `fields` tokens (with the gap check below, no blank line either). The file's
    # first separator's kind is counted first: the other one is usually absent.
    kinds = (9, 32) if buf[seps[0]] == 9 else (32, 9)
    others = n_seps - lines - np.count_nonzero(buf == kinds[0])
    if others and others != np.count_nonzero(buf == kinds[1]):
        return None
    if int(buf.max()) == 127 if ascii_only else bool(np.any(buf == 127)):  # DEL
        return None
    step = np.diff(seps)
    if int(step.min()) < 2:
        return None
    longest = max(int(seps[0]), int(step.max()) - 1)
    del step
    # Each token starts one byte after the previous token's end (the file's first at 0).
    flat = np.empty(n_seps, dtype=np.int64)
    flat[0] = 0
    np.add(seps[:-1], 1, out=flat[1:])
    starts = flat.reshape(lines, fields)
    if bool(np.any(buf[starts[:, 0]] == ord("#"))):
        return None  # comment lines: the general path drops them
    return TokenTable(
        source=source,
        buffer=buf,
        line_numbers=np.arange(1, lines + 1, dtype=np.int64),
        starts=starts,
        ends=ends,
        field_counts=np.full(lines, fields, dtype=np.int64),
        longest_token=longest,
    )


def _regular_spans(buf: np.ndarray) -> _Spans | None:
    """Spans of the common file shape, in fewer passes than the general case.

    The shape: single-byte separators (space, tab, LF), no blank lines, a final
    LF. Returns None for any other shape (CR line ends, runs of spaces, a
    missing final newline, control bytes), which the general path handles.
    """
    seps = np.flatnonzero(buf <= 32)
    n = buf.shape[0]
    if seps.shape[0] == 0 or buf[0] <= 32 or seps[-1] != n - 1 or buf[-1] != 10:
        return None
    step = np.diff(seps)
    if step.shape[0] and int(step.min()) < 2:
        return None
    longest = max(int(seps[0]), int(step.max()) - 1 if step.shape[0] else 0)
    del step
    sep_bytes = buf[seps]
    newline = sep_bytes == 10
    # No CR gets through: a file whose lines end with CR alone (or CRLF) is read by the general path.
    if not bool(np.all(newline | (sep_bytes == 32) | (sep_bytes == 9))) or bool(np.any(buf == 127)):
        return None
    tok_start = np.empty(seps.shape[0], dtype=np.int64)
    tok_start[0] = 0
    tok_start[1:] = seps[:-1] + 1
    last_of_line = np.flatnonzero(newline)
    first_tok = np.empty(last_of_line.shape[0], dtype=np.int64)
    first_tok[0] = 0
    first_tok[1:] = last_of_line[:-1] + 1
    return tok_start, seps, first_tok, np.arange(first_tok.shape[0], dtype=np.int64), longest


def _general_spans(data: bytes, buf: np.ndarray, source: str) -> _Spans:
    """Token spans of any file: runs of whitespace, blank lines, CRLF or CR line ends."""
    if not _only_allowed_controls(buf):
        off = int(np.flatnonzero(_CLASS[buf] == 2)[0])
        raise InvalidInput(source, _line_of_offset(data, off), f"control character 0x{data[off]:02x} in the line")

    # Token spans: every change of the "inside a token" indicator is a boundary;
    # starts and ends alternate.
    inside = buf > 32
    bounds = np.flatnonzero(inside[1:] != inside[:-1]) + 1
    if inside[0]:
        bounds = np.concatenate(([0], bounds))
    if inside[-1]:
        bounds = np.append(bounds, buf.shape[0])
    del inside
    tok_start = bounds[0::2]
    tok_end = bounds[1::2]
    if tok_start.shape[0] == 0:
        raise InvalidInput(source, None, "the file has no data lines")

    line_of_tok = _line_of_tokens(buf, tok_start)  # 0-based line of each token
    starts_line = np.ones(tok_start.shape[0], dtype=bool)
    starts_line[1:] = line_of_tok[1:] != line_of_tok[:-1]
    first_tok = np.flatnonzero(starts_line)
    longest = int((tok_end - tok_start).max())
    return tok_start, tok_end, first_tok, line_of_tok[first_tok], longest


#: Bytes per step of the line count: bounds its scratch memory (about 11 bytes per byte).
_LINE_CHUNK = 1 << 20


def _line_of_tokens(buf: np.ndarray, tok_start: np.ndarray) -> np.ndarray:
    """0-based line of each token: the line ends (LF, CRLF, lone CR) before its first byte.

    A running count of the line-end indicator (a cumulative sum, chunk by chunk),
    read at each token's start: one pass over the bytes, whatever the gaps'
    lengths. A token's first byte is never a line end, so the count up to and
    including it is the count before it.
    """
    n = buf.shape[0]
    out = np.empty(tok_start.shape[0], dtype=np.int64)
    carry = 0
    for lo in range(0, n, _LINE_CHUNK):
        hi = min(lo + _LINE_CHUNK, n)
        seg = buf[lo:hi]
        line_end = seg == 10
        cr = seg == 13
        if cr.any():
            # A CR ends a line unless an LF follows it (CRLF is one line end: the LF's).
            lf_next = np.empty(hi - lo, dtype=bool)
            lf_next[:-1] = line_end[1:]
            lf_next[-1] = hi < n and buf[hi] == 10
            line_end |= cr & ~lf_next
        count = np.cumsum(line_end, dtype=np.int32)
        a, b = np.searchsorted(tok_start, (lo, hi))
        out[a:b] = count[tok_start[a:b] - lo]
        out[a:b] += carry
        carry += int(count[-1])
    return out


def _only_allowed_controls(buf: np.ndarray) -> bool:
    """True when every byte below 0x20 is \t, \n, \v, \f or \r (and no DEL)."""
    low = buf[buf < 32]
    if low.shape[0] and not np.all((low >= 9) & (low <= 13)):
        return False
    return not np.any(buf == 127)


_POW10 = 10.0 ** np.arange(23)


def _extended_division_is_exact_enough() -> bool:
    """Whether ``numpy.longdouble`` arithmetic carries at least 64 significant bits here (x87
    extended precision on x86-64 Linux, IEEE quad elsewhere; not where it is plain double)."""
    one = np.longdouble(1)
    return np.finfo(np.longdouble).nmant >= 63 and bool(one + np.ldexp(one, -63) != one)


#: Mantissas of 16 to 18 digits are divided in extended precision and checked for a double
#: rounding (see :func:`_floats_by_column`); without extended precision they go to numpy.
_LONG_FLOATS = _extended_division_is_exact_enough()
_MAX_DIGITS = 18 if _LONG_FLOATS else 15
_POW10_LONG = np.cumprod(np.full(23, 10, dtype=np.longdouble)) / 10  # 10**0 .. 10**22, exact
#: The longest token the column-wise float parser can take: a sign, the digits, a dot.
_FAST_FLOAT_BYTES = _MAX_DIGITS + 2

_U8 = np.uint64(8)
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_ZEROS8 = np.uint64(0x3030303030303030)  # eight ASCII '0'
_DOTS8 = np.uint64(0x2E2E2E2E2E2E2E2E)  # eight '.'
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_NIBBLE_HI = np.uint64(0xF0F0F0F0F0F0F0F0)
_SIXES = np.uint64(0x0606060606060606)


def parse_floats(table: TokenTable, k: int, what: str) -> np.ndarray:
    """Field ``k`` as float64, exactly as ``float()`` would parse it.

    Plain decimals (``-12.345``) with at most 15 digits are parsed as an integer
    mantissa and a power of ten; one IEEE division of two exactly representable
    numbers is correctly rounded, so the result equals ``strtod``'s (Clinger's
    fast path). Tokens of at most 8 bytes, the usual score, are parsed a whole
    8-byte word at a time (:func:`_floats_in_a_word`), the others column by
    column; mantissas of 16 to 18 digits (``repr`` of a double) are divided in
    extended precision (:func:`_long_quotients`). Anything else (exponents,
    ``inf``, longer mantissas) goes through numpy's own conversion. A token
    longer than ``MAX_NUMBER_BYTES`` is refused with its line.
    """
    check_lengths(table, [(k, what, MAX_NUMBER_BYTES)])
    starts, ends, lengths = table.column(k)
    buf = table.buffer
    values = np.zeros(starts.shape[0])
    rest = _floats_in_a_word(buf, starts, ends, lengths, values)  # the rows it could not parse
    if rest is None or rest.shape[0]:
        if rest is None:
            values, slow = _floats_by_column(buf, starts, lengths)
        else:
            values[rest], slow = _floats_by_column(buf, starts[rest], lengths[rest])
            slow = rest[slow]
        if slow.shape[0]:
            values[slow] = _floats_by_numpy(table, k, what, slow)
    if not np.all(np.isfinite(values)):
        r = int(np.flatnonzero(~np.isfinite(values))[0])
        raise InvalidInput(
            table.source, int(table.line_numbers[r]), f"{what} {table.field_text(r, k)!r} is not a finite number"
        )
    return values


def _floats_in_a_word(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, lengths: np.ndarray, out: np.ndarray
) -> np.ndarray | None:
    """Parse the tokens of at most 8 bytes shaped ``[+-]digits[.digits]`` (at least one digit)
    into ``out``, from the 8-byte word that ends where each token ends: a few dozen whole-array
    passes, whatever the tokens' lengths. Returns the rows left to the column path (None: all).

    In the word, the token's bytes are the top ones: the bytes below it and a sign become
    ASCII zeros, the dot is taken out by moving the bytes before it up by one, every byte is
    then checked to be a digit, and the eight digits are summed in the usual SWAR steps
    (pairs, quads, the whole word). The mantissa has at most 8 digits, so it and the power
    of ten are exact and their quotient is ``float()``'s value.
    """
    n = ends.shape[0]
    if n == 0 or 2 * int(np.count_nonzero(lengths <= 8)) < n:
        return None  # mostly long tokens: the column path reads them all at once
    first = buf[starts]
    negative = first == 45
    body = (lengths - (negative | (first == 43))).astype(np.uint64)  # the bytes after a sign
    word = _Words(buf).words[ends - 8 if int(ends.min()) >= 8 else np.maximum(ends - 8, 0)]
    with np.errstate(over="ignore"):
        keep = _ONES << (_U8 * (_U8 - np.minimum(body, _U8)))  # the body's bytes: the top ones
        word &= keep
        word |= _ZEROS8 & ~keep
        x = word ^ _DOTS8  # a zero byte where the word holds '.': the exact zero-byte test
        dots = ~(((x & _LOW7) + _LOW7) | x | _LOW7)
        n_dots = np.bitwise_count(dots)
        dot_low = dots >> np.uint64(7)  # 0x01 in the dot's byte
        below = dot_low - (dot_low != 0)  # the bytes before a dot (none without one)
        moved = below | (dot_low * np.uint64(0xFF))
        word = ((word & below) << _U8) | (word & ~moved) | (moved & np.uint64(0x30))
        ok = ((word & _NIBBLE_HI) == _ZEROS8) & (((word + _SIXES) & _NIBBLE_HI) == _ZEROS8)  # all digits
        ok &= (n_dots <= 1) & (body > n_dots) & (lengths <= 8) & (ends >= 8)
        digits = word - _ZEROS8
        digits = (digits * np.uint64(10) + (digits >> _U8)) & np.uint64(0x00FF00FF00FF00FF)
        digits = (digits * np.uint64(100) + (digits >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
        digits = (digits * np.uint64(10000) + (digits >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    # Digits after the dot: the bytes above it (7 - its byte index), none without a dot.
    frac = np.bitwise_count(below) >> np.uint8(3)
    np.subtract(7, frac, out=frac)
    frac *= n_dots == 1
    values = digits.astype(np.float64) / np.take(_POW10, frac)
    np.negative(values, out=values, where=negative)
    np.copyto(out, values, where=ok)
    return np.flatnonzero(~ok)


def _floats_by_column(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Plain decimals of at most ``_FAST_FLOAT_BYTES`` bytes, one byte column at a time:
    (values, the rows it could not parse)."""
    n = starts.shape[0]
    width = min(int(lengths.max()) if n else 0, _FAST_FLOAT_BYTES)
    last = buf.shape[0] - 1
    mant = np.zeros(n, dtype=np.int64)
    frac = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int64)
    seen_dot = np.zeros(n, dtype=bool)
    negative = np.zeros(n, dtype=bool)
    slow = lengths > _FAST_FLOAT_BYTES  # too long for the fast path: not even looked at here
    for j in range(width):
        present = lengths > j
        c = buf[np.minimum(starts + j, last)].astype(np.int64)
        is_digit = present & (c >= 48) & (c <= 57)
        is_dot = present & (c == 46)
        is_sign = present & ((c == 45) | (c == 43)) if j == 0 else np.zeros(n, dtype=bool)
        negative |= is_sign & (c == 45)
        slow |= present & ~(is_digit | is_dot | is_sign)
        slow |= is_dot & seen_dot
        seen_dot |= is_dot
        mant = np.where(is_digit, mant * 10 + (c - 48), mant)
        digits += is_digit
        frac += is_digit & seen_dot
    slow |= (digits == 0) | (digits > _MAX_DIGITS) | (frac > 22)
    values = mant.astype(np.float64) / _POW10[np.minimum(frac, 22)]
    long_rows = np.flatnonzero(~slow & (digits > 15))
    if long_rows.shape[0]:
        values[long_rows], hazard = _long_quotients(mant[long_rows], frac[long_rows])
        slow[long_rows[hazard]] = True
    values = np.where(negative, -values, values)
    return values, np.flatnonzero(slow)


def _long_quotients(mant: np.ndarray, frac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``mant / 10**frac`` rounded to float64 for mantissas of 16 to 18 digits: (values, hazard).

    Both are exact in extended precision (``mant`` < 2**63, ``10**frac`` = 5**frac 2**frac with
    5**22 < 2**64) and their quotient is rounded once to it (64 significant bits or more),
    then to 53. That double rounding gives the correctly rounded double unless the extended
    quotient lies exactly on a midpoint between two doubles (rounding is monotonic and the
    midpoints are representable): those rows are flagged (``hazard``) for numpy's
    conversion, as are the ones a quarter ulp away (the lower midpoint next to a power of two).
    """
    exact = mant.astype(np.longdouble) / _POW10_LONG[frac]
    values = exact.astype(np.float64)
    off = np.abs(exact - values.astype(np.longdouble))  # exact (Sterbenz)
    ulp = np.spacing(np.abs(values)).astype(np.longdouble)
    hazard = (off == ulp / 2) | (off == ulp / 4)
    return values, hazard


def _floats_by_numpy(table: TokenTable, k: int, what: str, rows: np.ndarray) -> np.ndarray:
    """The tokens the fast paths leave (exponents, long mantissas, errors), by numpy's conversion."""
    raw = gather_fixed_width(table.buffer, table.starts[rows, k], table.ends[rows, k])
    try:
        return raw.astype(np.float64)
    except ValueError:
        for r, text in zip(rows.tolist(), raw.tolist()):
            try:
                float(text)
            except ValueError:
                raise InvalidInput(
                    table.source, int(table.line_numbers[r]), f"{what} {text.decode('utf-8')!r} is not a number"
                ) from None
        raise


def parse_ints(table: TokenTable, k: int, what: str) -> np.ndarray:
    """Field ``k`` as int64; a line-numbered error for anything not an integer."""
    check_lengths(table, [(k, what, MAX_NUMBER_BYTES)])
    raw = table.field_bytes(k)
    try:
        return raw.astype(np.int64)
    except (ValueError, OverflowError):
        pass
    for r, text in enumerate(raw.tolist()):
        problem = None
        try:
            value = int(text)
            if not -(2**62) <= value <= 2**62:
                problem = "is out of range"
        except ValueError:
            problem = "is not an integer"
        if problem:
            raise InvalidInput(table.source, int(table.line_numbers[r]), f"{what} {text.decode('utf-8')!r} {problem}")
    raise InvalidInput(table.source, None, f"{what} column does not parse as integers")
