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

Memory is bounded by a small multiple of the file: offsets are int32 below 2 GiB, the
token table keeps only what it cannot derive (:class:`TokenTable`), whole-file passes go a
few megabytes at a time and per-line passes a chunk of lines at a time, so no scratch array
has the file's length (docs/formats.md, "Memory").

The usual file (every line exactly the expected tokens, one space or tab between
them, LF line ends, no blank or comment line) is recognised in a few whole-file
passes and its token table is the array of separator offsets reshaped, with no
per-token gather (:func:`_rectangular`); scores of at most 8 bytes are parsed a
word at a time (:func:`_floats_in_a_word`). Anything else, and any row those
fast paths cannot take, goes the general way: the fast paths never give a
different table, value or error, only the same one sooner.
"""

from __future__ import annotations

from collections.abc import Callable
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


#: Whole-file passes go through the file this many bytes at a time, and per-line passes this
#: many lines at a time: their boolean and index scratch stays a few megabytes, whatever the
#: file's size (peak memory is then the file, the token table and the parsed columns).
_BYTES_PER_PASS = 1 << 22
_ROWS_PER_PASS = 1 << 17
#: Files shorter than this keep their byte offsets as int32 (half the table of int64).
_INT32_OFFSETS = 2**31 - 2**20


def offset_type(size: int) -> type[np.signedinteger]:
    """The integer type of byte offsets into a file of ``size`` bytes."""
    return np.int32 if size < _INT32_OFFSETS else np.int64


def row_chunks(n: int, step: int | None = None) -> list[tuple[int, int]]:
    """[lo, hi) ranges of at most ``step`` (default ``_ROWS_PER_PASS``) rows covering 0..n."""
    step = step or _ROWS_PER_PASS
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


def _byte_chunks(n: int) -> range:
    return range(0, n, _BYTES_PER_PASS)


def _count(buf: np.ndarray, test: Callable[[np.ndarray], np.ndarray]) -> int:
    """How many bytes pass ``test``, a few megabytes at a time."""
    return sum(int(np.count_nonzero(test(buf[lo:lo + _BYTES_PER_PASS]))) for lo in _byte_chunks(buf.shape[0]))


def _first(buf: np.ndarray, test: Callable[[np.ndarray], np.ndarray]) -> int | None:
    """The offset of the first byte passing ``test`` (None: none does)."""
    for lo in _byte_chunks(buf.shape[0]):
        hit = np.flatnonzero(test(buf[lo:lo + _BYTES_PER_PASS]))
        if hit.shape[0]:
            return lo + int(hit[0])
    return None


def _positions(buf: np.ndarray, test: Callable[[np.ndarray], np.ndarray], count: int, dtype: type) -> np.ndarray:
    """``np.flatnonzero(test(buf))`` as ``dtype`` (``count`` is its length, from :func:`_count`),
    with no whole-file boolean or int64 scratch."""
    out = np.empty(count, dtype=dtype)
    at = 0
    for lo in _byte_chunks(buf.shape[0]):
        hit = np.flatnonzero(test(buf[lo:lo + _BYTES_PER_PASS]))
        out[at:at + hit.shape[0]] = hit
        out[at:at + hit.shape[0]] += lo
        at += hit.shape[0]
    return out


def _is_space(seg: np.ndarray) -> np.ndarray:
    return seg <= 32


def _is_del(seg: np.ndarray) -> np.ndarray:
    return seg == 127


def _step_range(offsets: np.ndarray) -> tuple[int, int]:
    """(min, max) of ``np.diff(offsets)`` (at least two offsets), without the whole difference array."""
    lo_step, hi_step = None, None
    n = offsets.shape[0]
    for lo in range(0, n - 1, _BYTES_PER_PASS):
        d = np.diff(offsets[lo:min(lo + _BYTES_PER_PASS, n - 1) + 1])
        a, b = int(d.min()), int(d.max())
        lo_step = a if lo_step is None else min(lo_step, a)
        hi_step = b if hi_step is None else max(hi_step, b)
    assert lo_step is not None and hi_step is not None
    return lo_step, hi_step


Rows = slice | np.ndarray | None


@dataclass(frozen=True, eq=False)
class TokenTable:
    """The data lines of a file and the byte spans of their first fields.

    ``line_numbers[i]`` is the 1-based line number of data line ``i``;
    ``starts[i, k]``/``ends[i, k]`` delimit its ``k``-th field in ``buffer``.

    Held compactly (the table is the largest thing a reader keeps besides the file): per
    field, one array of int32 offsets (int64 past 2 GiB) where it ends; a field's start as the
    previous field's end plus a gap (``gaps``, uint8 where every gap fits, None when every gap
    is one byte) and a line's first start as the previous line's last end plus one unless
    ``first_starts`` says otherwise; ``numbers`` and ``counts`` only when the line numbers are
    not 1..n or a line has more tokens than ``fields``. :meth:`spans` gives any field's
    (starts, ends), for all rows or a chunk of them. A reader that has taken what it needs of
    a field releases it (:meth:`release`): its offsets are let go.
    """

    source: str
    buffer: np.ndarray  # uint8 view of the file
    lines: int  # data lines
    token_ends: list[np.ndarray | None]  # per field, (lines,): where it ends (None: released)
    first_starts: np.ndarray | None = None  # (lines,): where field 0 starts (None: derived)
    gaps: list[np.ndarray | None] | None = None  # field k's start - field k - 1's end, at [k - 1] (None: 1)
    numbers: np.ndarray | None = None  # (lines,): 1-based line numbers (None: 1..lines)
    counts: np.ndarray | None = None  # (lines,): tokens on each data line (None: ``fields`` each)
    longest_token: int | None = None  # bytes of the file's longest token (None: not known)
    released: set[int] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        for a in (*self.token_ends, self.first_starts, *(self.gaps or ())):
            if a is not None:
                a.flags.writeable = False  # spans() hands out views of them

    def __len__(self) -> int:
        return self.lines

    @property
    def fields(self) -> int:
        return len(self.token_ends)

    # ------------------------------------------------------------------ lines
    @property
    def line_numbers(self) -> np.ndarray:
        """The 1-based line number of every data line."""
        if self.numbers is not None:
            return self.numbers
        return np.arange(1, len(self) + 1, dtype=np.int64)

    def line_number(self, row: int) -> int:
        return int(self.numbers[row]) if self.numbers is not None else int(row) + 1

    @property
    def field_counts(self) -> np.ndarray:
        """Tokens on each data line (at least ``fields``)."""
        if self.counts is not None:
            return self.counts
        return np.full(len(self), self.fields, dtype=np.int64)

    # ------------------------------------------------------------------ spans
    @property
    def starts(self) -> np.ndarray:
        """(lines, fields) start offsets (made on demand)."""
        return np.stack([self.spans(k)[0] for k in range(self.fields)], axis=1)

    @property
    def ends(self) -> np.ndarray:
        """(lines, fields) end offsets (made on demand)."""
        return np.stack([self._ends(k) for k in range(self.fields)], axis=1)

    def release(self, *fields: int) -> None:
        """Let the offsets of ``fields`` go: their spans (and the next field's) are no longer read."""
        for k in fields:
            self.released.add(k)
            self.token_ends[k] = None
            if k == 0:
                object.__setattr__(self, "first_starts", None)
            elif self.gaps is not None:
                self.gaps[k - 1] = None

    def _ends(self, k: int) -> np.ndarray:
        ends = self.token_ends[k]
        if ends is None:
            raise ValueError(f"field {k} of the token table was released")
        return ends

    def spans(self, k: int, rows: Rows = None) -> tuple[np.ndarray, np.ndarray]:
        """Field ``k``'s (starts, ends), contiguous and read-only, of every row or of ``rows``
        (a slice of step 1 or an index array)."""
        if k in self.released:
            raise ValueError(f"field {k} of the token table was released")
        sel: slice | np.ndarray = slice(None) if rows is None else rows
        ends = self._ends(k)[sel]
        if k > 0:
            gaps = None if self.gaps is None else self.gaps[k - 1]
            starts = self._ends(k - 1)[sel] + (1 if gaps is None else gaps[sel])
        elif self.first_starts is not None:
            starts = self.first_starts[sel]
        else:
            starts = self._line_starts(sel)
        return starts, ends

    def _line_starts(self, sel: slice | np.ndarray) -> np.ndarray:
        """Field 0's starts when each line starts one byte after the previous line's last field."""
        last = self._ends(self.fields - 1)
        if isinstance(sel, slice):
            lo, hi, step = sel.indices(len(self))
            if step != 1:
                raise ValueError("spans() takes slices of step 1")
            out = np.empty(max(hi - lo, 0), dtype=last.dtype)
            if out.shape[0]:
                if lo == 0:
                    out[0] = 0
                    np.add(last[: hi - 1], 1, out=out[1:])
                else:
                    np.add(last[lo - 1: hi - 1], 1, out=out)
            return out
        out = last[np.maximum(sel - 1, 0)] + 1
        out[sel == 0] = 0
        return out

    def span(self, row: int, k: int) -> tuple[int, int]:
        """One field's (start, end)."""
        starts, ends = self.spans(k, np.array([row]))
        return int(starts[0]), int(ends[0])

    def column(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Field ``k``'s (starts, ends, lengths) of every row, as contiguous arrays (made on
        each call: the per-line passes take :meth:`spans` of a chunk of rows instead)."""
        starts, ends = self.spans(k)
        return starts, ends, ends - starts

    def field_bytes(self, k: int, rows: Rows = None) -> np.ndarray:
        """Field ``k`` of every data line (or of ``rows``) as a ``bytes_`` array.

        Check the field's length first (:func:`check_lengths`): the array is
        rows x the widest value.
        """
        if rows is not None:
            return gather_fixed_width(self.buffer, *self.spans(k, rows))
        n = len(self)
        chunks = row_chunks(n)
        if len(chunks) <= 1:
            return gather_fixed_width(self.buffer, *self.spans(k))
        width = max([1, *(int(self.field_lengths(k, slice(lo, hi)).max()) for lo, hi in chunks)])
        out = np.empty(n, dtype=f"S{width}")
        for lo, hi in chunks:
            out[lo:hi] = gather_fixed_width(self.buffer, *self.spans(k, slice(lo, hi)), width=width)
        return out

    def field_text(self, row: int, k: int) -> str:
        """One field as ``str`` (for error messages and small tables)."""
        lo, hi = self.span(row, k)
        return self.buffer[lo:hi].tobytes().decode("utf-8")

    def field_lengths(self, k: int, rows: Rows = None) -> np.ndarray:
        starts, ends = self.spans(k, rows)
        return ends - starts


#: The widest field :func:`gather_words` copies; callers check the limits above
#: first, so this only stops a missed check from costing rows x megabytes.
_GATHER_GUARD = 4 * max(MAX_TOPIC_BYTES, MAX_DOCNO_BYTES, MAX_TAG_BYTES, MAX_NUMBER_BYTES)


def gather_words(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 width: int | None = None) -> tuple[np.ndarray, int]:
    """Byte spans as rows of little-endian 64-bit words, zero past each span's end.

    Returns the (n, ceil(width / 8)) ``<u8`` array and the width (the longest
    span, at least 1, unless ``width`` is given: a chunk of a column then has the
    column's width). One pass per 8 bytes, over the spans not yet copied to
    their end: the work is the total length of the spans / 8 plus a pass per
    span, whatever the longest one; the array is rows x width, which callers
    bound by checking the field's length limit first.
    """
    n = starts.shape[0]
    lengths = ends - starts
    longest = max(int(lengths.max()) if n else 1, 1)
    if width is None:
        width = longest
    elif width < longest:
        raise ValueError(f"a {longest}-byte span does not fit a width of {width}")
    if width > _GATHER_GUARD:
        raise ValueError(f"a {width}-byte field reached gather_words: its length was not checked")
    out = np.zeros((n, -(-width // 8)), dtype="<u8")
    if n == 0:
        return out, width
    words = _Words(buffer)
    rows: np.ndarray | None = None  # the rows still being copied (None: all)
    pos, rest = np.ascontiguousarray(starts), lengths
    shortest = int(lengths.min())  # of the rows still being copied
    for k in range(-(-longest // 8)):  # the words past every span's end stay zero
        if k:
            pos, rest, shortest = pos + 8, rest - 8, shortest - 8
            if shortest <= 0:  # drop the spans copied to their end
                keep = rest > 0
                rows = np.flatnonzero(keep) if rows is None else rows[keep]
                pos, rest = pos[keep], rest[keep]
                shortest = int(rest.min())
        # A whole word for every row (one scalar mask, or none) when no span ends inside it.
        value = words.read(pos, 8 if shortest >= 8 else shortest if shortest == longest - 8 * k else rest)
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


def gather_fixed_width(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                       width: int | None = None) -> np.ndarray:
    """Copy byte spans into a fixed-width ``bytes_`` array (see :func:`gather_words`)."""
    return words_to_bytes(*gather_words(buffer, starts, ends, width))


def check_lengths(table: TokenTable, limits: list[tuple[int, str, int]]) -> None:
    """Refuse the first line holding a field longer than its limit.

    ``limits`` holds (field, name, limit in bytes); on the earliest offending
    line the first listed field is reported. One pass over each field's spans
    (a chunk of lines at a time), none when no token of the file is longer than
    the smallest limit.
    """
    if table.longest_token is not None and table.longest_token <= min(limit for _, _, limit in limits):
        return
    for lo, hi in row_chunks(len(table)):
        worst: tuple[int, int, str, int, int] | None = None  # (row, order, name, length, limit)
        for order, (k, what, limit) in enumerate(limits):
            lengths = table.field_lengths(k, slice(lo, hi))
            over = np.flatnonzero(lengths > limit)
            if over.shape[0]:
                r = int(over[0])
                if worst is None or (r, order) < worst[:2]:
                    worst = (r, order, what, int(lengths[r]), limit)
        if worst is not None:  # the earliest chunk with a long field holds the earliest line
            r, _, what, length, limit = worst
            raise InvalidInput(table.source, table.line_number(lo + r),
                               f"{what} is {length} bytes long; the limit is {limit}")


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
    return spans_equal(buffer, starts, ends, int(starts[ref]), int(ends[ref]))


def spans_equal(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray, ref_start: int, ref_end: int) -> np.ndarray:
    """Which spans hold the same bytes as ``buffer[ref_start:ref_end]`` (see :func:`spans_equal_to`)."""
    lengths = ends - starts
    length = ref_end - ref_start
    same = lengths == length
    if length == 0:
        return same
    every = bool(same.all())  # the usual column (one run tag): no row selection
    rows = None if every else np.flatnonzero(same)
    first = np.ascontiguousarray(starts) if rows is None else starts[rows]
    words = _Words(buffer)
    equal = np.ones(first.shape[0], dtype=bool)
    lo = np.array([ref_start], dtype=np.int64)
    for k in range(0, length, 8):
        equal &= words.read(first + k, length - k) == words.read(lo + k, length - k)[0]
    if rows is None:
        return equal
    same[rows] = equal
    return same


def first_row_differing(table: TokenTable, k: int, ref: int = 0) -> int | None:
    """The first row whose field ``k`` differs from row ``ref``'s (None: every row's is the same),
    a chunk of rows at a time."""
    ref_start, ref_end = table.span(ref, k)
    for lo, hi in row_chunks(len(table)):
        starts, ends = table.spans(k, slice(lo, hi))
        differ = np.flatnonzero(~spans_equal(table.buffer, starts, ends, ref_start, ref_end))
        if differ.shape[0]:
            return lo + int(differ[0])
    return None


def column_heads(table: TokenTable, k: int) -> np.ndarray:
    """The rows whose field ``k`` differs from the previous row's (row 0 included), in order:
    :func:`consecutive_heads` a chunk of rows at a time."""
    parts = []
    for lo, hi in row_chunks(len(table)):
        before = min(lo, 1)  # the previous chunk's last row, to compare the first one with
        starts, ends = table.spans(k, slice(lo - before, hi))
        parts.append(np.flatnonzero(consecutive_heads(table.buffer, starts, ends)[before:]) + lo)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


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


_BOM = b"\xef\xbb\xbf"


def _check_utf8(data: bytes, source: str) -> None:
    """Refuse bytes that are not UTF-8, at the line of the first bad byte, decoding a few
    megabytes at a time (never the whole file as one ``str``). A piece ends before a byte that
    is not a continuation byte (or a fourth continuation byte in a row), so every valid
    sequence lies within one piece and the first error is found at the offset a whole-file
    decode reports."""
    view = memoryview(data).cast("B")
    n = view.nbytes
    lo = 0
    while lo < n:
        hi = min(lo + _BYTES_PER_PASS, n)
        # Move the cut past continuation bytes (at most three: a fourth in a row belongs to no
        # valid sequence, so no valid sequence spans a cut before it either).
        stop = min(hi + 3, n)
        while hi < stop and 0x80 <= view[hi] < 0xC0:
            hi += 1
        try:
            str(view[lo:hi], "utf-8")
        except UnicodeDecodeError as exc:
            start = lo + exc.start
            raise InvalidInput(source, _line_of_offset(data, start), f"bytes are not UTF-8 (byte offset {start})") from None
        lo = hi


def tokenize(data: bytes, source: str, fields: int, *, exact: bool = False) -> TokenTable:
    """Split ``data`` into data lines of at least ``fields`` whitespace-separated tokens.

    With ``exact`` a line must have exactly ``fields`` tokens. Blank lines and
    ``#`` comment lines are skipped. Raises :class:`InvalidInput` naming the
    first offending line. ``data`` may be any bytes-like object (a ``bytearray``
    too); the table reads it in place.
    """
    if len(data) == 0:
        raise InvalidInput(source, None, "the file is empty")
    # A UTF-8 byte-order mark is not part of the first topic id: the table starts after it
    # (line numbers are the file's; byte offsets in messages too).
    skip = 3 if data[:3] == _BOM else 0
    ascii_only = not skip and data.isascii()
    if not ascii_only:
        _check_utf8(data, source)
    buf = np.frombuffer(data, dtype=np.uint8, offset=skip)
    if buf.shape[0] == 0:
        raise InvalidInput(source, None, "the file has no data lines")
    table = _rectangular(buf, source, fields, ascii_only)
    if table is not None:
        return table
    spans = _regular_spans(buf)
    if spans is None:
        spans = _general_spans(data, buf, source, skip)
    # Per line: its first token and its 0-based line number (blank lines have no token). The
    # token arrays are held by `tokens` alone, so that the table's builder can let them go.
    tokens: list[np.ndarray | None] = [spans[0], spans[1]]
    first_tok, line_index, longest = spans[2], spans[3], spans[4]
    del spans
    tok_start = tokens[0]
    assert tok_start is not None
    counts = np.diff(first_tok, append=first_tok.dtype.type(tok_start.shape[0]))
    is_data = buf[tok_start[first_tok]] != ord("#")
    del tok_start
    if not bool(is_data.all()):
        first_tok, counts, line_index = first_tok[is_data], counts[is_data], line_index[is_data]
    del is_data
    line_numbers = line_index + 1
    if first_tok.shape[0] == 0:
        raise InvalidInput(source, None, "the file has no data lines")
    short = np.flatnonzero(counts < fields) if not exact else np.flatnonzero(counts != fields)
    if short.shape[0]:
        r = int(short[0])
        want = f"exactly {fields}" if exact else f"at least {fields}"
        raise InvalidInput(
            source, int(line_numbers[r]), f"expected {want} whitespace-separated columns, found {int(counts[r])}"
        )
    return _compact_table(source, buf, fields, tokens, first_tok, counts, line_numbers, longest)


def _compact_table(source: str, buf: np.ndarray, fields: int, tokens: list[np.ndarray | None],
                   first_tok: np.ndarray, counts: np.ndarray, line_numbers: np.ndarray, longest: int) -> TokenTable:
    """The :class:`TokenTable` of the general paths' token spans (``tokens``: their starts and
    ends, held by that list alone, which is emptied): per field the ends of the first
    ``fields`` tokens of each data line, and what their starts, line numbers and token counts
    add to that (nothing, when they are those of a rectangular file). The starts go once the
    gaps are taken, before the ends are copied out field by field."""
    n = first_tok.shape[0]
    # Every token is one of a data line's fields (no comment line, no extra column): field k
    # is every fields-th token, from the k-th.
    uniform = n * fields == tokens[0].shape[0] and bool(np.all(counts == fields))  # type: ignore[union-attr]

    def of(which: int, k: int) -> np.ndarray:
        toks = tokens[which]
        assert toks is not None
        return toks[k::fields] if uniform else toks[first_tok + k]

    first_starts = np.array(of(0, 0))
    gaps: list[np.ndarray | None] = []
    for k in range(1, fields):
        gap = of(0, k) - of(1, k - 1)
        gaps.append(gap.astype(np.uint8) if int(gap.max()) <= 255 else gap)
    plain = all(bool(np.all(g == 1)) for g in gaps)
    tokens[0] = None  # the starts, now in first_starts and gaps
    ends: list[np.ndarray | None] = [np.array(of(1, k)) for k in range(fields)]
    tokens.clear()
    last = ends[-1]
    assert last is not None
    derived = np.empty(n, dtype=last.dtype)
    derived[0] = 0
    np.add(last[:-1], 1, out=derived[1:])
    return TokenTable(
        source=source,
        buffer=buf,
        lines=n,
        token_ends=ends,
        first_starts=None if np.array_equal(first_starts, derived) else first_starts,
        gaps=None if plain else gaps,
        numbers=None if line_numbers[-1] == n else line_numbers,  # increasing: 1..n exactly then
        counts=None if bool(np.all(counts == fields)) else counts,
        longest_token=longest,
    )


_Spans = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]


def _rectangular(buf: np.ndarray, source: str, fields: int, ascii_only: bool) -> TokenTable | None:
    """The token table of the most common file, with no per-token gather: every line holds
    exactly ``fields`` tokens separated by one space or tab, ends with LF (the last one too),
    and none is blank or a comment.

    The separators are then ``fields`` per line, the last of them the LF, so the array of
    separator offsets reshaped to (lines, fields) *is* the table of token ends (and each
    token starts one byte after the previous one ends). Returns None for any other file
    (which the general paths read), never a different table.
    """
    if buf[0] <= 32 or buf[-1] != 10:
        return None
    n_seps = _count(buf, _is_space)
    if n_seps == 0 or n_seps % fields:
        return None
    lines = n_seps // fields
    ends = _separators_by_field(buf, lines, fields)
    # The fields-th separator of each line is an LF...
    if not bool(np.all(buf[ends[-1]] == 10)):
        return None
    # ... and all the others are spaces or tabs: no other LF, no CR, VT, FF or other control
    # byte (each is <= 32, so one of the separators, and not counted here). Then every line has
    # exactly `fields` tokens (with the gap check below, no blank line either). The file's
    # first separator's kind is counted first: the other one is usually absent.
    kinds = (9, 32) if buf[ends[0][0]] == 9 else (32, 9)
    others = n_seps - lines - _count(buf, lambda seg: seg == kinds[0])
    if others and others != _count(buf, lambda seg: seg == kinds[1]):
        return None
    if int(buf.max()) == 127 if ascii_only else _first(buf, _is_del) is not None:  # DEL
        return None
    shortest, widest = _separator_steps(ends)
    if shortest < 2:
        return None
    longest = max(int(ends[0][0]), widest - 1)
    # Each token starts one byte after the previous token's end (the file's first at 0).
    if buf[0] == ord("#") or bool(np.any(buf[ends[-1][:-1] + 1] == ord("#"))):
        return None  # comment lines: the general path drops them
    return TokenTable(source=source, buffer=buf, lines=lines, token_ends=list(ends), longest_token=longest)


def _separators_by_field(buf: np.ndarray, lines: int, fields: int) -> list[np.ndarray]:
    """The offsets of the bytes <= 32 (``lines * fields`` of them), the i-th going to array
    ``i % fields`` at ``i // fields``: the token ends of a rectangular file, field by field,
    found a few megabytes at a time."""
    otype = offset_type(buf.shape[0])
    out = [np.empty(lines, dtype=otype) for _ in range(fields)]
    at = 0  # separators found so far
    for lo in _byte_chunks(buf.shape[0]):
        hit = np.flatnonzero(buf[lo:lo + _BYTES_PER_PASS] <= 32)
        hit += lo
        for k in range(fields):
            first = (k - at) % fields  # the chunk's first separator of field k
            part = hit[first::fields]
            row = (at + first) // fields
            out[k][row:row + part.shape[0]] = part
        at += hit.shape[0]
    return out


def _separator_steps(ends: list[np.ndarray]) -> tuple[int, int]:
    """(min, max) distance between consecutive separators of a rectangular file (its token
    ends field by field, :func:`_separators_by_field`), a chunk of lines at a time."""
    steps: list[tuple[int, int]] = []
    for lo, hi in row_chunks(ends[0].shape[0]):
        for k in range(1, len(ends)):
            d = ends[k][lo:hi] - ends[k - 1][lo:hi]
            steps.append((int(d.min()), int(d.max())))
        a = max(lo, 1)  # a line's first end after the previous line's last one
        if a < hi:
            d = ends[0][a:hi] - ends[-1][a - 1:hi - 1]
            steps.append((int(d.min()), int(d.max())))
    if not steps:
        return 2, 0
    return min(low for low, _ in steps), max(high for _, high in steps)


def _regular_spans(buf: np.ndarray) -> _Spans | None:
    """Spans of the common file shape, in fewer passes than the general case.

    The shape: single-byte separators (space, tab, LF), no blank lines, a final
    LF. Returns None for any other shape (CR line ends, runs of spaces, a
    missing final newline, control bytes), which the general path handles.
    """
    n = buf.shape[0]
    if buf[0] <= 32 or buf[-1] != 10:
        return None
    otype = offset_type(n)
    n_seps = _count(buf, _is_space)
    seps = _positions(buf, _is_space, n_seps, otype)
    if seps.shape[0] > 1:
        shortest, widest = _step_range(seps)
        if shortest < 2:
            return None
    else:
        widest = 0
    longest = max(int(seps[0]), widest - 1)
    sep_bytes = buf[seps]
    newline = sep_bytes == 10
    # No CR gets through: a file whose lines end with CR alone (or CRLF) is read by the general path.
    if not bool(np.all(newline | (sep_bytes == 32) | (sep_bytes == 9))) or _first(buf, _is_del) is not None:
        return None
    del sep_bytes
    tok_start = np.empty(seps.shape[0], dtype=otype)
    tok_start[0] = 0
    np.add(seps[:-1], 1, out=tok_start[1:])
    last_of_line = np.flatnonzero(newline)
    del newline
    first_tok = np.empty(last_of_line.shape[0], dtype=otype)
    first_tok[0] = 0
    np.add(last_of_line[:-1], 1, out=first_tok[1:])
    return tok_start, seps, first_tok, np.arange(first_tok.shape[0], dtype=otype), longest


def _general_spans(data: bytes, buf: np.ndarray, source: str, skip: int = 0) -> _Spans:
    """Token spans of any file: runs of whitespace, blank lines, CRLF or CR line ends.
    ``skip``: the bytes of ``data`` before ``buf`` (a byte-order mark), for messages."""
    if not _only_allowed_controls(buf):
        off = _first(buf, lambda seg: _CLASS[seg] == 2)
        assert off is not None
        raise InvalidInput(source, _line_of_offset(data, skip + off),
                           f"control character 0x{data[skip + off]:02x} in the line")
    tok_start, tok_end = _token_bounds(buf)
    if tok_start.shape[0] == 0:
        raise InvalidInput(source, None, "the file has no data lines")
    first_tok, line_index = _first_tokens(buf, tok_start)
    longest = max(int((tok_end[lo:hi] - tok_start[lo:hi]).max()) for lo, hi in row_chunks(tok_start.shape[0]))
    return tok_start, tok_end, first_tok, line_index, longest


def _token_bounds(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the tokens (runs of bytes above 32): every change of the "inside a
    token" indicator is a boundary, and starts and ends alternate. Two passes a few megabytes
    at a time (count, then fill), so nothing of the file's size is made but the two arrays."""
    n = buf.shape[0]
    otype = offset_type(n)

    def changes(lo: int) -> np.ndarray:  # offsets p in [lo, lo + chunk) where inside[p] != inside[p - 1]
        a = max(lo - 1, 0)
        inside = buf[a:lo + _BYTES_PER_PASS] > 32
        return np.flatnonzero(inside[1:] != inside[:-1]) + (a + 1)

    opens, closes = bool(buf[0] > 32), bool(buf[-1] > 32)
    total = int(opens) + int(closes) + sum(changes(lo).shape[0] for lo in _byte_chunks(n))
    starts = np.empty(total // 2, dtype=otype)
    ends = np.empty(total // 2, dtype=otype)
    at = 0  # bounds written so far: even ones are starts, odd ones ends
    if opens:
        starts[0] = 0
        at = 1
    for lo in _byte_chunks(n):
        bounds = changes(lo)
        s0, e0 = (at + 1) // 2, at // 2  # next start, next end
        first_is_start = at % 2 == 0
        s_part = bounds[0::2] if first_is_start else bounds[1::2]
        e_part = bounds[1::2] if first_is_start else bounds[0::2]
        starts[s0:s0 + s_part.shape[0]] = s_part
        ends[e0:e0 + e_part.shape[0]] = e_part
        at += bounds.shape[0]
    if closes:
        ends[-1] = n
    return starts, ends


#: Bytes per step of the line count: bounds its scratch memory (about 11 bytes per byte).
_LINE_CHUNK = 1 << 20


def _first_tokens(buf: np.ndarray, tok_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first token of each line that has one, and that line's 0-based number.

    A token's line is the count of line ends (LF, CRLF, lone CR) before its first byte: a
    running count of the line-end indicator (a cumulative sum, chunk by chunk), read at each
    token's start: one pass over the bytes, whatever the gaps' lengths. A token's first byte
    is never a line end, so the count up to and including it is the count before it.
    """
    n = buf.shape[0]
    otype = offset_type(n)
    firsts, numbers = [], []
    carry = 0
    previous = -1  # the line of the last token seen
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
        if b > a:
            line = count[tok_start[a:b] - lo].astype(np.int64)
            line += carry
            new = np.empty(b - a, dtype=bool)
            new[0] = line[0] != previous
            np.not_equal(line[1:], line[:-1], out=new[1:])
            at = np.flatnonzero(new)
            firsts.append((at + a).astype(otype))
            numbers.append(line[at].astype(otype))
            previous = int(line[-1])
        carry += int(count[-1])
    return np.concatenate(firsts), np.concatenate(numbers)


def _only_allowed_controls(buf: np.ndarray) -> bool:
    """True when every byte below 0x20 is \t, \n, \v, \f or \r (and no DEL)."""
    for lo in _byte_chunks(buf.shape[0]):
        seg = buf[lo:lo + _BYTES_PER_PASS]
        low = seg[seg < 32]
        if low.shape[0] and not np.all((low >= 9) & (low <= 13)):
            return False
        if np.any(seg == 127):
            return False
    return True


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
    longer than ``MAX_NUMBER_BYTES`` is refused with its line. The rows are
    parsed a chunk at a time (each fast path's scratch is a dozen arrays of the
    chunk's length); the first token that is not a number is still the one
    refused, and a non-finite one only when every token is a number.
    """
    check_lengths(table, [(k, what, MAX_NUMBER_BYTES)])
    buf = table.buffer
    values = np.zeros(len(table))
    for lo, hi in row_chunks(len(table)):
        starts, ends = table.spans(k, slice(lo, hi))
        lengths = ends - starts
        part = values[lo:hi]
        rest = _floats_in_a_word(buf, starts, ends, lengths, part)  # the rows it could not parse
        if rest is None or rest.shape[0]:
            if rest is None:
                part[:], slow = _floats_by_column(buf, starts, lengths)
            else:
                part[rest], slow = _floats_by_column(buf, starts[rest], lengths[rest])
                slow = rest[slow]
            if slow.shape[0]:
                part[slow] = _floats_by_numpy(table, k, what, slow + lo)
    if not np.all(np.isfinite(values)):
        r = int(np.flatnonzero(~np.isfinite(values))[0])
        raise InvalidInput(
            table.source, table.line_number(r), f"{what} {table.field_text(r, k)!r} is not a finite number"
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
    raw = table.field_bytes(k, rows)
    try:
        return raw.astype(np.float64)
    except ValueError:
        for r, text in zip(rows.tolist(), raw.tolist()):
            try:
                float(text)
            except ValueError:
                raise InvalidInput(
                    table.source, table.line_number(r), f"{what} {text.decode('utf-8')!r} is not a number"
                ) from None
        raise


def parse_ints(table: TokenTable, k: int, what: str) -> np.ndarray:
    """Field ``k`` as int64; a line-numbered error for anything not an integer (a chunk of
    rows at a time; the first line at fault is the one named)."""
    check_lengths(table, [(k, what, MAX_NUMBER_BYTES)])
    out = np.empty(len(table), dtype=np.int64)
    for lo, hi in row_chunks(len(table)):
        raw = table.field_bytes(k, slice(lo, hi))
        try:
            out[lo:hi] = raw.astype(np.int64)
        except (ValueError, OverflowError):
            _refuse_ints(table, k, what, hi)
    return out


def _refuse_ints(table: TokenTable, k: int, what: str, upto: int) -> None:
    """Raise for the first of rows 0..upto - 1 whose field ``k`` is not an integer in range."""
    for lo, hi in row_chunks(upto):
        for r, text in enumerate(table.field_bytes(k, slice(lo, hi)).tolist(), start=lo):
            problem = None
            try:
                value = int(text)
                if not -(2**62) <= value <= 2**62:
                    problem = "is out of range"
            except ValueError:
                problem = "is not an integer"
            if problem:
                raise InvalidInput(table.source, table.line_number(r), f"{what} {text.decode('utf-8')!r} {problem}")
    raise InvalidInput(table.source, None, f"{what} column does not parse as integers")
