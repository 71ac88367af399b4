"""A qrels file read in any of the service's formats, for the commands that read files
(``cranfield eval``): ad hoc, intent-aware (diversity) and stratified-sample qrels, named or
detected.

Formats (the service's upload formats, service/evaluation/organising/setup.py ``UPLOAD_FORMATS``, and the
ad hoc readers' two syntaxes)

* ``adhoc``: TREC ``topic iteration docno rel`` or NTCIR ``topic docno L<n>``
  (``trec`` and ``ntcir`` name one of them);
* ``diversity-trec``: ``topic subtopic docno rel`` (ndeval's input);
* ``diversity-ntcir``: ``topic intent docno L<n>`` (NTCIREVAL's Dqrels), with an optional
  intent probability file (``topic intent probability``; the only format that takes one);
* ``sampled``: ``topic iteration docno stratum rel`` (sample_eval.pl's input).

Detection (``auto``), from the first data line and the metrics asked for, so that a file is
never read in a format that scores a requested metric differently from the format it is in:

1. a probability file given: ``diversity-ntcir``;
2. five columns: ``sampled``; three columns: ``adhoc`` (NTCIR);
3. four columns whose level (the fourth) is ``L<n>``: ``diversity-ntcir`` (NTCIR ad hoc qrels
   have three columns);
4. four columns with an integer level: TREC ad hoc and TREC diversity qrels look alike
   (``topic 0 docno rel`` and ``topic 3 docno rel``; the iteration column is not always 0, e.g.
   TREC-COVID's round numbers). If a requested metric needs intent-aware judgments the file is
   read as ``diversity-trec``, and refused if every second column is ``0`` or ``Q0`` (ad hoc
   qrels: no subtopics); otherwise as ``adhoc``, as it always was. Reading TREC diversity qrels as
   ad hoc qrels cannot give other values to an ad hoc metric than their flattened view (a
   document's largest level over its subtopics) does: a document judged at two levels is refused
   as a contradiction, one judged at one level is that level either way.

A metric that the format read cannot score (an intent-aware metric without intent-aware
judgments, xinfAP without a stratified sample) is refused naming the format it needs, never
scored NaN (:func:`refuse_unscorable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from service.errors import InvalidInput, InvalidMeasure
from service.formats.diversity import IntentQrels, parse_diversity_qrels, parse_intent_probabilities
from service.formats.readers import first_data_line, parse_qrels
from service.formats.sampled import SampledQrels, parse_sampled_qrels
from service.formats.tokenize import tokenize
from service.formats.types import Qrels

#: The formats a qrels file can be named in (``--qrels-format``).
FILE_FORMATS = ("auto", "adhoc", "trec", "ntcir", "diversity-trec", "diversity-ntcir", "sampled")
#: What each family of metrics needs, in words, and the formats that give it.
NEEDED = {
    "diversity": ("intent-aware judgments", ("diversity-trec", "diversity-ntcir"),
                  ("--qrels-format diversity-trec (topic subtopic docno rel) or diversity-ntcir (topic intent docno "
                  "L<n>)")),
    "sampled": ("a stratified sample's qrels", ("sampled",),
                "--qrels-format sampled (topic iteration docno stratum rel)"),
}
#: A format, in words.
NAMES = {"adhoc": "ad hoc qrels", "diversity-trec": "TREC diversity qrels", "diversity-ntcir": "NTCIR intent qrels",
         "sampled": "stratified-sample qrels"}


@dataclass(frozen=True)
class Judgments:
    """A qrels file as read: its format, the ad hoc view every metric reads and, for the
    intent-aware and sampled formats, the judgments their metrics read (``extra``)."""

    format: str  # adhoc, diversity-trec, diversity-ntcir or sampled
    qrels: Qrels
    extra: IntentQrels | SampledQrels | None = None
    detected: bool = False  # the format was detected (auto), not named


def detect(data: bytes | bytearray, needs: frozenset[str], probabilities: bool) -> str:
    """The format ``auto`` reads ``data`` in (the module's rule); ``needs``: the families of the
    requested metrics that ad hoc qrels cannot score ("diversity", "sampled")."""
    if probabilities:
        return "diversity-ntcir"
    tokens = first_data_line(data)
    if tokens is None:
        return "adhoc"  # (the ad hoc reader says what is wrong)
    if len(tokens) == 5:
        return "sampled"
    if len(tokens) == 4 and tokens[3].startswith(b"L"):
        return "diversity-ntcir"
    if len(tokens) == 4 and "diversity" in needs:
        return "diversity-trec"
    return "adhoc"


def read_judgments(data: bytes | bytearray, source: str, fmt: str = "auto", *,
                   needs: Mapping[str, str] | None = None, probabilities: bytes | bytearray | None = None,
                   probabilities_source: str = "<probabilities>") -> Judgments:
    """Read a qrels file in ``fmt`` (one of :data:`FILE_FORMATS`). ``needs``: each requested
    metric that ad hoc qrels cannot score -> the family it needs ("diversity" or "sampled"); a
    metric the format read cannot score is refused (:class:`InvalidMeasure` naming the format
    needed) before the file is parsed when the format is named, after detection otherwise."""
    needs = dict(needs or {})
    if fmt not in FILE_FORMATS:
        raise InvalidMeasure(f"qrels format: one of {', '.join(FILE_FORMATS)}, not {fmt!r}")
    if probabilities is not None and fmt not in ("auto", "diversity-ntcir"):
        raise InvalidMeasure(f"an intent probability file goes with --qrels-format diversity-ntcir, not {fmt}")
    families = frozenset(needs.values())
    if len(families) > 1:
        by = {f: [m for m, g in needs.items() if g == f] for f in sorted(families)}
        raise InvalidMeasure("one qrels file cannot score both " + " and ".join(
            f"{', '.join(ms)} (which need{'s' if len(ms) == 1 else ''} {NEEDED[f][0]})" for f, ms in by.items())
            + ": evaluate them in two runs of the command, each with its qrels")
    detected = fmt == "auto"
    if detected:
        fmt = detect(data, families, probabilities is not None)
    refuse_unscorable(needs, "adhoc" if fmt in ("trec", "ntcir") else fmt, source)
    if fmt in ("adhoc", "trec", "ntcir"):
        try:
            qrels = parse_qrels(data, source, "auto" if fmt == "adhoc" else fmt)
        except InvalidInput as exc:
            raise (_contradiction_hint(exc, data) if detected else exc) from None
        return Judgments("adhoc", qrels, None, detected)
    if fmt == "sampled":
        sample = parse_sampled_qrels(data, source)
        return Judgments(fmt, sample.to_qrels(), sample, detected)
    probs = parse_intent_probabilities(probabilities, probabilities_source) if probabilities is not None else None
    as_adhoc = detected and fmt == "diversity-trec"
    try:
        intents = parse_diversity_qrels(data, source, "trec" if fmt == "diversity-trec" else "ntcir", probs)
    except InvalidInput:
        # (Q0 is no subtopic number: a detected file whose every second column is 0 or Q0 is ad
        # hoc qrels, and the refusal says so rather than pointing at its first Q0)
        if as_adhoc and _iteration_column_only(data, source):
            raise _reads_as_adhoc(source, needs) from None
        raise
    if as_adhoc and intents.topics and all(set(intents[t].intents) == {"0"} for t in intents.topics):
        raise _reads_as_adhoc(source, needs)
    return Judgments(fmt, intents.to_qrels(), intents, detected)


def _iteration_column_only(data: bytes | bytearray, source: str) -> bool:
    """Whether every data line of a four-column file has 0 or Q0 in its second column."""
    try:
        column = tokenize(bytes(data), source, 4, exact=True).field_bytes(1)
    except InvalidInput:
        return False
    return bool(column.shape[0]) and bool(np.isin(column, [b"0", b"Q0"]).all())


def _reads_as_adhoc(source: str, needs: Mapping[str, str]) -> InvalidMeasure:
    metrics = ", ".join(m for m, f in needs.items() if f == "diversity")
    return InvalidMeasure(f"{source} reads as ad hoc qrels (topic 0 docno rel: the second column is the iteration 0 "
                          f"on every line, no subtopics), which cannot score {metrics}: it needs "
                          f"{NEEDED['diversity'][0]}: give {NEEDED['diversity'][2]}")


def refuse_unscorable(needs: Mapping[str, str], fmt: str, source: str) -> None:
    """Refuse the metrics of ``needs`` that qrels of format ``fmt`` cannot score."""
    problems = {}
    for metric, family in needs.items():
        if fmt not in NEEDED[family][1]:
            problems.setdefault(family, []).append(metric)
    if problems:
        raise InvalidMeasure("; ".join(
            f"{', '.join(ms)} need{'s' if len(ms) == 1 else ''} {NEEDED[f][0]}, and {source} is read as "
            f"{NAMES.get(fmt, fmt)}: give {NEEDED[f][2]}" for f, ms in problems.items()))


def _contradiction_hint(exc: InvalidInput, data: bytes | bytearray) -> InvalidInput:
    """``exc`` with a hint when a four-column file read as ad hoc qrels (auto) holds a document at
    two levels: it may be TREC diversity qrels."""
    tokens = first_data_line(data)
    if tokens is None or len(tokens) != 4 or "is judged" not in exc.reason:
        return exc
    return InvalidInput(exc.source, exc.line, exc.reason + "; if this is a diversity qrels file (topic subtopic "
                        "docno rel), give --qrels-format diversity-trec")
