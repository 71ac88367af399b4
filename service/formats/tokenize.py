"""Vectorised whitespace tokenisation of TREC/NTCIR text files.

A 100-run x 50-topic x depth-1000 submission round is five million run lines;
splitting them in a Python loop costs several seconds, so the readers here
treat a file as one ``uint8`` array and find token and line boundaries with
numpy. Nothing here creates a Python object per line: fields come back as
fixed-width byte-string arrays (``numpy.bytes_``) and numbers are parsed column
by column.

Whitespace is what ``bytes.split()`` splits on (space, \\t, \\n, \\v, \\f, \\r);
any other control byte is an error, as are bytes that are not UTF-8. Lines whose
first token starts with ``#`` are comments (trec_eval 10 skips them too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from service.errors import InvalidInput

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

    def __len__(self) -> int:
        return int(self.line_numbers.shape[0])

    def field_bytes(self, k: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Field ``k`` of every data line (or of ``rows``) as a ``bytes_`` array."""
        starts = self.starts[:, k]
        ends = self.ends[:, k]
        if rows is not None:
            starts, ends = starts[rows], ends[rows]
        return gather_fixed_width(self.buffer, starts, ends)

    def field_text(self, row: int, k: int) -> str:
        """One field as ``str`` (for error messages and small tables)."""
        lo, hi = int(self.starts[row, k]), int(self.ends[row, k])
        return self.buffer[lo:hi].tobytes().decode("utf-8")


def gather_fixed_width(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Copy byte spans into a fixed-width ``bytes_`` array (one column per pass)."""
    n = starts.shape[0]
    lengths = ends - starts
    width = int(lengths.max()) if n else 1
    width = max(width, 1)
    out = np.zeros((n, width), dtype=np.uint8)
    last = buffer.shape[0] - 1
    for j in range(width):
        col = buffer[np.minimum(starts + j, last)]
        col[lengths <= j] = 0
        out[:, j] = col
    return out.view(f"S{width}").reshape(n)


def _line_of_offset(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


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
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                source, _line_of_offset(data, exc.start), f"bytes are not UTF-8 (byte offset {exc.start})"
            ) from None
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.shape[0] == 0:
        raise InvalidInput(source, None, "the file is empty")
    spans = _regular_spans(buf)
    if spans is None:
        spans = _general_spans(data, buf, source)
    # Per line: its first token and its 0-based line number (blank lines have no token).
    tok_start, tok_end, first_tok, line_index = spans
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
    )


def _regular_spans(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Spans of the common file shape, in fewer passes than the general case.

    The shape: single-byte separators (space, tab, newline), no blank lines, a
    final newline. Returns None for any other shape (CRLF, runs of spaces, a
    missing final newline, control bytes), which the general path handles.
    """
    seps = np.flatnonzero(buf <= 32)
    n = buf.shape[0]
    if seps.shape[0] == 0 or buf[0] <= 32 or seps[-1] != n - 1 or buf[-1] != 10:
        return None
    if not bool(np.all(np.diff(seps) > 1)):
        return None
    sep_bytes = buf[seps]
    newline = sep_bytes == 10
    if not bool(np.all(newline | (sep_bytes == 32) | (sep_bytes == 9))) or bool(np.any(buf == 127)):
        return None
    tok_start = np.empty(seps.shape[0], dtype=np.int64)
    tok_start[0] = 0
    tok_start[1:] = seps[:-1] + 1
    last_of_line = np.flatnonzero(newline)
    first_tok = np.empty(last_of_line.shape[0], dtype=np.int64)
    first_tok[0] = 0
    first_tok[1:] = last_of_line[:-1] + 1
    return tok_start, seps, first_tok, np.arange(first_tok.shape[0], dtype=np.int64)


def _general_spans(data: bytes, buf: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Token spans of any file: runs of whitespace, blank lines, CRLF."""
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

    # Newlines live in the whitespace gaps between tokens: count them per gap
    # (one pass per byte of the widest gap, over tokens rather than bytes).
    gap_lo = np.concatenate(([0], tok_end[:-1]))
    gap_len = tok_start - gap_lo
    newlines_before = np.zeros(tok_start.shape[0], dtype=np.int64)
    for j in range(int(gap_len.max())):
        newlines_before += (gap_len > j) & (buf[np.minimum(gap_lo + j, buf.shape[0] - 1)] == 10)
    line_of_tok = np.cumsum(newlines_before)  # 0-based line of each token
    starts_line = np.ones(tok_start.shape[0], dtype=bool)
    starts_line[1:] = newlines_before[1:] > 0
    first_tok = np.flatnonzero(starts_line)
    return tok_start, tok_end, first_tok, line_of_tok[first_tok]


def _only_allowed_controls(buf: np.ndarray) -> bool:
    """True when every byte below 0x20 is \t, \n, \v, \f or \r (and no DEL)."""
    low = buf[buf < 32]
    if low.shape[0] and not np.all((low >= 9) & (low <= 13)):
        return False
    return not np.any(buf == 127)


_POW10 = 10.0 ** np.arange(23)


def parse_floats(table: TokenTable, k: int, what: str) -> np.ndarray:
    """Field ``k`` as float64, exactly as ``float()`` would parse it.

    Plain decimals (``-12.345``) with at most 15 significant digits are parsed
    column by column as an integer mantissa and a power of ten; one IEEE
    division of two exactly representable numbers is correctly rounded, so the
    result equals ``strtod``'s (Clinger's fast path). Anything else (exponents,
    ``inf``, long mantissas) goes through numpy's own conversion.
    """
    starts = table.starts[:, k]
    ends = table.ends[:, k]
    buf = table.buffer
    n = starts.shape[0]
    lengths = ends - starts
    width = int(lengths.max()) if n else 0
    last = buf.shape[0] - 1
    mant = np.zeros(n, dtype=np.int64)
    frac = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int64)
    seen_dot = np.zeros(n, dtype=bool)
    negative = np.zeros(n, dtype=bool)
    slow = np.zeros(n, dtype=bool)
    for j in range(width):
        present = lengths > j
        c = buf[np.minimum(starts + j, last)].astype(np.int64)
        is_digit = present & (c >= 48) & (c <= 57)
        is_dot = present & (c == 46)
        is_sign = present & (j == 0) & ((c == 45) | (c == 43))
        negative |= is_sign & (c == 45)
        slow |= present & ~(is_digit | is_dot | is_sign)
        slow |= is_dot & seen_dot
        seen_dot |= is_dot
        mant = np.where(is_digit, mant * 10 + (c - 48), mant)
        digits += is_digit
        frac += is_digit & seen_dot
    slow |= (digits == 0) | (digits > 15) | (frac > 22)
    values = mant.astype(np.float64) / _POW10[np.minimum(frac, 22)]
    values = np.where(negative, -values, values)
    slow_rows = np.flatnonzero(slow)
    if slow_rows.shape[0]:
        raw = gather_fixed_width(buf, starts[slow_rows], ends[slow_rows])
        try:
            values[slow_rows] = raw.astype(np.float64)
        except ValueError:
            for r, text in zip(slow_rows.tolist(), raw.tolist()):
                try:
                    float(text)
                except ValueError:
                    raise InvalidInput(
                        table.source, int(table.line_numbers[r]), f"{what} {text.decode('utf-8')!r} is not a number"
                    ) from None
            raise
    if not np.all(np.isfinite(values)):
        r = int(np.flatnonzero(~np.isfinite(values))[0])
        raise InvalidInput(
            table.source, int(table.line_numbers[r]), f"{what} {table.field_text(r, k)!r} is not a finite number"
        )
    return values


def parse_ints(table: TokenTable, k: int, what: str) -> np.ndarray:
    """Field ``k`` as int64; a line-numbered error for anything not an integer."""
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

