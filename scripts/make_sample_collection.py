"""Write the sample NTCIR-like collection shipped in samples/ntcir-like/ (deterministic).

    python scripts/make_sample_collection.py [OUT_DIR]

The files are committed; tests/unit/test_sample.py checks that this script
reproduces them byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.sample import CollectionSpec, write  # noqa: E402

SAMPLE_SPEC = CollectionSpec(topics=20, runs=8, depth=100, docs_per_topic=400, judged_per_topic=150)
# The runs' teams, as in docs/walkthrough.md's track (teams.tsv; `cranfield demo`, `serve --sample`).
SAMPLE_TEAMS = {"RUN-01": "alpha", "RUN-02": "alpha", "RUN-03": "beta", "RUN-04": "beta", "RUN-05": "gamma",
                "RUN-06": "gamma", "RUN-07": "gamma", "RUN-08": "baselines"}
TEAMS_HEADER = ("# run tag<TAB>team: the sample's teams (as in docs/walkthrough.md), read by `cranfield demo`,\n"
                "# `cranfield serve --sample` and `cranfield load --teams`\n")

if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "samples" / "ntcir-like"
    qrels, runs = write(SAMPLE_SPEC, out)
    (out / "teams.tsv").write_text(TEAMS_HEADER + "".join(f"{tag}\t{team}\n" for tag, team in SAMPLE_TEAMS.items()))
    print(f"wrote {qrels} and {len(runs)} runs under {out / 'runs'}")
