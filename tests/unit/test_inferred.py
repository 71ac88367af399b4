"""infAP (trec_eval's), NIST's sampled qrels, and sample_eval.pl's xinfAP / infNDCG.

Expected values, by source:

* infAP: trec_eval 9's ``m_infAP.c`` written out by hand for small rankings (the per-topic peer
  check against pytrec_eval is tests/peers/test_inferred_peers.py), and the bound
  |infAP - AP| <= 2 eps when every pooled document is judged (each term's smoothed precision
  (rel + eps)/(judged + 2 eps) is within 2 eps/judged of rel/judged, and the terms are averaged).
* xinfAP, infNDCG, iP, inum_rel, inum_rel_ret: NIST's ``sample_eval.pl``, TREC's copy (change
  log up to 10 Oct 2011; read at github.com/amillert/TREC-elastic, file sample_eval.pl,
  commit 3f3bb0a5e65a615bba457e45dc2c6e762c26d65c, a copy of
  trec.nist.gov/data/clinical/sample_eval.pl) and TRECVID's copy (change log up to
  5 Sep 2012; github.com/geo-awad/testLB, sample_eval.pl). Each expected number below is the
  script's statement, quoted in the comment, evaluated by hand for the example.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.errors import InvalidInput, InvalidMeasure
from service.formats.sampled import SampledQrels, parse_sampled_qrels
from service.formats.types import Qrels, Run
from service.metrics import EvalSettings, evaluate, parse_measure
from service.metrics.inferred_sampled import SampleEvaluator, sample_eval
from service.metrics.lists import RankedLists, TopicStats
from service.metrics.measures.inferred import INFAP_EPSILON, pool_status, with_pool_status
from service.metrics.scoring import evaluation_topics, level_matrix
from tests.support.collections import generate

EPS = INFAP_EPSILON
SETTINGS = EvalSettings(missing="skip", no_relevant="count")


def infap(judgments: dict[str, dict[str, int]], rankings: dict[str, list[str]], rel: int = 1) -> np.ndarray:
    """Per-topic infAP of one run, with the pool status attached (negative labels = pooled)."""
    qrels = Qrels.from_mapping(judgments)
    runs = [Run.from_rankings("r", rankings)]
    m = parse_measure(f"infAP(rel={rel})")
    scale = SETTINGS.scale(qrels)
    idx = evaluation_topics(qrels, SETTINGS)
    col_of = {qrels.topics[i]: c for c, i in enumerate(idx)}
    levels, _ = level_matrix(qrels, runs, idx, col_of, None)
    lists = RankedLists(levels, np.arange(len(idx)), TopicStats(qrels.level_counts(scale.max_level)[list(idx)],
                                                               scale.max_level))
    with_pool_status(lists, pool_status(qrels, runs, idx, col_of, None))
    return m.definition.kernel(lists, m, scale)


# ---------------------------------------------------------------------------------- infAP
def test_infap_rank_one_and_unpooled_prefix() -> None:
    # m_infAP.c: "if (0 == j) inf_ap += 1.0"; a relevant document with only unpooled documents
    # above adds 1/(j+1) + (j/(j+1)) (0/j) (...) = 1/(j+1). R = 2 (a, d).
    judgments = {"q": {"a": 1, "b": 0, "d": 3}}
    assert infap(judgments, {"q": ["a", "x", "y", "b"]})[0] == pytest.approx(1 / 2, abs=1e-15)
    assert infap(judgments, {"q": ["x", "y", "d"]})[0] == pytest.approx((1 / 3) / 2, abs=1e-15)


def test_infap_pooled_unjudged_counts_as_pooled() -> None:
    # Ranking b (0), u (-1), a (1): j = 2, rel = 0, nonrel = 1, unj = 1 above:
    # 1/3 + (2/3) (2/2) (0 + eps)/(0 + 1 + 2 eps); R = 1.
    got = infap({"q": {"a": 1, "b": 0, "u": -1}}, {"q": ["b", "u", "a"]})[0]
    assert got == pytest.approx(1 / 3 + (2 / 3) * 1.0 * EPS / (1 + 2 * EPS), abs=1e-15)
    # The same ranking with u not in the qrels: u is not pooled, so pooled/j = 1/2.
    got = infap({"q": {"a": 1, "b": 0}}, {"q": ["b", "u", "a"]})[0]
    assert got == pytest.approx(1 / 3 + (2 / 3) * 0.5 * EPS / (1 + 2 * EPS), abs=1e-15)


def test_infap_relevance_level_and_no_relevant_topic() -> None:
    # rel=2: level 1 is non-relevant; R counts levels >= 2. A topic with nothing relevant: 0.
    got = infap({"q": {"a": 1, "b": 2}, "z": {"c": 0}}, {"q": ["a", "b"], "z": ["c"]}, rel=2)
    assert got[0] == pytest.approx(1 / 2 + (1 / 2) * 1.0 * EPS / (1 + 2 * EPS), abs=1e-15)
    assert got[1] == 0.0


def test_infap_is_ap_when_every_pooled_document_is_judged() -> None:
    # No negative label: every unjudged document is unpooled (non-relevant for AP too); then
    # |infAP - AP| <= 2 eps (module docstring). evaluate() needs no pool status here.
    g = generate(np.random.default_rng(8), topics=12, runs=5, unjudged_label_rate=0.0)
    ev = evaluate(g.qrels, g.runs, ["infAP", "AP", "infAP(rel=2)", "AP(rel=2)"], SETTINGS)
    for rel in ("", "(rel=2)"):
        a, b = ev.per_topic(f"infAP{rel}"), ev.per_topic(f"AP{rel}")
        assert np.array_equal(np.isnan(a), np.isnan(b))
        diff = np.abs(a - b)[~np.isnan(a)]
        assert diff.max() <= 2 * EPS and diff.max() > 0  # the smoothing shows, within its bound


def test_infap_name_and_errors() -> None:
    assert str(parse_measure("infAP(rel=1)")) == "infAP"
    with pytest.raises(InvalidMeasure, match="takes no cutoff"):
        parse_measure("infAP@10")
    q = Qrels.from_mapping({"q": {"a": 1}})
    lists = RankedLists(np.zeros((1, 2), dtype=np.int32), np.zeros(1, dtype=np.int64),
                        TopicStats(q.level_counts(1), 1))
    with pytest.raises(ValueError, match="shape"):
        with_pool_status(lists, np.zeros((1, 3), dtype=bool))


# ---------------------------------------------------------------------------------- the reader
SAMPLED = b"""\
1 0 a 1 2
1 0 b 1 0
1 0 c 1 1
1 0 d 2 1
1 0 e 2 -1
1 0 f 2 0
1 0 g 2 -1
1 0 h 2 -1
"""


def test_reader_counts_strata_as_sample_eval() -> None:
    q = parse_sampled_qrels(SAMPLED, "s.qrels")
    assert q.topics == ("1",) and q.judgments("1")["e"] == ("2", -1)
    # docs_per_category, sampled_docs (rel >= 0), sampled_rel (rel > 0) per stratum.
    counts = {c.stratum: (c.size, c.judged, c.relevant) for c in q.stratum_counts("1")}
    assert counts == {"1": (3, 3, 2), "2": (5, 2, 1)}
    assert q.inclusion_probabilities() == {"1": {"1": 1.0, "2": 2 / 5}}
    assert parse_sampled_qrels(q.to_text().encode()).to_mapping() == q.to_mapping()
    assert q.to_qrels().to_mapping()["1"] == {"a": 2, "b": 0, "c": 1, "d": 1, "e": -1, "f": 0, "g": -1, "h": -1}
    assert q.relabel({2: 5}).judgments("1")["a"] == ("1", 5)


@pytest.mark.parametrize(("data", "line", "fragment"), [
    (b"1 0 a 1 1\n1 0 a 2 0\n", 2, "listed twice (first on line 1)"),
    (b"1 0 a 1 1\n1 0 b 1\n", 2, "exactly 5"),
    (b"1 0 a 1 x\n", 1, "not an integer"),
    (b"1 0 a 1 20000\n", 1, "above the largest supported level"),
    # sample_eval.pl's conventions (docs/formats.md): strata are numbers, rel is -1 or a level
    (b"1 0 a 1 1\n1 0 b x 0\n", 2, "stratum 'x' is not a stratum number"),
    (b"1 0 a -1 1\n", 1, "stratum '-1' is not a stratum number"),
    (b"1 0 a 10^30 1\n", 1, "stratum '10^30' is not a stratum number"),
    (b"1 0 a 1 1\n1 0 b " + b"1" + b"0" * 30 + b" 0\n", 2, "is above the largest stratum 1000000"),
    (b"1 0 a 1 1\n1 0 b 1 -1\n1 0 c 2 -2\n", 3, "relevance level -2: a sampled judgment's level is -1"),
    (b"1 0 a 1 1\n1 0 b 1.5 -2\n1 0 c y 0\n", 2, "relevance level -2"),  # the first line at fault
])
def test_reader_errors_name_the_line(data: bytes, line: int, fragment: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_sampled_qrels(data, "s.qrels")
    assert err.value.source == "s.qrels" and err.value.line == line and fragment in str(err.value)


def test_reader_takes_stratum_numbers_and_the_not_sampled_level() -> None:
    q = parse_sampled_qrels(b"1 0 a 0 3\n1 0 b 1000000 -1\n1 0 c 007 0\n", "s.qrels")
    assert q.judgments("1") == {"a": ("0", 3), "b": ("1000000", -1), "c": ("007", 0)}


# ---------------------------------------------------------------------------------- sample_eval
# The example: topic 1 of SAMPLED; the run ranks x (not pooled), a, e, d, b, g, c, y (not pooled), f.
RANKING = ["x", "a", "e", "d", "b", "g", "c", "y", "f"]


def log2(r: float) -> float:
    return math.log(r + 1) / math.log(2)  # "log($rank+1)/log(2)"


def expected_example() -> dict[str, float]:
    """sample_eval.pl's statements evaluated by hand for the example (strata "1", "2")."""
    # "$rel_estimates_category = $sampled_rel*$docs_per_category/$sampled_docs; $num_rels += ..."
    num_rel = 2 * 3 / 3 + 1 * 5 / 2  # 4.5
    # Walking the ranks ("$prec = 1/$rank + ($num_depth100/$rank)*$prec_above" at a relevant
    # document; "$prec_above += $prob_category*($num_relevant + 0.00001)/($num_sampled + 0.00003)"
    # with "$prob_category = $num_docs/$num_depth100", counts over the ranks above):
    prec_a = 1 / 2  # rank 2: $num_depth100 == 0, so $prec_above stays 0
    # rank 4 (d): above, stratum 1: a (docs 1, sampled 1, relevant 1); stratum 2: e (1, 0, 0); depth 2
    prec_d = 1 / 4 + (2 / 4) * ((1 / 2) * (1 + 1e-5) / (1 + 3e-5) + (1 / 2) * (0 + 1e-5) / (0 + 3e-5))
    # rank 7 (c): above, stratum 1: a, b (2, 2, 1); stratum 2: e, d, g (3, 1, 1); depth 5
    prec_c = 1 / 7 + (5 / 7) * ((2 / 5) * (1 + 1e-5) / (2 + 3e-5) + (3 / 5) * (1 + 1e-5) / (1 + 3e-5))
    sap = {"1": prec_a + prec_c, "2": prec_d}  # "$SAP_category{$doc_category} += $prec"
    # "$AP += $prob_category*$AP_category", $prob_category = estimate/$num_rels, $AP_category = SAP/sampled_rel
    xinfap = (2 / num_rel) * (sap["1"] / 2) + (2.5 / num_rel) * (sap["2"] / 1)
    # "$gain_category{$doc_category} += $rel/(log($rank+1)/log(2))": a (2) at rank 2, c (1) at 7; d (1) at 4
    gain = {"1": 2 / log2(2) + 1 / log2(7), "2": 1 / log2(4)}
    # After the walk: depth 7; stratum 1: docs a, b, c (3), sampled 3; stratum 2: e, d, g, f (4), sampled 2.
    # "$dcg_val += $prob_category*$gain_category/$num_sampled"; "$ndcg_val = $num_depth100*$dcg_val/$optimal_dcg"
    dcg = (3 / 7) * gain["1"] / 3 + (4 / 7) * gain["2"] / 2
    # "$num_rels_per_grade += $sampled_rels_per_grade*$docs_per_category/$sampled_docs": grade 2: 1*3/3 = 1;
    # grade 1: 1*3/3 + 1*5/2 = 3.5. Grades from "reverse sort keys": 2 then 1, each filling
    # "int($num_rels_per_grade+0.5)" ranks: rank 1 at gain 2, ranks 2..5 at gain 1.
    ideal = 2 / log2(1) + sum(1 / log2(r) for r in range(2, 6))
    # "$num_rel_rank_k += $num_docs*($num_relevant + 0.00001)/($num_sampled + 0.00003)", counts down to rank k
    e = {2: 1 * (1 + 1e-5) / (1 + 3e-5),
         4: 1 * (1 + 1e-5) / (1 + 3e-5) + 2 * (1 + 1e-5) / (1 + 3e-5),
         9: 3 * (2 + 1e-5) / (3 + 3e-5) + 4 * (1 + 1e-5) / (2 + 3e-5)}
    return {"xinfAP": xinfap, "infNDCG": 7 * dcg / ideal, "num_rel": num_rel, "iP@2": e[2] / 2,
            "iP@4": e[4] / 4, "iP@9": e[9] / 9, "iP@10": e[9] / 10, "num_rel_ret": e[9],
            "ideal_trecvid": 2 / log2(1) + sum(1 / log2(r) for r in (2.0, 3.0, 4.0)), "dcg": dcg}


def test_sample_eval_worked_example() -> None:
    expected = expected_example()
    est = SampleEvaluator(parse_sampled_qrels(SAMPLED)).topic("1", RANKING)
    assert est.xinfAP == pytest.approx(expected["xinfAP"], rel=0, abs=1e-15)
    assert est.infNDCG == pytest.approx(expected["infNDCG"], rel=0, abs=1e-15)
    assert est.num_rel == expected["num_rel"] == 4.5
    assert est.num_rel_ret == pytest.approx(expected["num_rel_ret"], rel=0, abs=1e-15)
    for k in (2, 4, 9, 10):  # iP10: the list is 9 long, so "$num_rel_ret{$topic}/$cutoff"
        assert est.iP(k) == pytest.approx(expected[f"iP@{k}"], rel=0, abs=1e-15), k
    assert est.num_ret == 9


def test_sample_eval_trecvid_variant_and_result_size() -> None:
    expected = expected_example()
    q = parse_sampled_qrels(SAMPLED)
    # TRECVID's copy: "for ($r=($start_rank+1);$r<=($start_rank+$num_rels_per_grade...);$r++)" unrounded:
    # grade 2 fills rank 1, grade 1 ranks 2, 3, 4 (<= 1 + 3.5); xinfAP unchanged (R^ = 4.5 <= 1000).
    est = SampleEvaluator(q, variant="trecvid").topic("1", RANKING)
    assert est.infNDCG == pytest.approx(7 * expected["dcg"] / expected["ideal_trecvid"], rel=0, abs=1e-15)
    assert est.xinfAP == pytest.approx(expected["xinfAP"], rel=0, abs=1e-15)
    # max_result_size = 4: the walk stops at rank 4 ("if ($rank >= $maxResultSize) { last; }");
    # TRECVID then scales xinfAP by R^/4 ("$AP = $AP * $num_rels{$topic}/$maxResultSize", R^ = 4.5 > 4).
    trec, vid = (SampleEvaluator(q, max_result_size=4, variant=v).topic("1", RANKING) for v in ("trec", "trecvid"))
    sap = {"1": 1 / 2, "2": 1 / 4 + (2 / 4) * ((1 / 2) * (1 + 1e-5) / (1 + 3e-5) + (1 / 2) * 1e-5 / 3e-5)}
    ap4 = (2 / 4.5) * (sap["1"] / 2) + (2.5 / 4.5) * sap["2"]
    assert trec.xinfAP == pytest.approx(ap4, rel=0, abs=1e-15)
    assert vid.xinfAP == pytest.approx(ap4 * 4.5 / 4, rel=0, abs=1e-15)
    assert trec.num_ret == 9 and trec.rel_ret_at.shape == (4,)


def test_ideal_dcg_stops_each_level_at_the_result_size() -> None:
    # Three levels, one stratum judged in full: R^_3 = 2, R^_2 = 1, R^_1 = 1. With maxResultSize 1
    # the loop adds rank 1 for level 3, then breaks ("if ($r >= $maxResultSize) { last; }") but
    # "$start_rank += int(...)" moves on: level 2 adds its first rank (3) and breaks, level 1 its
    # first (4): ideal = 3/log2(1+1) + 2/log2(3+1) + 1/log2(4+1); one relevant document at rank 1 of a
    # 1-document walk: DCG = 3.
    q = SampledQrels.from_mapping({"t": {"a": ("1", 3), "b": ("1", 3), "c": ("1", 2), "d": ("1", 1)}})
    est = SampleEvaluator(q, max_result_size=1).topic("t", ["a", "b", "c", "d"])
    assert est.infNDCG == pytest.approx(3 / (3 / log2(1) + 2 / log2(3) + 1 / log2(4)), rel=0, abs=1e-15)


def test_levels_sort_as_strings() -> None:
    # "reverse sort keys" sorts levels as strings: "9" comes before "10". One stratum judged in
    # full, levels 10 and 9: the ideal list puts 9 first, so a run ranking 10 then 9 scores above 1.
    q = SampledQrels.from_mapping({"t": {"a": ("1", 10), "b": ("1", 9)}})
    est = SampleEvaluator(q).topic("t", ["a", "b"])
    assert est.infNDCG == pytest.approx((10 / log2(1) + 9 / log2(2)) / (9 / log2(1) + 10 / log2(2)), abs=1e-15)
    assert est.infNDCG > 1


def test_run_evaluation_topics_and_means() -> None:
    # Topics: the run's topics that the qrels hold (qrels topic "2" is not in the run, run topic
    # "9" is not in the qrels); a topic with nothing relevant scores 0 and counts in the mean.
    q = SampledQrels.from_mapping({"1": {d: ("1", lv) for d, lv in (("a", 1), ("b", 0))},
                                   "2": {"c": ("1", 1)}, "3": {"d": ("1", 0)}})
    run = Run.from_rankings("r", {"1": ["a", "b"], "3": ["d"], "9": ["z"]})
    (res,) = sample_eval(q, [run])
    assert [e.topic for e in res.topics] == ["1", "3"]
    assert res.per_topic("xinfAP") == {"1": 1.0, "3": 0.0}
    assert res.mean("xinfAP") == 0.5 and res.mean("infNDCG") == 0.5
    with pytest.raises(ValueError, match="unknown sample_eval measure"):
        res.mean("AP")


def test_single_stratum_xinfap_is_infap_like() -> None:
    # One stratum: xinfAP = SAP/r and infAP = SAP'/R with r = R (the judged relevant documents), the
    # precisions differing only in the smoothing, (q + 1e-5)/(s + 3e-5) against (q + eps)/(s + 2 eps).
    # With a judged document at rank 1 of every list (s >= 1 above every later rank) each precision
    # differs by at most 1.1e-5, hence so does the mean.
    rng = np.random.default_rng(3)
    judgments: dict[str, dict[str, int]] = {}
    sampled: dict[str, dict[str, tuple[str, int]]] = {}
    rankings: dict[str, list[str]] = {}
    for t in range(15):
        docs = [f"d{t}-{i}" for i in range(40)]
        levels = rng.choice([0, 0, 1, 2], size=40)
        judged = rng.random(40) < 0.4
        judged[0] = True
        labels = {d: (int(lv) if j else -1) for d, lv, j in zip(docs, levels, judged)}
        if not any(v >= 1 for v in labels.values()):
            labels[docs[0]] = 1
        judgments[f"{t}"] = labels
        sampled[f"{t}"] = {d: ("1", v) for d, v in labels.items()}
        ranking = docs[:30] + [f"x{t}-{i}" for i in range(5)]  # unpooled documents too
        rankings[f"{t}"] = [ranking[0], *rng.permutation(ranking[1:]).tolist()]
    inf = infap(judgments, rankings)
    est = SampleEvaluator(SampledQrels.from_mapping(sampled))
    x = np.array([est.topic(t, rankings[t]).xinfAP for t in sorted(rankings)])
    assert np.abs(x - inf).max() <= 1.1e-5 and np.abs(x - inf).max() > 0


def test_runs_are_ranked_as_sample_eval_ranks_them() -> None:
    # sample_eval: "sort { ($href->{$b} <=> $href->{$a}) || ($b cmp $a) } keys %$href": score
    # descending, ties by docno descending, which is the run reader's order="score" (trec_eval's).
    from service.formats.readers import parse_run

    run = parse_run(b"1 Q0 a 1 2.0 r\n1 Q0 c 2 2.0 r\n1 Q0 b 3 3.0 r\n")
    assert run.to_rankings() == {"1": ["b", "c", "a"]}
    q = SampledQrels.from_mapping({"1": {"a": ("1", 1), "b": ("1", 0), "c": ("1", 0)}})
    (res,) = sample_eval(q, [run])
    # a at rank 3 with 2 judged non-relevant above: 1/3 + (2/3)((2/2)(0 + 1e-5)/(2 + 3e-5)); R^ = 1.
    assert res.per_topic("xinfAP")["1"] == pytest.approx(1 / 3 + (2 / 3) * (1e-5 / (2 + 3e-5)), rel=0, abs=1e-15)
