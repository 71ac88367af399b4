"""Speed benchmark: Cranfield against pytrec_eval and ranx, in one process.

    python benchmarks/bench_eval.py [--runs 100 --topics 50 --depth 1000 --repeat 3]

What it does (see benchmarks/README.md):

1. Generates, once, a deterministic NTCIR-like collection under
   ``benchmarks/data/`` (graded TREC qrels with levels 0..3 and pooled-but-
   unjudged ``-1`` labels, documents retrieved below the pool depth that are
   not judged at all, and ``--runs`` TREC run files of ``--depth`` documents
   per topic with strictly decreasing scores that stay distinct in float32).
2. Times, best of ``--repeat``, the parse and the compute phase of
   Cranfield (sequential and 2-thread reading, as the CLI), pytrec_eval and
   ranx on the same files.
3. Checks that the tools agree on the metrics they share, so that the
   benchmark times the same work.
4. Times whole processes side by side, best of ``--whole-repeat``: ``cranfield eval``
   against a pytrec-eval-terrier script doing the same job (qrels and runs read with
   ``line.split()``, every run evaluated), alternating, with the ratio of their wall
   times; and a cold process that only reads, for the reading speed in MB/s. The same
   on the real TREC DL 2019/2020 passage runs (``--dl``, shared/data/trec-dl-passage).

This is a script, not a test: it prints a report and exits 0.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import os
import platform
import resource
import shutil
import subprocess
import tempfile
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA_DIR = Path(__file__).resolve().parent / "data"
GENERATOR_VERSION = 1

PYTREC_MEASURES = {"map", "ndcg", "bpref", "recip_rank", "P_10"}
RANX_METRICS = ["map", "ndcg", "bpref", "mrr", "precision@10"]
# Cranfield measure <-> pytrec_eval measure <-> ranx metric, with the same definitions
# (MSnDCG without a cutoff is trec_eval's ndcg: linear gains, log2(r+1) discount).
SHARED = [
    ("AP", "map", "map"),
    ("MSnDCG", "ndcg", "ndcg"),
    ("bpref", "bpref", "bpref"),
    ("RR", "recip_rank", "mrr"),
    ("P@10", "P_10", "precision@10"),
]


# ============================================================================ data


def _level_probs() -> np.ndarray:
    # Latent relevance of a candidate document: L0 mostly, a few L1..L3.
    return np.array([0.90, 0.06, 0.03, 0.01])


def collection_dir(topics: int, runs: int, depth: int, seed: int) -> Path:
    return DATA_DIR / f"v{GENERATOR_VERSION}-t{topics}-r{runs}-d{depth}-s{seed}"


def generate_collection(topics: int, runs: int, depth: int, seed: int, out: Path) -> None:
    """Write ``qrels.trec`` and ``runs/RUN-NNN.run`` under ``out`` (same arguments, same bytes).

    * A global collection of 1,000,000 documents ``NTC-000000`` ..; each topic
      has ``candidates`` of them (3 x depth), each with a latent level 0..3.
    * Run r ranks a topic's candidates by ``quality_r * level + Gumbel noise``
      and keeps the top ``depth``; earlier runs are better.
    * The qrels are the pool: the union of every run's top ``pool_depth``
      (100) per topic, judged at the latent level; 3% of the judged
      non-relevant documents get the label -1 (pooled but unjudged).
      Documents retrieved only below rank 100 are not in the qrels at all.
    * Scores are written with 4 decimals, strictly decreasing within a topic
      (at least 1e-4 apart, below 100, so distinct in float32 too), in rank order.
    """
    rng = np.random.default_rng(seed)
    n_collection = 1_000_000
    candidates = 3 * depth
    pool_depth = min(100, depth)
    topic_ids = np.array([f"{i + 1:04d}" for i in range(topics)], dtype="S")
    docnos = np.strings.add(b"NTC-", np.strings.zfill(np.arange(n_collection).astype("S"), 6))

    cand = np.empty((topics, candidates), dtype=np.int64)
    latent = np.empty((topics, candidates), dtype=np.int64)
    for t in range(topics):
        cand[t] = rng.choice(n_collection, size=candidates, replace=False)
        latent[t] = rng.choice(4, size=candidates, p=_level_probs())
        if not np.any(latent[t] >= 1):
            latent[t, 0] = 3

    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    pooled = np.zeros((topics, candidates), dtype=bool)
    ranks_s = np.arange(1, depth + 1).astype("S")
    rank_col = np.tile(ranks_s, topics)
    topic_col = np.strings.add(np.repeat(topic_ids, depth), b" Q0 ")
    steps = np.arange(depth)
    for r in range(runs):
        tag = f"RUN-{r + 1:03d}".encode()
        quality = 0.3 + 2.7 * (runs - r) / runs
        difficulty = rng.uniform(0.5, 1.5, size=(topics, 1))
        score = quality * difficulty * latent + rng.gumbel(size=(topics, candidates))
        top = np.argsort(-score, axis=1, kind="stable")[:, :depth]  # (topics, depth) candidate indices
        pooled[np.arange(topics)[:, None], top[:, :pool_depth]] = True
        best = np.take_along_axis(score, top, axis=1)
        # Integer units of 1e-4, forced strictly decreasing: v'_i = min_{j<=i}(v_j + j) - i.
        units = np.floor((best + 20.0) * 1e4).astype(np.int64)
        units = np.minimum.accumulate(units + steps, axis=1) - steps
        units = units.reshape(-1)
        assert np.all(units > 0) and np.all(units < 100 * 10_000)
        score_s = np.strings.add(
            np.strings.add((units // 10_000).astype("S"), b"."),
            np.strings.zfill((units % 10_000).astype("S"), 4),
        )
        doc_col = docnos[np.take_along_axis(cand, top, axis=1).reshape(-1)]
        lines = topic_col
        for part in (doc_col, b" ", rank_col, b" ", score_s, b" " + tag):
            lines = np.strings.add(lines, part)
        (runs_dir / f"{tag.decode()}.run").write_bytes(b"\n".join(lines.tolist()) + b"\n")

    # The pool's judgments, in topic then docno order.
    qrels_lines = []
    for t in range(topics):
        idx = np.flatnonzero(pooled[t])
        lv = latent[t, idx].copy()
        unjudged = (lv == 0) & (rng.random(idx.shape[0]) < 0.03)
        lv[unjudged] = -1
        d = docnos[cand[t, idx]]
        order = np.argsort(d, kind="stable")
        line = np.strings.add(np.strings.add(topic_ids[t] + b" 0 ", d[order]), b" ")
        line = np.strings.add(line, lv[order].astype("S"))
        qrels_lines.append(b"\n".join(line.tolist()))
    (out / "qrels.trec").write_bytes(b"\n".join(qrels_lines) + b"\n")
    (out / "DONE").write_text("complete\n")


def ensure_collection(topics: int, runs: int, depth: int, seed: int) -> tuple[Path, list[Path], float | None]:
    out = collection_dir(topics, runs, depth, seed)
    took = None
    if not (out / "DONE").exists():
        t0 = time.perf_counter()
        generate_collection(topics, runs, depth, seed, out)
        took = time.perf_counter() - t0
    run_paths = [out / "runs" / f"RUN-{r + 1:03d}.run" for r in range(runs)]
    return out / "qrels.trec", run_paths, took


# ============================================================================ tools


def timed(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


class Best:
    """Best (minimum) time of each phase over the repeats."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = defaultdict(list)

    def add(self, phase: str, seconds: float) -> None:
        self.times[phase].append(seconds)

    def __getitem__(self, phase: str) -> float:
        return min(self.times[phase])

    def all(self, phase: str) -> str:
        return ", ".join(f"{t:.2f}" for t in self.times[phase])


# ---------------------------------------------------------------- Cranfield


def cranfield_parse(qrels_path: Path, run_paths: list[Path], threads: int):  # type: ignore[no-untyped-def]
    from service.formats.readers import read_qrels, read_run

    qrels = read_qrels(qrels_path)
    if threads <= 1:
        runs = [read_run(p) for p in run_paths]
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            runs = list(pool.map(read_run, run_paths))
    return qrels, runs


def cranfield_compute(qrels, runs, measures):  # type: ignore[no-untyped-def]
    from service.metrics import evaluate

    return evaluate(qrels, runs, measures)


# ---------------------------------------------------------------- pytrec_eval


def python_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path) as f:
        for line in f:
            topic, _, docno, rel = line.split()
            qrels.setdefault(topic, {})[docno] = int(rel)
    return qrels


def python_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    with open(path) as f:
        for line in f:
            topic, _, docno, _, score, _ = line.split()
            run.setdefault(topic, {})[docno] = float(score)
    return run


def pytrec_parse(qrels_path: Path, run_paths: list[Path]):  # type: ignore[no-untyped-def]
    return python_qrels(qrels_path), [python_run(p) for p in run_paths]


def pytrec_compute(qrels, runs):  # type: ignore[no-untyped-def]
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
    return [evaluator.evaluate(run) for run in runs]


# ---------------------------------------------------------------- ranx


def ranx_warmup(qrels_path: Path, run_path: Path) -> tuple[float, int]:
    """numba compiles ranx's kernels on first use: compile them on a tiny input first.

    The tiny input is a slice of the real files (12 topics, top 20 of one run), so
    that numba's specialisations (document ids as ``<U10`` arrays) are the ones the
    timed calls use. It has at least 10 topics because ``ranx.evaluate`` switches
    numba to one thread, for good, when it sees fewer than 10.
    """
    import numba
    import ranx

    warm_dir = qrels_path.parent / "warmup"
    warm_dir.mkdir(exist_ok=True)
    run_lines = [ln for ln in run_path.read_text().splitlines() if int(ln.split()[3]) <= 20]
    topics = sorted({ln.split()[0] for ln in run_lines})[:12]
    keep = set(topics)
    run_lines = [ln for ln in run_lines if ln.split()[0] in keep]
    qrels_lines = [ln for ln in qrels_path.read_text().splitlines() if ln.split()[0] in keep]
    (warm_dir / "qrels.trec").write_text("\n".join(qrels_lines) + "\n")
    (warm_dir / "run.trec").write_text("\n".join(run_lines) + "\n")
    t0 = time.perf_counter()
    q = ranx.Qrels.from_file(str(warm_dir / "qrels.trec"), kind="trec")
    r = ranx.Run.from_file(str(warm_dir / "run.trec"), kind="trec")
    ranx.evaluate(q, r, RANX_METRICS)
    return time.perf_counter() - t0, numba.get_num_threads()


def ranx_parse(qrels_path: Path, run_paths: list[Path]):  # type: ignore[no-untyped-def]
    import ranx

    qrels = ranx.Qrels.from_file(str(qrels_path), kind="trec")
    runs = [ranx.Run.from_file(str(p), kind="trec") for p in run_paths]
    return qrels, runs


def ranx_compute(qrels, runs):  # type: ignore[no-untyped-def]
    import ranx

    return [ranx.evaluate(qrels, run, RANX_METRICS) for run in runs]


# ============================================================================ whole processes

# A pytrec_eval user's script: the qrels and each run read with line.split() into dicts,
# RelevanceEvaluator built once, every run evaluated. "stream" evaluates each run as soon as
# it is read (the faster and leaner way, so the stricter peer); "all" reads every run first,
# as the in-process timing above does.
PYTREC_SCRIPT = """
import sys
import pytrec_eval

mode, qrels_path, run_paths = sys.argv[1], sys.argv[2], sys.argv[3:]
qrels = {}
with open(qrels_path) as f:
    for line in f:
        topic, _, docno, rel = line.split()
        qrels.setdefault(topic, {})[docno] = int(rel)
evaluator = pytrec_eval.RelevanceEvaluator(qrels, MEASURES)


def read(path):
    run = {}
    with open(path) as f:
        for line in f:
            topic, _, docno, _, score = line.split()[:5]
            run.setdefault(topic, {})[docno] = float(score)
    return run


if mode == "stream":
    for path in run_paths:
        evaluator.evaluate(read(path))
else:
    runs = [read(path) for path in run_paths]
    results = [evaluator.evaluate(run) for run in runs]
""".replace("MEASURES", repr(sorted(PYTREC_MEASURES)))

# Reading alone in a fresh process, as `cranfield eval` reads (allocator tuning, then the
# qrels and every run in turn): prints the seconds spent reading runs, and reading qrels.
READ_SCRIPT = """
import sys
import time

try:
    from service.runtime import tune_allocator
    tune_allocator()
except ImportError:
    pass
from service.formats.readers import read_qrels, read_run

t0 = time.perf_counter()
read_qrels(sys.argv[1])
t1 = time.perf_counter()
runs = [read_run(p) for p in sys.argv[2:]]
t2 = time.perf_counter()
print(t2 - t1, t1 - t0)
"""


def cranfield_command() -> list[str]:
    """The ``cranfield`` command of this tree: ``python -m service.cli`` run in ROOT (what the
    installed ``cranfield`` script runs, but from the tree the in-process timings import)."""
    return [sys.executable, "-m", "service.cli"]


#: Runs a command and writes its peak resident set (KiB) to the file named first. A wrapper,
#: because Linux carries ru_maxrss across fork and exec: a process started from this one (600
#: MB of peers' data) would report at least this one's size; the wrapper's own child starts
#: from the wrapper's few MB.
PEAK_WRAPPER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_process(cmd: list[str]) -> tuple[float, float, str, float]:
    """(wall seconds, CPU seconds (user + system, the process and the workers it waited for),
    stdout, peak RSS in MB) of one child process; fails loudly. The peak is ru_maxrss from
    wait4: the largest resident set of the process or of any worker it forked and waited for
    (the maximum over the tree, not the sum: ``cranfield eval``'s workers hold a group of runs
    each, the parent the qrels and the scores)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.NamedTemporaryFile("r") as peak_file:
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", PEAK_WRAPPER, peak_file.name, *cmd], cwd=ROOT,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        peak_kib = float(peak_file.read() or "nan")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout, peak_kib / 1024


def whole_processes(label: str, qrels_path: Path, run_paths: list[Path], repeat: int,
                    with_pytrec: bool) -> list[str]:
    """Whole-process timings side by side, alternating tools within each repeat, best of ``repeat``."""
    files = [str(qrels_path)] + [str(p) for p in run_paths]
    size = sum(p.stat().st_size for p in run_paths)
    tools: dict[str, list[str]] = {
        "cranfield eval": [*cranfield_command(), "eval", "--qrels", *files],
        "cranfield read only": [sys.executable, "-c", READ_SCRIPT, *files],
    }
    if with_pytrec:
        tools["pytrec_eval (stream)"] = [sys.executable, "-c", PYTREC_SCRIPT, "stream", *files]
        tools["pytrec_eval (all runs first)"] = [sys.executable, "-c", PYTREC_SCRIPT, "all", *files]
    wall: dict[str, list[float]] = defaultdict(list)
    cpu: dict[str, list[float]] = defaultdict(list)
    peak: dict[str, list[float]] = defaultdict(list)
    reads: list[float] = []
    qrels_reads: list[float] = []
    for rep in range(repeat):
        for name, cmd in tools.items():
            w, c, out, mb = run_process(cmd)
            wall[name].append(w)
            cpu[name].append(c)
            peak[name].append(mb)
            if name == "cranfield read only":
                runs_s, qrels_s = (float(x) for x in out.split())
                reads.append(runs_s)
                qrels_reads.append(qrels_s)
        print(f"  [{label} whole processes, repeat {rep + 1}] "
              + ", ".join(f"{n} {wall[n][-1]:.2f} s" for n in tools), flush=True)
    lines = [(f"whole processes, {label}: {len(run_paths)} runs, {size / 1e6:.0f} MB; best of {repeat}, "
              "alternating (wall s; CPU s = user + system of the child and its workers; peak MB = the "
              "largest resident set of the process or of one of its workers, the most of any repeat)"),
             f"  {'process':<30} {'best wall s':>11} {'its CPU s':>10} {'peak MB':>8}   all walls"]
    for name in tools:
        i = min(range(repeat), key=lambda j: wall[name][j])
        lines.append(f"  {name:<30} {wall[name][i]:>11.2f} {cpu[name][i]:>10.2f} {max(peak[name]):>8.0f}   "
                     + ", ".join(f"{w:.2f}" for w in wall[name]))
    best_read = min(reads)
    lines.append(f"  reading runs in a fresh process (inside 'cranfield read only'): best {best_read:.2f} s = "
                 f"{size / 1e6 / best_read:.0f} MB/s (all: " + ", ".join(f"{r:.2f}" for r in reads)
                 + f"); qrels {min(qrels_reads):.3f} s")
    if with_pytrec:
        cran = min(wall["cranfield eval"])
        for peer in ("pytrec_eval (stream)", "pytrec_eval (all runs first)"):
            lines.append(f"  ratio cranfield eval / {peer} (best walls) = {cran / min(wall[peer]):.3f}")
    return lines


def dl_collections(dl_root: Path) -> list[tuple[str, Path, list[Path]]]:
    """TREC DL 2019/2020 passage qrels and runs, the runs un-gzipped once into benchmarks/data/."""
    out = []
    for year in ("dl19-passage", "dl20-passage"):
        src = dl_root / year
        if not (src / "qrels.txt").exists():
            continue
        dest = DATA_DIR / "trec-dl-passage" / year
        runs_dir = dest / "runs"
        runs_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / "qrels.txt", dest / "qrels.txt")
        paths = []
        for gz in sorted((src / "runs").glob("*.txt.gz")):
            plain = runs_dir / gz.name[: -len(".gz")]
            if not plain.exists() or plain.stat().st_mtime < gz.stat().st_mtime:
                with gzip.open(gz, "rb") as f:
                    plain.write_bytes(f.read())
            paths.append(plain)
        out.append((year, dest / "qrels.txt", paths))
    return out


def in_process_reading(label: str, qrels_path: Path, run_paths: list[Path], repeat: int,
                       with_pytrec: bool) -> list[str]:
    """Best-of-``repeat`` reading of the runs in this (warm) process: Cranfield and the
    peer's Python parse, in MB/s."""
    from service.formats.readers import read_qrels, read_run

    size = sum(p.stat().st_size for p in run_paths)
    qrels = read_qrels(qrels_path)
    del qrels
    best_c = best_p = float("inf")
    for _ in range(repeat):
        gc.collect()
        runs, t = timed(lambda: [read_run(p) for p in run_paths])
        best_c = min(best_c, t)
        del runs
        if with_pytrec:
            runs, t = timed(lambda: [python_run(p) for p in run_paths])
            best_p = min(best_p, t)
            del runs
    line = (f"reading runs in this process, {label} ({len(run_paths)} files, {size / 1e6:.0f} MB), best of {repeat}: "
            f"cranfield {best_c:.2f} s = {size / 1e6 / best_c:.0f} MB/s")
    if with_pytrec:
        line += f"; pytrec_eval's Python parse {best_p:.2f} s = {size / 1e6 / best_p:.0f} MB/s"
    return [line]


# ============================================================================ report


def machine_facts() -> list[str]:
    lines = [
        f"python {platform.python_version()} ({sys.executable})",
        f"platform {platform.platform()}",
        f"numpy {np.__version__}",
    ]
    cpu_model = ""
    try:
        for row in Path("/proc/cpuinfo").read_text().splitlines():
            if row.startswith("model name"):
                cpu_model = row.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    lines.append(f"CPUs: os.cpu_count()={os.cpu_count()}, usable (affinity)={affinity}, model {cpu_model or '?'}")
    try:
        load = os.getloadavg()
        lines.append(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    except OSError:
        pass
    try:
        from threadpoolctl import threadpool_info

        for info in threadpool_info():
            lines.append(
                f"threadpoolctl: {info.get('internal_api')} {info.get('version')} "
                f"num_threads={info.get('num_threads')} ({info.get('filepath')})"
            )
    except ImportError:
        lines.append("threadpoolctl: not installed (BLAS thread pools not inspected; "
                     "no BLAS call is on the timed paths)")
    from importlib.metadata import PackageNotFoundError, version

    try:
        lines.append(f"pytrec-eval-terrier {version('pytrec-eval-terrier')}, ranx {version('ranx')}, "
                     f"numba {version('numba')}")
    except PackageNotFoundError as exc:  # informative only
        lines.append(f"peer versions: {exc.name} is not installed")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        if var in os.environ:
            lines.append(f"{var}={os.environ[var]}")
    lines.append("note: this machine is shared and noisy (other jobs run on it); timings are best-of-N wall "
                 "clock and can move by 10-30% between invocations")
    return lines


def repo_facts() -> list[str]:
    import subprocess

    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "?"

    dirty = git("status", "--porcelain", "--", "service")
    return [f"cranfield: commit {git('log', '-1', '--format=%h %cd %s', '--date=iso')}"
            + (" (service/ has uncommitted changes)" if dirty else "")]


def cli_reads_with_threads() -> bool:
    """Whether ``cranfield eval`` reads the runs with a thread pool (it has done both)."""
    import inspect

    import service.cli.evaluate

    return "ThreadPoolExecutor" in inspect.getsource(service.cli.evaluate.cmd_eval)


def apply_cli_allocator() -> str:
    """Apply the CLI's process-level allocator tuning, when this version of Cranfield has it."""
    try:
        from service.runtime import tune_allocator
    except ImportError:
        return "allocator: default (this Cranfield has no service.runtime.tune_allocator)"
    applied = tune_allocator()
    return (f"allocator: service.runtime.tune_allocator() as the CLI does ({'applied' if applied else 'not applicable'}"
            "; process-wide, so the peers run with it too)")


def agreement(qrels_path: Path, run_paths: list[Path], which: list[int]) -> list[str]:
    """Per-topic max |difference| on the shared metrics, for a few runs."""
    import pytrec_eval
    import ranx

    from service.formats.readers import read_qrels, read_run
    from service.metrics import EvalSettings, evaluate

    settings = EvalSettings(missing="skip", no_relevant="count")
    qrels = read_qrels(qrels_path)
    runs = [read_run(run_paths[i]) for i in which]
    ev = evaluate(qrels, runs, [c for c, _, _ in SHARED], settings)

    pq = python_qrels(qrels_path)
    evaluator = pytrec_eval.RelevanceEvaluator(pq, PYTREC_MEASURES)
    rq = ranx.Qrels.from_file(str(qrels_path), kind="trec")
    # ranx counts a negative label as judged non-relevant in bpref; trec_eval and Cranfield
    # treat it as unjudged. Measure ranx on the qrels without them as well.
    rq_judged = ranx.Qrels.from_dict({t: {d: v for d, v in j.items() if v >= 0} for t, j in pq.items()})

    diff_pytrec = {c: 0.0 for c, _, _ in SHARED}
    diff_ranx = {c: 0.0 for c, _, _ in SHARED}
    diff_ranx_judged = {c: 0.0 for c, _, _ in SHARED}
    compared = 0
    for k, i in enumerate(which):
        pr = python_run(run_paths[i])
        per_topic = evaluator.evaluate(pr)
        rx = {}
        for name, qr in (("raw", rq), ("judged", rq_judged)):
            run = ranx.Run.from_file(str(run_paths[i]), kind="trec")
            ranx.evaluate(qr, run, RANX_METRICS)  # per-topic scores are kept in run.scores
            rx[name] = {m: {q: float(v) for q, v in run.scores[m].items()} for m in RANX_METRICS}
        for c, p, r in SHARED:
            for ti, topic in enumerate(ev.topics):
                ours = float(ev.per_topic(c)[k, ti])
                compared += 1
                diff_pytrec[c] = max(diff_pytrec[c], abs(ours - per_topic[topic][p]))
                diff_ranx[c] = max(diff_ranx[c], abs(ours - rx["raw"][r][topic]))
                diff_ranx_judged[c] = max(diff_ranx_judged[c], abs(ours - rx["judged"][r][topic]))
    out = [
        (f"agreement on runs {', '.join(runs[k].tag for k in range(len(which)))} "
         f"({len(ev.topics)} topics each; Cranfield with EvalSettings(missing='skip', no_relevant='count')):"),
        (f"  {'Cranfield':<10} {'pytrec_eval':<12} {'ranx':<13} {'max|d| pytrec':>14} {'max|d| ranx':>12} "
         f"{'ranx, -1 dropped':>17}"),
    ]
    for c, p, r in SHARED:
        out.append(
            f"  {c:<10} {p:<12} {r:<13} {diff_pytrec[c]:>14.3g} {diff_ranx[c]:>12.3g} {diff_ranx_judged[c]:>17.3g}"
        )
    out.append(f"  max abs difference Cranfield vs pytrec_eval over all {compared} per-topic values: "
               f"{max(diff_pytrec.values()):.3g}")
    out.append("  (ranx reads the -1 'pooled but unjudged' labels as judged non-relevant, which changes its "
               "bpref; the last column drops them from ranx's qrels)")
    return out


# ============================================================================ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--skip", nargs="*", default=[], choices=["pytrec_eval", "ranx"],
                    help="leave a peer out (quick runs)")
    ap.add_argument("--default-allocator", action="store_true",
                    help="do not apply the CLI's allocator tuning (service.runtime.tune_allocator)")
    ap.add_argument("--whole-repeat", type=int, default=3,
                    help="repeats of the whole-process comparison (0 leaves it out)")
    ap.add_argument("--dl", type=Path, default=ROOT.parent / "shared" / "data" / "trec-dl-passage",
                    help="TREC DL passage data (dl19-passage/, dl20-passage/); a missing folder is skipped")
    ap.add_argument("--whole-only", action="store_true",
                    help="only the reading speeds and the whole-process comparisons (quick)")
    args = ap.parse_args(argv)

    print("== Cranfield speed benchmark ==")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    for line in machine_facts() + repo_facts():
        print(line)
    if args.default_allocator:
        print("allocator: default (--default-allocator)")
    else:
        print(apply_cli_allocator())
    cli_threads = cli_reads_with_threads()
    print(f"cranfield eval reads runs {'with a 2-thread ThreadPoolExecutor' if cli_threads else 'sequentially'} "
          "(service/cli/evaluate.py); that is the reference row below")

    qrels_path, run_paths, took = ensure_collection(args.topics, args.runs, args.depth, args.seed)
    size = sum(p.stat().st_size for p in run_paths)
    n_lines = args.runs * args.topics * args.depth
    with open(qrels_path, "rb") as f:
        n_qrels = sum(1 for _ in f)
    print()
    print(f"collection: {qrels_path.parent.relative_to(ROOT)} "
          f"({f'generated in {took:.1f} s' if took is not None else 'cached'})")
    print(f"  qrels: {n_qrels:,} judgments (TREC format, levels -1..3), {args.topics} topics")
    print(f"  runs: {args.runs} files, {n_lines:,} lines, {size / 1e6:.0f} MB")

    with_pytrec = "pytrec_eval" not in args.skip
    if args.whole_only:
        print()
        report_whole(args, qrels_path, run_paths, with_pytrec)
        return 0

    from service.metrics import DEFAULT_MEASURES

    shared5 = [c for c, _, _ in SHARED]
    best = Best()
    notes: list[str] = []

    # ---------------------------------------------------------- Cranfield
    # warm-up (imports, registry, page cache) outside the timings
    qrels, runs = cranfield_parse(qrels_path, run_paths[:2], 1)
    cranfield_compute(qrels, runs, DEFAULT_MEASURES)
    del qrels, runs
    for rep in range(args.repeat):
        gc.collect()
        (qrels, runs), t = timed(lambda: cranfield_parse(qrels_path, run_paths, 1))
        best.add("cran_parse_seq", t)
        del qrels, runs
        gc.collect()
        (qrels, runs), t = timed(lambda: cranfield_parse(qrels_path, run_paths, 2))
        best.add("cran_parse_2t", t)
        _, t = timed(lambda q=qrels, r=runs: cranfield_compute(q, r, DEFAULT_MEASURES))
        best.add("cran_compute", t)
        _, t = timed(lambda q=qrels, r=runs: cranfield_compute(q, r, shared5))
        best.add("cran_compute5", t)
        del qrels, runs
        print(f"  [cranfield repeat {rep + 1}] parse seq {best.times['cran_parse_seq'][-1]:.2f} s, "
              f"parse 2 threads {best.times['cran_parse_2t'][-1]:.2f} s, "
              f"evaluate (11 default) {best.times['cran_compute'][-1]:.2f} s, "
              f"evaluate (5 shared) {best.times['cran_compute5'][-1]:.2f} s", flush=True)

    # ---------------------------------------------------------- pytrec_eval
    if "pytrec_eval" not in args.skip:
        for rep in range(args.repeat):
            gc.collect()
            (pq, pruns), t = timed(lambda: pytrec_parse(qrels_path, run_paths))
            best.add("pytrec_parse", t)
            _, t = timed(lambda q=pq, r=pruns: pytrec_compute(q, r))
            best.add("pytrec_compute", t)
            del pq, pruns
            print(f"  [pytrec_eval repeat {rep + 1}] parse {best.times['pytrec_parse'][-1]:.2f} s, "
                  f"compute {best.times['pytrec_compute'][-1]:.2f} s", flush=True)

    # ---------------------------------------------------------- ranx
    if "ranx" not in args.skip:
        warm, nthreads = ranx_warmup(qrels_path, run_paths[0])
        notes.append(f"ranx: one warm-up load + evaluate on a tiny slice of the same files first (numba JIT "
                     f"compilation, {warm:.1f} s, not timed); its numba kernels then run on {nthreads} threads")
        for rep in range(args.repeat):
            gc.collect()
            (rq, rruns), t = timed(lambda: ranx_parse(qrels_path, run_paths))
            best.add("ranx_parse", t)
            _, t = timed(lambda q=rq, r=rruns: ranx_compute(q, r))
            best.add("ranx_compute", t)
            del rq, rruns
            print(f"  [ranx repeat {rep + 1}] parse {best.times['ranx_parse'][-1]:.2f} s, "
                  f"compute {best.times['ranx_compute'][-1]:.2f} s", flush=True)

    # ---------------------------------------------------------- table
    seq_row = ("cranfield (sequential read)", best["cran_parse_seq"], best["cran_compute"])
    thr_row = ("cranfield (2-thread read)", best["cran_parse_2t"], best["cran_compute"])
    ref_row, other_row = (thr_row, seq_row) if cli_threads else (seq_row, thr_row)
    ref_row = (ref_row[0][:-1] + ", as the CLI)", ref_row[1], ref_row[2])
    rows = [
        ref_row,
        other_row,
        ("cranfield (5 shared metrics only)", ref_row[1], best["cran_compute5"]),
    ]
    if "pytrec_parse" in best.times:
        rows.append(("pytrec_eval", best["pytrec_parse"], best["pytrec_compute"]))
    if "ranx_parse" in best.times:
        rows.append(("ranx", best["ranx_parse"], best["ranx_compute"]))
    ref = rows[0][1] + rows[0][2]
    print()
    print(f"best of {args.repeat} per phase; total = best parse + best compute; ratio = total / Cranfield's "
          f"total (first row: read as the CLI does, 11 default metrics)")
    print(f"{'tool':<40} {'parse s':>9} {'compute s':>10} {'total s':>9} {'ratio':>7}")
    for name, p, c in rows:
        print(f"{name:<40} {p:>9.2f} {c:>10.2f} {p + c:>9.2f} {(p + c) / ref:>7.2f}")
    print()
    print("Cranfield evaluates its 11 default metrics (" + ", ".join(DEFAULT_MEASURES) + ");")
    print("pytrec_eval " + ", ".join(sorted(PYTREC_MEASURES)) + "; ranx " + ", ".join(RANX_METRICS) + ".")
    for n in notes:
        print(n)
    if "pytrec_parse" in best.times:
        pyt = best["pytrec_parse"] + best["pytrec_compute"]
        print(f"cranfield total / pytrec_eval total = {ref / pyt:.3f}")
        other = other_row[1] + other_row[2]
        print(f"  (reading the other way, {other_row[0][11:-1]}: {other / pyt:.3f}; "
              f"parse only: {ref_row[1] / best['pytrec_parse']:.3f}; "
              f"compute only: {best['cran_compute'] / best['pytrec_compute']:.3f}; "
              f"5 shared metrics: {(ref_row[1] + best['cran_compute5']) / pyt:.3f})")
    print("all repeats (s): " + "; ".join(f"{k} [{best.all(k)}]" for k in best.times))
    print(f"cranfield reading (qrels + runs, warm process): sequential {size / 1e6 / best['cran_parse_seq']:.0f} MB/s, "
          f"2 threads {size / 1e6 / best['cran_parse_2t']:.0f} MB/s"
          + (f"; pytrec_eval's Python parse {size / 1e6 / best['pytrec_parse']:.0f} MB/s"
             if "pytrec_parse" in best.times else ""))

    # ---------------------------------------------------------- agreement
    if not args.skip:
        print()
        which = sorted({0, len(run_paths) // 2, len(run_paths) - 1})
        for line in agreement(qrels_path, run_paths, which):
            print(line)
    print()
    report_whole(args, qrels_path, run_paths, with_pytrec)
    return 0


def report_whole(args: argparse.Namespace, qrels_path: Path, run_paths: list[Path], with_pytrec: bool) -> None:
    """Reading speeds and whole processes side by side: the generated collection, then TREC DL."""
    if with_pytrec:
        try:
            import pytrec_eval  # noqa: F401
        except ImportError:
            print("pytrec_eval is not installed: whole-process comparisons without it")
            with_pytrec = False
    sets = [(f"generated {args.runs} x {args.topics} x {args.depth}", qrels_path, run_paths)]
    dl = dl_collections(args.dl) if args.dl.exists() else []
    if not dl:
        print(f"no TREC DL data under {args.dl}: skipped")
    sets += [(f"TREC {year}", q, r) for year, q, r in dl]
    for label, q, r in sets:
        for line in in_process_reading(label, q, r, max(args.repeat, 1), with_pytrec):
            print(line)
    if args.whole_repeat <= 0:
        return
    print(f"whole processes, in {ROOT}: {Path(sys.executable).name} -m service.cli eval --qrels QRELS RUN... "
          "(= cranfield eval: default metrics, tsv to a pipe); 'cranfield read only' = a fresh Python that reads "
          "as cranfield eval does, nothing else")
    for label, q, r in sets:
        print()
        for line in whole_processes(label, q, r, args.whole_repeat, with_pytrec):
            print(line)


if __name__ == "__main__":
    raise SystemExit(main())
