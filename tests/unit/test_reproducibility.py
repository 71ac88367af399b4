"""The reproducibility measures (service/metrics/stats/reproducibility.py) on hand-checkable
cases, the differences from repro_eval that docs/reproducibility.md documents, and
``cranfield repro`` on small files. tests/peers/test_repro_peers.py compares with repro_eval
itself on TREC DL runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from service.cli import main
from service.metrics.stats import reproducibility as rp

# --- KTU -------------------------------------------------------------------------------------


def test_ktu_identical_and_reversed_lists() -> None:
    docs = ["d3", "d1", "d4", "d2"]
    for variant in rp.KTU_VARIANTS:
        assert rp.ktu(docs, docs, variant=variant) == pytest.approx(1.0)
        assert rp.ktu(docs, docs[::-1], variant=variant) == pytest.approx(-1.0)


def test_ktu_ranks_variant_ties_the_missing_documents_at_the_bottom() -> None:
    # Union a..f; c, d missing from the reproduction (tied at its rank 4), e, f from the
    # original (tied at 4). Pairs: 15; 9 concordant (a, b against everything), 4 discordant
    # ({c, d} x {e, f}), (c, d) and (e, f) tied in one list: tau-b = 5 / sqrt(14 * 14).
    orig, rep = ["a", "b", "c", "d"], ["a", "b", "e", "f"]
    assert rp.ktu(orig, rep, variant="ranks") == pytest.approx(5 / 14, abs=1e-15)
    # repro_eval's KTU compares the docnos rank by rank: c < d and e < f alphabetically, so
    # replacing the two bottom documents by two others leaves it at 1.
    assert rp.ktu(orig, rep) == pytest.approx(1.0)


def test_repro_evals_ktu_depends_on_the_documents_names() -> None:
    """Why ``variant="ranks"`` exists: repro_eval's KTU pairs rank i of one list with rank i of
    the other and compares docnos as strings, so it is not a function of the two orders.
    B A C against B C A: of the three common documents only A and C trade places; the rank
    correlation is 1/3, repro_eval's KTU -1. Renaming the documents (the same two orders)
    moves repro_eval's value and leaves the rank one where it was."""
    orig, rep = ["B", "A", "C"], ["B", "C", "A"]
    assert rp.ktu(orig, rep) == pytest.approx(-1.0)
    assert rp.ktu(orig, rep, variant="ranks") == pytest.approx(1 / 3)
    rename = {"A": "y", "B": "x", "C": "z"}  # x < y < z: the original is now in alphabetical order
    orig2, rep2 = [rename[d] for d in orig], [rename[d] for d in rep]
    assert rp.ktu(orig2, rep2) == pytest.approx(1 / 3)
    assert rp.ktu(orig2, rep2, variant="ranks") == pytest.approx(1 / 3)


def test_ktu_compares_the_common_prefix_of_lists_of_different_lengths() -> None:
    orig, rep = ["a", "b", "c", "d", "e"], ["a", "c", "b"]
    assert rp.ktu(orig, rep) == rp.ktu(orig[:3], rep)
    assert rp.ktu(orig, rep) == pytest.approx(1 / 3)
    assert rp.ktu(orig, rep, depth=2) == pytest.approx(1.0)  # a b / a c: in alphabetical order both
    assert math.isnan(rp.ktu(["a"], ["a", "b"]))
    with pytest.raises(ValueError):
        rp.ktu(orig, rep, variant="kendall")


# --- RBO -------------------------------------------------------------------------------------


def test_rbo_known_values() -> None:
    assert rp.rbo(["a", "b", "c"], ["a", "b", "c"], depth=3) == pytest.approx(1.0)
    assert rp.rbo(["a", "b", "c"], ["d", "e", "f"], depth=3) == 0.0
    # depth 1: 0/1 (weight 1); depth 2: 2/2 (weight 1/2): (0 + 1/2) / (1 + 1/2)
    assert rp.rbo(["a", "b"], ["b", "a"], p=0.5, depth=2) == pytest.approx(1 / 3)
    # depth 1..3: agreements 1, 1/2, 1/3 with weights 1, 1/2, 1/4: (4/3) / (7/4)
    assert rp.rbo(["a"], ["a"], p=0.5, depth=3) == pytest.approx(16 / 21)


def test_rbo_of_identical_short_lists_is_below_one_at_depth_1000() -> None:
    """repro_eval's RBO is not extrapolated: past a list's end the agreement A_d/d falls, so two
    identical 5-document lists score 0.476 at its default depth 1000 (1 at depth 5)."""
    docs = ["a", "b", "c", "d", "e"]
    d = np.arange(1, 1001)
    w = 0.95 ** (d - 1)
    expected = float(np.sum(w * np.minimum(d, 5) / d) / np.sum(w))
    assert rp.rbo(docs, docs) == pytest.approx(expected, abs=1e-14)
    assert rp.rbo(docs, docs) == pytest.approx(0.4763, abs=1e-4)
    assert rp.rbo(docs, docs, depth=5) == pytest.approx(1.0)


def test_document_order_means_and_left_out_topics() -> None:
    orig = {"1": ["a", "b", "c"], "2": ["x"], "3": ["a"]}
    rep = {"1": ["a", "c", "b"], "2": ["x"], "4": ["b"]}
    d = rp.document_order(orig, rep, rbo_depth=3)
    assert d.topics == ("1", "2") and d.left_out == ("3", "4")
    assert math.isnan(d.ktu["2"])  # one document: undefined, left out of the mean
    assert d.ktu_mean == pytest.approx(d.ktu["1"])
    assert d.rbo_mean == pytest.approx((d.rbo["1"] + d.rbo["2"]) / 2)


# --- effectiveness, effect, tests ------------------------------------------------------------

ORIG_B = {"1": 0.2, "2": 0.4}
ORIG_A = {"1": 0.4, "2": 0.6}
REP_B = {"1": 0.3, "2": 0.3}
REP_A = {"1": 0.4, "2": 0.4}


def test_rmse_and_nrmse_by_hand() -> None:
    assert rp.rmse(ORIG_B, REP_B) == pytest.approx(0.1)
    # worst RMSE: sqrt((0.8^2 + 0.6^2) / 2) = sqrt(0.5)
    assert rp.nrmse(ORIG_B, REP_B) == pytest.approx(0.1 / math.sqrt(0.5))
    assert rp.rmse(ORIG_B, ORIG_B) == 0.0
    with pytest.raises(ValueError, match="no score"):
        rp.rmse(ORIG_B, {"1": 0.2})


def test_er_and_delta_ri_by_hand() -> None:
    # original: mean improvement 0.2, RI = (0.5 - 0.3) / 0.3 = 2/3
    # reproduction: mean improvement 0.1, RI = (0.4 - 0.3) / 0.3 = 1/3
    assert rp.effect_ratio(ORIG_B, ORIG_A, REP_B, REP_A) == pytest.approx(0.5)
    assert rp.delta_ri(ORIG_B, ORIG_A, REP_B, REP_A) == pytest.approx(1 / 3)
    assert rp.effect_ratio(ORIG_B, ORIG_A, ORIG_B, ORIG_A) == pytest.approx(1.0)
    assert rp.delta_ri(ORIG_B, ORIG_A, ORIG_B, ORIG_A) == 0.0
    assert math.isinf(rp.effect_ratio(ORIG_B, ORIG_B, REP_B, REP_A))  # no original effect


def test_t_tests() -> None:
    o = {str(i): v for i, v in enumerate([0.1, 0.5, 0.3, 0.9, 0.4])}
    r = {str(i): v for i, v in enumerate([0.2, 0.4, 0.35, 0.7, 0.45])}
    x, y = list(o.values()), list(r.values())
    assert rp.t_test(o, r, paired=True) == pytest.approx(stats.ttest_rel(x, y).pvalue)
    # another collection: Student's pooled test (repro_eval's), Welch's on request
    other = {str(i): v for i, v in enumerate([0.5, 0.52, 0.49, 0.51, 0.5, 0.48, 0.5, 0.53])}
    z = list(other.values())
    student = rp.t_test(o, other, paired=False)
    welch = rp.t_test(o, other, paired=False, welch=True)
    assert student == pytest.approx(stats.ttest_ind(x, z).pvalue)
    assert welch == pytest.approx(stats.ttest_ind(x, z, equal_var=False).pvalue)
    assert abs(student - welch) > 0.01  # unequal spreads and sizes: the two tests differ
    # every topic scored alike: 0/0, reported as p = 1 (repro_eval: NaN unless every measure is equal)
    assert rp.t_test(o, dict(o), paired=True) == 1.0


def test_bootstrap_effects_scheme() -> None:
    rng = np.random.default_rng(5)
    n = 30
    ob = {str(i): v for i, v in enumerate(rng.uniform(0.2, 0.5, n))}
    oa = {t: v + rng.uniform(0.0, 0.2) for t, v in ob.items()}
    rb = {t: v + rng.normal(0, 0.02) for t, v in ob.items()}
    ra = {t: v + rng.uniform(-0.05, 0.2) for t, v in rb.items()}
    iv = rp.bootstrap_effects(ob, oa, rb, ra, paired=True, resamples=2000, seed=3)
    # the scheme by hand: one draw of topic indices for the four runs
    idx = np.random.default_rng(3).integers(0, n, size=(2000, n))
    arr = [np.array(list(s.values())) for s in (ob, oa, rb, ra)]
    er = (arr[3] - arr[2])[idx].mean(1) / (arr[1] - arr[0])[idx].mean(1)
    assert (iv.er_low, iv.er_high) == pytest.approx(tuple(np.quantile(er, [0.025, 0.975])), abs=1e-12)
    point = rp.effect_ratio(ob, oa, rb, ra)
    assert iv.er_low < point < iv.er_high
    assert iv.dri_low < rp.delta_ri(ob, oa, rb, ra) < iv.dri_high
    assert iv.er_undefined == 0 and iv.paired
    again = rp.bootstrap_effects(ob, oa, rb, ra, paired=True, resamples=2000, seed=3)
    assert again == iv  # seeded
    # unpaired: each collection's topics resampled on their own (the original's draw first)
    unpaired = rp.bootstrap_effects(ob, oa, {"x": 0.3, "y": 0.2, "z": 0.4}, {"x": 0.4, "y": 0.2, "z": 0.5},
                                    paired=False, resamples=500, seed=1)
    g = np.random.default_rng(1)
    io_, ir_ = g.integers(0, n, size=(500, n)), g.integers(0, 3, size=(500, 3))
    er_u = (np.array([0.1, 0.0, 0.1])[ir_].mean(1)) / (arr[1] - arr[0])[io_].mean(1)
    assert unpaired.er_low == pytest.approx(np.quantile(er_u, 0.025), abs=1e-12)
    # an original without effect: every resample undefined
    flat = rp.bootstrap_effects(ob, ob, rb, ra, paired=True, resamples=100)
    assert flat.er_undefined == 100 and math.isnan(flat.er_low)


# --- cranfield repro ----------------------------------------------------------------------------

QRELS = "1 0 a 2\n1 0 b 0\n1 0 c 1\n1 0 d 0\n2 0 x 1\n2 0 y 0\n2 0 z 3\n"


def _run(path: Path, tag: str, lists: dict[str, list[tuple[str, float]]]) -> str:
    path.write_text("".join(f"{t} Q0 {d} {i} {s} {tag}\n" for t, items in lists.items()
                            for i, (d, s) in enumerate(items, 1)))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "qrels").write_text(QRELS)
    return {
        "qrels": str(tmp_path / "qrels"),
        "b": _run(tmp_path / "b", "b", {"1": [("b", 3), ("a", 2), ("c", 1)], "2": [("y", 2), ("x", 1)]}),
        "a": _run(tmp_path / "a", "a", {"1": [("a", 3), ("c", 2), ("b", 1)], "2": [("z", 2), ("x", 1)]}),
        "rb": _run(tmp_path / "rb", "rb", {"1": [("a", 3), ("b", 2), ("c", 1)], "2": [("y", 2), ("x", 1)]}),
        "ra": _run(tmp_path / "ra", "ra", {"1": [("a", 3), ("c", 2), ("d", 1)], "2": [("x", 2), ("z", 1)]}),
    }


def _repro(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["repro", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_matches_the_core(capsys, files) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = _repro(capsys, "--qrels", files["qrels"], "--orig", files["b"], files["a"],
                          "--rep", files["rb"], files["ra"], "-m", "AP", "--format", "json", "--per-topic",
                          "--rbo-depth", "3")
    assert code == 0
    doc = json.loads(out)
    assert doc["same_collection"] is True
    order = doc["document_order"]["baseline"]
    assert order["per_topic"]["1"]["KTU"] == pytest.approx(rp.ktu(["b", "a", "c"], ["a", "b", "c"]))
    assert order["per_topic"]["1"]["RBO"] == pytest.approx(rp.rbo(["b", "a", "c"], ["a", "b", "c"], depth=3))
    assert order["per_topic"]["2"]["KTU"] == pytest.approx(1.0)
    ap = doc["metrics"]["AP"]
    o, r = ap["baseline"]["per_topic"]["original"], ap["baseline"]["per_topic"]["reproduction"]
    assert o["1"] == pytest.approx((1 / 2 + 2 / 3) / 2)  # a at 2, c at 3; R = 2
    assert ap["baseline"]["RMSE"] == pytest.approx(rp.rmse(o, r))
    oa, ra = ap["advanced"]["per_topic"]["original"], ap["advanced"]["per_topic"]["reproduction"]
    assert ap["effect"]["ER"] == pytest.approx(rp.effect_ratio(o, oa, r, ra))
    assert ap["effect"]["DeltaRI"] == pytest.approx(rp.delta_ri(o, oa, r, ra))
    assert ap["baseline"]["test"] == "paired t"


def test_cli_tied_scores_are_ordered_as_repro_eval_does(capsys, tmp_path, files) -> None:  # type: ignore[no-untyped-def]
    """Tied scores: both lists are put in trec_eval's order (docno descending), which is what
    repro_eval's break_ties does, so two files listing tied documents in different line
    orders have KTU 1 and RBO 1."""
    orig = _run(tmp_path / "t1", "t1", {"1": [("a", 1), ("b", 1), ("c", 1)], "2": [("x", 1), ("z", 1)]})
    rep = _run(tmp_path / "t2", "t2", {"1": [("c", 1), ("a", 1), ("b", 1)], "2": [("z", 1), ("x", 1)]})
    code, out, _ = _repro(capsys, "--qrels", files["qrels"], "--orig", orig, "--rep", rep, "-m", "AP",
                          "--rbo-depth", "2", "--format", "json", "--per-topic")
    assert code == 0
    order = json.loads(out)["document_order"]["baseline"]
    assert order["KTU"] == pytest.approx(1.0) and order["RBO"] == pytest.approx(1.0)
    assert "effect" not in json.loads(out)["metrics"]["AP"]  # one run each: no ER / DeltaRI
    # in file order the two lists differ
    code, out, _ = _repro(capsys, "--qrels", files["qrels"], "--orig", orig, "--rep", rep, "-m", "AP",
                          "--order", "file", "--format", "json")
    assert json.loads(out)["document_order"]["baseline"]["KTU"] < 1.0


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")  # the advanced runs score 1 everywhere
def test_cli_other_collection_and_tsv(capsys, tmp_path, files) -> None:  # type: ignore[no-untyped-def]
    other = tmp_path / "qrels2"
    other.write_text("7 0 a 1\n7 0 b 0\n8 0 x 0\n8 0 y 2\n")
    rb = _run(tmp_path / "o1", "o1", {"7": [("b", 2), ("a", 1)], "8": [("y", 2), ("x", 1)]})
    ra = _run(tmp_path / "o2", "o2", {"7": [("a", 2), ("b", 1)], "8": [("y", 2), ("x", 1)]})
    code, out, _ = _repro(capsys, "--qrels", files["qrels"], "--rep-qrels", str(other), "--orig", files["b"],
                          files["a"], "--rep", rb, ra, "-m", "RR", "--welch")
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines() if not line.startswith("#")]
    names = {r[0] for r in rows}
    assert "KTU" not in names and "RMSE" not in names  # no common topics: no order, no RMSE
    assert {"ER", "ER_low", "ER_high", "DeltaRI", "p_value(Welch t)"} <= names
    er = next(float(r[4]) for r in rows if r[0] == "ER")
    # original RR: b 1/2 and 1/2 (x at 2), a 1 and 1 -> improvement 0.5; reproduction: 0.5 and 0 -> 0.25
    assert er == pytest.approx(0.5)


def test_cli_errors_name_the_file_and_line(capsys, tmp_path, files) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad"
    bad.write_text("1 Q0 a 1 3 t\n1 Q0 b 2 notanumber t\n")
    code, _, err = _repro(capsys, "--qrels", files["qrels"], "--orig", files["b"], "--rep", str(bad))
    assert code == 1 and f"{bad}:2:" in err
    code, _, err = _repro(capsys, "--qrels", files["qrels"], "--orig", files["b"], files["a"], "--rep", files["rb"])
    assert code == 1 and "--rep as many" in err
    code, _, err = _repro(capsys, "--qrels", files["qrels"], "--orig", files["b"], "--rep", files["rb"], "-m", "nope")
    assert code == 2
