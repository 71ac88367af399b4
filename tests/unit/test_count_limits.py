"""Counts an organiser's file can inflate beyond its size, bounded (issue 24, item 5): topics,
intents of a topic, judged documents x intents of a topic, assessors and labels of a document;
refused at the line where the count is first exceeded, accepted up to the limit, and unbounded
for files read without limits (``cranfield eval`` on one's own files)."""

from __future__ import annotations

import pytest

from service.errors import InvalidInput
from service.formats.diversity import parse_diversity_qrels, parse_intent_probabilities
from service.formats.labels import parse_labels
from service.formats.limits import CountLimits, running_distinct
from service.formats.readers import parse_qrels


def refused(fn) -> InvalidInput:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput) as err:
        fn()
    return err.value


def test_running_distinct_counts_each_groups_items_in_file_order() -> None:
    import numpy as np

    groups = np.array([0, 1, 0, 0, 1, 0, 1])
    items = np.array([5, 5, 5, 6, 7, 7, 5])
    assert running_distinct(groups, items).tolist() == [1, 1, 1, 2, 2, 3, 2]


def test_intents_of_a_topic_past_the_limit_are_refused_at_the_first_one_past_it() -> None:
    """The report's attack, scaled: a topic with 10**6 intents took 1.44 GB to read; past the
    limit the reader stops before any judgment becomes a Python object."""
    lines = [f"1 {i} d{i % 7} 1" for i in range(150)] + ["2 1 d1 1"]
    data = ("\n".join(["2 5 d9 0", *lines]) + "\n").encode()
    limits = CountLimits(intents_per_topic=100)
    error = refused(lambda: parse_diversity_qrels(data, "div.qrels", "trec", None, limits))
    assert (error.source, error.line) == ("div.qrels", 102)  # topic 1's 101st intent, on its 101st line + 1
    assert error.reason == "intent '100' is one more than the 100 intents a topic may have (topic '1')"
    assert len(parse_diversity_qrels(data, "div.qrels", "trec", None, CountLimits(intents_per_topic=150))) == 2
    assert len(parse_diversity_qrels(data, "div.qrels", "trec")) == 2  # no limits: read as before


def test_documents_times_intents_of_a_topic_past_the_limit_are_refused() -> None:
    data = b"".join(b"7 %d doc%d 1\n" % (i % 4, i) for i in range(30))  # 4 intents, a new document each line
    error = refused(lambda: parse_diversity_qrels(data, "div.qrels", "trec", None, CountLimits(intent_cells=40)))
    assert error.line == 11  # 11 documents x 4 intents = 44 > 40
    assert error.reason == ("topic '7' judges 11 documents for 4 intents here: 44 document-intent pairs, more "
                            "than the 40 a topic may have")
    parse_diversity_qrels(data, "div.qrels", "trec", None, CountLimits(intent_cells=120))  # 30 x 4


def test_a_probability_file_is_held_to_the_same_limits() -> None:
    data = b"".join(b"1 %d %s\n" % (i, b"0.25") for i in range(4)) + b"2 1 1\n3 1 1\n"
    error = refused(lambda: parse_intent_probabilities(data, "p.iprob", CountLimits(intents_per_topic=3)))
    assert (error.line, error.reason) == (4, "intent '3' is one more than the 3 intents a topic may have (topic '1')")
    error = refused(lambda: parse_intent_probabilities(data, "p.iprob", CountLimits(topics=2)))
    assert (error.line, error.reason) == (6, "topic '3' is one more than the 2 topics a file may hold")


def test_topics_of_a_qrels_file_past_the_limit_are_refused() -> None:
    data = b"".join(b"%d 0 d %d\n" % (t, t % 2) for t in (5, 3, 5, 9, 1, 3))
    error = refused(lambda: parse_qrels(data, "q.txt", limits=CountLimits(topics=3)))
    assert (error.line, error.reason) == (5, "topic '1' is one more than the 3 topics a file may hold")
    assert parse_qrels(data, "q.txt", limits=CountLimits(topics=4)).topics == ("1", "3", "5", "9")


def test_assessors_and_labels_of_a_document_past_the_limits_are_refused() -> None:
    data = b"t d1 ann 1\nt d1 bob 0\nt d2 ann 1\nt d1 cy 2\nt d2 dee 1\n"
    error = refused(lambda: parse_labels(data, "l.txt", CountLimits(assessors=3)))
    assert (error.line, error.reason) == (5, "assessor 'dee' is one more than the 3 assessors a label file may hold")
    error = refused(lambda: parse_labels(data, "l.txt", CountLimits(labels_per_document=2)))
    assert (error.line, error.reason) == (4, ("document 'd1' of topic 't' has a label more than the 2 one document "
                                              "may have in a label file"))
    assert len(parse_labels(data, "l.txt", CountLimits(assessors=4, labels_per_document=3))) == 5
