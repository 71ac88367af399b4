"""What the workers spend measuring one reproduction (issue 28), on TREC DL 2019 runs.

    python benchmarks/bench_reproducibility.py [--repeat 3] [--resamples 10000]

The original pair ``bm25base_p`` / ``p_exp_rm3_bert`` (43 judged topics, 1000 documents a
topic) against a reproduction pair (the same runs re-ranked with noise, seed 28), on the four
metrics reproducibility studies report (AP, MSnDCG@10, P@10, RR): the stages of
``service.evaluation.reproducing.measuring`` one at a time (parsing the four stored run files,
KTU and RBO of both roles, the per-metric figures with the bootstrap of ER/DeltaRI), and the
stored rows' bytes (per-topic arrays packed as float64). Medians of ``--repeat`` runs; the load
(1-minute average) is printed with them. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.evaluation.organising.setup import load_run
from service.evaluation.reproducing import measuring
from service.formats.readers import read_qrels
from service.metrics.scoring import EvalSettings, evaluate, parse_measures
from service.metrics.stats import reproducibility as rp
from service.store.arrays import pack

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec-dl-passage" / "dl19-passage"
METRICS = ("AP", "MSnDCG@10", "P@10", "RR")


def _noise(text: str, seed: int, tag: str) -> str:
    rng = np.random.default_rng(seed)
    lists: dict[str, list[tuple[str, float]]] = {}
    for line in text.splitlines():
        topic, _, doc, _, score, _ = line.split()
        lists.setdefault(topic, []).append((doc, float(score)))
    out = []
    for topic, items in lists.items():
        scores = np.array([s for _, s in items])
        noisy = scores + rng.normal(0.0, 0.5 * scores.std() + 1e-9, scores.size)
        out += [f"{topic} Q0 {items[i][0]} {r} {float(noisy[i])!r} {tag}"
                for r, i in enumerate(np.argsort(-noisy, kind="stable"), 1)]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--resamples", type=int, default=10_000)
    args = ap.parse_args()
    texts = [gzip.decompress((DATA / "runs" / f"{n}.txt.gz").read_bytes()).decode()
             for n in ("bm25base_p", "p_exp_rm3_bert")]
    texts += [_noise(texts[0], 1, "rep-b"), _noise(texts[1], 2, "rep-a")]
    blobs = [zlib.compress(t.encode()) for t in texts]
    qrels = read_qrels(str(DATA / "qrels.txt"))
    measures = parse_measures(METRICS)
    runs = [load_run(b, f"run{i}", "score") for i, b in enumerate(blobs)]
    ev = evaluate(qrels, runs, measures, EvalSettings())
    scores = [{str(m): dict(zip(ev.topics, ev.per_topic(m)[i].tolist())) for m in measures} for i in range(4)]
    measuring.SETTINGS["resamples"] = args.resamples
    times: dict[str, list[float]] = {"parse 4 run files": [], "KTU + RBO, 2 roles": [],
                                     f"4 metrics (bootstrap B={args.resamples})": [], "measure(), all": []}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        rankings = [load_run(b, f"run{i}", "score").to_rankings() for i, b in enumerate(blobs)]
        t1 = time.perf_counter()
        for i in range(2):
            rp.document_order(rankings[i], rankings[2 + i])
        t2 = time.perf_counter()
        measure_rows = measuring.measure(scores[:2], scores[2:], list(map(str, measures)), False)
        t3 = time.perf_counter()
        rows = measuring.measure(scores[:2], scores[2:], list(map(str, measures)), True,
                                 (rankings[:2], rankings[2:]))
        t4 = time.perf_counter()
        for key, v in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            times[key].append(v)
    del measure_rows
    print(f"load (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; medians of {args.repeat}")
    for key, v in times.items():
        print(f"{key:32s} {statistics.median(v) * 1000:9.1f} ms")
    size = sum(len(pack(r["values"])) for r in rows)
    print(f"stored rows: {len(rows)}, per-topic arrays {size} bytes ({size / len(rows):.0f} per row)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
