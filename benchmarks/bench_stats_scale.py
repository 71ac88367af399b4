"""The all-pairs significance engine at scale (issue 14): seconds and peak memory per case.

    python benchmarks/bench_stats_scale.py [--runs 1000] [--topics 50] [--B 1000] [--cores 2]
        [--baseline-runs 10000] [--baselines 3] [--cli-runs 400] [--repeat 3] [--only CASE ...]

Each case runs in a process of its own, pinned to --cores CPUs (and OpenBLAS to as many
threads), so its peak resident memory (ru_maxrss from wait4, the child's own) is the case's
alone. Library cases time the call only (imports and data generation excluded); the
``cranfield compare`` cases time the whole process (start to exit, score files read, output
written to /dev/null). Issue 26, item 2: all pairs of 1,000 runs through ``cranfield compare``,
t under 2 s, bootstrap and Tukey HSD (B = 1000) under 15 s each, under 1 GB.

The children compile the project's modules once, into a bytecode cache in the benchmark's
temporary folder (an untimed ``cranfield compare`` on two files fills it), as an installed
``cranfield`` has them compiled: a PYTHONDONTWRITEBYTECODE=1 environment would otherwise add
the compilation of some 50 modules (about 0.25 s) to every whole-process case.

With --repeat N each case runs N times: the table gives the median seconds, the largest peak
RSS and each run's seconds. The table gives each case's seconds, peak RSS and goal; the script
exits 1 when a goal is missed. The machine is shared and noisy: expect 10-30% variation (more
under load: the script prints the load average before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GB = 1024**3


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "library" (a call in a child) or "cli" (a whole cranfield process)
    test: str
    runs: int
    baselines: int  # 0: all pairs
    max_seconds: float
    max_bytes: int = int(1.5 * GB)


def cases(args: argparse.Namespace) -> list[Case]:
    r, b = args.runs, args.baseline_runs
    return [
        Case(f"bootstrap, all pairs, {r} runs", "library", "bootstrap", r, 0, 60.0),
        Case(f"tukey, all pairs, {r} runs", "library", "tukey", r, 0, 60.0),
        Case(f"t-test, all pairs, {r} runs", "library", "t", r, 0, 2.0),
        Case(f"randomisation, all pairs, {r} runs", "library", "randomisation", r, 0, 60.0),
        Case(f"discriminative power (meta), {r} runs", "library", "power", r, 0, 60.0),
        Case(f"bootstrap vs {args.baselines} baselines, {b} runs", "library", "bootstrap", b, args.baselines, 10.0),
        Case(f"t-test vs {args.baselines} baselines, {b} runs", "library", "t", b, args.baselines, 10.0),
        Case(f"cranfield compare --scores, {args.cli_runs} runs", "cli", "bootstrap", args.cli_runs, 0, 60.0),
        # issue 25, item 7: the t-test's pairs get the closed-form t interval, no bootstrap (was 12.9 s)
        Case(f"cranfield compare --scores --test t, {r} runs", "cli", "t", r, 0, 2.0, GB),
        # issue 26, item 2: the resampling tests of all pairs of 1,000 runs, whole processes
        Case(f"cranfield compare --scores --test bootstrap, {r} runs", "cli", "bootstrap", r, 0, 15.0, GB),
        Case(f"cranfield compare --scores --test tukey, {r} runs", "cli", "tukey", r, 0, 15.0, GB),
        Case(f"cranfield compare --scores --baseline x{args.baselines}, {b} runs", "cli", "bootstrap", b,
             args.baselines, 60.0),
    ]


def scores(topics: int, runs: int, seed: int = 20261124):  # type: ignore[no-untyped-def]
    """A (topics, runs) matrix like a metric's: topic difficulty + run quality + noise, 4 decimals."""
    import numpy as np

    rng = np.random.default_rng(seed)
    topic = rng.beta(2, 3, size=(topics, 1))
    quality = np.linspace(0.15, -0.15, runs)[None, :]
    return np.clip(topic + quality + rng.normal(0, 0.12, size=(topics, runs)), 0, 1).round(4)


def child(args: argparse.Namespace) -> None:
    """One library case, in this process: print the call's seconds and what it returned."""
    import numpy as np

    from service.metrics.stats.pairwise import pairwise

    x = scores(args.topics, args.child_runs)
    runs = [f"run{i:05d}" for i in range(args.child_runs)]
    baselines = runs[: args.child_baselines] if args.child_baselines else None
    t0 = time.perf_counter()
    if args.child_test == "power":  # meta.discriminative_power: ASLs and the difference required
        from service.metrics.stats.meta import discriminative_power

        dp = discriminative_power(x, resamples=args.B, seed=1)
        p, significant = dp.asl, dp.significant_pairs
    else:
        res = pairwise(x, runs, args.child_test, resamples=args.B, seed=1, baselines=baselines)
        p, significant = res.p, int(res.significant.sum())
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "pairs": len(p), "significant": significant, "p_sum": float(np.sum(p))}))


def pinned(argv: list[str], cores: int) -> list[str]:
    """``argv`` started through a launcher that pins itself to ``cores`` CPUs and then execs it
    (same process id, so wait4 reports the case's own usage)."""
    launcher = ("import os, sys; cpus = sorted(os.sched_getaffinity(0)); "
                "os.sched_setaffinity(0, cpus[:int(sys.argv[1])]); os.execv(sys.argv[2], sys.argv[2:])")
    return [sys.executable, "-c", launcher, str(cores), *argv]


#: Where the children keep their compiled modules (set by main: the temporary folder).
PYCACHE: str | None = None


#: CPU seconds (user + system) of the last child reaped by run_child: less sensitive to a shared
#: machine's load than its wall time (its threads on both cores count twice).
LAST_CPU = [0.0]


def run_child(argv: list[str], cores: int, stdout_path: str | None = None) -> tuple[float, int, int, str]:
    """Start ``argv``, reap it with wait4 (its own rusage): (wall seconds, peak RSS bytes, status, stdout)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(cores), "OMP_NUM_THREADS": str(cores),
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if PYCACHE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = PYCACHE
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        sink = open(stdout_path, "w") if stdout_path else out  # noqa: SIM115 (closed below)
        t0 = time.perf_counter()
        proc = subprocess.Popen(pinned(argv, cores), stdout=sink, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        LAST_CPU[0] = usage.ru_utime + usage.ru_stime
        proc.returncode = os.waitstatus_to_exitcode(status)
        if stdout_path:
            sink.close()
        out.seek(0)
        err.seek(0)
        text = out.read() + (("\n" + err.read()) if proc.returncode else "")
    return seconds, usage.ru_maxrss * 1024, proc.returncode, text


def write_score_files(folder: Path, topics: int, runs: int) -> list[str]:
    x = scores(topics, runs)
    paths = []
    for j in range(runs):
        path = folder / f"run{j:05d}.csv"
        path.write_text("topic,score\n" + "".join(f"q{i:03d},{x[i, j]:.4f}\n" for i in range(topics)))
        paths.append(str(path))
    return paths


def cranfield_argv() -> list[str]:
    script = Path(sys.executable).parent / "cranfield"
    return [str(script)] if script.exists() else [sys.executable, "-m", "service.cli"]


def run_case(case: Case, args: argparse.Namespace, files: dict[int, list[str]],
             tmp: str) -> tuple[float, int, int, int, str]:
    """One run of ``case``: (seconds, pairs, peak RSS bytes, exit status, output)."""
    if case.kind == "library":
        argv = [sys.executable, str(Path(__file__).resolve()), "--child-test", case.test,
                "--child-runs", str(case.runs), "--child-baselines", str(case.baselines),
                "--topics", str(args.topics), "--B", str(args.B)]
        _, peak, status, out = run_child(argv, args.cores)
        info = json.loads(out.strip().splitlines()[-1]) if status == 0 else {}
        return info.get("seconds", float("nan")), info.get("pairs", 0), peak, status, out
    if case.runs not in files:
        folder = Path(tmp) / f"scores-{case.runs}"
        folder.mkdir()
        files[case.runs] = write_score_files(folder, args.topics, case.runs)
        # untimed: compiles the modules into the cache (see the docstring)
        run_child([*cranfield_argv(), "compare", "--scores", *files[case.runs][:2], "--test", case.test],
                  args.cores, stdout_path=os.devnull)
    paths = files[case.runs]
    extra = [a for j in range(case.baselines) for a in ("--baseline", Path(paths[j]).stem)]
    argv = [*cranfield_argv(), "compare", "--scores", *paths, "--test", case.test, "--B", str(args.B),
            "--seed", "1", *extra]
    seconds, peak, status, out = run_child(argv, args.cores, stdout_path=os.devnull)
    m = case.runs
    pairs = m * (m - 1) // 2 if not case.baselines else case.baselines * (m - 1) - (
        case.baselines * (case.baselines - 1) // 2)
    return seconds, pairs, peak, status, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000, help="runs of the all-pairs cases")
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--baseline-runs", type=int, default=10_000)
    ap.add_argument("--baselines", type=int, default=3, help="baseline runs of the versus-baseline cases")
    ap.add_argument("--cli-runs", type=int, default=400)
    ap.add_argument("--only", nargs="*", help="run only the cases whose name contains one of these words")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each case (the median seconds is reported)")
    ap.add_argument("--child-test", help=argparse.SUPPRESS)
    ap.add_argument("--child-runs", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-baselines", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_test:
        return child(args)

    import numpy as np

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    print(f"python {platform.python_version()}, numpy {np.__version__}, cpus {len(os.sched_getaffinity(0))} "
          f"(cases pinned to {args.cores}), load {os.getloadavg()[0]:.2f}, commit {commit} (+ working tree)")
    print(f"{args.topics} topics, B = {args.B}, seed 1, each case run {args.repeat} time(s)\n")
    rows, missed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        global PYCACHE
        PYCACHE = str(Path(tmp) / "pycache")
        files: dict[int, list[str]] = {}
        for case in cases(args):
            if args.only and not any(w in case.name for w in args.only):
                continue
            times, cpu, peak, status, out = [], [], 0, 0, ""
            for _ in range(max(1, args.repeat)):
                seconds, pairs, run_peak, status, out = run_case(case, args, files, tmp)
                times.append(seconds)
                cpu.append(LAST_CPU[0])
                peak = max(peak, run_peak)
                if status:
                    break
            seconds = statistics.median(times)
            ok = status == 0 and seconds < case.max_seconds and peak < case.max_bytes
            missed += not ok
            rows.append((case, pairs, seconds, peak, ok, status, out if status else ""))
            each = f" (runs: {', '.join(f'{t:.2f}' for t in times)})" if len(times) > 1 else ""
            print(f"  ... {case.name}: {seconds:.2f} s{each}, CPU {statistics.median(cpu):.2f} s (process, "
                  f"all threads), {peak / 2**20:.0f} MB{'' if ok else '  MISSED'}, load {os.getloadavg()[0]:.2f}",
                  flush=True)

    print()
    head = f"| {'case':<58} | {'pairs':>9} | {'seconds':>8} | {'peak RSS':>9} | {'goal':<20} | ok  |"
    print(head)
    print("|" + "|".join("-" * (len(c) + 0) for c in head.split("|")[1:-1]) + "|")
    for case, pairs, seconds, peak, ok, status, err in rows:
        goal = f"< {case.max_seconds:g} s, < {case.max_bytes / GB:.1f} GB"
        print(f"| {case.name:<58} | {pairs:>9,} | {seconds:>8.2f} | {peak / 2**20:>6.0f} MB | {goal:<20} | "
              f"{'yes' if ok else 'NO':<3} |")
        if status:
            print(f"    exit status {status}: {err.strip()[-500:]}")
    if missed:
        print(f"\n{missed} goal(s) missed")
        sys.exit(1)
    print("\nevery goal met")


if __name__ == "__main__":
    main()
