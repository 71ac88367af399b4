"""``cranfield rag compare`` (issue 36, item 3) in file mode: two nugget assignment sets and two
citation-support sets of NIST's TREC 2024 RAG files; the JSON is data (full precision, what
``rag_agreement.comparison_document`` gives), the text is for people; a bad file is refused
with its name and line."""

from __future__ import annotations

import gzip
import io
import json
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from service.cli import main
from tests.conftest import require_shared

SUPPORT = "final.citation_judgments_without_prediction.20241025.jsonl.gz"


@pytest.fixture(scope="module")
def data() -> Path:
    return require_shared("data/trec-rag24")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_assignments_compared_in_json_and_text(data: Path, tmp_path: Path) -> None:
    nist = data / "nugget_assignment.20241108.jl.gz"
    rows = [json.loads(line) for line in gzip.decompress(nist.read_bytes()).splitlines()]
    for k, row in enumerate(rows):  # every seventh answer's first nugget moved to partial support
        if k % 7 == 0:
            row["nuggets"][0]["assignment"] = "partial_support"
    other = tmp_path / "auto.jl"
    other.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out, err = cli("rag", "compare", "--assignments", str(nist), "--to", str(other), "--format", "json",
                         "-m", "V_strict", "--resamples", "100")
    assert code == 0, err
    doc = json.loads(out)
    moved = sum(1 for k, r in enumerate(rows) if k % 7 == 0)
    original = [json.loads(line) for line in gzip.decompress(nist.read_bytes()).splitlines()]
    changed = sum(1 for k, r in enumerate(original) if k % 7 == 0 and r["nuggets"][0]["assignment"] != "partial_support")
    confusion = np.array(doc["agreement"]["confusion"])
    assert confusion.sum() == doc["cells"] == sum(len(r["nuggets"]) for r in original)
    assert int(confusion.sum() - np.trace(confusion)) == changed <= moved
    assert list(doc["rankings"]) == ["nugget_vital(strict=true)"]
    assert doc["rankings"]["nugget_vital(strict=true)"]["runs"] == 45
    code, text, _ = cli("rag", "compare", "--assignments", str(nist), "--to", str(other), "-m", "V_strict",
                        "--resamples", "100")
    assert code == 0
    assert f"Compared {doc['cells']:,} nugget labels of {doc['answers']:,} answers" in text
    assert f"Cohen's kappa {doc['agreement']['kappa']:.3f}" in text
    assert "Partial support:" in text and "Kendall's tau" in text


def test_support_sets_compared_leaving_unjudged_pairs_out(data: Path, tmp_path: Path) -> None:
    lines = [json.loads(line) for line in gzip.decompress((data / SUPPORT).read_bytes()).splitlines() if line.strip()]
    pairs = Counter()
    for line in lines:  # a second assessor: full support of even sentences judged partial, every 11th pair not judged
        for s in line["sentences"]:
            for c in s["citations"]:
                pairs["all"] += 1
                if pairs["all"] % 11 == 0:
                    c["support"] = -1
                    pairs["unjudged"] += 1
                elif s["sentenceID"] % 2 == 0 and str(c["support"]) == "2":
                    c["support"] = "1"
                    pairs["moved"] += 1
    other = tmp_path / "second.jsonl"
    other.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = cli("rag", "compare", "--support", str(data / SUPPORT), "--to", str(other), "--format", "json",
                         "--resamples", "100")
    assert code == 0, err
    doc = json.loads(out)
    confusion = np.array(doc["agreement"]["confusion"])
    assert doc["kind"] == "support" and confusion.sum() == pairs["all"] - pairs["unjudged"]
    assert doc["unmatched_cells"] == pairs["unjudged"] > 0  # a pair one set did not judge is not compared
    assert confusion[2, 1] == pairs["moved"] > 0 and doc["agreement"]["second_lower"] == pairs["moved"]
    assert set(doc["rankings"]) == {"support_precision", "support_recall"}


def test_a_bad_file_is_refused_with_its_line(data: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jl"
    bad.write_text('{"qid": "1", "run_id": "r", "nuggets": [{"text": "x", "importance": "vital", '
                   '"assignment": "maybe"}]}\n')
    code, _, err = cli("rag", "compare", "--assignments", str(data / "nugget_assignment.20241108.jl.gz"),
                       "--to", str(bad))
    assert code != 0 and "bad.jl:1" in err and "maybe" in err
