"""The judgments of generated answers (docs/rag.md): nuggets, nugget assignments and
citation-support judgments, read line by line (:mod:`service.formats.jsonl`), every refusal
naming the file, the line and the field.

Nuggets (nuggetizer's ``create`` output), a line per topic::

  {qid, query, nuggets: [{text, importance: vital | okay}]}

Assignments (NIST's and nuggetizer's ``assign`` output), a line per (topic, run); other keys
(``query``, ``answer_text``, ``response_length``) are ignored::

  {qid, run_id, nuggets: [{text, importance, assignment: support | partial_support | not_support}]}

3-grade, or 2-grade (``support`` / ``not_support``). Every row of a topic repeats the topic's
nugget list: the same list (texts and importance, in order) on every row, else an error naming
both rows. With a nuggets file, each row's nuggets are matched to its topic's list by text (a
nugget the topic lacks, or one of the topic's the row lacks: an error naming the line).

Citation support (NIST's files), a line per (topic, run)::

  {topic_id, run_id, sentences: [{sentenceID, text, citations: [{citationID, reference, support}]}]}

The keys may be spelled ``sentenceID``/``citationID`` or ``sentenceId``/``citationId``; a
sentence's citations are kept in the order listed (the first listed is the sentence's first
citation, whatever its id); ``support`` is ``"0"`` (none), ``"1"`` (partial), ``"2"`` (full)
or ``-1`` (not judged), as a string or a number; a sentence's text may be a bare ``NaN``
token (missing text), which is read, not refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from service.errors import InvalidInput
from service.formats.jsonl import json_lines

IMPORTANCE = ("vital", "okay")
#: Assignment labels and their codes (the credit is the metric's business: service/metrics/rag.py).
ASSIGNMENT_CODES = {"not_support": 0, "partial_support": 1, "support": 2}
NOT_JUDGED = -1
SUPPORT_CODES = {"0": 0, "1": 1, "2": 2, "-1": NOT_JUDGED}
Grades = Literal["auto", 2, 3]


@dataclass(frozen=True)
class TopicNuggets:
    """A topic's nuggets, in the order listed."""

    qid: str
    query: str
    texts: tuple[str, ...]
    vital: tuple[bool, ...]  # per nugget: vital (True) or okay
    line: int

    def importance(self) -> tuple[str, ...]:
        return tuple("vital" if v else "okay" for v in self.vital)


@dataclass(frozen=True)
class Assignments:
    """Nugget assignments: per (run, topic), one code per nugget of the topic, in the topic's
    order (2 support, 1 partial support, 0 not support)."""

    topics: dict[str, TopicNuggets]
    labels: dict[tuple[str, str], np.ndarray]  # (run, qid) -> int8 codes
    lines: dict[tuple[str, str], int]
    grades: int  # 3, or 2 when no partial support is allowed
    source: str

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(sorted({run for run, _ in self.labels}))


@dataclass(frozen=True)
class SupportAnswer:
    """One answer's citation-support judgments: per sentence, the support code of each of its
    citations in the order listed (-1: not judged)."""

    topic: str
    run: str
    source: str
    line: int
    sentences: tuple[tuple[int, ...], ...]


# ----------------------------------------------------------------------------- nuggets


def _text(source: str, line: int, obj: Mapping[str, Any], key: str, where: str = "") -> str:
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and key in ("qid", "topic_id"):
        return str(value)
    if value is None:
        raise InvalidInput(source, line, f"{where}{key}: missing")
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(source, line, f"{where}{key}: a non-empty string, not {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _nugget_list(source: str, line: int, obj: Mapping[str, Any], *, assigned: bool
                 ) -> tuple[tuple[str, ...], tuple[bool, ...], tuple[str, ...]]:
    """A line's nuggets: texts, vital flags and (``assigned``) assignment labels."""
    nuggets = obj.get("nuggets")
    if nuggets is None:
        raise InvalidInput(source, line, "nuggets: missing")
    if not isinstance(nuggets, list):
        raise InvalidInput(source, line, "nuggets: must be a list")
    if not nuggets:
        raise InvalidInput(source, line, "nuggets: a topic has at least one nugget")
    texts: list[str] = []
    vital: list[bool] = []
    labels: list[str] = []
    first: dict[str, int] = {}
    for i, n in enumerate(nuggets):
        at = f"nuggets[{i}]"
        if not isinstance(n, dict):
            raise InvalidInput(source, line, f"{at}: a nugget is an object {{text, importance}}")
        text = _text(source, line, n, "text", f"{at}.")
        if text in first:
            raise InvalidInput(source, line, f"{at}.text: the topic lists {_shown(text)} twice (nuggets[{first[text]}]); "
                                             "nuggets are matched by their text")
        first[text] = i
        importance = n.get("importance")
        if importance not in IMPORTANCE:
            raise InvalidInput(source, line, f"{at}.importance: vital or okay, not {_shown(importance)}")
        texts.append(text)
        vital.append(importance == "vital")
        if assigned:
            label = n.get("assignment")
            if label not in ASSIGNMENT_CODES:
                raise InvalidInput(source, line, f"{at}.assignment: support, partial_support or not_support, "
                                                 f"not {_shown(label)}")
            labels.append(label)
    return tuple(texts), tuple(vital), tuple(labels)


def read_nuggets(data: bytes | bytearray, source: str = "<nuggets>") -> dict[str, TopicNuggets]:
    """A nuggets file: each topic's nuggets (a topic twice is refused)."""
    topics: dict[str, TopicNuggets] = {}
    for number, obj in json_lines(data, source):
        if not isinstance(obj, dict):
            raise InvalidInput(source, number, "a line is one JSON object (a topic's nuggets)")
        qid = _text(source, number, obj, "qid")
        if qid in topics:
            raise InvalidInput(source, number, f"qid: topic {qid!r} is given twice (lines {topics[qid].line} and {number})")
        query = obj.get("query")
        texts, vital, _ = _nugget_list(source, number, obj, assigned=False)
        topics[qid] = TopicNuggets(qid, query if isinstance(query, str) else "", texts, vital, number)
    if not topics:
        raise InvalidInput(source, None, "no topics in the file")
    return topics


# ----------------------------------------------------------------------------- assignments


def read_assignments(data: bytes | bytearray, source: str = "<assignments>",
                     nuggets: Mapping[str, TopicNuggets] | None = None, grades: Grades = "auto") -> Assignments:
    """An assignment file. Without ``nuggets``, each topic's list is its first row's (and
    every other row of the topic must repeat it); with them, each row is matched to its topic's
    list by text. ``grades``: 2 refuses ``partial_support``; auto takes 3 when any row uses it."""
    if grades not in ("auto", 2, 3):
        raise InvalidInput(source, None, f"grades is auto, 2 or 3, not {grades!r}")
    topics: dict[str, TopicNuggets] = dict(nuggets) if nuggets is not None else {}
    labels: dict[tuple[str, str], np.ndarray] = {}
    lines: dict[tuple[str, str], int] = {}
    partial = False
    for number, obj in json_lines(data, source):
        if not isinstance(obj, dict):
            raise InvalidInput(source, number, "a line is one JSON object (a topic's nuggets assigned to a run's answer)")
        qid = _text(source, number, obj, "qid")
        run = _text(source, number, obj, "run_id")
        if (run, qid) in lines:
            raise InvalidInput(source, number, f"run_id, qid: run {run!r} on topic {qid!r} is assigned twice "
                                               f"(lines {lines[(run, qid)]} and {number})")
        texts, vital, assigned = _nugget_list(source, number, obj, assigned=True)
        if grades == 2 and "partial_support" in assigned:
            i = assigned.index("partial_support")
            raise InvalidInput(source, number, f"nuggets[{i}].assignment: partial_support in a 2-grade file "
                                               "(support or not_support)")
        partial = partial or "partial_support" in assigned
        topic = topics.get(qid)
        if nuggets is None:
            if topic is None:
                topic = topics[qid] = TopicNuggets(qid, str(obj.get("query") or ""), texts, vital, number)
            elif (texts, vital) != (topic.texts, topic.vital):
                raise InvalidInput(source, number, f"nuggets: topic {qid!r} lists other nuggets than on line "
                                                   f"{topic.line} ({_difference(topic, texts, vital)}); every row "
                                                   "of a topic repeats the same list")
            codes = [ASSIGNMENT_CODES[a] for a in assigned]
        else:
            if topic is None:
                raise InvalidInput(source, number, f"qid: topic {qid!r} has no nuggets in the nuggets file")
            codes = _matched(source, number, topic, texts, vital, assigned)
        labels[(run, qid)] = np.array(codes, dtype=np.int8)
        lines[(run, qid)] = number
    if not labels:
        raise InvalidInput(source, None, "no assignments in the file")
    used = {qid for _, qid in labels}
    kept = {qid: t for qid, t in topics.items() if qid in used} if nuggets is None else topics
    return Assignments(kept, labels, lines, 3 if (grades == 3 or (grades == "auto" and partial)) else 2, source)


def _difference(topic: TopicNuggets, texts: tuple[str, ...], vital: tuple[bool, ...]) -> str:
    if len(texts) != len(topic.texts):
        return f"{len(texts)} nuggets instead of {len(topic.texts)}"
    for i, (a, b) in enumerate(zip(texts, topic.texts)):
        if a != b:
            return f"nuggets[{i}] is {_shown(a)}, there {_shown(b)}"
    i = next(i for i, (a, b) in enumerate(zip(vital, topic.vital)) if a != b)
    return f"nuggets[{i}] is {'vital' if vital[i] else 'okay'} here, {'vital' if topic.vital[i] else 'okay'} there"


def _matched(source: str, number: int, topic: TopicNuggets, texts: tuple[str, ...], vital: tuple[bool, ...],
             assigned: tuple[str, ...]) -> list[int]:
    """A row's labels in its topic's nugget order, matched by text."""
    position = {t: i for i, t in enumerate(topic.texts)}
    codes = [-1] * len(topic.texts)
    for i, (text, v, label) in enumerate(zip(texts, vital, assigned)):
        k = position.get(text)
        if k is None:
            raise InvalidInput(source, number, f"nuggets[{i}].text: {_shown(text)} is not a nugget of topic "
                                               f"{topic.qid!r}")
        if v != topic.vital[k]:
            raise InvalidInput(source, number, f"nuggets[{i}].importance: {'vital' if v else 'okay'}, the nuggets "
                                               f"file says {'vital' if topic.vital[k] else 'okay'}")
        codes[k] = ASSIGNMENT_CODES[label]
    if -1 in codes:
        k = codes.index(-1)
        raise InvalidInput(source, number, f"nuggets: the topic's nugget {_shown(topic.texts[k])} is not assigned")
    return codes


# ----------------------------------------------------------------------------- citation support


def _one_of(source: str, number: int, obj: Mapping[str, Any], keys: tuple[str, str], where: str) -> Any:
    present = [k for k in keys if k in obj]
    if not present:
        raise InvalidInput(source, number, f"{where}{keys[0]}: missing")
    if len(present) == 2:
        raise InvalidInput(source, number, f"{where}{keys[0]}: given twice (as {keys[0]} and {keys[1]})")
    value = obj[present[0]]
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidInput(source, number, f"{where}{present[0]}: an id, not {_shown(value)}")
    return value


def _support(source: str, number: int, value: Any, where: str) -> int:
    key = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None
    if key is None or key not in SUPPORT_CODES:
        raise InvalidInput(source, number, f"{where}support: \"0\", \"1\", \"2\" or -1 (not judged), not {_shown(value)}")
    return SUPPORT_CODES[key]


def read_support(data: bytes | bytearray, source: str = "<support>") -> list[SupportAnswer]:
    """A citation-support file: each (topic, run)'s sentences and their citations' support
    (a (topic, run) twice is refused)."""
    out: list[SupportAnswer] = []
    seen: dict[tuple[str, str], int] = {}
    for number, obj in json_lines(data, source, allow_nan=True):
        if not isinstance(obj, dict):
            raise InvalidInput(source, number, "a line is one JSON object (an answer's citation support)")
        topic = _text(source, number, obj, "topic_id")
        run = _text(source, number, obj, "run_id")
        if (run, topic) in seen:
            raise InvalidInput(source, number, f"run_id, topic_id: run {run!r} on topic {topic!r} is given twice "
                                               f"(lines {seen[(run, topic)]} and {number})")
        sentences = obj.get("sentences")
        if not isinstance(sentences, list):
            raise InvalidInput(source, number, "sentences: " + ("missing" if sentences is None else "must be a list"))
        got: list[tuple[int, ...]] = []
        ids: dict[Any, int] = {}
        for k, sent in enumerate(sentences):
            at = f"sentences[{k}]."
            if not isinstance(sent, dict):
                raise InvalidInput(source, number, f"sentences[{k}]: a sentence is an object")
            sid = _one_of(source, number, sent, ("sentenceID", "sentenceId"), at)
            if str(sid) in ids:
                raise InvalidInput(source, number, f"{at}sentenceID: {sid!r} is given twice (sentences[{ids[str(sid)]}])")
            ids[str(sid)] = k
            text = sent.get("text")
            if text is not None and not isinstance(text, str) and not (isinstance(text, float) and math.isnan(text)):
                raise InvalidInput(source, number, f"{at}text: a string (or NaN: missing), not {_shown(text)}")
            cits = sent.get("citations")
            if not isinstance(cits, list):
                raise InvalidInput(source, number, f"{at}citations: " + ("missing" if cits is None else "must be a list"))
            codes: list[int] = []
            cids: dict[str, int] = {}
            for j, c in enumerate(cits):
                cat = f"{at}citations[{j}]."
                if not isinstance(c, dict):
                    raise InvalidInput(source, number, f"{at}citations[{j}]: a citation is an object")
                cid = str(_one_of(source, number, c, ("citationID", "citationId"), cat))
                if cid in cids:
                    raise InvalidInput(source, number, f"{cat}citationID: {cid!r} is given twice in the sentence "
                                                       f"(citations[{cids[cid]}])")
                cids[cid] = j
                if "support" not in c:
                    raise InvalidInput(source, number, f"{cat}support: missing")
                codes.append(_support(source, number, c["support"], cat))
            got.append(tuple(codes))
        seen[(run, topic)] = number
        out.append(SupportAnswer(topic, run, source, number, tuple(got)))
    if not out:
        raise InvalidInput(source, None, "no judged answers in the file")
    return out


# ----------------------------------------------------------------------------- passages
#: The keys a passage's id and text may have (MS MARCO v2.1 segments: ``segment_id`` or
#: ``docid``; ``segment`` or ``text`` for the text).
PASSAGE_IDS = ("segment_id", "docid", "id")
PASSAGE_TEXTS = ("segment", "text")


def read_passages(data: bytes | bytearray, source: str = "<passages>") -> dict[str, str]:
    """The texts of the passages answers cite (issue 36: shown beside each cited sentence on the
    support assessment page): JSON lines ``{segment_id, segment}`` (or ``docid``/``id`` and
    ``text``); an id twice, or a line without an id or a text, is refused with its line."""
    out: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, obj in json_lines(data, source):
        if not isinstance(obj, dict):
            raise InvalidInput(source, number, "a line is one JSON object (a passage: segment_id and segment)")
        pid = next((obj[k] for k in PASSAGE_IDS if k in obj), None)
        text = next((obj[k] for k in PASSAGE_TEXTS if k in obj), None)
        if not isinstance(pid, str) or not pid:
            raise InvalidInput(source, number, f"{'/'.join(PASSAGE_IDS)}: the passage's id, a non-empty string")
        if not isinstance(text, str):
            raise InvalidInput(source, number, f"{'/'.join(PASSAGE_TEXTS)}: the passage's text, a string")
        if pid in lines:
            raise InvalidInput(source, number, f"segment_id: {pid!r} is given twice (lines {lines[pid]} and {number})")
        lines[pid] = number
        out[pid] = text
    return out
