"""The worked examples printed in the papers of ../shared/papers/, reproduced.

Every expected number below is quoted from the paper named beside it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.formats.types import Qrels, Run
from service.metrics import EvalSettings, evaluate
from service.metrics.curves import gain_curves


def _one(judgments: dict[str, int], ranking: list[str], metrics: list[str], **settings) -> dict[str, float]:
    ev = evaluate(
        Qrels.from_mapping({"T": judgments}),
        [Run.from_rankings("r", {"T": ranking})],
        metrics,
        EvalSettings(**settings),
    )
    return {str(m): ev.value("r", m, "T") for m in ev.measures}


# --------------------------------------------------------------------------- J&K 2002
# Järvelin & Kekäläinen, TOIS 20(4) 2002, section 2: G' = <3,2,3,0,0,1,2,2,3,0,...>
# with the recall base of I' = <3,3,3,2,2,2,1,1,1,1>: three documents at level 3,
# three at level 2, four at level 1.
JK_QRELS = {
    **{f"S{i}": 3 for i in range(3)},
    **{f"A{i}": 2 for i in range(3)},
    **{f"B{i}": 1 for i in range(4)},
    **{f"N{i}": 0 for i in range(5)},
}
JK_RUN = ["S0", "A0", "S1", "N0", "N1", "B0", "A1", "A2", "S2", "N2"]  # gains 3,2,3,0,0,1,2,2,3,0

JK_CG = [3, 5, 8, 8, 8, 9, 11, 13, 16, 16]  # "CG' = <3, 5, 8, 8, 8, 9, 11, 13, 16, 16, ...>"
JK_DCG = [3, 5, 6.89, 6.89, 6.89, 7.28, 7.99, 8.66, 9.61, 9.61]  # "DCG' = (3, 5, 6.89, ...)" (b = 2)
JK_NCG = [1, 0.83, 0.89, 0.73, 0.62, 0.6, 0.69, 0.76, 0.89, 0.84]  # "nCG' = <1, 0.83, 0.89, ...>"
JK_IDEAL_CG = [3, 6, 9, 11, 13, 15, 16, 17, 18, 19]  # "CG'_I = <3,6,9,11,13,15,16,17,18,19,...>"
JK_IDEAL_DCG = [3, 6, 7.89, 8.89, 9.75, 10.52, 10.88, 11.21, 11.53, 11.83]  # "DCG'_I"


@pytest.mark.parametrize("k", range(1, 11))
def test_jk_cg_dcg_ncg_vectors_at_each_rank(k: int) -> None:
    got = _one(JK_QRELS, JK_RUN, [f"CG@{k}", f"DCG@{k}", f"nCG@{k}"])
    assert got[f"CG@{k}"] == JK_CG[k - 1]
    assert round(got[f"DCG@{k}"], 2) == JK_DCG[k - 1]
    assert round(got[f"nCG@{k}"], 2) == JK_NCG[k - 1]


def test_jk_curves_reproduce_the_vectors_and_the_ideal() -> None:
    (curve,) = gain_curves(Qrels.from_mapping({"T": JK_QRELS}), [Run.from_rankings("r", {"T": JK_RUN})], depth=10)
    assert curve.cg.tolist() == JK_CG
    assert np.round(curve.dcg, 2).tolist() == JK_DCG
    assert np.round(curve.ncg, 2).tolist() == JK_NCG
    assert curve.ideal_cg.tolist() == JK_IDEAL_CG
    # The paper accumulates terms already rounded to two decimals (9.75 + 0.77 = 10.52 where the
    # exact sum is 10.528), so its DCG'_I is matched to within one unit of the last decimal.
    assert curve.ideal_dcg == pytest.approx(JK_IDEAL_DCG, abs=0.011)


def test_jk_discount_applies_from_the_base_rank_only() -> None:
    # J&K Eq. 2: DCG[i] = CG[i] for i < b; with b = 10 the first ten ranks are undiscounted,
    # so DCG@10 = CG@10 and nDCG(base=10)@10 = nCG@10.
    got = _one(JK_QRELS, JK_RUN, ["DCG(base=10)@10", "CG@10", "nDCG(base=10)@10", "nCG@10"])
    assert got["DCG(base=10)@10"] == got["CG@10"] == 16
    assert got["nDCG(base=10)@10"] == pytest.approx(got["nCG@10"], abs=1e-15)
    # rank 11 with b = 10: discounted by log10(11)
    run = JK_RUN + ["B1"]
    got11 = _one(JK_QRELS, run, ["DCG(base=10)@11"])
    assert got11["DCG(base=10)@11"] == pytest.approx(16 + 1 / math.log10(11), abs=1e-12)


def test_jk_avg_pos_is_the_mean_of_the_normalised_vector() -> None:
    # J&K Eq. 6: avg-pos(V, k) = (1/k) sum_{i<=k} V[i]
    got = _one(JK_QRELS, JK_RUN, ["nCGavg@10", "nDCGavg@10"])
    ncg = np.array(JK_CG) / np.array(JK_IDEAL_CG)
    assert got["nCGavg@10"] == pytest.approx(ncg.mean(), abs=1e-12)
    disc = np.maximum(1, np.log2(np.arange(1, 11)))
    gains = np.array([3, 2, 3, 0, 0, 1, 2, 2, 3, 0])
    ideal = np.array([3, 3, 3, 2, 2, 2, 1, 1, 1, 1])
    ndcg_vec = np.cumsum(gains / disc) / np.cumsum(ideal / disc)
    assert got["nDCGavg@10"] == pytest.approx(ndcg_vec.mean(), abs=1e-12)


def test_jk_average_curve_divides_average_vectors() -> None:
    # J&K section 2.3: the normalised average curve is norm-vect(avg-vect(V), avg-vect(I)).
    qrels = Qrels.from_mapping({"T1": {"a": 3, "b": 1}, "T2": {"c": 1, "d": 1, "e": 1}})
    run = Run.from_rankings("r", {"T1": ["b", "a"], "T2": ["c", "x", "d"]})
    (avg,) = gain_curves(qrels, [run], depth=3)
    (per,) = gain_curves(qrels, [run], depth=3, normalise="per_topic")
    cg1, cg2 = np.array([1, 4, 4]), np.array([1, 1, 2])
    i1, i2 = np.array([3, 4, 4]), np.array([1, 2, 3])
    assert avg.ncg == pytest.approx((cg1 + cg2) / (i1 + i2), abs=1e-15)
    assert per.ncg == pytest.approx((cg1 / i1 + cg2 / i2) / 2, abs=1e-15)


# ------------------------------------------------------------------ Sakai 2006 (P-measure)
# Figure 1: one document per level S (3), A (2), B (1); gains 3:2:1.
# System X: B-relevant at rank 1, S-relevant at rank 2; System Y: only S-relevant at rank 2.
PM_QRELS = {"s": 3, "a": 2, "b": 1}


def test_p_measure_paper_example() -> None:
    x = _one(PM_QRELS, ["b", "s"], ["Pmeasure", "Omeasure", "Pplus"])
    y = _one(PM_QRELS, ["n", "s"], ["Pmeasure", "Omeasure", "Pplus"])
    assert x["Pmeasure"] == pytest.approx(6 / 7, abs=1e-15)  # "(4 + 2)/(5 + 2) = 6/7"
    assert y["Pmeasure"] == pytest.approx(4 / 7, abs=1e-15)  # "(3 + 1)/(5 + 2) = 4/7"
    assert y["Omeasure"] == pytest.approx(4 / 7, abs=1e-15)  # "P-measure = O-measure = 4/7" for Y
    # O-measure looks at X's rank 1 only: BR(1) = (1 + 1)/(3 + 1)
    assert x["Omeasure"] == pytest.approx(2 / 4, abs=1e-15)
    assert y["Omeasure"] > x["Omeasure"]  # "Y outperforms X in terms of O-measure"
    # P+ = sum_{r <= rp} isrel(r) BR(r) / count(rp) = (BR(1) + BR(2)) / 2
    assert x["Pplus"] == pytest.approx((2 / 4 + 6 / 7) / 2, abs=1e-15)


def test_p_measure_of_the_perfect_inverse_is_one() -> None:
    # Sakai 2006, section 4: "P-measure would be one for a perfect inverse of the ideal
    # output shown in Figure 1 since rp = 3" -- and P+ is not.
    got = _one(PM_QRELS, ["b", "a", "s"], ["Pmeasure", "Pplus"])
    assert got["Pmeasure"] == pytest.approx(1.0, abs=1e-15)
    assert got["Pplus"] < 1.0


def test_o_measure_equals_rr_when_first_relevant_within_r() -> None:
    # "In a binary relevance environment, O-measure = RR holds iff r1 <= R, and O > RR otherwise."
    qrels = {"a": 1, "b": 1, "c": 1}
    within = _one(qrels, ["x", "a"], ["Omeasure", "RR"])
    beyond = _one(qrels, ["x", "y", "z", "w", "a"], ["Omeasure", "RR"])
    assert within["Omeasure"] == pytest.approx(within["RR"], abs=1e-15)
    assert beyond["Omeasure"] > beyond["RR"]


# ------------------------------------------------------------- Sakai 2007 (late arrival)
def test_q_with_beta_zero_is_ap() -> None:
    # Late-arrival paper: "Note that beta = 0 reduces Q-measure to AveP".
    got = _one(JK_QRELS, JK_RUN + ["X", "B1", "B2"], ["Q(beta=0)", "AP", "Q(beta=0,norm=minRk)@5", "AP(norm=minRk)@5"])
    assert got["Q(beta=0)"] == pytest.approx(got["AP"], abs=1e-15)
    assert got["Q(beta=0,norm=minRk)@5"] == pytest.approx(got["AP(norm=minRk)@5"], abs=1e-15)


def test_q_equals_ap_iff_no_relevant_document_below_rank_r() -> None:
    # P-measure paper: "In a binary relevance environment, Q = AveP holds iff there is no
    # relevant document below Rank R, and Q > AveP holds otherwise."
    qrels = {"a": 1, "b": 1, "c": 1}
    above = _one(qrels, ["a", "x", "b"], ["Q", "AP"])
    below = _one(qrels, ["a", "x", "y", "b"], ["Q", "AP"])
    assert above["Q"] == pytest.approx(above["AP"], abs=1e-15)
    assert below["Q"] > below["AP"]


def test_q_by_hand() -> None:
    # Eq. 3/6 by hand: R = 2 (levels 2 and 1, gains 2, 1), ranking [n, L1, L2]:
    # BR(2) = (1 + 1)/(3 + 2), BR(3) = (3 + 2)/(3 + 3); Q = (BR(2) + BR(3))/2.
    got = _one({"p": 2, "q": 1, "n": 0}, ["n", "q", "p"], ["Q", "Q(beta=10)", "Rmeasure", "genAP"])
    assert got["Q"] == pytest.approx((2 / 5 + 5 / 6) / 2, abs=1e-15)
    assert got["Q(beta=10)"] == pytest.approx(((10 + 1) / (30 + 2) + (30 + 2) / (30 + 3)) / 2, abs=1e-15)
    # R-measure = BR(R) = (cg(2) + count(2))/(cg_I(2) + 2) = (1 + 1)/(3 + 2)
    assert got["Rmeasure"] == pytest.approx(2 / 5, abs=1e-15)
    # genAveP (Eq. 5) = (cg(2)/2 + cg(3)/3) / (cg_I(1)/1 + cg_I(2)/2) = (1/2 + 3/3)/(2 + 3/2)
    assert got["genAP"] == pytest.approx((1 / 2 + 1) / (2 + 3 / 2), abs=1e-15)


# ---------------------------------------------------------- Sakai 2007 (alternatives to bpref)
def test_bpref_relative2_is_ap_on_the_condensed_list() -> None:
    # "bpref_relative2 ... is exactly AveP based on a condensed list" (Eq. 20). With binary
    # gains rpref_relative2 reduces to bpref_relative2 (Eq. 15 -> r' - count(r')).
    qrels = {"a": 1, "b": 1, "c": 1, "n1": 0, "n2": 0, "n3": 0}
    ranking = ["u1", "n1", "a", "u2", "n2", "b", "u3", "c"]  # u* unjudged
    got = _one(qrels, ranking, ["rpref_relative2", "AP'", "bpref_relative2", "AP"])
    condensed = _one(qrels, [d for d in ranking if not d.startswith("u")], ["AP"])
    assert got["AP(judged_only=true)"] == pytest.approx(condensed["AP"], abs=1e-15)
    assert got["rpref_relative2"] == pytest.approx(condensed["AP"], abs=1e-15)
    assert got["AP"] < condensed["AP"]


def test_ideal_rpref_relative() -> None:
    # Section 4.2: rpref_relative ignores rank 1, so for an ideal list it equals
    # (cg_I(R) - g_I(1)) / cg_I(R); rpref_relative2 equals one.
    qrels = {"s": 3, "a": 2, "a2": 2, "b": 1, "n": 0}
    ideal = ["s", "a", "a2", "b", "n"]
    got = _one(qrels, ideal, ["rpref_relative", "rpref_relative2", "rpref_N"])
    assert got["rpref_relative"] == pytest.approx((8 - 3) / 8, abs=1e-15)
    assert got["rpref_relative2"] == pytest.approx(1.0, abs=1e-15)
    assert got["rpref_N"] == pytest.approx(1.0, abs=1e-15)


def test_relative_metrics_ignore_a_lone_relevant_document_at_rank_one_or_two() -> None:
    # "a system that returns only one relevant document at Rank 1 receives zero ... [and] at
    # Rank 2 also receives zero" for rpref_relative and bpref_relative.
    qrels = {"a": 1, "b": 1, "n": 0}
    for ranking in (["a"], ["n", "a"]):
        got = _one(qrels, ranking, ["bpref_relative", "rpref_relative"])
        assert got == {"bpref_relative": 0.0, "rpref_relative": 0.0}


def test_bpref_is_bpref_r_or_bpref_n() -> None:
    # Eqs. 9-11: bpref = bpref_R when R <= N and bpref_N when R >= N.
    few_nonrel = {"a": 1, "b": 1, "c": 1, "n1": 0, "n2": 0}  # R = 3 > N = 2
    ranking = ["n1", "a", "n2", "b", "c"]
    got = _one(few_nonrel, ranking, ["bpref", "bpref_N"])
    assert got["bpref"] == pytest.approx(got["bpref_N"], abs=1e-15)
    # by hand: (1/3) [(1 - 1/2) + (1 - 2/2) + (1 - 2/2)]
    assert got["bpref"] == pytest.approx((1 / 3) * 0.5, abs=1e-15)
    many_nonrel = {"a": 1, "b": 1, **{f"n{i}": 0 for i in range(5)}}  # R = 2 < N = 5
    got = _one(many_nonrel, ["n0", "n1", "n2", "a", "b"], ["bpref", "bpref_N"])
    # bpref_R: min(R, 3)/R = 1 -> both terms 0; bpref_N: (1 - 3/5) each
    assert got["bpref"] == 0.0
    assert got["bpref_N"] == pytest.approx(1 - 3 / 5, abs=1e-15)


def test_rpref_n_by_hand() -> None:
    # Eq. 16 with gains 3:2:1, H = 3: penalty of a doc counts lower-gain judged docs above it.
    qrels = {"s": 3, "b": 1, "n": 0}  # R = 2, N = 1, cg_I(R) = 4
    got = _one(qrels, ["b", "n", "s"], ["rpref_N", "rpref_relative", "rpref_relative2"], max_level=3)
    # penalty(b at r'=1) = 0; penalty(s at r'=3) = (3-1)/3 + (3-0)/3 = 5/3
    n_prime = 2 + 1 - 4 / 3
    assert got["rpref_N"] == pytest.approx((1 + 3 * (1 - (5 / 3) / n_prime)) / 4, abs=1e-15)
    assert got["rpref_relative"] == pytest.approx((3 * (1 - (5 / 3) / 2)) / 4, abs=1e-15)
    assert got["rpref_relative2"] == pytest.approx((1 + 3 * (1 - (5 / 3) / 3)) / 4, abs=1e-15)


# ----------------------------------------------------------------- the survey (Vyas)
def test_err_survey_example() -> None:
    # Survey, section B: grades 3, 2, 4 on a 0..4 scale; stop probabilities (2^g - 1)/16;
    # "ERR = 1*7/16 + 1/2*3/16*(...) + 1/3*15/16*(1-3/16)*(1-7/16) = 0.63". (The printed middle
    # term has a typo; Chapelle's definition weights rank 2 by (1 - 7/16).)
    got = _one({"a": 3, "b": 2, "c": 4}, ["a", "b", "c"], ["ERR", "ERR@3"])
    expected = 7 / 16 + 0.5 * (1 - 7 / 16) * 3 / 16 + (1 / 3) * (1 - 7 / 16) * (1 - 3 / 16) * 15 / 16
    assert got["ERR"] == pytest.approx(expected, abs=1e-15)
    assert round(got["ERR"], 2) == 0.63


def test_rbp_top_heaviness_does_not_depend_on_r() -> None:
    # Survey, Fig. (top-heaviness): "the value of R does not affect the RBP curves".
    for rank in (1, 5, 12):
        ranking = [f"x{i}" for i in range(rank - 1)] + ["r0"]
        small = _one({f"r{i}": 1 for i in range(10)}, ranking, ["RBP(p=0.8)"])
        large = _one({f"r{i}": 1 for i in range(100)}, ranking, ["RBP(p=0.8)"])
        assert small == large
        assert small["RBP(p=0.8)"] == pytest.approx(0.2 * 0.8 ** (rank - 1), abs=1e-15)


def test_rbp_residual_of_an_empty_list_is_one() -> None:
    got = _one({"a": 1}, [], ["RBPresidual", "RBP"])
    assert got == {"RBPresidual": 1.0, "RBP": 0.0}
