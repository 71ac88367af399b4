"""Session DCG and the classic reliability methods (stability, swap, top-heaviness)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from service.cli import main
from service.errors import InvalidMeasure
from service.formats.types import Qrels, Run
from service.metrics import EvalSettings, evaluate, parse_measure
from service.metrics.stats.reliability import stability, swap_rates, top_heaviness

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "ntcir-like"


# ------------------------------------------------------------------------------ sDCG
def test_sdcg_worked_example_by_hand() -> None:
    # Session s1 judged {a: 2, b: 1}; the run's two queries return [x, b] then [a].
    # DCG@10(q1) = 0/1 + 1/max(1, log2 2) = 1; DCG@10(q2) = 2.
    # sDCG = 1/(1 + log4 1) + 2/(1 + log4 2) = 1 + 2/1.5; ideal per query: 2 + 1 = 3,
    # ideal session = 3 + 3/1.5 = 5; nsDCG = (1 + 4/3)/5.
    qrels = Qrels.from_mapping({"s1": {"a": 2, "b": 1, "n": 0}})
    run = Run.from_rankings("r", {"s1:1": ["x", "b"], "s1:2": ["a"]})
    ev = evaluate(qrels, [run], ["sDCG@10", "nsDCG@10", "sDCG(bq=2)@10", "sDCG(base=10)@10"])
    assert ev.value("r", "sDCG@10", "s1") == pytest.approx(1 + 2 / 1.5, abs=1e-15)
    assert ev.value("r", "nsDCG@10", "s1") == pytest.approx((1 + 2 / 1.5) / 5, abs=1e-15)
    assert ev.value("r", "sDCG(bq=2)@10", "s1") == pytest.approx(1 + 2 / 2, abs=1e-15)
    assert ev.value("r", "sDCG(base=10)@10", "s1") == pytest.approx(1 + 2 / 1.5, abs=1e-15)


def test_nsdcg_is_one_for_an_ideal_session_and_positions_sort_as_numbers() -> None:
    qrels = Qrels.from_mapping({"s": {"a": 3, "b": 1}, "t": {"c": 1}})
    ideal = Run.from_rankings("r", {"s:1": ["a", "b"], "s:2": ["a", "b"], "s:10": ["a", "b"], "t:1": ["c"]})
    ev = evaluate(qrels, [ideal], ["nsDCG@5"])
    assert ev.per_topic("nsDCG@5")[0].tolist() == [1.0, 1.0]
    # query order 1, 2, 10 (numeric): the third query is discounted by 1/(1 + log4 3)
    late = Run.from_rankings("r", {"s:1": ["a", "b"], "s:2": ["a", "b"], "s:10": ["x"]})
    dcg = 3 + 1
    expected = (dcg + dcg / 1.5) / (dcg + dcg / 1.5 + dcg / (1 + math.log(3, 4)))
    assert evaluate(qrels, [late], ["nsDCG@5"]).value("r", "nsDCG@5", "s") == pytest.approx(expected, abs=1e-15)


def test_session_names_separator_and_errors() -> None:
    assert str(parse_measure("sDCG(bq=4,base=2)@10")) == "sDCG@10"
    assert str(parse_measure("nsDCG(bq=3)@10")) == "nsDCG(bq=3)@10"
    with pytest.raises(InvalidMeasure, match="sDCG needs a cutoff"):
        parse_measure("sDCG")
    qrels = Qrels.from_mapping({"s": {"a": 1}})
    run = Run.from_rankings("r", {"s_1": ["a"]})
    assert evaluate(qrels, [run], ["sDCG@5"], EvalSettings(session_sep="_")).value("r", "sDCG@5", "s") == 1.0
    with pytest.raises(InvalidMeasure, match="is not SESSION:POSITION"):
        evaluate(qrels, [run], ["sDCG@5"])


# ------------------------------------------------------------------------- stability
def test_stability_counts_wins_ties_and_minorities() -> None:
    # Two topics, A = (1, 0), B = (0, 1): a bootstrap sample is {t1, t1} (A wins, p = 1/4),
    # {t2, t2} (B wins, 1/4) or {t1, t2} (tie, 1/2). Minority rate -> 1/4, tie rate -> 1/2.
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    st = stability(x, samples=8000, seed=3)
    assert st.observations == 8000
    assert st.minority_rate == pytest.approx(0.25, abs=0.015)
    assert st.tie_rate == pytest.approx(0.5, abs=0.015)
    # A clearly better everywhere: no minority, no ties; identical runs: all ties.
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.5, size=(30, 1))
    clear = stability(np.hstack([base + 0.3, base]), samples=500, seed=1)
    assert (clear.minority_rate, clear.tie_rate) == (0.0, 0.0)
    assert stability(np.hstack([base, base]), samples=100, seed=1).tie_rate == 1.0


def test_stability_is_low_for_runs_of_clearly_different_quality() -> None:
    rng = np.random.default_rng(5)
    base = rng.uniform(0.1, 0.6, (50, 1))
    x = np.clip(base + np.linspace(0, 0.3, 10)[None, :] + rng.normal(0, 0.08, (50, 10)), 0, 1)
    noisy = np.clip(base + rng.normal(0, 0.08, (50, 10)), 0, 1)
    clear_rate = stability(x, seed=1).minority_rate
    noisy_rate = stability(noisy, seed=1).minority_rate
    assert clear_rate < 0.01
    assert noisy_rate > 5 * max(clear_rate, 0.004)  # runs of equal quality disagree across samples


# ------------------------------------------------------------------------------ swap
def test_swap_rate_falls_as_the_difference_grows() -> None:
    rng = np.random.default_rng(8)
    base = rng.uniform(0.1, 0.6, (50, 1))
    x = np.clip(base + np.linspace(0, 0.3, 20)[None, :] + rng.normal(0, 0.1, (50, 20)), 0, 1)
    sw = swap_rates(x, trials=500, seed=2)
    assert sw.sizes == (5, 10, 15, 20, 25)
    rates = sw.rates[-1]  # c = 25
    observed = rates[~np.isnan(rates)][:6]
    assert np.all(np.diff(observed) < 0.02) and observed[0] > observed[-1] + 0.1
    # larger topic sets swap less, bin by bin
    assert np.nanmean(sw.rates[-1, :5]) < np.nanmean(sw.rates[0, :5])
    assert 0 < sw.difference_required < 0.2 and 0 < sw.sensitivity <= 1
    boot = swap_rates(x, trials=300, seed=2, sampling="bootstrap")
    assert boot.sampling == "bootstrap" and np.isfinite(boot.difference_required)
    with pytest.raises(ValueError, match="c <= n/2"):
        swap_rates(x, sizes=[30])


def test_swap_by_hand_on_a_tiny_case() -> None:
    # Four topics; run 0 beats run 1 on topics 0, 1 by 0.5 and loses on topics 2, 3 by 0.1.
    # Disjoint halves of size 2: {0,1}|{2,3} (either way round) swaps; {0,2}|{1,3} and
    # {0,3}|{1,2} do not (both halves favour run 0 by 0.2). So 1/3 of the trials swap.
    x = np.array([[0.6, 0.1], [0.6, 0.1], [0.1, 0.2], [0.1, 0.2]])
    sw = swap_rates(x, sizes=[2], trials=6000, seed=1, bin_width=0.01, min_comparisons=1)
    assert sw.swaps.sum() / sw.counts.sum() == pytest.approx(1 / 3, abs=0.02)


# ------------------------------------------------------------------------ top-heaviness
def test_top_heaviness_curves() -> None:
    h = top_heaviness(["AP", "RBP(p=0.5)", "nDCG@20", "Q"], num_rel=10, depth=20)
    ranks = np.arange(1, 21)
    assert h["AP"] == pytest.approx(1 / (10 * ranks), abs=1e-15)  # AP = (1/R)(1/r)
    assert h["RBP(p=0.5)"] == pytest.approx(0.5 * 0.5 ** (ranks - 1), abs=1e-15)
    assert h["nDCG@20"][0] == h["nDCG@20"][1]  # J&K: no discount up to rank 2 (base 2)
    # Q = AP while r <= R, above it after (late arrival is penalised less)
    assert h["Q"][:10] == pytest.approx(h["AP"][:10], abs=1e-15) and np.all(h["Q"][10:] > h["AP"][10:])
    # RBP does not depend on R (the survey's figure)
    assert top_heaviness(["RBP(p=0.5)"], 100, 20)["RBP(p=0.5)"] == pytest.approx(h["RBP(p=0.5)"])


def test_metaeval_reliability_cli(capsys) -> None:  # type: ignore[no-untyped-def]
    runs = sorted(str(p) for p in (SAMPLE / "runs").glob("*.run"))
    code = main(["metaeval", "--qrels", str(SAMPLE / "qrels.ntcir"), *runs, "-m", "AP", "--B", "200",
                 "--stability", "--swap", "--swap-sizes", "3,6,9", "--top-heaviness", "10", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    (st,) = doc["stability"]
    assert st["observations"] == 200 * 28 and 0 <= st["minority_rate"] <= 0.5
    (sw,) = doc["swap"]
    assert sw["sizes"] == [3, 6, 9] and len(sw["swap_rates"]) == 3
    assert doc["top_heaviness"]["values"]["AP"][0] == pytest.approx(0.1)
    code = main(["metaeval", "--top-heaviness", "5", "-m", "RR", "--depth", "3"])
    out = capsys.readouterr().out
    assert code == 0 and out.strip().splitlines()[-1] == "3\t0.3333"


def test_eval_cli_computes_session_metrics(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "q").write_text("s1 0 a 2\ns1 0 b 1\n")
    (tmp_path / "r").write_text("s1/1 Q0 x 1 2 sys\ns1/1 Q0 b 2 1 sys\ns1/2 Q0 a 1 1 sys\n")
    code = main(["eval", "--qrels", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "sDCG@10", "--per-topic",
                 "--session-sep", "/"])
    out = capsys.readouterr().out
    assert code == 0 and f"sys\ts1\tsDCG@10\t{1 + 2 / 1.5:.6f}" in out
