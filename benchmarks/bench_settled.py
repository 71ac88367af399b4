"""Settled significance at the speed of the scores (issue 38): `cranfield compare --sequential`
against `cranfield eval` on the same files, in one run.

    python benchmarks/bench_settled.py [--runs 100 --topics 50 --depth 1000] [--B 1000] [--repeat 3]

The collection is bench_eval.py's (generated once into benchmarks/data/). Both commands run as
whole processes (start to exit, output read from a pipe) with the 11 default metrics
(``service.metrics.scoring.DEFAULT_MEASURES``), alternating, ``--repeat`` times each; the table
gives each one's median wall and CPU seconds (CPU: the process and every worker it waited for)
and the ratio of the medians. Goal (issue 38): compare with the settled bootstrap at most 8x
eval. The machine is shared: the load average is printed before and after, and the ratio is
what to read (both commands see the same load). The number of undecided pairs is read from the
compare's output (its "undecided at B = N" verdicts).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_eval import cranfield_command, ensure_collection, run_process

GOAL = 8.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--B", type=int, default=1000, help="compare --B (the first stage; default 1000, its own default)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from service.metrics.scoring import DEFAULT_MEASURES

    qrels, runs, _ = ensure_collection(args.topics, args.runs, args.depth, args.seed)
    measures = [a for m in DEFAULT_MEASURES for a in ("-m", m)]
    files = [str(qrels), *map(str, runs)]
    commands = {
        "eval": [*cranfield_command(), "eval", "--qrels", *files[:1], *files[1:], *measures],
        "compare": [*cranfield_command(), "compare", "--qrels", *files[:1], *files[1:], *measures, "--test",
                    "bootstrap", "--sequential", "--B", str(args.B)],
    }
    print(f"{args.runs} runs x {args.topics} topics x depth {args.depth}, {len(DEFAULT_MEASURES)} metrics; "
          f"load before: {os.getloadavg()[0]:.2f}", flush=True)
    walls: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in commands}
    undecided = pairs = 0
    for i in range(args.repeat):
        for name, cmd in commands.items():
            wall, cpu, stdout, _ = run_process(cmd)
            walls[name].append(wall)
            cpus[name].append(cpu)
            if name == "compare":
                rows = [line for line in stdout.splitlines() if line.count("\t") > 10 and not line.startswith("run_a")]
                pairs = len(rows)
                undecided = sum("undecided" in line for line in rows)
            print(f"  {i + 1}/{args.repeat} {name}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
    med = {k: (statistics.median(walls[k]), statistics.median(cpus[k])) for k in commands}
    ratio_wall = med["compare"][0] / med["eval"][0]
    ratio_cpu = med["compare"][1] / med["eval"][1]
    print(f"eval    : {med['eval'][0]:.1f} s wall, {med['eval'][1]:.1f} s CPU (median of {args.repeat})")
    print(f"compare : {med['compare'][0]:.1f} s wall, {med['compare'][1]:.1f} s CPU; "
          f"{pairs} pairs, {undecided} undecided")
    print(f"ratio compare/eval: {ratio_wall:.1f}x wall, {ratio_cpu:.1f}x CPU (goal: at most {GOAL:g}x); "
          f"load after: {os.getloadavg()[0]:.2f}")
    if ratio_wall > GOAL:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
