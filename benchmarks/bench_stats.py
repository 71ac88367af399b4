"""Significance tests: Cranfield against ranx's `compare`, measured in one process.

    python benchmarks/bench_stats.py [--runs 100] [--topics 50] [--depth 100] [--B 1000] [--skip-ranx-fisher]

Workload (issue 3): 100 runs x 50 topics, 5 metrics; for every metric all 4950 pairs with
Sakai's bootstrap (B = 1000), the randomised Tukey HSD (B = 1000) and the paired t-test.
ranx: `compare` over the same runs and metrics with its paired t-test ("student") and its
randomisation test ("fisher", 1000 permutations). Times are wall-clock seconds, best of
--repeat for Cranfield (ranx once: its randomisation run takes about a minute). The machine
is shared and noisy: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.formats.readers import read_qrels, read_run  # noqa: E402
from service.metrics import evaluate  # noqa: E402
from service.metrics.stats.pairwise import pairwise  # noqa: E402
from service.runtime import tune_allocator  # noqa: E402
from service.sample import CollectionSpec, write  # noqa: E402

METRICS = ["AP", "nDCG@10", "P@10", "RR", "Recall@100"]
RANX_METRICS = ["map", "ndcg@10", "precision@10", "mrr", "recall@100"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-ranx-fisher", action="store_true", help="skip ranx's ~1 minute randomisation compare")
    args = ap.parse_args()
    tune_allocator()

    with tempfile.TemporaryDirectory() as tmp:
        spec = CollectionSpec(topics=args.topics, runs=args.runs, depth=args.depth, docs_per_topic=4 * args.depth,
                              judged_per_topic=2 * args.depth, missing_topic_rate=0.0, no_relevant_topics=0)
        qrels_path, run_paths = write(spec, tmp)
        qrels = read_qrels(qrels_path)
        runs = [read_run(p) for p in run_paths]
        ev = evaluate(qrels, runs, METRICS)
        matrices = [ev.per_topic(m).T for m in METRICS]  # (topics, runs)
        pairs = args.runs * (args.runs - 1) // 2
        print(f"workload: {args.runs} runs x {len(ev.topics)} topics, {len(METRICS)} metrics, {pairs} pairs, B = {args.B}")
        print(f"python {platform.python_version()}, numpy {np.__version__}, cpus {len(__import__('os').sched_getaffinity(0))}")

        timings: dict[str, float] = {}
        for name, test in (("bootstrap", "bootstrap"), ("tukey", "tukey"), ("t-test", "t")):
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                for x in matrices:
                    pairwise(x, ev.runs, test, resamples=args.B, seed=1)
                best = min(best, time.perf_counter() - t0)
            timings[name] = best
            print(f"cranfield {name:10s} {len(METRICS)} metrics: {best:8.3f} s  ({best / len(METRICS):.3f} s per metric)")
        total = sum(timings.values())
        print(f"cranfield bootstrap + tukey + t-test, {len(METRICS)} metrics: {total:.3f} s (target < 5 s)")

        import ranx

        r_qrels = ranx.Qrels.from_file(str(qrels_path), kind="trec") if qrels_path.suffix != ".ntcir" else _ranx_qrels(qrels)
        r_runs = []
        for p in run_paths:
            r = ranx.Run.from_file(str(p), kind="trec")
            r.name = p.stem
            r_runs.append(r)
        # Warm-up: numba compiles on first use.
        ranx.compare(r_qrels, r_runs[:2], metrics=RANX_METRICS[:1], stat_test="student")
        t0 = time.perf_counter()
        ranx.compare(r_qrels, r_runs, metrics=RANX_METRICS, stat_test="student")
        ranx_t = time.perf_counter() - t0
        print(f"ranx compare student  {len(METRICS)} metrics: {ranx_t:8.3f} s")
        if not args.skip_ranx_fisher:
            t0 = time.perf_counter()
            ranx.compare(r_qrels, r_runs, metrics=RANX_METRICS, stat_test="fisher", n_permutations=args.B)
            ranx_f = time.perf_counter() - t0
            print(f"ranx compare fisher   {len(METRICS)} metrics: {ranx_f:8.3f} s")
            print(f"ratio ranx fisher / cranfield (bootstrap + tukey + t): {ranx_f / total:.1f}x (target >= 10x)")
        print(f"ratio ranx student / cranfield t-test: {ranx_t / timings['t-test']:.1f}x")


def _ranx_qrels(qrels):  # type: ignore[no-untyped-def]
    import ranx

    return ranx.Qrels({t: {d: int(v) for d, v in docs.items() if v > 0} for t, docs in qrels.to_mapping().items()})


if __name__ == "__main__":
    main()
