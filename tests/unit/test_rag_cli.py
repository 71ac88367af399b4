"""``cranfield rag eval`` and ``cranfield rag validate`` (service/cli/rag.py) on small files:
the TSV and JSON answers, undefined values printed as such, notes on standard error, the exit
codes of refusals."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from service.cli import main


def write(path: Path, *objs: Any, gz: bool = False) -> str:
    data = "".join(json.dumps(o) + "\n" for o in objs).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


def row(qid: str, run: str, labels: list[str], importance: list[str]) -> dict[str, Any]:
    return {"qid": qid, "run_id": run, "nuggets": [{"text": f"n{k}", "importance": i, "assignment": a}
                                                   for k, (i, a) in enumerate(zip(importance, labels))]}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    imp = ["vital", "okay"]
    return {
        "assignments": write(tmp_path / "assign.jl.gz",
                             row("1", "r1", ["support", "partial_support"], imp),
                             row("1", "r2", ["not_support", "support"], imp),
                             row("2", "r1", ["support"], ["okay"]), gz=True),
        "nuggets": write(tmp_path / "nuggets.jl", {"qid": "1", "query": "q", "nuggets": [
            {"text": "n0", "importance": "vital"}, {"text": "n1", "importance": "okay"}]},
            {"qid": "2", "query": "q", "nuggets": [{"text": "n0", "importance": "okay"}]}),
        "support": write(tmp_path / "support.jsonl", {"topic_id": "1", "run_id": "team.r1", "sentences": [
            {"sentenceID": 0, "text": "a", "citations": [{"citationID": 0, "reference": "x", "support": "1"}]},
            {"sentenceID": 1, "text": "b", "citations": [{"citationID": 0, "reference": "y", "support": "2"}]},
            {"sentenceID": 2, "text": "c", "citations": []}]}),
    }


def test_rag_eval_tsv_per_topic_and_means(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rag", "eval", "--assignments", files["assignments"], "--nuggets", files["nuggets"],
                 "--support", files["support"], "-m", "V_strict", "-m", "A", "-m", "support_precision",
                 "-m", "support_recall", "--per-topic"]) == 0
    out, err = capsys.readouterr()
    rows = [tuple(line.split("\t")) for line in out.splitlines()]
    assert ("r1", "1", "nugget_vital(strict=true)", "1.0000") in rows
    assert ("r1", "2", "nugget_vital(strict=true)", "undefined") in rows  # topic 2 has no vital nugget
    assert ("r1", "all", "nugget_vital(strict=true)", "1.0000") in rows  # undefined left out of the mean
    assert ("r2", "2", "nugget_all", "0.0000") in rows and ("r2", "all", "nugget_all", "0.2500") in rows
    assert ("r1", "1", "support_precision", "0.7500") in rows and ("r1", "1", "support_recall", "0.5000") in rows
    assert not any(r[0] == "r2" and r[2].startswith("support") for r in rows)  # no support judgments for r2
    assert "undefined on 2 (run, topic)" in err and "no support judgments for 1 run," in err


def test_rag_eval_json(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rag", "eval", "--assignments", files["assignments"], "--format", "json", "--per-topic"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"] == {"missing": "zero"} and doc["topics"] == ["1", "2"]
    assert set(doc["runs"]["r1"]) == {"nugget_all", "nugget_all(strict=true)", "nugget_vital",
                                      "nugget_vital(strict=true)", "nugget_weighted", "nugget_weighted(strict=true)"}
    v = doc["runs"]["r1"]["nugget_vital(strict=true)"]
    assert v == {"mean": 1.0, "topics": 2, "per_topic": {"1": 1.0, "2": None}}
    assert doc["runs"]["r2"]["nugget_weighted"]["per_topic"] == {"1": pytest.approx(0.5 / 1.5), "2": 0.0}
    assert {(u["run"], u["topic"]) for u in doc["undefined"]["nugget_vital"]} == {("r1", "2"), ("r2", "2")}


def test_rag_eval_missing_skip_and_refusals(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rag", "eval", "--assignments", files["assignments"], "-m", "A", "--missing", "skip"]) == 0
    assert "r2\tall\tnugget_all\t0.5000" in capsys.readouterr().out
    assert main(["rag", "eval", "--assignments", files["assignments"], "-m", "nDCG@10"]) == 2
    assert "not a RAG metric" in capsys.readouterr().err
    assert main(["rag", "eval", "-m", "A"]) == 2
    assert "give --assignments FILE" in capsys.readouterr().err
    assert main(["rag", "eval", "--assignments", files["nuggets"]]) == 1  # a nuggets file is no assignment file
    assert "nuggets.jl:1: run_id: missing" in capsys.readouterr().err
    assert main(["rag", "eval", "--support", files["support"], "-m", "V"]) == 2
    assert "needs nugget assignments" in capsys.readouterr().err


def answer(topic: str, **over: Any) -> dict[str, Any]:
    d = {"run_id": "r", "topic_id": topic, "topic": "q", "references": ["s#1"], "response_length": 1,
         "answer": [{"text": "word", "citations": [0]}]}
    d.update(over)
    return d


def test_rag_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path / "good.jsonl", answer("t1"), answer("t2"))
    bad = write(tmp_path / "bad.jsonl", answer("t1"), answer("t2", answer=[{"text": "w", "citations": [4]}]),
                answer("t1"))
    topics = tmp_path / "topics.tsv"
    topics.write_text("t1\tq\nt2\tq\nt3\tq three\n")
    assert main(["rag", "validate", "--format", "rag24", "--topics", str(topics), good]) == 0
    out = capsys.readouterr().out
    assert "good.jsonl: valid, 1 warning" in out and "t3" in out
    topics.write_text("t1\tq\nt2\tanother question\n")
    assert main(["rag", "validate", "--topics", str(topics), good]) == 1
    assert "good.jsonl:2: topic: 'q' is not topic t2's text ('another question')" in capsys.readouterr().out
    assert main(["rag", "validate", good, bad]) == 1
    out = capsys.readouterr().out
    assert "good.jsonl: valid" in out and "bad.jsonl: refused, 2 errors" in out
    assert "bad.jsonl:2: answer[0].citations[0]: citation 4 is out of range" in out
    assert "bad.jsonl:3: topic_id: topic 't1' is answered twice" in out
    long = write(tmp_path / "long.jsonl", answer("t1", answer=[{"text": "w " * 30, "citations": []}]))
    assert main(["rag", "validate", "--format", "rag24", "--words", "20", long]) == 1
    assert "20 words" in capsys.readouterr().out
    assert main(["rag", "validate", "--format", "rag24", long]) == 0


def test_rag_validate_applies_a_limit_given_over_the_detected_formats_own(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """--format auto with --words: a 2025 answer keeps 2025's limit of 100 references (not
    2024's 20) while the words limit given applies."""
    refs = [f"msmarco_v2.1_doc_00_{i}#0_{i}" for i in range(30)]
    line = {"metadata": {"team_id": "team", "run_id": "r", "narrative_id": "t1", "type": "automatic",
                         "narrative": "n", "prompt": "p"},
            "references": refs, "answer": [{"text": "w " * 30, "citations": [1]}]}
    run = write(tmp_path / "a25.jsonl", line)
    assert main(["rag", "validate", "--words", "500", run]) == 0, capsys.readouterr().out
    assert "a25.jsonl: valid" in capsys.readouterr().out
    assert main(["rag", "validate", "--words", "20", run]) == 1
    out = capsys.readouterr().out
    assert "20 words" in out and "references" not in out


def test_the_answers_references_scored_as_ranked_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--answers --qrels: each answer's references in the order listed are the ranked list; the
    values equal `cranfield eval` on the same lists written as a TREC run."""
    qrels = tmp_path / "qrels"
    qrels.write_text("t1 0 s#1 3\nt1 0 s#2 0\nt1 0 s#3 1\nt2 0 s#9 2\nt3 0 s#5 1\n")
    refs = {"t1": ["s#2", "s#3", "s#1", "s#7"], "t2": ["s#8", "s#9"]}  # t3 not answered: 0
    answers = write(tmp_path / "answers.jsonl", *(answer(t, references=r, answer=[{"text": "w", "citations": [0]}])
                                                  for t, r in refs.items()))
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{t} Q0 {d} {k} {10 - k} r\n" for t, r in refs.items() for k, d in enumerate(r, 1)))
    assert main(["rag", "eval", "--answers", answers, "--qrels", str(qrels), "-m", "nDCG@20", "-m", "AP",
                 "--per-topic", "--precision", "6"]) == 0
    ours = sorted(capsys.readouterr().out.splitlines())
    assert main(["eval", "--qrels", str(qrels), "-m", "nDCG@20", "-m", "AP", "--per-topic", str(run)]) == 0
    theirs = sorted(capsys.readouterr().out.splitlines())
    assert ours == theirs and len(ours) == 2 * 4 and "r\tt3\tAP\t0.000000" in ours
    assert main(["rag", "eval", "--answers", answers, "-m", "nDCG@20"]) == 2  # --qrels missing
    assert main(["rag", "eval", "--support", str(qrels), "-m", "nDCG@20"]) == 2  # a ranked metric without answers


def test_compare_tests_runs_on_the_rag_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cranfield compare --assignments: the paired t-test on the per-topic V_strict values,
    equal to scipy's on the values computed by hand here."""
    from scipy import stats

    imp = ["vital", "vital", "okay"]
    labels = {"r1": [["support", "support", "support"], ["support", "not_support", "support"],
                     ["partial_support", "support", "not_support"], ["support", "support", "support"]],
              "r2": [["not_support", "support", "support"], ["not_support", "not_support", "support"],
                     ["support", "not_support", "not_support"], ["support", "partial_support", "support"]]}
    path = write(tmp_path / "a.jl", *(row(str(t), run, ls, imp) for run, per in labels.items()
                                      for t, ls in enumerate(per)))
    by_hand = {run: [sum(a == "support" for a in ls[:2]) / 2 for ls in per] for run, per in labels.items()}
    assert main(["compare", "--assignments", path, "-m", "V_strict", "--test", "t", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)["metrics"]["nugget_vital(strict=true)"]
    assert doc["topics"] == 4
    assert [r["mean"] for r in doc["runs"]] == pytest.approx([sum(v) / 4 for v in by_hand.values()])
    pair = doc["pairs"][0]
    assert pair["p"] == pytest.approx(stats.ttest_rel(by_hand["r1"], by_hand["r2"]).pvalue, rel=1e-9)
    assert main(["compare", "--assignments", path, "--qrels", path, "x"]) == 2  # one kind of input
