"""`cranfield eval --qrels-format` (issue 25, item 11): the formats named and detected, and an
intent-aware or sampled metric on qrels that cannot score it refused naming the format it
needs, never NaN. The values themselves are compared with the service and the peers in
tests/integration/test_files_everywhere.py."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import service.metrics  # noqa: F401  (registers every metric)
from service.cli import main
from service.cli.arguments import QRELS_FILE_FORMATS
from service.errors import InvalidMeasure
from service.formats.qrels_files import FILE_FORMATS, detect, read_judgments
from service.metrics.spec import REGISTRY

ADHOC = "T1 0 d1 2\nT1 0 d2 0\nT2 0 d3 1\n"
DIVERSITY_TREC = "T1 1 d1 2\nT1 2 d1 0\nT1 2 d2 1\nT2 1 d3 1\n"
DIVERSITY_NTCIR = "T1 1 d1 L2\nT1 2 d2 L1\nT2 1 d3 L1\nT2 0 d4 L0\n"
SAMPLED = "T1 0 d1 1 2\nT1 0 d2 2 -1\nT1 0 d3 2 0\nT2 0 d3 1 1\n"
NTCIR_ADHOC = "T1 d1 L2\nT2 d3 L1\n"
RUN = "T1 Q0 d1 1 3 r\nT1 Q0 d2 2 2 r\nT2 Q0 d3 1 1 r\n"


def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in (("adhoc", ADHOC), ("diversity-trec", DIVERSITY_TREC), ("diversity-ntcir", DIVERSITY_NTCIR),
                       ("sampled", SAMPLED), ("ntcir-adhoc", NTCIR_ADHOC), ("run", RUN)):
        out[name] = tmp_path / name
        out[name].write_text(text)
    return out


def test_the_cli_offers_the_readers_formats() -> None:
    assert QRELS_FILE_FORMATS == FILE_FORMATS


@pytest.mark.parametrize(("text", "needs", "probabilities", "expected"), [
    (ADHOC, frozenset(), False, "adhoc"),
    (ADHOC, frozenset({"diversity"}), False, "diversity-trec"),  # then refused: no subtopics (below)
    (DIVERSITY_TREC, frozenset(), False, "adhoc"),  # ad hoc metrics: as it always was
    (DIVERSITY_TREC, frozenset({"diversity"}), False, "diversity-trec"),
    (DIVERSITY_NTCIR, frozenset(), False, "diversity-ntcir"),
    (DIVERSITY_TREC, frozenset(), True, "diversity-ntcir"),  # a probability file: NTCIR's format
    (SAMPLED, frozenset(), False, "sampled"),
    (SAMPLED, frozenset({"diversity"}), False, "sampled"),  # (then refused: it cannot score them)
    (NTCIR_ADHOC, frozenset(), False, "adhoc"),
    ("# only a comment\n", frozenset(), False, "adhoc"),
    ("\ufeffT1 1 d1 L1\n", frozenset(), False, "diversity-ntcir"),  # a byte-order mark is skipped
])
def test_detection(text: str, needs: frozenset[str], probabilities: bool, expected: str) -> None:
    assert detect(text.encode("utf-8"), needs, probabilities) == expected


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["eval", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_ad_hoc_qrels_cannot_score_an_intent_aware_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = files(tmp_path)
    code, out, err = cli(capsys, "--qrels", str(f["adhoc"]), str(f["run"]), "-m", "alpha-nDCG@10")
    assert code == 2 and out == "" and "nan" not in err
    assert "alpha-nDCG@10" in err and "iteration 0" in err and "--qrels-format diversity-trec" in err
    for fmt in ("adhoc", "trec"):
        code, out, err = cli(capsys, "--qrels", str(f["adhoc"]), "--qrels-format", fmt, str(f["run"]),
                             "-m", "alpha-nDCG@10", "-m", "AP")
        assert code == 2 and out == "" and "intent-aware" in err and "diversity-ntcir" in err
    code, _, err = cli(capsys, "--qrels", str(f["ntcir-adhoc"]), str(f["run"]), "-m", "ERR-IA@20")
    assert code == 2 and "ERR-IA@20" in err and "ad hoc qrels" in err


def test_every_intent_aware_and_sampled_metric_is_refused_on_qrels_that_cannot_score_it(
        tmp_path: Path) -> None:
    """Never NaN: every registered metric of the two families, on every format that lacks its
    judgments, named or detected, is refused naming what it needs."""
    f = files(tmp_path)
    families = {"diversity": ("adhoc", "sampled"), "sampled": ("adhoc", "diversity-trec", "diversity-ntcir")}
    checked = 0
    for name, definition in REGISTRY.items():
        if definition.family not in families:
            continue
        for fmt in families[definition.family]:
            data = f[fmt].read_bytes()
            for named in ("auto", fmt):
                with pytest.raises(InvalidMeasure) as info:
                    read_judgments(data, fmt, named, needs={name: definition.family})
                assert name in str(info.value)
                assert ("sampled" if definition.family == "sampled" else "diversity-trec") in str(info.value)
                checked += 1
    assert checked >= 2 * (2 * 5 + 3 * 2)  # at least five intent-aware and two sampled metrics


def test_a_sampled_metric_on_diversity_qrels_and_both_families_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = files(tmp_path)
    code, _, err = cli(capsys, "--qrels", str(f["diversity-trec"]), str(f["run"]), "-m", "xinfAP", "-m",
                       "alpha-nDCG@10")
    assert code == 2 and "cannot score both" in err and "xinfAP" in err and "alpha-nDCG@10" in err
    code, _, err = cli(capsys, "--qrels", str(f["diversity-trec"]), "--qrels-format", "diversity-trec",
                       str(f["run"]), "-m", "infNDCG")
    assert code == 2 and "infNDCG" in err and "--qrels-format sampled" in err
    code, _, err = cli(capsys, "--qrels", str(f["sampled"]), "--qrels-format", "sampled", "--probabilities",
                       str(f["adhoc"]), str(f["run"]), "-m", "AP")
    assert code == 2 and "diversity-ntcir" in err and "probability" in err


def test_diversity_qrels_read_as_ad_hoc_qrels_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = files(tmp_path)
    code, _, err = cli(capsys, "--qrels", str(f["diversity-trec"]), str(f["run"]), "-m", "AP")
    assert code == 1 and f"{f['diversity-trec']}:2" in err and "--qrels-format diversity-trec" in err
    code, out, _ = cli(capsys, "--qrels", str(f["diversity-trec"]), "--qrels-format", "diversity-trec",
                       str(f["run"]), "-m", "AP", "-m", "alpha-nDCG@10", "--format", "json")
    assert code == 0
    doc = json.loads(out)["runs"]["r"]
    assert doc["AP"]["mean"] is not None and doc["alpha-nDCG@10"]["mean"] is not None


def test_gzipped_diversity_qrels_and_probabilities(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = files(tmp_path)
    qrels = tmp_path / "dq.gz"
    qrels.write_bytes(gzip.compress(DIVERSITY_NTCIR.encode()))
    probs = tmp_path / "ip.gz"
    probs.write_bytes(gzip.compress(b"T1 1 0.25\nT1 2 0.75\nT2 1 1\n"))
    code, out, err = cli(capsys, "--qrels", str(qrels), "--probabilities", str(probs), str(f["run"]),
                         "-m", "D-nDCG@10", "--format", "json")
    assert code == 0, err
    weighted = json.loads(out)["runs"]["r"]["D-nDCG@10"]["mean"]
    code, out, err = cli(capsys, "--qrels", str(qrels), str(f["run"]), "-m", "D-nDCG@10", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["runs"]["r"]["D-nDCG@10"]["mean"] != weighted  # the file was read and used


def test_detected_adhoc_qrels_with_q0_are_still_named_as_ad_hoc_for_a_diversity_metric() -> None:
    """Q0 is no subtopic number (issue 34, item 6): a detected file whose second column is 0 or
    Q0 on every line is still refused as ad hoc qrels, not at its first Q0; a Q0 among real
    subtopics is refused at its line."""
    from service.errors import InvalidInput, InvalidMeasure
    from service.formats.qrels_files import read_judgments

    for data in (b"1 Q0 d1 1\n1 0 d2 0\n", b"1 0 d1 1\n2 0 d2 1\n"):
        with pytest.raises(InvalidMeasure, match="reads as ad hoc qrels"):
            read_judgments(data, "q.txt", "auto", needs={"alpha-nDCG@10": "diversity"})
    with pytest.raises(InvalidInput, match="subtopic 'Q0' is not a subtopic number") as err:
        read_judgments(b"1 1 d1 1\n1 Q0 d2 0\n", "q.txt", "auto", needs={"alpha-nDCG@10": "diversity"})
    assert err.value.line == 2
