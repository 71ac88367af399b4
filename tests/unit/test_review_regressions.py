"""Defects a review of the core found, each pinned by the smallest case that showed it."""

from __future__ import annotations

import numpy as np
import pytest

from service.errors import InvalidInput, InvalidMeasure
from service.formats.readers import parse_qrels, parse_run
from service.formats.types import Qrels, Run
from service.metrics import EvalSettings, evaluate, parse_measure
from service.metrics.stats.anova import anova_two_way, effect_sizes
from service.metrics.stats.meta import discriminative_power
from service.metrics.stats.pairwise import pairwise


def one(judgments, ranking, names, **settings):  # type: ignore[no-untyped-def]
    ev = evaluate(Qrels.from_mapping({"t": judgments}), [Run.from_rankings("r", {"t": ranking})], names,
                  EvalSettings(**settings))
    return {str(m): ev.value("r", m, "t") for m in ev.measures}


def test_bpref_r_is_sakais_eq_10_not_trec_evals_bpref() -> None:
    # R = 3 > N = 1: bpref divides the penalty by min(R, N) = 1, bpref_R by R = 3.
    got = one({"r1": 1, "r2": 1, "r3": 1, "n": 0}, ["n", "r1", "r2", "r3"], ["bpref", "bpref_R"])
    assert got["bpref_R"] == pytest.approx(1 - 1 / 3, abs=1e-15)
    assert got["bpref"] == 0.0


def test_a_byte_order_mark_is_not_part_of_the_first_topic() -> None:
    qrels = parse_qrels(b"\xef\xbb\xbf1 0 d1 1\n1 0 d2 1\n")
    run = parse_run(b"\xef\xbb\xbf1 Q0 d1 1 2 r\n1 Q0 d2 2 1 r\n")
    assert qrels.topics == ("1",) and run.topics == ("1",)
    assert evaluate(qrels, [run], ["AP"]).means("AP")[0] == 1.0


def test_a_constant_difference_is_certain_for_every_test() -> None:
    b = np.array([0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    x = np.column_stack([b + 0.1, b])  # differences equal up to round-off
    for test in ("t", "bootstrap", "randomisation"):
        r = pairwise(x, test=test, resamples=999, seed=1)
        assert r.p[0] <= 0.02, test
    assert pairwise(x, test="bootstrap", resamples=999, seed=1).p[0] == pytest.approx(1 / 1000)
    assert discriminative_power(x, resamples=999, seed=1).asl[0] == pytest.approx(1 / 1000)
    e = effect_sizes(x, seed=1)
    assert np.isinf(e.standardised[0]) and e.standardised[0] > 0


def test_anova_of_identical_runs_has_no_residual_round_off() -> None:
    col = np.array([0.1, 0.3, 0.2, 0.9])
    a = anova_two_way(np.column_stack([col, col, col]))
    assert a.ss_residual == 0.0 and a.ss_runs == 0.0 and a.p_runs == 1.0


def test_gain_profiles_not_increasing_in_level_stay_in_range() -> None:
    gains = ((1, 3), (2, 2), (3, 1))  # level 1 is the most valuable
    got = one({"a": 1, "b": 3}, ["a", "b"], ["ERR(stop=linear)", "RBP(p=0.1)", "nERR(stop=linear)", "ERR"],
              gains=gains)
    assert all(0 <= v <= 1 for v in got.values()), got
    assert got["nERR(stop=linear)"] == pytest.approx(1.0)  # the list is ideal by gain
    # stop=exp uses the gains too: (2^g - 1)/2^gmax with g = gain, gmax = 3
    assert got["ERR"] == pytest.approx(7 / 8 + 0.5 * (1 / 8) * (1 / 8))


def test_parameters_that_would_do_nothing_are_refused_and_spellings_agree() -> None:
    with pytest.raises(InvalidMeasure, match="norm only changes"):
        parse_measure("AP(norm=minRk)")
    with pytest.raises(InvalidMeasure, match="given twice"):
        parse_measure("Q(beta=1,beta=2)")
    with pytest.raises(InvalidMeasure, match="given twice"):
        parse_measure("nDCG(gains={1:1,1:5})@10")
    assert parse_measure("nDCG(gains={0:0,1:1})@10") == parse_measure("nDCG(gains={1:1})@10")
    for bad in ("P@²", "AP(rel=1e999)", "Q(beta=1" + "0" * 400 + ")"):
        with pytest.raises(InvalidMeasure):
            parse_measure(bad)


def test_huge_levels_and_labels_are_input_errors_with_lines() -> None:
    with pytest.raises(InvalidInput) as err:
        parse_qrels(b"1 d1 L1\n1 d2 L99999999999999999999\n")
    assert err.value.line == 2
    with pytest.raises(InvalidInput) as err:
        parse_qrels(b"1 0 d1 1\n1 0 d2 99999999999999999999\n")
    assert err.value.line == 2 and "out of range" in str(err.value)
    with pytest.raises(InvalidInput, match="above the largest supported level"):
        parse_qrels(b"1 0 d1 32767\n")
    with pytest.raises(InvalidInput, match="is not L<n>"):
        parse_qrels(b"1 d1 LL2\n")


def test_all_negative_labels_and_huge_cutoffs_do_not_crash() -> None:
    q = Qrels.from_mapping({"t": {"a": -1, "b": -1}})
    assert q.max_level == 0
    ev = evaluate(q, [Run.from_rankings("r", {"t": ["a"]})], ["RBP", "rpref_N", "ERR"], EvalSettings(no_relevant="count"))
    assert ev.per_topic("RBP")[0, 0] == 0.0
    got = one({"a": 2, "b": 1}, ["a", "x", "b"], ["nCGavg@999999999", "CG@999999999", "ERR"], max_level=2000)
    assert got["CG@999999999"] == 3.0 and 0 < got["nCGavg@999999999"] <= 1
    with pytest.raises(ValueError, match="session_sep"):
        EvalSettings(session_sep="")
