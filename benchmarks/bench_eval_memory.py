"""Memory of ``cranfield eval`` on many deep runs: 1,000 runs x 50 topics x depth 1000 (issue 26, goal 1).

    python benchmarks/bench_eval_memory.py                      # 1,000 runs (1.9 GB of run files)
    python benchmarks/bench_eval_memory.py --runs 300 --interval 0.02 [--limit-mb 2048] [--json out.json]

The collection is ``bench_eval.py``'s generator (the same files, kept under ``benchmarks/data/``;
the first run writes them: a few minutes and ~2 MB per run). ``cranfield eval --qrels QRELS RUN...``
runs as a child process with its default metrics, its table written to a temporary file. While
it runs, the *process tree* (the command and every process it started: the reading workers)
is sampled every ``--interval`` seconds: the sum of each process's proportional set size
(``Pss`` of ``/proc/PID/smaps_rollup``: shared pages split between their users, so the sum is
what the tree costs the machine). Reported: wall time, the largest summed PSS seen, the largest
single resident set (``ru_maxrss`` of the biggest process the command waited for, from
``os.wait4``), the runs' size and the peak as a share of it.

Target (exit status 1 when missed): the summed PSS peak below ``--limit-mb`` (2 GB: issue 26,
"keep memory bounded for 1,000 runs of depth 1000 (under 2 GB)"). Memory that stays flat as
runs are added is the point: run with ``--runs 100`` and ``--runs 1000`` to see it (a heap that
grows with the runs shows as a peak near the runs' size).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from bench_eval import cranfield_command, ensure_collection


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass  # the process ended between two reads
    return out


def tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(_children(p))
    return found


def pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(cmd: list[str], interval: float) -> dict:
    """Run ``cmd`` (stdout to a temporary file), sampling its tree's summed PSS; fails loudly."""
    peak = {"pss_kib": 0, "processes": 0, "samples": 0}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: the command, its output to the files
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            os.chdir(ROOT)
            os.execvp(cmd[0], cmd)
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                pids = tree(pid)
                total = sum(pss_kib(p) for p in pids)
                peak["samples"] += 1
                if total > peak["pss_kib"]:
                    peak["pss_kib"], peak["processes"] = total, len(pids)
                stop.wait(interval)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd[:5])} ... failed ({code}):\n{err.read().decode()[-2000:]}")
        out.seek(0, 2)
        return {"wall_s": wall, "peak_pss_mb": peak["pss_kib"] / 1024, "processes_at_peak": peak["processes"],
                "samples": peak["samples"], "max_rss_mb": usage.ru_maxrss / 1024, "output_bytes": out.tell()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261121)  # bench_eval.py's default: the same files
    ap.add_argument("--interval", type=float, default=0.05, help="seconds between samples")
    ap.add_argument("--limit-mb", type=float, default=2048.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    qrels, runs, took = ensure_collection(args.topics, args.runs, args.depth, args.seed)
    size_mb = sum(p.stat().st_size for p in runs) / 2**20
    print(f"bench_eval_memory: {args.runs} runs x {args.topics} topics x depth {args.depth}: {size_mb:.0f} MiB of runs "
          + (f"(generated in {took:.0f} s)" if took else f"(ready in {time.perf_counter() - t0:.1f} s)")
          + f"; load {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs", flush=True)
    res = measure([*cranfield_command(), "eval", "--qrels", str(qrels), *map(str, runs)], args.interval)
    res.update(runs=args.runs, topics=args.topics, depth=args.depth, runs_mib=size_mb, limit_mb=args.limit_mb,
               load_after=os.getloadavg()[0])
    met = res["peak_pss_mb"] < args.limit_mb
    print(f"  cranfield eval: {res['wall_s']:.1f} s; peak summed PSS {res['peak_pss_mb']:.0f} MiB over "
          f"{res['processes_at_peak']} processes ({res['peak_pss_mb'] / size_mb:.1%} of the runs; {res['samples']} "
          f"samples every {args.interval:g} s); largest single process {res['max_rss_mb']:.0f} MiB; "
          f"{res['output_bytes'] / 2**20:.1f} MiB written")
    print(f"  goal: peak summed PSS < {args.limit_mb:.0f} MiB: {'met' if met else 'MISSED'}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
