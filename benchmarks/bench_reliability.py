"""Timing of the reliability methods: 30 runs x 50 topics, 1000 samples / trials.

    python benchmarks/bench_reliability.py [--runs 30] [--topics 50] [--samples 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.metrics.stats.meta import discriminative_power  # noqa: E402
from service.metrics.stats.reliability import stability, swap_rates  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    base = rng.uniform(0.1, 0.6, (args.topics, 1))
    x = np.clip(base + np.linspace(0, 0.3, args.runs)[None, :] + rng.normal(0, 0.08, (args.topics, args.runs)), 0, 1)
    pairs = args.runs * (args.runs - 1) // 2
    print(f"{args.runs} runs x {args.topics} topics ({pairs} pairs), {args.samples} samples / trials per size")
    for name, fn in (
        ("stability (bootstrap samples)", lambda: stability(x, samples=args.samples, seed=1)),
        ("swap (5 sizes, disjoint halves)", lambda: swap_rates(x, trials=args.samples, seed=1)),
        ("swap (5 sizes, bootstrap)", lambda: swap_rates(x, trials=args.samples, seed=1, sampling="bootstrap")),
        ("discriminative power (bootstrap)", lambda: discriminative_power(x, resamples=args.samples, seed=1)),
    ):
        best = min(_time(fn) for _ in range(args.repeat))
        print(f"{name:36s} {best:8.3f} s")


def _time(fn) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
