"""The RAG metrics (service/metrics/rag.py, rag_scoring.py): names in the registry's grammar,
each definition on hand-computed answers, the paper's worked example, undefined values stated,
a run's mean over its topics with unanswered topics 0, unjudged pairs and sentences."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from service.errors import InvalidInput, InvalidMeasure
from service.formats.rag_judgments import read_assignments, read_support
from service.formats.readers import parse_qrels, parse_run
from service.metrics import evaluate, parse_measure
from service.metrics.rag import nugget_score, support_scores
from service.metrics.rag_scoring import evaluate_rag, match_runs
from service.metrics.spec import REGISTRY, metric_listing


def jl(*objs: Any) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def test_names_follow_the_grammar_with_the_short_aliases() -> None:
    expected = {"A": "nugget_all", "A_strict": "nugget_all(strict=true)", "V": "nugget_vital",
                "V_strict": "nugget_vital(strict=true)", "W": "nugget_weighted",
                "W_strict": "nugget_weighted(strict=true)", "support_precision": "support_precision",
                "support_recall": "support_recall",
                "support_recall(citations=every)": "support_recall(citations=every)",
                "nugget_vital(strict=false)": "nugget_vital", "v_STRICT": "nugget_vital(strict=true)"}
    for text, canonical in expected.items():
        assert str(parse_measure(text)) == canonical
    assert all(REGISTRY[n].family == "rag" and REGISTRY[n].bounds == (0.0, 1.0) for n in
               ("nugget_all", "nugget_vital", "nugget_weighted", "support_precision", "support_recall"))
    with pytest.raises(InvalidMeasure):
        parse_measure("V_strict@10")  # no cutoff
    with pytest.raises(InvalidMeasure):
        parse_measure("support_precision(citations=last)")
    listing = metric_listing()
    assert "nugget_vital(strict=false)" in listing and "support_precision(citations=first)" in listing
    assert "v_strict" in listing  # the aliases are listed


def test_a_ranked_list_evaluation_refuses_the_rag_metrics() -> None:
    qrels = parse_qrels(b"1 0 d1 1\n", "q")
    run = parse_run(b"1 Q0 d1 1 1.0 r\n", "r")
    with pytest.raises(InvalidMeasure) as info:
        evaluate(qrels, [run], ["nDCG@10", "V_strict"])
    assert "answers" in str(info.value)


def test_the_six_nugget_scores_on_a_hand_computed_answer() -> None:
    codes = np.array([2, 1, 0, 2, 1])  # support, partial, not, support, partial
    vital = np.array([True, True, True, False, False])
    want = {"A": 3 / 5, "A_strict": 2 / 5, "V": 1.5 / 3, "V_strict": 1 / 3,
            "W": (1 + 0.5 + 0 + 0.5 + 0.25) / 4, "W_strict": (1 + 0 + 0 + 0.5 + 0) / 4}
    for name, value in want.items():
        assert nugget_score(parse_measure(name), codes, vital) == pytest.approx(value, abs=1e-12), name
    okay_only = np.array([False] * 5)
    assert math.isnan(nugget_score(parse_measure("V_strict"), codes, okay_only))
    assert nugget_score(parse_measure("W"), codes, okay_only) == pytest.approx(3 / 5)


def test_the_papers_worked_example() -> None:
    """Thakur et al.: three sentences, partial support, full support, no citation: P 0.75, R 0.5."""
    c = support_scores([[1], [2], []])
    assert (c.precision, c.recall, c.judged_pairs, c.sentences) == (0.75, 0.5, 2, 3)
    assert support_scores([[1], [2], []], "every") == c


def test_first_and_every_citation_and_unjudged_pairs() -> None:
    answer = [[0, 2], [2, -1], [-1, 1], [-1], []]
    first = support_scores(answer, "first")
    # first citations: 0, 2, -1 (unjudged), -1 (unjudged), none
    assert first.precision == pytest.approx(1 / 2) and first.judged_pairs == 2 and first.unjudged_pairs == 2
    # recall: sentences 0 (0), 1 (1), 4 (no citation, 0); 2 and 3 left out (their used citation unjudged)
    assert first.recall == pytest.approx(1 / 3) and first.sentences == 3 and first.unjudged_sentences == 2
    every = support_scores(answer, "every")
    # judged pairs: 0, 2, 2, 1 -> (0 + 1 + 1 + 0.5) / 4; unjudged: 2 (sentences 1 and 2) + 1 (sentence 3)
    assert every.precision == pytest.approx(2.5 / 4) and every.unjudged_pairs == 3
    # recall: best judged citation of sentences 0-2 (1, 1, 0.5), sentence 4 (0); sentence 3 left out
    assert every.recall == pytest.approx(2.5 / 4) and every.unjudged_sentences == 1
    none = support_scores([[], []])
    assert math.isnan(none.precision) and none.recall == 0.0
    assert math.isnan(support_scores([[-1]]).precision) and math.isnan(support_scores([[-1]]).recall)


def rows() -> bytes:
    n = [("a", "vital"), ("b", "okay")]
    only_okay = [("c", "okay")]

    def row(qid: str, run: str, items: list[tuple[str, str]], labels: list[str]) -> dict[str, Any]:
        return {"qid": qid, "run_id": run, "nuggets": [{"text": t, "importance": i, "assignment": a}
                                                       for (t, i), a in zip(items, labels)]}

    return jl(row("1", "r1", n, ["support", "partial_support"]), row("1", "r2", n, ["not_support", "support"]),
              row("2", "r1", n, ["partial_support", "support"]),  # r2 did not answer topic 2
              row("3", "r1", only_okay, ["support"]), row("3", "r2", only_okay, ["not_support"]))


def test_a_runs_score_is_the_mean_over_topics_with_unanswered_topics_zero() -> None:
    a = read_assignments(rows(), "as")
    r = evaluate_rag(["A", "V_strict"], a)
    ev = r.evaluation
    assert ev.runs == ("r1", "r2") and ev.topics == ("1", "2", "3")
    assert ev.per_topic("A").tolist() == [[0.75, 0.75, 1.0], [0.5, 0.0, 0.0]]
    assert ev.means("A").tolist() == pytest.approx([2.5 / 3, 0.5 / 3])
    v = ev.per_topic("V_strict")
    assert v[0, :2].tolist() == [1.0, 0.0] and v[1, :2].tolist() == [0.0, 0.0] and np.isnan(v[:, 2]).all()
    # topic 3 has no vital nugget: undefined for both runs, stated, left out of the mean
    assert ev.means("V_strict").tolist() == [0.5, 0.0]
    assert {(run, t) for run, t, _ in r.undefined["nugget_vital(strict=true)"]} == {("r1", "3"), ("r2", "3")}
    assert r.evaluated[parse_measure("V_strict")][:, 2].all()  # evaluated, and undefined
    skip = evaluate_rag(["A"], a, missing="skip").evaluation
    assert np.isnan(skip.per_topic("A")[1, 1]) and skip.means("A")[1] == pytest.approx(0.25)


def support_line(topic: str, run: str, sentences: list[list[Any]]) -> dict[str, Any]:
    return {"topic_id": topic, "run_id": run, "sentences": [
        {"sentenceID": i, "text": "s", "citations": [{"citationID": j, "reference": "x", "support": str(c)}
                                                     for j, c in enumerate(cits)]} for i, cits in enumerate(sentences)]}


def test_support_scores_per_run_and_topic_with_team_run_ids() -> None:
    a = read_assignments(rows(), "as")
    sup = read_support(jl(support_line("1", "team.r1", [[1], [2], []]), support_line("4", "team.r1", [[0]]),
                          support_line("1", "other.r2", [[-1], []])), "s")
    r = evaluate_rag(["support_precision", "support_recall", "A"], a, sup)
    ev = r.evaluation
    assert ev.topics == ("1", "2", "3", "4") and ev.runs == ("r1", "r2")
    p, rec = ev.per_topic("support_precision"), ev.per_topic("support_recall")
    assert p[0, 0] == 0.75 and rec[0, 0] == 0.5 and p[0, 3] == 0.0 and rec[0, 3] == 0.0
    assert np.isnan(p[1, 0]) and rec[1, 0] == 0.0  # no judged pair: no precision; the uncited sentence: 0
    assert p[1, 3] == 0.0 and r.evaluated[parse_measure("support_precision")][1, 3]  # not answered: 0
    assert not r.evaluated[parse_measure("support_precision")][:, 1:3].any()  # topics no support file has
    assert ev.means("support_precision").tolist() == [0.375, 0.0]
    assert r.undefined["support_precision"] == [("r2", "1", "no judged citation")]
    assert r.unjudged[("r2", "1")] == {"first": (1, 1), "every": (1, 1)} and r.unmatched == ()


def test_an_answer_no_support_file_judged_has_no_precision_not_zero() -> None:
    """r2 answered topic 1 (the assignments have it) but no support file judged its citations:
    no judged pair, so no precision (undefined, left out of the mean), where recall counts its
    sentences as unsupported. (A run no support file names at all is listed as not judged.)"""
    a = read_assignments(rows(), "as")
    sup = read_support(jl(support_line("1", "team.r1", [[2]]), support_line("4", "team.r2", [[1]])), "s")
    r = evaluate_rag(["support_precision", "support_recall"], a, sup)
    p, rec = r.evaluation.per_topic("support_precision"), r.evaluation.per_topic("support_recall")
    assert r.evaluation.runs == ("r1", "r2") and r.evaluation.topics == ("1", "2", "3", "4")
    assert np.isnan(p[1, 0]) and r.evaluated[parse_measure("support_precision")][1, 0]
    assert ("r2", "1", "no judged citation (not in the support judgments)") in r.undefined["support_precision"]
    assert rec[1, 0] == 0.0 and p[1, 3] == 0.5 and rec[1, 3] == 0.5
    assert p[0, 3] == 0.0 and r.evaluated[parse_measure("support_precision")][0, 3]  # r1 did not answer 4: 0
    assert r.evaluation.means("support_precision").tolist() == [0.5, 0.5]  # r2: its one defined topic, 4


def test_support_run_ids_matched_and_the_unmatched_stated() -> None:
    matched, unmatched = match_runs(["t.a", "a2", "webis.webis-manual", "x.y.z"], ["a", "a2", "y.z", "webis-manual-manual"])
    assert matched == {"t.a": "a", "a2": "a2", "x.y.z": "y.z"} and unmatched == ("webis.webis-manual",)
    matched, unmatched = match_runs(["webis.webis-manual"], ["webis-manual-manual"],
                                    {"webis.webis-manual": "webis-manual-manual"})
    assert matched == {"webis.webis-manual": "webis-manual-manual"} and unmatched == ()
    with pytest.raises(InvalidInput):
        match_runs(["t.a", "u.a"], ["a"])
    with pytest.raises(InvalidInput):
        match_runs([], ["a"], {"x": "nope"})


def test_an_answer_judged_in_two_support_files_is_refused() -> None:
    """The same answer in two files (the same id, or two ids matched to one run): refused with
    the file and line of both, or naming both ids."""
    one = read_support(jl(support_line("1", "t.r1", [[2]])), "one")
    again = read_support(jl(support_line("2", "t.r1", [[1]]), support_line("1", "t.r1", [[2]])), "two")
    a = read_assignments(rows(), "as")
    with pytest.raises(InvalidInput) as info:
        evaluate_rag(["support_recall"], a, one + again)
    assert str(info.value) == "two:2: run 't.r1' on topic '1' is judged again (one:1)"
    other_team = read_support(jl(support_line("1", "u.r1", [[2]])), "three")
    with pytest.raises(InvalidInput) as info:
        evaluate_rag(["support_recall"], a, one + other_team)
    assert "the support runs 't.r1' and 'u.r1' both match run 'r1'" in str(info.value)


def test_a_collections_judgments_refuse_at_the_upload_what_the_scoring_would_refuse() -> None:
    """answer_bundle.read (an upload's check) matches the support ids to the assignments' runs
    as the workers' scoring does: a conflict is refused before anything is stored, not in every
    evaluation afterwards."""
    from service.evaluation.organising import answer_bundle

    def part(data: bytes, source: str) -> dict[str, Any]:
        return answer_bundle.as_part(data, source)

    parts = {"assignments": part(rows(), "as.jl"), "support": [part(jl(support_line("1", "t.r1", [[2]])), "s1.jl"),
                                                               part(jl(support_line("1", "u.r1", [[2]])), "s2.jl")]}
    with pytest.raises(InvalidInput) as info:
        answer_bundle.read(parts)
    assert "both match run 'r1'" in str(info.value)
    parts["support"] = parts["support"][:1]
    assert len(answer_bundle.read(parts).support) == 1


def test_metrics_without_their_judgments_are_refused() -> None:
    with pytest.raises(InvalidMeasure):
        evaluate_rag(["V_strict"], None, read_support(jl(support_line("1", "r", [[2]])), "s"))
    with pytest.raises(InvalidMeasure):
        evaluate_rag(["support_precision"], read_assignments(rows(), "as"))
    with pytest.raises(InvalidMeasure):
        evaluate_rag(["nDCG@10"], read_assignments(rows(), "as"))


def test_a_ranked_list_collection_refuses_a_rag_metric_when_configured() -> None:
    from service.evaluation.organising.setup import ConfigSpec

    assert ConfigSpec(official_metric="nDCG@10").normalised()["official_metric"] == "nDCG@10"
    for spec in (ConfigSpec(official_metric="V_strict"), ConfigSpec(official_metric="AP", metrics=("AP", "support_recall"))):
        with pytest.raises(InvalidMeasure) as info:
            spec.normalised()
        assert "generated answers" in str(info.value)
