"""The RAG metrics on NIST's real TREC 2024 RAG judgments (../shared/data/trec-rag24, README
there): 45 runs x 21 topics of nugget assignments, 45 runs x 23 topics of citation support.

Checked against (1) an independent computation written here from the definitions (plain
Python over the files' JSON, no Cranfield code) for the six nugget scores per topic and per
run and for support precision and recall on every (topic, run) of both support files, and
(2) castorini/nuggetizer's own ``calculate_nugget_scores`` / ``calculate_global_metrics`` on
its four scores, per record and over the records. nuggetizer is installed without its
dependencies (its metrics module needs none: ``pip install --no-deps nuggetizer==0.0.5``,
.ci/run); under CI a missing file or peer fails, never skips.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.cli import main
from service.formats.compressed import read_file
from service.formats.rag_judgments import read_assignments, read_support
from service.metrics.rag_scoring import evaluate_rag
from tests.conftest import require_shared

pytestmark = pytest.mark.peer

ASSIGNMENTS = "nugget_assignment.20241108.jl.gz"
SUPPORT = ("final.citation_judgments_with_prediction.20241025.jsonl.gz",
           "final.citation_judgments_without_prediction.20241025.jsonl.gz")
NUGGET_NAMES = ("A", "A_strict", "V", "V_strict", "W", "W_strict")


@pytest.fixture(scope="module")
def data() -> Path:
    return require_shared("data/trec-rag24")


def _nuggetizer() -> Any:
    try:
        from nuggetizer.core import metrics  # type: ignore[import-not-found]
    except ImportError:
        message = "nuggetizer is not installed (pip install --no-deps nuggetizer==0.0.5: its metrics need no dependency)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return metrics


def _records(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]  # (json reads the bare NaN tokens)


# ----------------------------------------------------------------------------- the definitions, independently


def _nugget_values(nuggets: list[dict[str, str]]) -> dict[str, float | None]:
    """The six scores of one answer, from the definitions (None: undefined)."""
    out: dict[str, float | None] = {}
    for strict in (False, True):
        def credit(n: dict[str, str], strict: bool = strict) -> float:
            return {"support": 1.0, "partial_support": 0.0 if strict else 0.5}.get(n["assignment"], 0.0)

        suffix = "_strict" if strict else ""
        vital = [n for n in nuggets if n["importance"] == "vital"]
        out["A" + suffix] = sum(credit(n) for n in nuggets) / len(nuggets)
        out["V" + suffix] = sum(credit(n) for n in vital) / len(vital) if vital else None
        weight = {"vital": 1.0, "okay": 0.5}
        out["W" + suffix] = (sum(weight[n["importance"]] * credit(n) for n in nuggets)
                             / sum(weight[n["importance"]] for n in nuggets))
    return out


def _support_values(sentences: list[dict[str, Any]], every: bool) -> tuple[float | None, float | None]:
    """Weighted precision and recall of one answer, from the definitions (None: undefined)."""
    credit = {"2": 1.0, "1": 0.5, "0": 0.0}
    pair_sum, pairs, recall_sum, recall_n = 0.0, 0, 0.0, 0
    for s in sentences:
        cits = s["citations"] if every else s["citations"][:1]
        judged = [credit[str(c["support"])] for c in cits if str(c["support"]) != "-1"]
        pair_sum += sum(judged)
        pairs += len(judged)
        if cits and not judged:
            continue
        recall_n += 1
        recall_sum += max(judged, default=0.0)
    return (pair_sum / pairs if pairs else None), (recall_sum / recall_n if recall_n else None)


def _close(got: float, want: float | None) -> bool:
    return math.isnan(got) if want is None else abs(got - want) < 1e-12


# ----------------------------------------------------------------------------- tests


def test_the_six_nugget_scores_per_topic_and_per_run_on_nists_assignments(data: Path) -> None:
    records = _records(data / ASSIGNMENTS)
    result = evaluate_rag(NUGGET_NAMES, read_assignments(read_file(data / ASSIGNMENTS), ASSIGNMENTS)).evaluation
    runs = sorted({r["run_id"] for r in records})
    topics = sorted({r["qid"] for r in records})
    assert (len(runs), len(topics), len(records)) == (45, 21, 927)
    assert result.runs == tuple(runs) and result.topics == tuple(topics)
    by_cell = {(r["run_id"], r["qid"]): _nugget_values(r["nuggets"]) for r in records}
    checked = 0
    for name in NUGGET_NAMES:
        per_topic = result.per_topic(name)
        means = result.means(name)
        for i, run in enumerate(runs):
            values = []
            for j, topic in enumerate(topics):
                want = by_cell[(run, topic)][name] if (run, topic) in by_cell else 0.0  # not answered: 0
                assert _close(float(per_topic[i, j]), want), (name, run, topic)
                values.append(want)
                checked += 1
            defined = [v for v in values if v is not None]
            assert abs(float(means[i]) - sum(defined) / len(defined)) < 1e-12, (name, run)
    assert checked == 6 * 45 * 21


def test_nuggetizers_own_metrics_per_record_and_over_the_records(data: Path) -> None:
    metrics = _nuggetizer()
    records = _records(data / ASSIGNMENTS)
    result = evaluate_rag(NUGGET_NAMES, read_assignments(read_file(data / ASSIGNMENTS), ASSIGNMENTS)).evaluation
    fields = {"A": "all_score", "A_strict": "strict_all_score", "V": "vital_score", "V_strict": "strict_vital_score"}
    for record in records:
        theirs = metrics.calculate_nugget_scores(record["qid"], record["nuggets"])
        i, j = result.runs.index(record["run_id"]), result.topics.index(record["qid"])
        for name, field in fields.items():
            assert abs(float(result.per_topic(name)[i, j]) - getattr(theirs, field)) < 1e-12, (name, record["run_id"])
    # nuggetizer averages over the records (every answered (run, topic)); Cranfield per run over
    # its topics, an unanswered one 0. Over the records, Cranfield's per-topic values give its means.
    overall = metrics.calculate_global_metrics(records)
    skip = evaluate_rag(NUGGET_NAMES, read_assignments(read_file(data / ASSIGNMENTS), ASSIGNMENTS),
                        missing="skip").evaluation
    for name, field in fields.items():
        answered = skip.per_topic(name)[~np.isnan(skip.per_topic(name))]
        assert abs(float(answered.mean()) - overall[field]) < 1e-12, name


def test_support_precision_and_recall_on_every_topic_and_run_of_both_files(data: Path) -> None:
    records = [(name, r) for name in SUPPORT for r in _records(data / name)]
    assert len(records) == 585 + 381
    support = [a for name in SUPPORT for a in read_support(read_file(data / name), name)]
    names = ("support_precision", "support_recall", "support_precision(citations=every)",
             "support_recall(citations=every)")
    # matched to no assignments: each support run is scored under its own id
    result = evaluate_rag(names, None, support)
    ev = result.evaluation
    assert len(ev.runs) == 45 and len(ev.topics) == 23
    checked = 0
    for _, r in records:
        i, j = ev.runs.index(r["run_id"]), ev.topics.index(r["topic_id"])
        for every in (False, True):
            p, rec = _support_values(r["sentences"], every)
            suffix = "(citations=every)" if every else ""
            assert _close(float(ev.per_topic("support_precision" + suffix)[i, j]), p), r["run_id"]
            assert _close(float(ev.per_topic("support_recall" + suffix)[i, j]), rec), r["run_id"]
            checked += 1
    assert checked == 2 * 966
    # an answer the files do not judge scores 0 on the run's topics (45 x 23 cells, 966 judged)
    judged = {(r["run_id"], r["topic_id"]) for _, r in records}
    zeros = [(run, t) for run in ev.runs for t in ev.topics if (run, t) not in judged]
    assert len(zeros) == 45 * 23 - 966
    for run, t in zeros:
        assert ev.per_topic("support_recall")[ev.runs.index(run), ev.topics.index(t)] == 0.0


def test_file_mode_on_the_real_files_matches_the_team_run_ids(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["rag", "eval", "--assignments", str(data / ASSIGNMENTS), "-m", "V_strict", "-m", "support_recall"]
    for name in SUPPORT:
        args += ["--support", str(data / name)]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "'webis.webis-manual' matches no assignments run" in err
    rows = [line.split("\t") for line in out.splitlines()]
    assert {r[1] for r in rows} == {"all"}
    assert {r[0] for r in rows if r[2] == "support_recall"} >= {"webis.webis-manual", "zeph_test_rag_rrf_expand_query"}
    assert main(args + ["--run-map", "webis.webis-manual=webis-manual-manual", "--per-topic"]) == 0
    out, err = capsys.readouterr()
    assert "matches no assignments run" not in err
    rows = [line.split("\t") for line in out.splitlines()]
    runs = {r[0] for r in rows}
    assert len(runs) == 45 and "webis-manual-manual" in runs
    assert len([r for r in rows if r[2] == "nugget_vital(strict=true)" and r[1] != "all"]) == 45 * 21
    assert len([r for r in rows if r[2] == "support_recall" and r[1] != "all"]) == 45 * 23
