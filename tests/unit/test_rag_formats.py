"""Answer runs (TREC RAG 2024, 2025 formats 1 and 2, 2026), nuggets, nugget assignments and
citation-support files: every rule of service/formats/rag_answers.py and rag_judgments.py,
each refusal checked for its file, line and field; hostile files refused in bounded CPU time
and memory."""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from typing import Any

import pytest

from service.errors import InvalidInput
from service.formats.compressed import gunzip
from service.formats.rag_answers import AnswerLimits, count_words, limits_for, read_answers, validate_answers
from service.formats.rag_judgments import read_assignments, read_nuggets, read_support

REFS = ["msmarco_v2.1_doc_00_1#0_1", "msmarco_v2.1_doc_00_2#1_2", "msmarco_v2.1_doc_00_3#2_3"]


def jl(*objs: Any) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def rag24(topic: str = "t1", run: str = "r", **over: Any) -> dict[str, Any]:
    d = {"run_id": run, "topic_id": topic, "topic": "a question", "references": list(REFS), "response_length": 5,
         "answer": [{"text": "One two three.", "citations": [0, 2]}, {"text": "Four five.", "citations": []}]}
    d.update(over)
    return d


def rag25(topic: str = "t1", run: str = "r", citations: list[Any] | None = None, **meta: Any) -> dict[str, Any]:
    m = {"team_id": "team", "run_id": run, "narrative_id": topic, "type": "automatic", "narrative": "n",
         "prompt": "p"}
    m.update(meta)
    return {"metadata": m, "references": list(REFS),
            "answer": [{"text": "One two three.", "citations": citations if citations is not None else [1]}]}


def rag26(topic: str = "t1", run: str = "r") -> dict[str, Any]:
    return {"metadata": {"team_id": "team", "run_id": run, "narrative_id": topic, "type": "manual"},
            "references": list(REFS), "answer": [{"text": "One two.", "citations": [0, 1, 2]}]}


def refused(data: bytes, **kw: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        read_answers(data, "run.jsonl", **kw)
    assert info.value.source == "run.jsonl"
    return info.value


# ----------------------------------------------------------------------------- formats


def test_each_format_is_read_and_detected_where_unambiguous() -> None:
    run = read_answers(jl(rag24("t1"), rag24("t2")), "a")
    assert run.format == "rag24" and run.run_id == "r" and run.topics() == ("t1", "t2")
    assert run.answers[0].sentences[0].citations == (0, 2) and run.answers[0].words == 5 and not run.warnings
    one = read_answers(jl(rag25("t1"), rag25("t2")), "b")
    assert one.format == "rag25" and one.answers[1].sentences[0].citations == (1,)
    two = read_answers(jl(rag25("t1", citations=[REFS[2], REFS[0]])), "c")  # format 2: segment ids
    assert two.format == "rag25" and two.answers[0].sentences[0].citations == (2, 0)
    # a metadata line without narrative or prompt, with index citations: 2025 or 2026
    bare = rag25("t1")
    del bare["metadata"]["narrative"], bare["metadata"]["prompt"]
    err = refused(jl(bare))
    assert err.line == 1 and "metadata" in err.reason and "rag25 or rag26" in err.reason
    assert read_answers(jl(bare), "d", "rag25").format == "rag25"
    assert read_answers(jl(rag26()), "e", "rag26").answers[0].sentences[0].citations == (0, 1, 2)


def test_2026_metadata_holds_no_extra_key_and_three_citations_a_sentence() -> None:
    extra = rag26()
    extra["metadata"]["prompt"] = "p"
    err = refused(jl(extra), fmt="rag26")
    assert err.line == 1 and err.reason.startswith("metadata.prompt:")
    four = rag26()
    four["references"] = REFS + ["x#1"]
    four["answer"][0]["citations"] = [0, 1, 2, 3]
    err = refused(jl(rag26("t0"), four), fmt="rag26")
    assert err.line == 2 and err.reason.startswith("answer[0].citations:") and "more than the 3" in err.reason
    assert read_answers(jl(four), "x", "rag25").answers[0].sentences[0].citations == (0, 1, 2, 3)


def test_word_limits_per_track_and_as_parameters() -> None:
    long = rag24(answer=[{"text": " ".join(["w"] * 300), "citations": []},
                         {"text": " ".join(["w"] * 101), "citations": []}])
    err = refused(jl(long))
    assert err.line == 1 and err.reason.startswith("answer[1].text:") and "400 words" in err.reason
    assert read_answers(jl(long), "x", limits=AnswerLimits(words=401)).answers[0].words == 401
    m = rag26()
    m["answer"] = [{"text": " ".join(["w"] * 1024), "citations": []}]
    assert read_answers(jl(m), "x", "rag26").answers[0].words == 1024
    m["answer"].append({"text": "one", "citations": []})
    assert "1,024 words" in refused(jl(m), fmt="rag26").reason
    # words are counted as the validators count them: NFKC, split at white space
    assert count_words("  ﬁne\u00a0day\tnow ") == 3


def test_reference_limits_20_in_2024_and_100_from_2025() -> None:
    refs = [f"s#{i}" for i in range(21)]
    err = refused(jl(rag24(references=refs, answer=[])))
    assert err.reason.startswith("references:") and "more than the 20" in err.reason
    ok = rag25("t1")
    ok["references"] = [f"s#{i}" for i in range(100)]
    assert len(read_answers(jl(ok), "x").answers[0].references) == 100
    ok["references"].append("s#100")
    assert "more than the 100" in refused(jl(ok)).reason
    assert limits_for("rag25", references=200).references == 200


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda d: d["answer"][0].update(citations=[3]), "answer[0].citations[0]", "out of range"),
    (lambda d: d["answer"][0].update(citations=[-1]), "answer[0].citations[0]", "out of range"),
    (lambda d: d["answer"][0].update(citations=[10**9]), "answer[0].citations[0]", "out of range"),
    (lambda d: d["answer"][1].update(citations=[1, 1]), "answer[1].citations[1]", "twice"),
    (lambda d: d["answer"][1].update(citations=["1"]), "answer[1].citations[0]", "an index"),
    (lambda d: d["answer"][1].update(citations=[True]), "answer[1].citations[0]", "an index"),
    (lambda d: d.update(references=[REFS[0], REFS[0]]), "references[1]", "twice"),
    (lambda d: d.pop("topic"), "topic", "missing"),
    (lambda d: d.update(response_length="5"), "response_length", "an integer"),
    (lambda d: d["answer"][0].pop("text"), "answer[0].text", "missing"),
    (lambda d: d["answer"][0].update(text=["x"]), "answer[0].text", "a string"),
    (lambda d: d["answer"][0].pop("citations"), "answer[0].citations", "missing"),
    (lambda d: d.update(answer={"text": "x"}), "answer", "a list"),
    (lambda d: d.update(run_id=""), "run_id", "non-empty"),
])
def test_each_refusal_names_the_line_and_the_field(change: Any, field: str, words: str) -> None:
    bad = rag24("t2")
    change(bad)
    err = refused(jl(rag24("t1"), bad))
    assert err.line == 2 and err.reason.startswith(field + ":") and words in err.reason, err.reason


def test_a_topic_twice_an_unknown_topic_missing_topics_and_one_run_id() -> None:
    err = refused(jl(rag24("t1"), rag24("t2"), rag24("t1")))
    assert err.line == 3 and err.reason.startswith("topic_id:") and "lines 1 and 3" in err.reason
    err = refused(jl(rag24("t1"), rag24("t9")), topics={"t1", "t2"})
    assert err.line == 2 and "unknown topic 't9'" in err.reason
    run = read_answers(jl(rag24("t1")), "x", topics={"t1", "t2", "t3"})
    assert any("2 topics not answered: t2, t3" in w for w in run.warnings)
    err = refused(jl(rag24("t1"), rag24("t2")), topics={"t1": "a question", "t2": "another"})
    assert err.line == 2 and err.reason.startswith("topic:") and "'another'" in err.reason
    assert read_answers(jl(rag24("t1")), "x", topics={"t1": "a question", "t2": ""}).topics() == ("t1",)
    err = refused(jl(rag24("t1"), rag24("t2", run="other")))
    assert err.line == 2 and err.reason.startswith("run_id:") and "line 1" in err.reason
    err = refused(jl(rag25("t1"), rag25("t2", run="other")))
    assert err.reason.startswith("metadata.run_id:")
    err = refused(jl(rag25("t1"), rag25("t1")))
    assert err.reason.startswith("metadata.narrative_id:")


def test_2025_rules() -> None:
    err = refused(jl(rag25("t1", citations=[REFS[0]]), rag25("t2", citations=[0])))
    assert err.line == 2 and "one kind" in err.reason
    err = refused(jl(rag25("t1", citations=["not-a-reference"])))
    assert err.reason.startswith("answer[0].citations[0]:") and "not among the answer's references" in err.reason
    err = refused(jl(rag25("t1", type="semi")))
    assert err.reason.startswith("metadata.type:")
    bad = rag25("t1")
    del bad["metadata"]["team_id"]
    assert refused(jl(bad)).reason == "metadata.team_id: missing"
    assert read_answers(jl(rag25(7)), "x").topics() == ("7",)  # a numeric narrative_id


def test_response_length_that_differs_is_a_warning() -> None:
    run = read_answers(jl(rag24(response_length=9)), "x")
    assert run.answers[0].words == 5 and any("response_length is 9" in w for w in run.warnings)


def test_validate_lists_every_error_and_goes_on_after_an_unreadable_line() -> None:
    data = jl(rag24("t1")) + b"{not json\n" + jl(rag24("t2", references=REFS * 1)) + jl(rag24("t1"))
    errors, warnings = validate_answers(data, "v.jsonl", topics={"t1", "t2", "t3"})
    assert [(e.line, e.reason.split(":")[0]) for e in errors] == [(2, "not JSON"), (4, "topic_id")]
    assert any("t3" in w for w in warnings)
    assert validate_answers(jl(rag24("t1")), "v")[0] == []


def test_gzipped_answers_read_as_runs_are() -> None:
    data = gzip.compress(jl(rag24("t1")))
    assert read_answers(gunzip(data, "g", 1 << 20), "g").topics() == ("t1",)


# ----------------------------------------------------------------------------- hostile files


def _bounded(build: Any, field: str, cpu: float = 5.0, memory_factor: float = 16.0) -> None:
    """``read_answers`` refuses the file at its line 1 naming ``field``, within ``cpu`` CPU
    seconds and a peak of ``memory_factor`` times the file (a decoded line's Python objects
    take up to about 12 times its bytes; the line limit bounds that) plus 8 MB."""
    data = build()
    tracemalloc.start()
    started = time.process_time()
    try:
        with pytest.raises(InvalidInput) as info:
            read_answers(data, "hostile.jsonl")
    finally:
        took = time.process_time() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert info.value.line == 1 and field in info.value.reason, info.value.reason
    assert took < cpu, took
    assert peak < memory_factor * len(data) + (8 << 20), (peak, len(data))


def test_hostile_files_are_refused_in_bounded_time_and_memory() -> None:
    # 10^5 sentences
    _bounded(lambda: jl(rag24(answer=[{"text": "", "citations": []}] * 100_000)), "sentences")
    # a 50 MB sentence: refused by the line's length before it is decoded
    _bounded(lambda: b'{"run_id": "r", "topic_id": "t", "answer": [{"text": "' + b"w " * (25 << 20) + b'"}]}\n',
             "bytes")
    # a citation to index 10^9
    _bounded(lambda: jl(rag24(answer=[{"text": "x", "citations": [10**9]}])), "out of range")
    # deep nesting: 100,000 brackets (past Python's recursion limit) and 100 (within it, past the format's)
    _bounded(lambda: b'{"run_id": "r", "answer": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "nests deeper")
    _bounded(lambda: b'{"run_id": "r", "answer": ' + b"[" * 100 + b"]" * 100 + b"}\n", "nests deeper")
    # invalid UTF-8
    _bounded(lambda: b'{"run_id": "r\xff\xfe"}\n', "not UTF-8")
    # a number of 10^6 digits
    _bounded(lambda: b'{"run_id": "r", "response_length": ' + b"9" * 1_000_000 + b"}\n", "not JSON")
    # NaN is no JSON value
    _bounded(lambda: b'{"run_id": "r", "topic_id": "t", "response_length": NaN}\n', "not JSON")


# ----------------------------------------------------------------------------- nuggets and assignments


def nuggets_line(qid: str, *items: tuple[str, str]) -> dict[str, Any]:
    return {"qid": qid, "query": "q", "nuggets": [{"text": t, "importance": i} for t, i in items]}


def assigned(qid: str, run: str, *items: tuple[str, str, str]) -> dict[str, Any]:
    return {"qid": qid, "run_id": run, "query": "q", "answer_text": "a",
            "nuggets": [{"text": t, "importance": i, "assignment": a} for t, i, a in items]}


def test_nuggets_file() -> None:
    topics = read_nuggets(jl(nuggets_line("1", ("a", "vital"), ("b", "okay")), nuggets_line("2", ("c", "okay"))))
    assert topics["1"].texts == ("a", "b") and topics["1"].vital == (True, False) and topics["2"].line == 2
    for bad, field in [(nuggets_line("1", ("a", "important")), "nuggets[0].importance"),
                       (nuggets_line("1", ("a", "vital"), ("a", "okay")), "nuggets[1].text"),
                       (nuggets_line("1"), "nuggets"), ({"qid": "1"}, "nuggets")]:
        with pytest.raises(InvalidInput) as info:
            read_nuggets(jl(nuggets_line("0", ("z", "vital")), bad), "n.jsonl")
        assert info.value.line == 2 and info.value.reason.startswith(field + ":"), info.value.reason
    with pytest.raises(InvalidInput) as info:
        read_nuggets(jl(nuggets_line("1", ("a", "vital")), nuggets_line("1", ("a", "vital"))), "n")
    assert "lines 1 and 2" in info.value.reason


def test_assignments_repeat_the_topic_list_or_name_both_rows() -> None:
    rows = [assigned("1", "r1", ("a", "vital", "support"), ("b", "okay", "partial_support")),
            assigned("1", "r2", ("a", "vital", "not_support"), ("b", "okay", "support"))]
    a = read_assignments(jl(*rows), "as")
    assert a.grades == 3 and a.runs == ("r1", "r2") and a.labels[("r1", "1")].tolist() == [2, 1]
    for other in ([("b", "okay", "support"), ("a", "vital", "support")],  # another order
                  [("a", "okay", "support"), ("b", "okay", "support")],  # another importance
                  [("a", "vital", "support")]):  # a nugget fewer
        with pytest.raises(InvalidInput) as info:
            read_assignments(jl(rows[0], assigned("1", "r3", *other)), "as")
        assert info.value.line == 2 and "line 1" in info.value.reason and info.value.reason.startswith("nuggets:")
    with pytest.raises(InvalidInput) as info:
        read_assignments(jl(rows[0], rows[0]), "as")
    assert info.value.line == 2 and "lines 1 and 2" in info.value.reason
    with pytest.raises(InvalidInput) as info:
        read_assignments(jl(rows[0]), "as", grades=2)
    assert "nuggets[1].assignment" in info.value.reason and "2-grade" in info.value.reason
    bad = assigned("1", "r1", ("a", "vital", "supported"))
    with pytest.raises(InvalidInput) as info:
        read_assignments(jl(bad), "as")
    assert info.value.reason.startswith("nuggets[0].assignment:")
    two = read_assignments(jl(assigned("1", "r", ("a", "vital", "support"), ("b", "okay", "not_support"))), "x")
    assert two.grades == 2


def test_assignments_matched_to_a_nuggets_file_by_text() -> None:
    topics = read_nuggets(jl(nuggets_line("1", ("a", "vital"), ("b", "okay"))))
    a = read_assignments(jl(assigned("1", "r", ("b", "okay", "support"), ("a", "vital", "partial_support"))),
                         "as", topics)
    assert a.labels[("r", "1")].tolist() == [1, 2]  # in the topic's order
    for row, words in [(assigned("1", "r", ("a", "vital", "support"), ("c", "okay", "support")), "not a nugget"),
                       (assigned("1", "r", ("a", "vital", "support")), "is not assigned"),
                       (assigned("1", "r", ("a", "okay", "support"), ("b", "okay", "support")), "nuggets file says"),
                       (assigned("2", "r", ("a", "vital", "support")), "no nuggets")]:
        with pytest.raises(InvalidInput) as info:
            read_assignments(jl(row), "as", topics)
        assert info.value.line == 1 and words in info.value.reason, info.value.reason


# ----------------------------------------------------------------------------- citation support


def test_support_files_in_both_spellings_with_nan_text_and_unjudged_pairs() -> None:
    upper = {"topic_id": "t", "run_id": "team.r", "sentences": [
        {"sentenceID": 0, "text": "x", "citations": [{"citationID": 3, "reference": "s", "support": "1"},
                                                     {"citationID": 0, "reference": "s2", "support": "2"}]},
        {"sentenceID": 1, "text": float("nan"), "citations": []}]}
    lower = {"topic_id": "t2", "run_id": "team.r", "sentences": [
        {"sentenceId": 0, "text": "y", "citations": [{"citationId": 0, "reference": "s", "support": -1}]}]}
    data = json.dumps(upper).encode() + b"\n" + json.dumps(lower).encode() + b"\n"
    assert b"NaN" in data  # a bare NaN token, as NIST's files hold
    got = read_support(data, "s.jsonl")
    assert got[0].sentences == ((1, 2), ()) and got[1].sentences == ((-1,),) and got[1].line == 2
    for change, field in [(lambda d: d["sentences"][0]["citations"][0].update(support="3"), "support"),
                          (lambda d: d["sentences"][0]["citations"][0].update(support=float("nan")), "support"),
                          (lambda d: d["sentences"][0].update(text=5), "text"),
                          (lambda d: d["sentences"][0].update(sentenceId=0), "sentenceID"),
                          (lambda d: d["sentences"][0]["citations"][1].update(citationID=3), "citationID"),
                          (lambda d: d["sentences"][0].pop("citations"), "citations")]:
        bad = json.loads(json.dumps(upper))
        change(bad)
        with pytest.raises(InvalidInput) as info:
            read_support(json.dumps(lower).encode() + b"\n" + json.dumps(bad).encode() + b"\n", "s.jsonl")
        assert info.value.line == 2 and field in info.value.reason, info.value.reason
    with pytest.raises(InvalidInput) as info:
        read_support(json.dumps(lower).encode() + b"\n" + json.dumps(lower).encode() + b"\n", "s")
    assert "lines 1 and 2" in info.value.reason
