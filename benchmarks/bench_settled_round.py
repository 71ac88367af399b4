"""A stored round's settled tests in one process (issue 38): ``pairwise_many`` as
``significance_tests`` calls it for a collection's round (the 11 default metrics on all topics,
bootstrap, B0 = 10,000, settled sequentially, the difference required kept), on the scores of
bench_eval.py's collection (100 runs x 50 topics x depth 1000, generated once into
benchmarks/data/).

    python benchmarks/bench_settled_round.py [--B 10000] [--no-required] [--correction none]

Prints the wall and CPU seconds of the round, the undecided pairs and the pair-draws (the sum
of every pair's B). The metric computation that makes the scores is not timed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_eval import ensure_collection  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--B", type=int, default=10_000, help="the first stage's resamples (default: the stored default)")
    ap.add_argument("--no-required", action="store_true", help="without the difference required (a public subset)")
    ap.add_argument("--correction", default="none")
    args = ap.parse_args()

    from service.formats import readers
    from service.metrics.run_files import evaluate_run_files
    from service.metrics.scoring import DEFAULT_MEASURES
    from service.metrics.stats.pairwise import pairwise_many

    qrels_path, run_paths, _ = ensure_collection(args.topics, args.runs, args.depth, args.seed)
    evaluation = evaluate_run_files(readers.read_qrels(qrels_path), [str(p) for p in run_paths], DEFAULT_MEASURES)
    tables = {str(m): evaluation.scores[m].T.copy() for m in evaluation.measures}
    t0, c0 = time.perf_counter(), time.process_time()
    out = pairwise_many(tables, list(evaluation.runs), "bootstrap", resamples=args.B, alpha=0.05,
                        correction=args.correction, seed=0, sequential=True,
                        difference_required=not args.no_required)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    results = [r for r in out.values() if not isinstance(r, ValueError)]
    undecided = sum(int(r.undecided.sum()) for r in results)
    draws = sum(float(r.pair_resamples.sum()) for r in results)
    pairs = sum(len(r.p) for r in results)
    print(f"{len(tables)} metrics, {pairs} pairs, B0 = {args.B}: wall {wall:.1f} s, CPU {cpu:.1f} s, "
          f"{undecided} undecided, {draws:.3g} pair-draws")


if __name__ == "__main__":
    main()
