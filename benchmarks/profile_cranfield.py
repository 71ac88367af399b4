#!/usr/bin/env python3
"""Where Cranfield's time goes on the benchmark collection (cProfile and line_profiler).

    python benchmarks/profile_cranfield.py [--runs 100 --topics 50 --depth 1000] [--lines]

Reads the qrels and every run sequentially (one thread, so the profile is not
mixed across threads) and evaluates the default metric set, under cProfile;
prints the top functions by total and by cumulative time. With ``--lines``
(needs ``line_profiler``) it also profiles, line by line, the functions listed
in ``HOT``: the readers, the tokeniser, the id hashing and matching, the
evaluation loop and the kernels of the default metrics. Like the CLI, it
applies ``service.runtime.tune_allocator()`` first.

The collection is the one ``bench_eval.py`` generates (and caches) in benchmarks/data/.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_eval import apply_cli_allocator, ensure_collection, repo_facts  # noqa: E402

from service.formats import readers  # noqa: E402
from service.metrics import DEFAULT_MEASURES, evaluate  # noqa: E402

# Functions worth a line-by-line profile, by module and (dotted) name. Names that do not
# exist are skipped, so the script survives refactors.
HOT = {
    "service.formats.readers": ["parse_run", "_build_qrels", "_group_consecutive", "_rank_order", "_first_duplicate"],
    "service.formats.tokenize": ["tokenize", "_regular_spans", "_general_spans", "parse_floats",
                                 "gather_fixed_width", "TokenTable.field_bytes"],
    "service.formats.keys": ["hash_ids", "topic_keys", "KeyTable.__init__", "KeyTable.find"],
    "service.formats.types": ["Qrels.lookup", "Qrels.key_table", "Run.hashes"],
    "service.metrics.scoring": ["evaluate"],
    "service.metrics.matching": ["level_matrix", "_match_levels"],
    "service.metrics.lists": ["RankedLists.condensed", "ideal_vectors"],
    "service.metrics.measures.binary": ["average_precision", "bpref", "reciprocal_rank", "precision"],
    "service.metrics.measures.graded": ["q_measure", "p_plus", "_blended_ratio", "_preferred_rank"],
    "service.metrics.measures.cumgain": ["ndcg"],
    "service.metrics.measures.cascade": ["nerr", "_err_of", "_err_rows"],
}


def hot_functions() -> list:  # type: ignore[type-arg]
    import importlib

    out = []
    for mod_name, names in HOT.items():
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        for name in names:
            obj = mod
            for part in name.split("."):
                obj = getattr(obj, part, None)
                if obj is None:
                    break
            if callable(obj) and getattr(obj, "__module__", None) == mod_name:
                out.append(obj)
    return out


def work(qrels_path: Path, run_paths: list[Path]) -> tuple[float, float]:
    t0 = time.perf_counter()
    qrels = readers.read_qrels(qrels_path)
    runs = [readers.read_run(p) for p in run_paths]
    t1 = time.perf_counter()
    evaluate(qrels, runs, DEFAULT_MEASURES)
    return t1 - t0, time.perf_counter() - t1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--lines", action="store_true", help="also run line_profiler on the hot functions")
    args = ap.parse_args()
    for line in repo_facts():
        print(line)
    print(apply_cli_allocator())
    qrels_path, run_paths, _ = ensure_collection(args.topics, args.runs, args.depth, args.seed)
    work(qrels_path, run_paths[:2])  # warm-up: imports, page cache

    prof = cProfile.Profile()
    prof.enable()
    parse_s, eval_s = work(qrels_path, run_paths)
    prof.disable()
    print(f"== cProfile (sequential read): parse {parse_s:.2f} s, evaluate {eval_s:.2f} s (profiler overhead included)")
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(key).print_stats(args.top)
        print(f"\n-- sorted by {key}")
        print(buf.getvalue())

    if args.lines:
        from line_profiler import LineProfiler

        lp = LineProfiler()
        for fn in hot_functions():
            lp.add_function(fn)
        lp.enable_by_count()
        parse_s, eval_s = work(qrels_path, run_paths)
        lp.disable_by_count()
        print(f"== line_profiler: parse {parse_s:.2f} s, evaluate {eval_s:.2f} s (profiler overhead included)")
        lp.print_stats(output_unit=1e-3, stripzeros=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
