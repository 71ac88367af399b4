"""The shipped sample collection is exactly what its script makes, and has what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from service.formats.readers import read_qrels, read_run
from service.metrics import evaluate

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "ntcir-like"


def test_script_reproduces_the_shipped_files(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_sample_collection.py"), str(tmp_path)], check=True,
                   capture_output=True)
    shipped = sorted(p.relative_to(SAMPLE) for p in SAMPLE.rglob("*") if p.is_file())
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert shipped == made
    for rel in shipped:
        assert (SAMPLE / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_sample_has_graded_levels_unjudged_labels_ties_and_missing_topics() -> None:
    qrels = read_qrels(SAMPLE / "qrels.ntcir")
    assert qrels.max_level == 3
    all_levels = {int(v) for lv in qrels.levels for v in lv}
    assert {-1, 0, 1, 2, 3} <= all_levels
    runs = [read_run(p) for p in sorted((SAMPLE / "runs").glob("*.run"))]
    assert any(len(r.topics) < len(qrels.topics) for r in runs)
    assert any(len(set(r.scores.tolist())) < len(r.scores) for r in runs)  # tied scores
    ev = evaluate(qrels, runs, ["AP"])
    means = ev.means("AP")
    assert means[0] > means[-1]  # the generator makes earlier runs better
