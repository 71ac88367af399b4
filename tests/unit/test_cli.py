"""`cranfield eval` end to end: output formats, options, errors, start-up imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "ntcir-like"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("0001 0 a 2\n0001 0 b 1\n0001 0 c 0\n0002 0 d 1\n0003 0 e 0\n")
    run1 = tmp_path / "r1.run"
    run1.write_text("0001 Q0 a 1 3 sysA\n0001 Q0 c 2 2 sysA\n0001 Q0 b 3 1 sysA\n0002 Q0 x 1 1 sysA\n")
    run2 = tmp_path / "r2.run"
    run2.write_text("0001 Q0 b 1 3 sysB\n0002 Q0 d 1 1 sysB\n")
    return qrels, run1, run2


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_tsv_means_and_per_topic(capsys, files) -> None:  # type: ignore[no-untyped-def]
    qrels, run1, run2 = files
    code, out, _ = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), str(run2), "-m", "AP", "-m", "P@2", "--per-topic")
    assert code == 0
    rows = [line.split("\t") for line in out.strip().splitlines()]
    table = {(r, t, m): float(v) for r, t, m, v in rows}
    # sysA topic 0001: relevant a (rank 1), b (rank 3): AP = (1/1 + 2/3)/2; topic 0002 misses d.
    assert table[("sysA", "0001", "AP")] == pytest.approx((1 + 2 / 3) / 2, abs=1e-6)
    assert table[("sysA", "0002", "AP")] == 0.0
    assert table[("sysA", "all", "AP")] == pytest.approx((1 + 2 / 3) / 4, abs=1e-6)
    # sysB lacks nothing it could find in 0002 and scores 1 there; topic 0003 (no relevant) is left out.
    assert table[("sysB", "0002", "AP")] == 1.0
    assert not any(t == "0003" for _, t, _ in table)
    assert all(len(v.split(".")[1]) >= 6 for *_, v in rows)


def test_default_metric_set_and_canonical_names(capsys) -> None:  # type: ignore[no-untyped-def]
    runs = sorted(str(p) for p in (SAMPLE / "runs").glob("*.run"))
    code, out, _ = run_cli(capsys, "eval", "--qrels", str(SAMPLE / "qrels.ntcir"), *runs)
    assert code == 0
    metrics = {line.split("\t")[2] for line in out.strip().splitlines()}
    assert metrics == {"AP", "Q", "nDCG@1000", "nDCG@10", "MSnDCG@10", "nERR@10", "Pplus", "bpref",
                       "Q(judged_only=true)", "P@10", "RR"}
    assert len(out.strip().splitlines()) == len(runs) * len(metrics)


def test_json_output(capsys, files) -> None:  # type: ignore[no-untyped-def]
    qrels, run1, _ = files
    code, out, _ = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), "-m", "Q(beta=1)", "--format", "json", "--per-topic")
    assert code == 0
    doc = json.loads(out)
    assert doc["topics"] == ["0001", "0002"]
    assert set(doc["runs"]["sysA"]) == {"Q"}
    assert doc["runs"]["sysA"]["Q"]["per_topic"]["0002"] == 0.0
    assert doc["runs"]["sysA"]["Q"]["mean"] == pytest.approx(sum(doc["runs"]["sysA"]["Q"]["per_topic"].values()) / 2)


def test_trec_and_matrix_formats(capsys, files) -> None:  # type: ignore[no-untyped-def]
    qrels, run1, run2 = files
    _, out, _ = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), "-m", "AP", "--format", "trec")
    lines = out.strip().splitlines()
    assert lines[0] == "runid\tall\tsysA"
    assert lines[1].startswith("AP\t0001\t") and lines[-1].startswith("AP\tall\t")
    _, out, _ = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), str(run2), "-m", "AP", "--format", "matrix")
    lines = out.strip().splitlines()
    assert lines[:2] == ["#metric\tAP", "#topic\tsysA\tsysB"]
    assert [line.split("\t")[0] for line in lines[2:]] == ["0001", "0002"]


def test_gains_order_missing_and_depth_options(capsys, files) -> None:  # type: ignore[no-untyped-def]
    qrels, run1, _ = files
    base = ["eval", "--qrels", str(qrels), str(run1), "-m", "nDCG@10"]
    _, linear, _ = run_cli(capsys, *base)
    _, steep, _ = run_cli(capsys, *base, "--gains", "1=1,2=10")
    assert linear != steep
    _, skipped, _ = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), "-m", "AP", "--missing", "skip")
    _, zero, _ = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), "-m", "AP", "--missing", "zero")
    assert skipped == zero  # sysA has both topics
    _, shallow, _ = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), "-m", "NumRet", "--depth", "1")
    assert shallow.strip().endswith("1.000000")


def test_bad_metric_name_suggests_the_closest_ones_once_without_a_traceback(capsys, files) -> None:  # type: ignore[no-untyped-def]
    qrels, run1, _ = files
    code, out, err = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), "-m", "nDGC@10")
    assert code == 2 and out == ""
    assert err.count("unknown metric 'nDGC'") == 1 and "Did you mean:" in err
    assert "nDCG(gains=<gains>, judged_only=false, base=2)[@k]" in err and "`cranfield metrics`" in err
    assert len(err) < 1000 and "Traceback" not in err  # a few close names, not the registry
    _, listing, _ = run_cli(capsys, "metrics")
    assert "nDCG(gains=<gains>, judged_only=false, base=2)[@k]" in listing and "Aliases (each is the metric after =):" in listing
    assert "  map = AP\n" in listing and "  mrr = RR\n" in listing and "  alphadcg = alpha-DCG@k" in listing
    code, _, err = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), "-m", "zzzz")
    assert code == 2 and "Did you mean" not in err and "`cranfield metrics`" in err


def test_bad_file_gives_file_and_line(capsys, files, tmp_path) -> None:  # type: ignore[no-untyped-def]
    qrels, _, _ = files
    bad = tmp_path / "bad.run"
    bad.write_text("0001 Q0 a 1 3 sysA\n0001 Q0 b 2 x sysA\n")
    code, out, err = run_cli(capsys, "eval", "--qrels", str(qrels), str(bad))
    assert code == 1 and out == ""
    assert f"{bad}:2: score 'x' is not a number" in err


def test_duplicate_tags_are_refused(capsys, files) -> None:  # type: ignore[no-untyped-def]
    qrels, run1, _ = files
    code, _, err = run_cli(capsys, "eval", "--qrels", str(qrels), str(run1), str(run1))
    assert code == 2 and "same tag 'sysA'" in err


def test_metrics_command_lists_the_registry(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "metrics")
    assert code == 0 and "Q(gains=<gains>, judged_only=false, beta=1, norm=R)[@k]" in out


def test_eval_does_not_import_the_service_stack(files) -> None:  # type: ignore[no-untyped-def]
    qrels, run1, _ = files
    code = (
        "import sys; from service.cli import main; "
        f"main(['eval', '--qrels', {str(qrels)!r}, {str(run1)!r}]); "
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sqlalchemy', 'litestar', 'celery', 'redis', 'alembic'}); "
        "print('HEAVY', heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert "HEAVY []" in proc.stdout


def test_a_teams_file_gives_each_run_its_team_and_a_bad_line_is_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from service.cli.common import read_teams
    from service.errors import InvalidInput

    sample = Path(__file__).resolve().parents[2] / "samples" / "ntcir-like" / "teams.tsv"
    teams = read_teams(str(sample))
    assert teams["RUN-01"] == teams["RUN-02"] == "alpha" and teams["RUN-08"] == "baselines" and len(teams) == 8
    bad = tmp_path / "teams.tsv"
    bad.write_text("# tag team\nRUN-01 alpha\nRUN-02\n")
    with pytest.raises(InvalidInput) as err:
        read_teams(str(bad))
    assert err.value.line == 3 and str(bad) in str(err.value)
    bad.write_text("RUN-01 alpha\nRUN-01 beta\n")
    with pytest.raises(InvalidInput, match="given a team twice") as err:
        read_teams(str(bad))
    assert err.value.line == 2
