"""Answer runs of the TREC RAG tracks (generated answers with citations), read and validated
as the tracks' validators do (castorini/ragnarok's ``rag24_validation`` and ``rag25_validation``),
every refusal naming the file, the line and the field (docs/rag.md).

Formats (one JSON object per line, one line per topic)::

  rag24  {run_id, topic_id, topic, references: [segment id], response_length,
          answer: [{text, citations: [index into references]}]}
  rag25  {metadata: {team_id, run_id, narrative_id, type, narrative, prompt}, references,
          answer: [{text, citations}]}  citations are indices (format 1) or segment ids
          (format 2), one kind in a file
  rag26  as rag25, its metadata holding no key beyond team_id, run_id, narrative_id, type

``auto`` reads the first line: ``topic_id`` at the top is rag24; ``metadata`` with a
``narrative`` or ``prompt``, or citations given as segment ids, is rag25; any other
``metadata`` line could be 2025 or 2026 and is refused, asking for the format.

``topics`` may be a set of ids or a mapping id -> the topic's text: then a 2024 answer's
``topic`` must be that text (ragnarok's check; its 2025 checker has none).

Refused (:class:`AnswerLimits`, each limit a parameter with the track's default): more words
in an answer than ``words`` (NFKC-normalised, split at white space, as the validators count;
400, 1,024 in 2026), more references than ``references`` (20; 100 from 2025), more citations
in a sentence than ``citations_per_sentence`` (3 in 2026), more sentences than ``sentences``
(Cranfield's own bound, against a file of 10^5 empty sentences), a citation out of range or
not among the references, a citation or a reference given twice, a topic answered twice, a
topic not among ``topics`` when they are given, a ``run_id`` that differs from the first
line's. A topic of ``topics`` left unanswered is a warning, and so is a ``response_length``
that is not the words counted. Lines are read by :mod:`service.formats.jsonl` (a line's
length, UTF-8, nesting bounded before anything is built).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from service.errors import InvalidInput
from service.formats.jsonl import MAX_DEPTH, MAX_LINE_BYTES, json_lines
from service.formats.text import counted

AnswerFormat = Literal["auto", "rag24", "rag25", "rag26"]
FORMATS: tuple[str, ...] = ("rag24", "rag25", "rag26")


@dataclass(frozen=True)
class AnswerLimits:
    """The bounds an answer run is validated against (None: no bound)."""

    words: int | None = 400  # words of one answer
    references: int | None = 20  # references of one answer
    citations_per_sentence: int | None = None
    sentences: int | None = 1_000  # sentences of one answer (Cranfield's own bound)
    line_bytes: int = MAX_LINE_BYTES
    depth: int = MAX_DEPTH


#: Each track's limits (2024 and 2025 guidelines; 2026: 1,024 words, at most 3 citations a sentence).
TRACK_LIMITS: dict[str, AnswerLimits] = {
    "rag24": AnswerLimits(words=400, references=20),
    "rag25": AnswerLimits(words=400, references=100),
    "rag26": AnswerLimits(words=1024, references=100, citations_per_sentence=3),
}

_RAG25_METADATA = ("team_id", "run_id", "narrative_id")
_RAG26_METADATA_KEYS = frozenset({"team_id", "run_id", "narrative_id", "type"})
_TYPES = ("manual", "automatic")


@dataclass(frozen=True)
class Sentence:
    text: str
    citations: tuple[int, ...]  # indices into the answer's references, in the order listed


@dataclass(frozen=True)
class Answer:
    topic: str
    line: int
    references: tuple[str, ...]
    sentences: tuple[Sentence, ...]
    words: int


@dataclass(frozen=True)
class AnswerRun:
    run_id: str
    format: str
    answers: tuple[Answer, ...]
    warnings: tuple[str, ...] = field(default=())

    def topics(self) -> tuple[str, ...]:
        return tuple(a.topic for a in self.answers)


def count_words(text: str) -> int:
    """Words as the tracks' validators count them: NFKC-normalised, split at white space."""
    return len(unicodedata.normalize("NFKC", text.strip()).split())


def read_answers(data: bytes | bytearray, source: str = "<answers>", fmt: AnswerFormat = "auto",
                 topics: Collection[str] | None = None, limits: AnswerLimits | None = None,
                 overrides: Mapping[str, Any] | None = None) -> AnswerRun:
    """Read and validate an answer run; the first problem is raised as :class:`InvalidInput`
    (file, line, field). ``limits``: the format's :data:`TRACK_LIMITS` when None, with
    ``overrides`` (some limits replaced) applied to the format's, the detected one's with ``auto``."""
    checker = _Checker(source, fmt, topics, limits, overrides)
    for number, obj in json_lines(data, source, max_line_bytes=checker.line_bytes, max_depth=checker.depth):
        checker.line(number, obj)
    return checker.finish()


def validate_answers(data: bytes | bytearray, source: str = "<answers>", fmt: AnswerFormat = "auto",
                     topics: Collection[str] | None = None, limits: AnswerLimits | None = None,
                     max_errors: int = 100, overrides: Mapping[str, Any] | None = None,
                     ) -> tuple[list[InvalidInput], list[str]]:
    """Every problem of an answer run (up to ``max_errors``) and its warnings, as the
    tracks' validators list them: a line's error does not stop the lines after it."""
    checker = _Checker(source, fmt, topics, limits, overrides)
    errors: list[InvalidInput] = []
    for number, obj in json_lines(data, source, max_line_bytes=checker.line_bytes, max_depth=checker.depth,
                                  keep_going=True):
        if len(errors) >= max_errors:
            break
        if isinstance(obj, InvalidInput):  # the line itself is unreadable; the next is read
            errors.append(obj)
            continue
        try:
            checker.line(number, obj)
        except InvalidInput as exc:
            errors.append(exc)
            if checker.fmt == "auto":  # the format could not be told: nothing further can be checked
                break
    if len(errors) < max_errors:
        try:
            run = checker.finish()
            return errors, list(run.warnings)
        except InvalidInput as exc:
            errors.append(exc)
    return errors, list(checker.warnings)


class _Checker:
    """The line-by-line validation shared by :func:`read_answers` and :func:`validate_answers`."""

    def __init__(self, source: str, fmt: AnswerFormat, topics: Collection[str] | None,
                 limits: AnswerLimits | None, overrides: Mapping[str, Any] | None = None) -> None:
        if fmt not in ("auto", *FORMATS):
            raise InvalidInput(source, None, f"unknown answer format {fmt!r} (one of auto, {', '.join(FORMATS)})")
        self.source = source
        self.fmt: str = fmt
        self.given_limits = limits
        self.overrides = dict(overrides or {})
        self.limits = limits if limits is not None else \
            replace(TRACK_LIMITS.get(fmt, TRACK_LIMITS["rag24"]), **self.overrides)
        self.line_bytes = self.limits.line_bytes
        self.depth = self.limits.depth
        self.topics = set(topics) if topics is not None else None
        # the official text of each topic, when given (a mapping): a 2024 answer's ``topic`` must be it
        self.topic_texts = {k: v for k, v in topics.items() if v} if isinstance(topics, Mapping) else {}
        self.run_id: str | None = None
        self.run_line = 0
        self.seen: dict[str, int] = {}
        self.citation_kind: str | None = None  # rag25: "index" or "segment", one kind a file
        self.answers: list[Answer] = []
        self.warnings: list[str] = []

    def fail(self, line: int, where: str, reason: str) -> InvalidInput:
        return InvalidInput(self.source, line, f"{where}: {reason}" if where else reason)

    def line(self, number: int, obj: Any) -> None:
        if not isinstance(obj, dict):
            raise self.fail(number, "", "a line is one JSON object (an answer)")
        if self.fmt == "auto":
            self.fmt = self._detect(number, obj)
            if self.given_limits is None:  # the detected format's limits, with the overrides
                self.limits = replace(TRACK_LIMITS[self.fmt], **self.overrides)
        if self.fmt == "rag24":
            run_id = _text_field(self, number, obj, "run_id")
            topic = _topic_field(self, number, obj, "topic_id")
            text = _text_field(self, number, obj, "topic")
            official = self.topic_texts.get(topic)
            if official is not None and text.strip() != official.strip():
                raise self.fail(number, "topic", f"{text!r} is not topic {topic}'s text ({official!r})")
            length = obj.get("response_length")
            if "response_length" not in obj:
                raise self.fail(number, "response_length", "missing")
            if isinstance(length, bool) or not isinstance(length, int):
                raise self.fail(number, "response_length", f"an integer, not {_shown(length)}")
        else:
            meta = obj.get("metadata")
            if not isinstance(meta, dict):
                raise self.fail(number, "metadata", "missing" if meta is None else "must be an object")
            for key in _RAG25_METADATA:
                if key not in meta:
                    raise self.fail(number, f"metadata.{key}", "missing")
            run_id = _text_field(self, number, meta, "run_id", "metadata.")
            _text_field(self, number, meta, "team_id", "metadata.")
            topic = _topic_field(self, number, meta, "narrative_id", "metadata.")
            if "type" in meta and meta["type"] not in _TYPES:
                raise self.fail(number, "metadata.type", f"one of {', '.join(_TYPES)}, not {_shown(meta['type'])}")
            if self.fmt == "rag26":
                extra = sorted(str(k) for k in meta if k not in _RAG26_METADATA_KEYS)
                if extra:
                    raise self.fail(number, f"metadata.{extra[0]}", "a 2026 answer's metadata holds only "
                                    + ", ".join(sorted(_RAG26_METADATA_KEYS)))
            length = None
        if self.run_id is None:
            self.run_id, self.run_line = run_id, number
        elif run_id != self.run_id:
            where = "run_id" if self.fmt == "rag24" else "metadata.run_id"
            raise self.fail(number, where, f"{run_id!r}, not the {self.run_id!r} of line {self.run_line}: "
                                           "a file holds one run")
        if topic in self.seen:
            raise self.fail(number, "topic_id" if self.fmt == "rag24" else "metadata.narrative_id",
                            f"topic {topic!r} is answered twice (lines {self.seen[topic]} and {number})")
        if self.topics is not None and topic not in self.topics:
            raise self.fail(number, "topic_id" if self.fmt == "rag24" else "metadata.narrative_id",
                            f"unknown topic {topic!r}")
        references = self._references(number, obj)
        sentences, words = self._answer(number, obj, references)
        if length is not None and length != words:
            self.warnings.append(f"{self.source}:{number}: response_length is {length}, the answer has {words} words")
        self.seen[topic] = number
        self.answers.append(Answer(topic, number, references, sentences, words))

    def _detect(self, number: int, obj: dict[str, Any]) -> str:
        if "topic_id" in obj or ("run_id" in obj and "metadata" not in obj):
            return "rag24"
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            if "narrative" in meta or "prompt" in meta:
                return "rag25"
            answer = obj.get("answer")
            if isinstance(answer, list) and any(isinstance(s, dict) and isinstance(s.get("citations"), list)
                                                and any(isinstance(c, str) for c in s["citations"]) for s in answer):
                return "rag25"
            raise self.fail(number, "metadata", "this line could be a 2025 or a 2026 answer: give the format "
                                                "(rag25 or rag26)")
        raise self.fail(number, "", "neither a 2024 answer (run_id, topic_id, ...) nor a 2025/2026 one (metadata, ...)")

    def _references(self, number: int, obj: dict[str, Any]) -> tuple[str, ...]:
        refs = obj.get("references")
        if refs is None:
            raise self.fail(number, "references", "missing")
        if not isinstance(refs, list):
            raise self.fail(number, "references", "must be a list of segment ids")
        limit = self.limits.references
        if limit is not None and len(refs) > limit:
            raise self.fail(number, "references", f"{len(refs):,} references, more than the {limit:,} an answer may hold")
        first: dict[str, int] = {}
        for i, ref in enumerate(refs):
            if not isinstance(ref, str) or not ref:
                raise self.fail(number, f"references[{i}]", f"a segment id, not {_shown(ref)}")
            if ref in first:
                raise self.fail(number, f"references[{i}]", f"{ref!r} is given twice (references[{first[ref]}])")
            first[ref] = i
        return tuple(refs)

    def _answer(self, number: int, obj: dict[str, Any], references: tuple[str, ...]
                ) -> tuple[tuple[Sentence, ...], int]:
        answer = obj.get("answer")
        if answer is None:
            raise self.fail(number, "answer", "missing")
        if not isinstance(answer, list):
            raise self.fail(number, "answer", "must be a list of sentences")
        if self.limits.sentences is not None and len(answer) > self.limits.sentences:
            raise self.fail(number, "answer", f"{len(answer):,} sentences, more than the {self.limits.sentences:,} "
                                              "an answer may hold")
        index_of = {ref: i for i, ref in enumerate(references)} if self.fmt != "rag24" else {}
        out: list[Sentence] = []
        words = 0
        for k, sent in enumerate(answer):
            at = f"answer[{k}]"
            if not isinstance(sent, dict):
                raise self.fail(number, at, "a sentence is an object {text, citations}")
            text = sent.get("text")
            if not isinstance(text, str):
                raise self.fail(number, f"{at}.text", "missing" if text is None else f"a string, not {_shown(text)}")
            words += count_words(text)
            if self.limits.words is not None and words > self.limits.words:
                raise self.fail(number, f"{at}.text", f"the answer passes {self.limits.words:,} words here "
                                                      f"(the most an answer may have)")
            cits = sent.get("citations")
            if cits is None:
                raise self.fail(number, f"{at}.citations", "missing")
            if not isinstance(cits, list):
                raise self.fail(number, f"{at}.citations", "must be a list")
            limit = self.limits.citations_per_sentence
            if limit is not None and len(cits) > limit:
                raise self.fail(number, f"{at}.citations", f"{len(cits)} citations, more than the {limit} a sentence "
                                                           "may hold")
            out.append(Sentence(text, self._citations(number, at, cits, references, index_of)))
        return tuple(out), words

    def _citations(self, number: int, at: str, cits: list[Any], references: tuple[str, ...],
                   index_of: dict[str, int]) -> tuple[int, ...]:
        got: list[int] = []
        seen: dict[int, int] = {}
        for j, c in enumerate(cits):
            where = f"{at}.citations[{j}]"
            if isinstance(c, str) and self.fmt != "rag24":
                self._kind(number, where, "segment")
                if c not in index_of:
                    raise self.fail(number, where, f"{_shown(c)} is not among the answer's references")
                idx = index_of[c]
            elif isinstance(c, int) and not isinstance(c, bool):
                if self.fmt != "rag24":
                    self._kind(number, where, "index")
                if c < 0 or c >= len(references):
                    raise self.fail(number, where, f"citation {c} is out of range (the answer has "
                                                   f"{len(references)} references: 0 to {len(references) - 1})")
                idx = c
            else:
                kind = "an index into references" if self.fmt == "rag24" else "an index or a segment id"
                raise self.fail(number, where, f"{kind}, not {_shown(c)}")
            if idx in seen:
                raise self.fail(number, where, f"cites {references[idx]!r} twice (citations[{seen[idx]}])")
            seen[idx] = j
            got.append(idx)
        return tuple(got)

    def _kind(self, number: int, where: str, kind: str) -> None:
        if self.citation_kind is None:
            self.citation_kind = kind
        elif kind != self.citation_kind:
            other = "segment ids (format 2)" if self.citation_kind == "segment" else "indices (format 1)"
            raise self.fail(number, where, f"the file's citations are {other}; a file holds one kind")

    def finish(self) -> AnswerRun:
        if not self.answers:
            raise InvalidInput(self.source, None, "no answers in the file")
        if self.topics is not None:
            missing = sorted(self.topics - set(self.seen))
            if missing:
                shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
                self.warnings.append(f"{self.source}: {counted(len(missing), 'topic')} not answered: {shown}")
        assert self.run_id is not None
        return AnswerRun(self.run_id, self.fmt, tuple(self.answers), tuple(self.warnings))


def _text_field(c: _Checker, number: int, obj: dict[str, Any], key: str, prefix: str = "") -> str:
    value = obj.get(key)
    if value is None:
        raise c.fail(number, prefix + key, "missing")
    if not isinstance(value, str) or not value.strip():
        raise c.fail(number, prefix + key, f"a non-empty string, not {_shown(value)}")
    return value


def _topic_field(c: _Checker, number: int, obj: dict[str, Any], key: str, prefix: str = "") -> str:
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # a 2025 narrative_id may be written as a number
    return _text_field(c, number, obj, key, prefix)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def limits_for(fmt: str, **overrides: Any) -> AnswerLimits:
    """The track's limits for ``fmt`` with some replaced (a collection's settings)."""
    return replace(TRACK_LIMITS[fmt], **overrides)


def references_run(run: AnswerRun, source: str = "<answers>") -> Any:
    """The answers' ``references`` as a TREC run (:class:`~service.formats.types.Run`): each
    topic's references ranked in the order listed, so that the retrieval metrics score the R
    of RAG against the collection's qrels. Its tag is the answer run's ``run_id``."""
    from service.formats.readers import parse_run

    tag = run.run_id.replace(" ", "_")
    for a in run.answers:
        for value in (a.topic, *a.references):
            if len(value.split()) != 1:
                raise InvalidInput(source, a.line, f"{value!r} holds white space: it cannot be a run's topic or docno")
    lines = [f"{a.topic} Q0 {ref} {rank} {len(a.references) - rank + 1} {tag}\n"
             for a in run.answers for rank, ref in enumerate(a.references, 1)]
    if not lines:  # answers without references: an empty list on every topic
        raise InvalidInput(source, None, "no answer has references to rank")
    return parse_run("".join(lines).encode("utf-8"), source, order="file")
