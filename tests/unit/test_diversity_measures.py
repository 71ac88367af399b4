"""Intent-aware measures on hand-worked cases (service/metrics/diversity.py).

Sources of the expected numbers:

* NTCIREVAL's README.diversity (Sakai; NTCIREVAL version 190111), section 3.1: the ``Dnev``
  output of ``D-NTCIR-eval`` for sample topic 0001 of ``Dtest.Iprob``/``Dtest.Dqrels`` and the
  sample run ``TRECRUN`` truncated at 10 (``glabel -truncate 10``): I-rec@0010 = 0.6667,
  MSnDCG@0010 (= D-nDCG@10) = 0.2085, Q@0010 (= D-Q@10) = 0.1263, Q-measure (= D-Q) = 0.0136,
  D#-nDCG@0010 = 0.4376, D#-Q@0010 = 0.3965, printed with four decimals. The topic's 93
  relevant documents (``jrel=93``) and intents are copied below from ``Dtest.Dqrels``; its
  judged non-relevant documents are left out (they change none of these values).
* pyndeval's README example (four subtopic judgments, a run of four documents), whose
  values are derived by hand below from ndeval's definitions.
* The other cases: arithmetic from the definitions in docs/definitions.md, written out.

Sakai & Song's papers (SIGIR 2011; Information Retrieval 2012) were not reachable to copy a
worked example from; NTCIREVAL is the tool in which Sakai defines the D#-measures.
"""

from __future__ import annotations

import math

import pytest

from service.errors import InvalidMeasure
from service.formats.diversity import IntentQrels
from service.metrics.diversity import (
    NAMES,
    DiversityEvaluator,
    PreparedTopic,
    alpha_dcg,
    alpha_ndcg,
    d_ndcg,
    d_q,
    d_sharp_ndcg,
    d_sharp_q,
    err_ia,
    evaluate_diversity,
    i_rec,
    map_ia,
    nerr_ia,
    nnrbp,
    nrbp,
    p_ia,
    parse_diversity_measure,
    s_recall,
)
from service.metrics.spec import REGISTRY

log2 = math.log2

# --------------------------------------------------------------------------- NTCIREVAL's example

#: Topic 0001 of NTCIREVAL's Dtest.Dqrels: "intents:docno" of every L1 document (docnos
#: without their "clueweb09-" prefix). Every judgment of this topic is L1.
TOPIC_0001 = """\
2,3:en0001-02-21241 2:en0006-52-11056 2,3:en0009-48-37458 2,3:en0010-27-33585 3:en0010-57-32927
2,3:en0020-29-24783 2,3:en0024-15-26205 2:en0024-52-20047 3:en0025-09-34196 2,3:en0025-09-34197
2,3:en0025-89-06994 2,3:en0038-74-08247 1,3:en0038-74-08250 2,3:en0038-74-08251 2:en0043-86-05608
3:en0043-95-23333 2:en0048-08-23614 2:en0053-22-05225 3:en0054-92-07349 2:en0080-93-13806
3:en0094-62-39727 3:en0096-86-16391 2:en0101-64-04019 2,3:en0104-24-18374 2:en0107-80-01451
2:en0121-78-15657 2,3:en0122-51-07029 2,3:enwp00-00-09498 2,3:enwp00-02-18512 2,3:enwp00-04-09625
2,3:enwp00-09-18461 2,3:enwp00-10-18508 2,3:enwp00-13-12487 2,3:enwp00-17-05844 2:enwp00-26-05016
2,3:enwp00-26-05017 2:enwp00-26-05018 2,3:enwp00-26-05020 2,3:enwp00-26-05310 2,3:enwp00-26-05573
3:enwp00-26-06928 2:enwp00-27-06080 2,3:enwp00-27-06081 2,3:enwp00-32-05474 2,3:enwp00-34-01973
2,3:enwp00-39-09864 2,3:enwp00-41-06215 2,3:enwp00-61-20162 2,3:enwp00-63-13044 2,3:enwp00-64-03709
2,3:enwp00-73-03600 2,3:enwp00-74-19320 2,3:enwp00-81-12487 2,3:enwp00-83-00422 2,3:enwp00-84-01453
2,3:enwp00-93-18081 2,3:enwp00-96-09495 2,3:enwp01-05-15735 1,3:enwp01-17-11113 2,3:enwp01-17-11114
3:enwp01-23-15260 2,3:enwp01-24-11888 3:enwp01-24-19646 2,3:enwp01-27-10275 2,3:enwp01-27-11404
2,3:enwp01-31-11362 2,3:enwp01-37-13399 2,3:enwp01-38-03709 2,3:enwp01-39-17275 2,3:enwp01-46-08867
2,3:enwp01-46-16146 2,3:enwp01-49-16274 2,3:enwp01-57-20785 2:enwp01-59-16155 2,3:enwp01-59-16163
2,3:enwp01-59-16165 2,3:enwp01-65-13288 2,3:enwp01-66-09051 2,3:enwp01-75-20596 2,3:enwp01-78-05015
2,3:enwp01-78-05018 2,3:enwp01-78-05310 2,3:enwp01-84-19320 3:enwp01-93-08892 2,3:enwp02-06-15081
2,3:enwp02-24-15735 2,3:enwp03-00-06901 2,3:enwp03-00-13594 2,3:enwp03-01-06733 2,3:enwp03-07-02998
2,3:enwp03-13-02851 2,3:enwp03-15-06750 2,3:enwp03-16-16773
"""
#: Dtest.Iprob, topic 0001.
PROBS_0001 = {"1": 0.5714, "2": 0.2857, "3": 0.1429}
#: The top 10 of topic 0001 in NTCIREVAL's sample TRECRUN (ranks 1-10); the relevant ones are
#: ranks 3 (intents 2,3), 4 (intent 2) and 5 (intents 2,3): the Dnev's "r1=3", "P@0010=0.3000".
TRECRUN_0001 = ["en0010-57-32932", "en0011-02-12744", "en0001-02-21241", "en0043-86-05608", "enwp01-27-10275",
                "en0010-93-11761", "en0010-57-32937", "en0052-96-34055", "en0032-47-04188", "en0022-20-06969"]


def ntcireval_sample() -> tuple[IntentQrels, dict[str, list[str]]]:
    judgments: dict[str, dict[str, int]] = {}
    for item in TOPIC_0001.split():
        intents, doc = item.split(":")
        for i in intents.split(","):
            judgments.setdefault(i, {})["clueweb09-" + doc] = 1
    qrels = IntentQrels.from_mapping({"0001": judgments}, {"0001": PROBS_0001})
    return qrels, {"0001": ["clueweb09-" + d for d in TRECRUN_0001]}


def test_ntcireval_readme_example() -> None:
    qrels, run = ntcireval_sample()
    assert sum(1 for _ in {d for j in qrels["0001"].judgments for d in j}) == 93  # jrel=93
    got = evaluate_diversity(qrels, run, ["I-rec@10", "D-nDCG@10", "D-Q@10", "D-Q", "D#-nDCG@10", "D#-Q@10"])
    expected = {"I-rec@10": 0.6667, "D-nDCG@10": 0.2085, "D-Q@10": 0.1263, "D-Q": 0.0136,
                "D#-nDCG@10": 0.4376, "D#-Q@10": 0.3965}
    for name, value in expected.items():
        assert got[name]["0001"] == pytest.approx(value, abs=5e-5), name
    # I-rec@n, n = 3 intents: "I-rec@n= 0.6667".
    assert got.topics == ("0001",) and i_rec(run["0001"], qrels["0001"], 3) == pytest.approx(2 / 3)


def test_ntcireval_example_by_hand() -> None:
    """The same D-nDCG@10 from the definition: GG = 0.2857 + 0.1429 = 0.4286 for intents {2,3},
    0.2857 for {2}; the ideal list holds the two {1,3} documents (0.7143) then {2,3} ones."""
    qrels, run = ntcireval_sample()
    disc = [1 / log2(r + 1) for r in range(1, 11)]
    actual = 0.4286 * disc[2] + 0.2857 * disc[3] + 0.4286 * disc[4]
    ideal = 0.7143 * (disc[0] + disc[1]) + 0.4286 * sum(disc[2:])
    assert d_ndcg(run["0001"], qrels["0001"], 10) == pytest.approx(actual / ideal, rel=1e-12)


# --------------------------------------------------------------------------- pyndeval's example


def pyndeval_example() -> tuple[IntentQrels, list[str]]:
    """Subtopics a: {A}, b: {B, D}, c: {C}; the run A, D, E (unjudged), B."""
    qrels = IntentQrels.from_mapping({"0": {"a": {"A": 1}, "b": {"B": 1, "D": 1}, "c": {"C": 1}}})
    return qrels, ["A", "D", "E", "B"]


def test_ndeval_family_by_hand() -> None:
    qrels, run = pyndeval_example()
    topic = qrels["0"]
    # Novelty gains, alpha = 0.5: G = 1 (A: a), 1 (D: b), 0 (E), 0.5 (B: b seen once).
    gains = [1.0, 1.0, 0.0, 0.5]
    # Greedy ideal: all four documents score 1 at rank 1, the greatest docno wins (D, b);
    # then A and C tie at 1 (C wins), then A (1), then B (0.5): G* = 1, 1, 1, 0.5.
    ideal = [1.0, 1.0, 1.0, 0.5]
    assert list(PreparedTopic(topic).ideal_gains(0.5, 1)) == ideal
    dcg5 = sum(g / log2(r + 2) for r, g in enumerate(gains))
    assert alpha_ndcg(run, topic, 5) == pytest.approx(dcg5 / sum(g / log2(r + 2) for r, g in enumerate(ideal)))
    ideal_ideal = [3 * 0.5**r / log2(r + 2) for r in range(5)]  # S = 3 intents at every rank
    assert alpha_dcg(run, topic, 5) == pytest.approx(dcg5 / sum(ideal_ideal))
    err5 = sum(g / (r + 1) for r, g in enumerate(gains))  # 1.625
    assert err_ia(run, topic, 5) == pytest.approx(err5 / sum(3 * 0.5**r / (r + 1) for r in range(5)))
    assert nerr_ia(run, topic, 5) == pytest.approx(err5 / sum(g / (r + 1) for r, g in enumerate(ideal)))
    # NRBP = (1 - (1 - alpha) beta)/S sum beta^(r-1) G(r) = 0.75/3 * (1 + 0.5 + 0.5^3 0.5) = 0.390625.
    assert nrbp(run, topic) == 0.390625
    assert nnrbp(run, topic) == pytest.approx(1.5625 / (1 + 0.5 + 0.25 + 0.0625))
    # MAP-IA: AP_a = 1, AP_b = (1/2 + 2/4)/2, AP_c = 0.
    assert map_ia(run, topic) == 0.5
    assert p_ia(run, topic, 5) == pytest.approx(3 / 15)
    assert s_recall(run, topic, 5) == pytest.approx(2 / 3) and s_recall(run, topic, 1) == pytest.approx(1 / 3)
    # pyndeval's README prints (four decimals): ERR-IA@5 0.3933, nERR-IA@5 0.8297,
    # alpha-DCG@5 0.4052, alpha-nDCG@5 0.7868, nNRBP 0.8620.
    for f, printed in [(err_ia, 0.3933), (nerr_ia, 0.8297), (alpha_dcg, 0.4052), (alpha_ndcg, 0.7868)]:
        assert f(run, topic, 5) == pytest.approx(printed, abs=1e-4)
    assert nnrbp(run, topic) == pytest.approx(0.8620, abs=1e-4)


def test_the_greedy_ideal_can_be_beaten() -> None:
    """ndeval's greedy ideal is an approximation: here its docno tie-break picks C {1,3} first,
    so the ideal's G = 2, 1.5, 1.5, while the run A {1,2}, B {3,4} has G = 2, 2: alpha-nDCG@2
    exceeds 1 (as it does in ndeval; see tests/peers/test_diversity_peers.py)."""
    qrels = IntentQrels.from_mapping({"t": {"1": {"A": 1, "C": 1}, "2": {"A": 1}, "3": {"B": 1, "C": 1},
                                            "4": {"B": 1}}})
    topic = qrels["t"]
    assert list(PreparedTopic(topic).ideal_gains(0.5, 1)) == [2.0, 1.5, 1.5]
    value = alpha_ndcg(["A", "B"], topic, 2)
    assert value == pytest.approx((2 + 2 / log2(3)) / (2 + 1.5 / log2(3)))
    assert value > 1


def test_graded_judgments_and_rel() -> None:
    """ndeval's measures read each intent's level as binary: relevant from level ``rel``."""
    qrels = IntentQrels.from_mapping({"t": {"1": {"a": 3, "b": 1}, "2": {"b": 2, "c": 1}}})
    topic = qrels["t"]
    # rel=1: a {1}, b {1,2}, c {2}; rel=2: a {1}, b {2}; S = 2 both ways.
    assert p_ia(["b", "c"], topic, 2) == pytest.approx(3 / 4)
    assert p_ia(["b", "c"], topic, 2, rel=2) == pytest.approx(1 / 4)
    assert s_recall(["c"], topic, 1, rel=2) == 0.0
    assert map_ia(["a", "b"], topic, rel=3) == 1.0  # only intent 1 (document a) at level >= 3


# --------------------------------------------------------------------------- NTCIR measures by hand


def ntcir_topic() -> IntentQrels:
    """P = 0.5, 0.3, 0.2; d1: i1 L2, i2 L1 (GG 1.3); d2: i2 L2 (0.6); d3: i3 L1 (0.2);
    d4: i1 L1 (0.5); d5: i1 L0 (judged, GG 0)."""
    return IntentQrels.from_mapping(
        {"t": {"1": {"d1": 2, "d4": 1, "d5": 0}, "2": {"d1": 1, "d2": 2}, "3": {"d3": 1}}},
        {"t": {"1": 0.5, "2": 0.3, "3": 0.2}},
    )


RUN = ["d3", "x", "d1", "d5"]  # x is unjudged


def test_d_measures_by_hand() -> None:
    topic = ntcir_topic()["t"]
    # Ideal by global gain: 1.3, 0.6, 0.5, 0.2.
    ideal3 = 1.3 + 0.6 / log2(3) + 0.5 / log2(4)
    d3 = (0.2 + 1.3 / log2(4)) / ideal3
    assert d_ndcg(RUN, topic, 3) == pytest.approx(d3, rel=1e-12)
    assert i_rec(RUN, topic, 1) == pytest.approx(1 / 3) and i_rec(RUN, topic, 3) == 1.0 and i_rec(RUN, topic) == 1.0
    assert d_sharp_ndcg(RUN, topic, 3) == pytest.approx(0.5 + 0.5 * d3, rel=1e-12)
    assert d_sharp_ndcg(RUN, topic, 3, gamma=0.2) == pytest.approx(0.2 + 0.8 * d3, rel=1e-12)
    # Q: BR(r) = (cg(r) + count(r)) / (cg*(r) + r) at the relevant ranks 1 (0.2) and 3 (1.3); R = 4.
    br = 1.2 / 2.3 + 3.5 / 5.4
    assert d_q(RUN, topic) == pytest.approx(br / 4, rel=1e-12)
    assert d_q(RUN, topic, 3) == pytest.approx(br / 3, rel=1e-12)  # min(R, 3)
    assert d_q(RUN, topic, 3, norm="R") == pytest.approx(br / 4, rel=1e-12)
    assert d_q(RUN, topic, beta=0) == pytest.approx((1 / 1 + 2 / 3) / 4, rel=1e-12)  # beta=0: AP on GG > 0
    assert d_sharp_q(RUN, topic, 3) == pytest.approx(0.5 + 0.5 * br / 3, rel=1e-12)
    # gains={1:1,2:3}: GG(d1) = 0.5*3 + 0.3 = 1.8, d2 = 0.9, d3 = 0.2, d4 = 0.5.
    steep3 = (0.2 + 1.8 / log2(4)) / (1.8 + 0.9 / log2(3) + 0.5 / log2(4))
    assert d_ndcg(RUN, topic, 3, gains={1: 1, 2: 3}) == pytest.approx(steep3, rel=1e-12)
    got = evaluate_diversity(ntcir_topic(), {"t": RUN}, ["D-nDCG(gains={1:1,2:3})@3", "D#-nDCG(gamma=0.2)@3"])
    assert got["D-nDCG(gains={1:1,2:3})@3"]["t"] == pytest.approx(steep3, rel=1e-12)
    assert got["D#-nDCG(gamma=0.2)@3"]["t"] == pytest.approx(0.2 + 0.8 * d3, rel=1e-12)
    with pytest.raises(InvalidMeasure, match="no gain for level"):
        d_ndcg(RUN, topic, 3, gains={1: 1})


def test_a_relevant_intent_with_probability_zero() -> None:
    """GG counts P(i|q); I-rec counts the intents with a relevant document, whatever P."""
    qrels = IntentQrels.from_mapping({"t": {"1": {"a": 1}, "2": {"b": 1}}}, {"t": {"1": 1.0, "2": 0.0}})
    assert d_ndcg(["b"], qrels["t"], 1) == 0.0
    assert i_rec(["b"], qrels["t"], 1) == 0.5


def test_empty_and_unjudged_lists_score_zero() -> None:
    qrels = ntcir_topic()
    names = sorted(NAMES)
    for ranking in ([], ["x", "y"], ["d5"]):
        got = evaluate_diversity(qrels, {"t": ranking}, [n + ("@5" if REGISTRY[n].cutoff == "required" else "")
                                                        for n in names])
        assert all(v["t"] == 0.0 for v in got.values()), (ranking, dict(got))


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("alpha-nDCG@20", "alpha-nDCG@20"),
        ("alpha-nDCG(alpha=0.5)@20", "alpha-nDCG@20"),
        ("alpha-ndcg(alpha=0.50, rel=1)@20", "alpha-nDCG@20"),
        ("alpha-nDCG(rel=2,alpha=0.3)@10", "alpha-nDCG(alpha=0.3,rel=2)@10"),
        ("alpha-DCG(alpha=1)@5", "alpha-DCG(alpha=1)@5"),
        ("ERR-IA@20", "ERR-IA@20"),
        ("nerr-ia@20", "nERR-IA@20"),
        ("NRBP", "NRBP"),
        ("NRBP(beta=0.5,alpha=0.5)", "NRBP"),
        ("nNRBP(beta=0.8)", "nNRBP(beta=0.8)"),
        ("P-IA@20", "P-IA@20"),
        ("MAP-IA", "MAP-IA"),
        ("AP-IA", "MAP-IA"),
        ("strec@20", "S-recall@20"),
        ("S-recall@20", "S-recall@20"),
        ("I-rec@10", "I-rec@10"),
        ("I-rec", "I-rec"),
        ("D-nDCG@10", "D-nDCG@10"),
        ("D#-nDCG@10", "D#-nDCG@10"),
        ("D#-nDCG(gamma=0.5)@10", "D#-nDCG@10"),
        ("d#-ndcg(gamma=0.25)@10", "D#-nDCG(gamma=0.25)@10"),
        ("D-Q", "D-Q"),
        ("D-Q(norm=minRk,beta=1.0)@10", "D-Q@10"),
        ("D-Q(norm=R)@10", "D-Q(norm=R)@10"),
        ("D#-Q", "D#-Q"),
        ("D#-Q(gains={1:1,2:3,0:0})@10", "D#-Q(gains={1:1,2:3})@10"),
        (" D#-nDCG ( gamma = 0.5 ) @ 10 ", "D#-nDCG@10"),
    ],
)
def test_canonical_names(text: str, canonical: str) -> None:
    m = parse_diversity_measure(text)
    assert str(m) == canonical
    assert parse_diversity_measure(str(m)) == m


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("nDCG@10", "unknown diversity metric 'nDCG'"),
        ("alpha-nDCG", "needs a cutoff"),
        ("NRBP@10", "takes no cutoff"),
        ("MAP-IA@10", "takes no cutoff"),
        ("alpha-nDCG(alpha=1.5)@10", "alpha must lie in [0, 1]"),
        ("alpha-nDCG(alpha=true)@10", "takes a number"),
        ("alpha-nDCG(gamma=0.5)@10", "has no parameter 'gamma'"),
        ("P-IA(rel=0)@10", "rel must be >= 1"),
        ("D#-nDCG(gamma=2)@10", "gamma must lie in [0, 1]"),
        ("D-Q(norm=R)", "norm only changes the normaliser at a cutoff"),
        ("D-Q(norm=x)@10", "norm is one of minRk, R"),
        ("D-nDCG@0", "positive integer"),
        ("D-nDCG@x", "positive integer"),
        ("D-nDCG@10@20", "cannot read metric name"),
        ("D-nDCG(gains={})@10", "level:gain"),
        ("D-nDCG(alpha=0.5, alpha=0.5)@10", "given twice"),
        ("x" * 300, "at most 200 characters"),
    ],
)
def test_bad_names(text: str, reason: str) -> None:
    with pytest.raises(InvalidMeasure) as err:
        parse_diversity_measure(text)
    assert reason in str(err.value)


# --------------------------------------------------------------------------- topics


def test_topic_rules() -> None:
    qrels = IntentQrels.from_mapping({
        "1": {"a": {"x": 1}},
        "2": {"a": {"y": 1}, "b": {"z": 1}},
        "3": {"a": {"w": 0}},  # judged, nothing relevant
    })
    rankings = {"1": ["x"], "9": ["x"]}
    got = evaluate_diversity(qrels, rankings, ["alpha-nDCG(alpha=0.5)@5", "I-rec@5"])
    assert list(got) == ["alpha-nDCG@5", "I-rec@5"]
    assert got.topics == ("1", "2")
    assert got.missing_topics == ("2",) and got.ignored_topics == ("9",) and got.skipped_topics == ("3",)
    assert dict(got["alpha-nDCG@5"]) == {"1": 1.0, "2": 0.0}
    assert got["alpha-nDCG(alpha=0.5)@5"] is got["alpha-nDCG@5"]
    assert got.mean("I-rec@5") == 0.5
    assert "nonsense(" not in got and got.get("P-IA@5") is None
    counted = evaluate_diversity(qrels, rankings, ["nNRBP", "MAP-IA"], no_relevant="count")
    assert counted.topics == ("1", "2", "3") and counted["nNRBP"]["3"] == 0.0 and counted.skipped_topics == ()
    with pytest.raises(ValueError, match="ranked twice"):
        evaluate_diversity(qrels, {"1": ["x", "y", "x"]}, ["I-rec"])
    with pytest.raises(ValueError, match="no_relevant"):
        evaluate_diversity(qrels, rankings, ["I-rec"], no_relevant="zero")  # type: ignore[arg-type]


def test_per_topic_functions_match_the_dispatcher() -> None:
    qrels, run = pyndeval_example()
    topic = qrels["0"]
    got = evaluate_diversity(qrels, {"0": run}, [
        "alpha-DCG(alpha=0.3)@3", "alpha-nDCG(alpha=0.3)@3", "ERR-IA@3", "nERR-IA@3", "NRBP(beta=0.8)",
        "nNRBP(alpha=0.2,beta=0.8)", "P-IA@3", "MAP-IA", "S-recall@3", "I-rec@2", "D-nDCG@3", "D#-nDCG@3",
        "D-Q@3", "D#-Q(gamma=0.7)@3"])
    expected = {
        "alpha-DCG(alpha=0.3)@3": alpha_dcg(run, topic, 3, alpha=0.3),
        "alpha-nDCG(alpha=0.3)@3": alpha_ndcg(run, topic, 3, alpha=0.3),
        "ERR-IA@3": err_ia(run, topic, 3), "nERR-IA@3": nerr_ia(run, topic, 3),
        "NRBP(beta=0.8)": nrbp(run, topic, beta=0.8), "nNRBP(alpha=0.2,beta=0.8)": nnrbp(run, topic, alpha=0.2, beta=0.8),
        "P-IA@3": p_ia(run, topic, 3), "MAP-IA": map_ia(run, topic), "S-recall@3": s_recall(run, topic, 3),
        "I-rec@2": i_rec(run, topic, 2), "D-nDCG@3": d_ndcg(run, topic, 3), "D#-nDCG@3": d_sharp_ndcg(run, topic, 3),
        "D-Q@3": d_q(run, topic, 3), "D#-Q(gamma=0.7)@3": d_sharp_q(run, topic, 3, gamma=0.7),
    }
    assert {k: v["0"] for k, v in got.items()} == expected
    with pytest.raises(ValueError, match="cutoff"):
        alpha_ndcg(run, topic, 0)


def test_rank_one_is_normalised() -> None:
    """Cranfield divides alpha-DCG@1 and ERR-IA@1 by the ideal-ideal list's value (S); ndeval
    does not at rank 1 (its normalisation loop starts at the second rank)."""
    qrels, run = pyndeval_example()
    assert alpha_dcg(run, qrels["0"], 1) == pytest.approx(1 / 3)
    assert err_ia(run, qrels["0"], 1) == pytest.approx(1 / 3)


def test_the_greedy_ideal_is_placed_on_demand() -> None:
    """A prefix asked first is the prefix of the whole list asked later, and the reverse."""
    qrels = IntentQrels.from_mapping({"t": {str(i): {f"d{d}": 1 for d in range(40) if (d * (i + 3)) % 7 < 3}
                                            for i in range(5)}})
    first, second = PreparedTopic(qrels["t"]), PreparedTopic(qrels["t"])
    short = first.ideal_gains(0.3, 1, 4)
    whole = first.ideal_gains(0.3, 1)
    assert list(short) == list(whole[:4]) and len(whole) > 4
    assert list(second.ideal_gains(0.3, 1)) == list(whole) and list(second.ideal_gains(0.3, 1, 4)) == list(short)
    assert list(first.ideal_gains(0.3, 1, 10_000)) == list(whole)  # shorter when the gains run out


def test_one_evaluator_for_many_runs() -> None:
    qrels = ntcir_topic()
    names = ["alpha-nDCG@3", "nNRBP", "D#-nDCG@3", "MAP-IA"]
    ev = DiversityEvaluator(qrels)
    for ranking in (RUN, ["d1", "d2"], [], ["d4", "d3", "d2", "d1"]):
        assert dict(ev.evaluate({"t": ranking}, names)) == dict(evaluate_diversity(qrels, {"t": ranking}, names))
