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
    header, *rows = [line for line in pairs_table.splitlines() if not line.startswith("#")]
    # Holm-adjusted p-values with unadjusted intervals: each disagreement is explained in a note
    assert all("Holm" in line or "per topic" in line for line in pairs_table.splitlines()
               if line.startswith(("# AP:", "# nDCG@10:")))
    # the t-test's pairs carry the t interval, named by its kind (issue 25, items 5 and 7)
    assert header.split("\t") == ["run_a", "run_b", "metric", "test", "mean_a", "mean_b", "diff", "statistic", "p",
                                  "p_adjusted", "significant", "verdict", "diff_t_ci_low", "diff_t_ci_high",
                                  "effect_size", "resamples"]
    assert len(rows) == 2 * 6  # 2 metrics x C(4, 2) pairs
    for row in rows:
        f = row.split("\t")
        p, pa = float(f[8]), float(f[9])  # numbers, at full precision (issue 37)
        assert pa >= p  # Holm never lowers a p-value
        assert f[10] == ("true" if pa < 0.05 else "false") and f[11] == ("significant" if pa < 0.05
                                                                          else "not significant")
        assert f[15] == ""  # the t-test is exact: no B
        assert float(f[6]) == pytest.approx(float(f[4]) - float(f[5]), abs=2e-6)
        assert float(f[12]) <= float(f[6]) <= float(f[13])  # the interval holds the difference
    assert runs_table.splitlines()[0] == "run\tmetric\tmean\tt_ci_low\tt_ci_high\ttopics"
    assert len(runs_table.splitlines()) == 1 + 2 * 4
    notes = [line for line in pairs_table.splitlines() if line.startswith("# ")]
    assert notes[0].startswith("# p: raw; p_adjusted: correction Holm; both at full precision; significant: "
                               "p_adjusted < alpha = 0.05 (false where undecided)")
    assert "# diff_t_ci: 95% Student t interval of the mean difference a - b" in notes
    assert "# t_ci: 95% Student t interval of each run's mean" in notes


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


@pytest.mark.parametrize(("option", "said"), [(("--B", "0"), "resamples B must be positive"),
                                             (("--alpha", "1"), "alpha must lie strictly between 0 and 1")])
def test_compare_refuses_a_setting_out_of_range_without_a_traceback(capsys, option, said) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_cli(capsys, "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:3], "-m", "AP",
                             "-m", "nDCG@10", *option)
    assert code == 2 and out == "" and said in err and "Traceback" not in err, err  # (the CLI's code for a bad value)


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


def test_metaeval_with_runs_tied_on_a_metric_writes_tau_as_null(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Three runs tied on RR (a relevant document first on every topic): tau-b of AP and RR is
    undefined, written null in JSON (which has no NaN: it was written NaN) and nan in the table."""
    topics = [f"T{i}" for i in range(1, 6)]
    (tmp_path / "qrels").write_text("".join(f"{t} 0 {t}-rel{k} 1\n" for t in topics for k in (1, 2)))
    runs = []
    for n in range(3):  # rel2 at rank 2 + n: AP differs, RR does not
        runs.append(tmp_path / f"run{n}")
        runs[-1].write_text("".join(f"{t} Q0 {d} {r} {10 - r} run{n}\n" for t in topics for r, d in enumerate(
            [f"{t}-rel1", *(f"{t}-non{k}" for k in range(n)), f"{t}-rel2"], start=1)))
    argv = ["metaeval", "--qrels", str(tmp_path / "qrels"), *map(str, runs), "-m", "AP", "-m", "RR", "--B", "100"]
    code, out, _ = run_cli(capsys, *argv, "--format", "json")
    assert code == 0

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    doc = json.loads(out, parse_constant=refuse)
    assert doc["kendall_tau"]["matrix"] == [[1.0, None], [None, 1.0]]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0 and "AP\t1.0000\tnan\n" in out


def test_compare_friedman_reports_the_omnibus_test(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS, "--test", "friedman")
    assert code == 0
    assert "# AP: Friedman chi-square" in out
    pairs = [line for line in out.splitlines() if "\tfriedman\t" in line]
    assert len(pairs) == 28


def test_compare_explains_a_test_and_interval_that_disagree(capsys) -> None:  # type: ignore[no-untyped-def]
    """The sample's RUN-01 vs RUN-07 on AP: the studentised bootstrap's p is above 0.05 while
    both intervals of the difference exclude 0; `compare` says why and shows the differences."""
    sample = Path(__file__).resolve().parents[2] / "samples" / "ntcir-like"
    runs = sorted(str(p) for p in (sample / "runs").iterdir())
    code, out, _ = run_cli(capsys, "compare", "--qrels", str(sample / "qrels.ntcir"), *runs, "-m", "AP",
                           "--format", "json")
    assert code == 0
    doc = json.loads(out)["metrics"]["AP"]
    pair = {(p["run_a"], p["run_b"]): p for p in doc["pairs"]}[("RUN-01", "RUN-07")]
    assert 0.05 < pair["p"] < 0.07 and pair["diff_percentile_ci_low"] > 0
    said = {(d["run_a"], d["run_b"]): d for d in doc["disagreements"]}
    why = said[("RUN-01", "RUN-07")]
    assert "2 the other" in why["explanation"] and "excludes 0" not in why["explanation"].split(".")[0][:10]
    assert len(why["differences"]) == 19 and sum(v < 0 for v in why["differences"].values()) == 2
    # every pair explained really disagrees: its test verdict differs from its t interval's
    # (checked here with scipy) or from its bootstrap interval's (named first in the text, by the
    # kind the rows print: percentile, issue 37, item 7)
    pairs = {(x["run_a"], x["run_b"]): x for x in doc["pairs"]}
    for (a, b), d in said.items():
        p = pairs[(a, b)]["p_adjusted"]
        diffs = np.array(list(d["differences"].values()))
        t_low, t_high = stats.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
        t_disagrees = (p < 0.05) != (t_low > 0 or t_high < 0)
        assert t_disagrees or "bootstrap percentile interval" in d["explanation"].split("This is not an error")[0], \
            (a, b)
    # clearly significant pairs (both intervals far from 0) are not explained
    clear = [k for k, x in pairs.items() if x["p"] < 0.01 and x["diff_percentile_ci_low"] > 0.05]
    assert clear and not set(clear) & set(said)
    code, text, _ = run_cli(capsys, "compare", "--qrels", str(sample / "qrels.ntcir"), *runs, "-m", "AP")
    assert "# AP: RUN-01 vs RUN-07: The paired bootstrap test" in text
    assert "# AP: RUN-01 - RUN-07 per topic, sorted: " in text


def test_compare_never_prints_a_p_rounded_across_alpha(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 25, item 3: a pair whose p is 0.049995 (forced into the test's result) is never
    printed as 0.05: the TSV (data, issue 37) and the JSON both carry the full float, with
    significant true beside it."""
    import dataclasses

    from service.metrics.stats import pairwise as module

    real = module.pairwise_many  # compare tests every metric at once (issue 38)

    def forced(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = {}
        for key, res in real(*args, **kwargs).items():
            p = np.full_like(res.p, 0.049995)
            out[key] = dataclasses.replace(res, p=p, p_adjusted=p)
        return out

    monkeypatch.setattr(module, "pairwise_many", forced)
    rng = np.random.default_rng(3)
    for name in ("sysA", "sysB"):
        (tmp_path / f"{name}.csv").write_text("".join(f"q{i},{v}\n" for i, v in enumerate(rng.random(12))))
    files = [str(tmp_path / "sysA.csv"), str(tmp_path / "sysB.csv")]
    code, out, _ = run_cli(capsys, "compare", "--scores", *files, "--test", "t")
    assert code == 0
    row = [line for line in out.splitlines() if line.startswith("sysA\tsysB")][0].split("\t")
    assert (row[8], row[9], row[10], row[11]) == ("0.049995", "0.049995", "true", "significant")
    assert "0.05\t" not in out and "0.0500" not in out
    code, out, _ = run_cli(capsys, "compare", "--scores", *files, "--test", "t", "--format", "json")
    (pair,) = json.loads(out)["metrics"]["score"]["pairs"]
    assert pair["p_adjusted"] == 0.049995 and pair["significant"] is True and pair["verdict"] == "significant"


def test_compare_tsv_is_the_json_as_data(capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 37, item 1: every pair field of the TSV is the JSON's value: p and p_adjusted read
    back as the very floats, booleans true/false, the verdict and B as the JSON has them (the
    settled bootstrap, so B varies per pair)."""
    common = ["compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:5], "-m", "AP", "-m", "nDCG@10",
              "--test", "bootstrap", "--B", "200", "--correction", "holm", "--sequential"]
    code, tsv, _ = run_cli(capsys, *common)
    assert code == 0
    code, js, _ = run_cli(capsys, *common, "--format", "json")
    assert code == 0
    doc = json.loads(js)
    pairs_table = tsv.strip().split("\n\n")[1]
    header, *rows = [line.split("\t") for line in pairs_table.splitlines() if not line.startswith("#")]
    want = {(m, p["run_a"], p["run_b"]): p for m, body in doc["metrics"].items() for p in body["pairs"]}
    assert len(rows) == len(want) == 2 * 10
    for row in rows:
        cell = dict(zip(header, row))
        pair = want[(cell["metric"], cell["run_a"], cell["run_b"])]
        assert float(cell["p"]) == pair["p"] and float(cell["p_adjusted"]) == pair["p_adjusted"]
        assert cell["significant"] == ("true" if pair["significant"] else "false")
        assert cell["verdict"] == pair["verdict"]
        assert int(cell["resamples"]) == pair["resamples"]
        for key in ("mean_a", "mean_b", "diff", "statistic", "effect_size"):
            assert float(cell[key]) == pytest.approx(pair[key], abs=5e-7)
    assert {cell[10] for cell in rows} <= {"true", "false"}


@pytest.mark.parametrize("collection", ["sample", "dl19"])
def test_compare_defaults_give_the_same_verdicts_under_every_seed(capsys, collection: str) -> None:  # type: ignore[no-untyped-def]
    """Issue 37, item 3: with its defaults (the bootstrap, settled: no --fixed) compare's verdict
    of every pair is the same under seeds 1-5, on the sample collection and on NIST's DL 2019
    runs (AP and nDCG@10, Holm); with --fixed (B = 1000 for every pair) the sample's verdicts
    did change with the seed (7 of 56 pairs across seeds 1-5, as the issue found)."""
    from tests.conftest import require_shared

    if collection == "sample":
        inputs = ["--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS]
    else:
        d = require_shared("data/trec-dl-passage") / "dl19-passage"
        inputs = ["--qrels", str(d / "qrels.txt"), *sorted(str(p) for p in (d / "runs").glob("*.gz"))]

    def verdicts(*extra: str) -> dict[tuple[str, str, str], str]:
        out = {}
        for seed in range(1, 6):
            code, text, _ = run_cli(capsys, "compare", *inputs, "-m", "AP", "-m", "nDCG@10", "--correction", "holm",
                                    "--seed", str(seed), "--format", "json", *extra)
            assert code == 0
            doc = json.loads(text)
            assert doc["rule"] == ("fixed" if extra else "settled")
            for metric, body in doc["metrics"].items():
                for p in body["pairs"]:
                    out.setdefault((metric, p["run_a"], p["run_b"]), set()).add(p["verdict"])
        return out

    settled = verdicts()
    assert settled and all(len(v) == 1 for v in settled.values()), {k: v for k, v in settled.items() if len(v) > 1}
    if collection == "sample":
        fixed = verdicts("--fixed")
        assert sum(len(v) > 1 for v in fixed.values()) > 0  # the reason for the default


@pytest.mark.parametrize("test", ["wilcoxon", "sign"])
def test_compare_prints_whole_statistics_as_integers(capsys, test: str) -> None:  # type: ignore[no-untyped-def]
    """Issue 37, item 7: a rank sum or a count of wins is printed "66", not "66.000000"; the
    JSON keeps the float."""
    code, out, _ = run_cli(capsys, "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:4], "-m", "nDCG",
                           "--test", test)
    assert code == 0
    header, *rows = [line.split("\t") for line in out.strip().split("\n\n")[1].splitlines()
                     if not line.startswith("#")]
    statistics = [dict(zip(header, row))["statistic"] for row in rows]
    assert len(statistics) == 6 and all(s.isdigit() for s in statistics), statistics
    code, js, _ = run_cli(capsys, "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS[:4], "-m", "nDCG",
                          "--test", test, "--format", "json")
    pairs = json.loads(js)["metrics"]["nDCG"]["pairs"]
    assert [p["statistic"] for p in pairs] == [float(s) for s in statistics]


def test_compare_notes_quote_the_rows_interval_in_words(capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 37, item 7: the sample's RUN-05 vs RUN-06 on P@10 (5 of 19 topics go the other
    way): the note quotes the rows' interval (percentile bootstrap, the row's very ends), says
    how often a resample leaves the topics out as a percentage that is not "about 0%", without
    a formula, and every line of the text uses the ASCII minus sign."""
    code, out, _ = run_cli(capsys, "compare", "--qrels", str(SAMPLE / "qrels.ntcir"), *RUNS, "-m", "P@10")
    assert code == 0
    row = dict(zip(*[line.split("\t") for line in out.splitlines()
                     if line.startswith(("run_a\t", "RUN-05\tRUN-06\t"))]))
    (note,) = [line for line in out.splitlines() if line.startswith("# P@10: RUN-05 vs RUN-06: ")]
    low, high = float(row["diff_percentile_ci_low"]), float(row["diff_percentile_ci_high"])
    assert f"95% bootstrap percentile interval [{low:.3f}, {high:.3f}]" in note
    assert "# diff_percentile_ci: 95% bootstrap percentile interval, B = 1000, seed 0" in out
    assert "BCa" not in out
    assert ("resamples that leave out all 5 of those topics (about 0.3% of them, as each resample draws 19 topics "
            "at random, with replacement)") in note
    assert "about 0%" not in out and "/n)^n" not in out
    assert "\u2212" not in out and "topic 0002, -0.600" in note
