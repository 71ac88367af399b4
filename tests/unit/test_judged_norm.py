"""Judged(norm=retrieved)@k: judged documents in the top k over min(k, list length), the
denominator of ir_measures' Judged@k (tests/peers/test_tool_differences.py runs ir_measures)."""

from __future__ import annotations

import pytest

from service.errors import InvalidMeasure
from service.formats.types import Qrels, Run
from service.metrics import EvalSettings, evaluate
from service.metrics.spec import parse_measure

QRELS = Qrels.from_mapping({"t1": {"a": 1, "b": 0, "u": -1}, "t2": {"a": 1}, "t3": {"a": 1}})
# t1: 4 documents, a and b judged (u is pooled but unjudged, x not pooled); t2: 12 documents,
# a judged; t3: an empty list.
RUN = Run.from_rankings("r", {"t1": ["a", "x", "b", "u"], "t2": ["a"] + [f"n{i}" for i in range(11)], "t3": []})


def per_topic(measure: str) -> list[float]:
    ev = evaluate(QRELS, [RUN], [measure], EvalSettings())
    return ev.per_topic(measure)[0].tolist()


def test_the_denominator_is_the_documents_in_the_top_k() -> None:
    assert per_topic("Judged(norm=retrieved)@10") == pytest.approx([2 / 4, 1 / 10, 0.0])
    assert per_topic("Judged@10") == pytest.approx([2 / 10, 1 / 10, 0.0])
    # a list of at least k documents: the two agree
    assert per_topic("Judged(norm=retrieved)@3") == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert per_topic("Judged@3") == per_topic("Judged(norm=retrieved)@3")


def test_names() -> None:
    assert str(parse_measure("Judged(norm=k)@10")) == "Judged@10"
    assert str(parse_measure("judged(norm=retrieved)@10")) == "Judged(norm=retrieved)@10"
    with pytest.raises(InvalidMeasure, match=r"e\.g\. Judged\(norm=retrieved\)@10"):
        parse_measure("Judged(norm=retrieved)")  # without a cutoff the denominator is the list length anyway
    with pytest.raises(InvalidMeasure, match="norm is one of k, retrieved"):
        parse_measure("Judged(norm=minRk)@10")
