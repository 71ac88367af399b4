"""`cranfield compare` and `cranfield metaeval` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from service.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "ntcir-like"
RUNS = sorted(str(p) for p in (SAMPLE / "runs").glob("*.run"))


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_tsv_tables(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:4], "-m", "AP",
                           "-m", "nDCG@10", "--test", "t", "--correction", "holm")
    assert code == 0
    runs_table, pairs_table = out.strip().split("\n\n")
    header, *rows = pairs_table.splitlines()
    assert header.split("\t") == ["run_a", "run_b", "metric", "test", "mean_a", "mean_b", "diff", "statistic", "p",
                                  "p_adjusted", "significant", "diff_ci_low", "diff_ci_high", "effect_size"]
    assert len(rows) == 2 * 6  # 2 metrics x C(4, 2) pairs
    for row in rows:
        f = row.split("\t")
        assert float(f[9]) >= float(f[8])  # Holm never lowers a p-value
        assert f[10] == ("yes" if float(f[9]) < 0.05 else "no")
        assert float(f[6]) == pytest.approx(float(f[4]) - float(f[5]), abs=2e-6)
        assert float(f[11]) <= float(f[6]) <= float(f[12])  # the bootstrap interval holds the difference
    assert len(runs_table.splitlines()) == 1 + 2 * 4


def test_compare_scores_files_match_scipy(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    a, b = rng.random(15), rng.random(15)
    (tmp_path / "sysA.csv").write_text("topic,ndcg@5\n" + "".join(f"q{i},{v}\n" for i, v in enumerate(a)))
    (tmp_path / "sysB.tsv").write_text("".join(f"q{i}\t{v}\n" for i, v in enumerate(b)))
    code, out, _ = run_cli(capsys, "compare", "--scores", str(tmp_path / "sysA.csv"), str(tmp_path / "sysB.tsv"),
                           "--test", "t", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    (pair,) = doc["metrics"]["score"]["pairs"]
    assert (pair["run_a"], pair["run_b"]) == ("sysA", "sysB")
    assert pair["p"] == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)


def test_compare_bad_score_file(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.csv").write_text("q1,0.5\nq2,oops\n")
    (tmp_path / "b.csv").write_text("q1,0.5\nq2,0.1\n")
    code, _, err = run_cli(capsys, "compare", "--scores", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"))
    assert code == 1 and f"{tmp_path / 'a.csv'}:2: value 'oops' is not a number" in err


def test_compare_is_reproducible_with_a_seed(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:3], "--test", "randomisation", "--seed", "7"]
    assert run_cli(capsys, *argv)[1] == run_cli(capsys, *argv)[1]


def test_metaeval_power_tau_and_reduction(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "metaeval", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS, "-m", "AP", "-m", "Q",
                           "--B", "200", "--reduce", "50", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert [(r["kept"], r["metric"]) for r in doc["discriminative_power"]] == [(100, "AP"), (100, "Q"), (50, "AP"), (50, "Q")]
    assert all(0 <= r["power"] <= 1 and r["pairs"] == 28 for r in doc["discriminative_power"])
    tau = np.array(doc["kendall_tau"]["matrix"])
    assert tau.shape == (2, 2) and np.allclose(np.diag(tau), 1)
    assert doc["kendall_tau"]["significant_at_0.01_above"] == pytest.approx(
        stats.norm.ppf(0.995) * np.sqrt(2 * (2 * 8 + 5) / (9 * 8 * 7)))


def test_compare_friedman_reports_the_omnibus_test(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS, "--test", "friedman")
    assert code == 0
    assert "# AP: Friedman chi-square" in out
    pairs = [line for line in out.splitlines() if "\tfriedman\t" in line]
    assert len(pairs) == 28
