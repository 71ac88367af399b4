"""``cranfield compare`` and ``cranfield metaeval``: significance tests and meta-evaluation.

The core's statistics (scipy) are imported inside the handlers.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

import numpy as np

from service.cli.arguments import parse_gains
from service.cli.output import write_json
from service.cli.registry import command
from service.errors import InvalidInput, InvalidMeasure


def _compare_arguments(cmp_: argparse.ArgumentParser) -> None:
    _inputs(cmp_)
    cmp_.add_argument("--test", choices=("bootstrap", "t", "wilcoxon", "sign", "randomisation", "tukey", "friedman"),
                      default="bootstrap")
    cmp_.add_argument("--B", type=int, default=1000, dest="resamples", help="resamples / permutations (default 1000)")
    cmp_.add_argument("--exact", action="store_true", help="randomisation: enumerate all 2^n sign flips")
    cmp_.add_argument("--alpha", type=float, default=0.05)
    cmp_.add_argument("--correction", choices=("none", "holm", "bh"), default="none")
    cmp_.add_argument("--interval", choices=("t", "anova"), default="t",
                      help="each run's 95%% interval: t from its own scores, or the ANOVA margin of error")
    cmp_.add_argument("--seed", type=int, default=0)
    cmp_.add_argument("--format", choices=("tsv", "json"), default="tsv")


def _metaeval_arguments(meta: argparse.ArgumentParser) -> None:
    _inputs(meta, scores=False)
    meta.add_argument("--alpha", type=float, default=0.05)
    meta.add_argument("--B", type=int, default=1000, dest="resamples")
    meta.add_argument("--seed", type=int, default=0)
    meta.add_argument("--reduce", help="percentages of judgments kept, e.g. 90,70,50,30,10 (Buckley & Voorhees)")
    meta.add_argument("--stability", action="store_true",
                      help="Buckley & Voorhees' stability: minority and tie rates over B bootstrap samples")
    meta.add_argument("--fuzziness", type=float, default=0.05, help="stability: relative difference counted as a tie")
    meta.add_argument("--swap", action="store_true", help="Voorhees & Buckley's swap rates and the difference required")
    meta.add_argument("--swap-sizes", help="topic set sizes c, e.g. 5,10,15,20,25 (default: steps of 5 up to n/2)")
    meta.add_argument("--swap-sampling", choices=("disjoint", "bootstrap"), default="disjoint")
    meta.add_argument("--bin-width", type=float, default=0.01)
    meta.add_argument("--top-heaviness", type=int, metavar="R",
                      help="each metric's value for one relevant document at rank 1..--depth, with R relevant")
    meta.add_argument("--depth", type=int, default=20, help="--top-heaviness: ranks shown")
    meta.add_argument("--session-sep", default=":", help=argparse.SUPPRESS)
    meta.add_argument("--format", choices=("tsv", "json"), default="tsv")


def _inputs(p: argparse.ArgumentParser, scores: bool = True) -> None:
    p.add_argument("--qrels", help="qrels file: scores are computed from the runs")
    p.add_argument("runs", nargs="*", metavar="RUN", help="TREC run files (with --qrels)")
    if scores:
        p.add_argument("--scores", nargs="+", metavar="FILE",
                       help="per-topic score files (topic,value per row; one file per system, named by its stem)")
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="METRIC")
    p.add_argument("--order", choices=("score", "rank", "file"), default="score")
    p.add_argument("--missing", choices=("zero", "skip"), default="zero")
    p.add_argument("--gains", help="gain of each level, e.g. 1=1,2=5,3=10")


def _score_tables(args: argparse.Namespace) -> tuple[list[str], dict[str, np.ndarray], list[str]]:
    """(metric names, {metric: (topics, runs) matrix}, run names) from runs or score files."""
    if getattr(args, "scores", None):
        if args.qrels or args.runs:
            raise InvalidMeasure("give either --qrels with runs or --scores files, not both")
        names, matrix = read_score_files([Path(p) for p in args.scores])
        return ["score"], {"score": matrix}, names
    if not args.qrels or not args.runs:
        raise InvalidMeasure("give --qrels QRELS and at least two RUN files (or --scores FILE...)")
    from service.formats.readers import read_qrels, read_run
    from service.metrics import EvalSettings, evaluate, parse_measures

    measures = parse_measures(args.measures or ["AP"])
    gains = _gains(args.gains)
    qrels = read_qrels(args.qrels)
    runs = [read_run(p, args.order) for p in args.runs]
    ev = evaluate(qrels, runs, measures, EvalSettings(missing=args.missing, gains=gains))
    return [str(m) for m in measures], {str(m): ev.per_topic(m).T for m in measures}, list(ev.runs)


def _gains(text: str | None) -> tuple[tuple[int, float], ...] | None:
    if not text:
        return None
    try:
        return parse_gains(text)
    except argparse.ArgumentTypeError as exc:
        raise InvalidMeasure(str(exc)) from None


def read_score_files(paths: list[Path]) -> tuple[list[str], np.ndarray]:
    """Per-topic score files -> run names and a (topics, runs) matrix (NaN where absent)."""
    per_run: list[dict[str, float]] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(str(path), None, f"cannot read the file: {exc}") from None
        values: dict[str, float] = {}
        header_seen = False
        for no, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in (line.split(",") if "," in line else line.split())]
            if len(parts) < 2:
                raise InvalidInput(str(path), no, "expected 'topic,value'")
            try:
                value = float(parts[1])
            except ValueError:
                if not values and not header_seen:
                    header_seen = True  # the first line may name the columns
                    continue
                raise InvalidInput(str(path), no, f"value {parts[1]!r} is not a number") from None
            if parts[0] in values:
                raise InvalidInput(str(path), no, f"topic {parts[0]!r} appears twice")
            values[parts[0]] = value
        if not values:
            raise InvalidInput(str(path), None, "no scores found")
        per_run.append(values)
    names = [p.stem for p in paths]
    if len(set(names)) != len(names):
        raise InvalidMeasure("two score files have the same name (the system is named by the file's stem)")
    topics = sorted(set().union(*per_run))
    matrix = np.array([[run.get(t, np.nan) for run in per_run] for t in topics])
    return names, matrix


@command("compare", "significance tests between runs", _compare_arguments,
         description="Test every pair of runs on each metric.")
def cmd_compare(args: argparse.Namespace, out: TextIO) -> int:
    from service.metrics.stats.anova import effect_sizes, run_intervals
    from service.metrics.stats.common import as_score_matrix
    from service.metrics.stats.pairwise import pairwise

    metrics, tables, runs = _score_tables(args)
    if len(runs) < 2:
        raise InvalidMeasure("compare needs at least two runs")
    report = []
    for metric in metrics:
        try:
            res = pairwise(tables[metric], runs, args.test, resamples=args.resamples, alpha=args.alpha,
                           correction=args.correction, seed=args.seed, exact=args.exact)
            kept = as_score_matrix(tables[metric], runs).values
            ci = run_intervals(kept, method=args.interval)
            eff = effect_sizes(kept, resamples=args.resamples, seed=args.seed)
        except ValueError as exc:
            raise InvalidMeasure(f"{metric}: {exc}") from None
        report.append((metric, res, ci, eff))
    if args.format == "json":
        doc = {
            "test": args.test, "resamples": args.resamples, "alpha": args.alpha, "correction": args.correction,
            "seed": args.seed, "interval": args.interval,
            "metrics": {
                metric: {
                    "topics": res.n_topics, "notes": list(res.notes),
                    "runs": [{"run": r, "mean": float(ci.mean[i]), "ci_low": float(ci.low[i]),
                              "ci_high": float(ci.high[i])} for i, r in enumerate(res.runs)],
                    "pairs": [{"run_a": res.runs[a], "run_b": res.runs[b], "mean_a": float(res.mean_a[k]),
                               "mean_b": float(res.mean_b[k]), "diff": float(res.diff[k]),
                               "statistic": float(res.statistic[k]), "p": float(res.p[k]),
                               "p_adjusted": float(res.p_adjusted[k]), "significant": bool(res.significant[k]),
                               "diff_ci_low": float(eff.ci_low[k]), "diff_ci_high": float(eff.ci_high[k]),
                               "effect_size": float(eff.standardised[k])}
                              for k, (a, b) in enumerate(zip(res.a.tolist(), res.b.tolist()))],
                }
                for metric, res, ci, eff in report
            },
        }
        return write_json(doc, out)
    out.write("run\tmetric\tmean\tci_low\tci_high\ttopics\n")
    for metric, res, ci, _ in report:
        for i, r in enumerate(res.runs):
            out.write(f"{r}\t{metric}\t{ci.mean[i]:.6f}\t{ci.low[i]:.6f}\t{ci.high[i]:.6f}\t{res.n_topics}\n")
    out.write("\nrun_a\trun_b\tmetric\ttest\tmean_a\tmean_b\tdiff\tstatistic\tp\tp_adjusted\tsignificant"
              "\tdiff_ci_low\tdiff_ci_high\teffect_size\n")
    for metric, res, _, eff in report:
        for k, (a, b) in enumerate(zip(res.a.tolist(), res.b.tolist())):
            out.write(
                f"{res.runs[a]}\t{res.runs[b]}\t{metric}\t{res.test}\t{res.mean_a[k]:.6f}\t{res.mean_b[k]:.6f}\t"
                f"{res.diff[k]:.6f}\t{res.statistic[k]:.6f}\t{res.p[k]:.6g}\t{res.p_adjusted[k]:.6g}\t"
                f"{'yes' if res.significant[k] else 'no'}\t{eff.ci_low[k]:.6f}\t{eff.ci_high[k]:.6f}\t"
                f"{eff.standardised[k]:.6f}\n"
            )
    for metric, res, _, _ in report:
        for note in res.notes:
            out.write(f"# {metric}: {note}\n")
    return 0


@command("metaeval", "discriminative power and Kendall's tau between metrics", _metaeval_arguments,
         description="Meta-evaluate metrics: discriminative power, rank correlation, incompleteness.")
def cmd_metaeval(args: argparse.Namespace, out: TextIO) -> int:
    from service.formats.readers import read_qrels, read_run
    from service.metrics import EvalSettings, parse_measures
    from service.metrics.stats.meta import kendall_matrix, kendall_threshold, reduction_experiment

    measures = parse_measures(args.measures or ["AP", "Q", "nDCG@1000"])
    if args.top_heaviness is not None and not args.runs:
        return _top_heaviness(args, measures, out)
    if not args.qrels or len(args.runs) < 2:
        raise InvalidMeasure("metaeval needs --qrels QRELS and at least two RUN files (or only --top-heaviness R)")
    qrels = read_qrels(args.qrels)
    # H stays the full judgments' top level on reduced judgments: otherwise ERR's and RBP's
    # scale would move with the reduction, confounding the experiment.
    settings = EvalSettings(missing=args.missing, gains=_gains(args.gains), max_level=qrels.max_level)
    runs = [read_run(p, args.order) for p in args.runs]
    kept = [float(v) for v in args.reduce.split(",")] if args.reduce else []
    rows, full = reduction_experiment(qrels, runs, measures, settings, kept, args.alpha, args.resamples, args.seed)
    full_means = np.vstack([full.means(m) for m in measures])
    tau = kendall_matrix(full_means)
    names = [str(m) for m in measures]
    threshold = kendall_threshold(len(runs), 0.01)
    reliability = _reliability(args, full, measures)
    heaviness = _heaviness_rows(args, measures) if args.top_heaviness is not None else None
    if args.format == "json":
        return write_json({"alpha": args.alpha, "resamples": args.resamples, "seed": args.seed, "runs": len(runs),
                           "discriminative_power": rows, "kendall_tau": {"metrics": names, "matrix": tau.tolist(),
                           "significant_at_0.01_above": threshold}, **reliability,
                           **({"top_heaviness": heaviness} if heaviness is not None else {})}, out)
    out.write("kept\tmetric\tdiscriminative_power\tsignificant_pairs\tpairs\tdifference_required\ttau_vs_full\n")
    for r in rows:
        out.write(f"{r['kept']:g}\t{r['metric']}\t{r['power']:.4f}\t{r['significant_pairs']}\t{r['pairs']}\t"
                  f"{r['difference_required']:.4f}\t{r['tau_vs_full']:.4f}\n")
    out.write(f"\n# Kendall's tau between system rankings ({len(runs)} runs; |tau| > {threshold:.3f} "
              "is significant at alpha = 0.01)\nmetric\t" + "\t".join(names) + "\n")
    for i, n in enumerate(names):
        out.write(n + "\t" + "\t".join(f"{v:.4f}" for v in tau[i]) + "\n")
    if "stability" in reliability:
        out.write(f"\n# stability (Buckley & Voorhees; B = {args.resamples} bootstrap samples, fuzziness "
                  f"{args.fuzziness:g})\nmetric\tminority_rate\ttie_rate\tobservations\n")
        for r in reliability["stability"]:
            out.write(f"{r['metric']}\t{r['minority_rate']:.4f}\t{r['tie_rate']:.4f}\t{r['observations']}\n")
    if "swap" in reliability:
        out.write(f"\n# swap method (Voorhees & Buckley; {args.resamples} trials per size, bin width "
                  f"{args.bin_width:g}, extrapolated to all topics)\nmetric\tdifference_required\tsensitivity\n")
        for r in reliability["swap"]:
            req = "none" if r["difference_required"] is None else f"{r['difference_required']:.4f}"
            out.write(f"{r['metric']}\t{req}\t{r['sensitivity']:.4f}\n")
    if heaviness is not None:
        _write_heaviness(heaviness, out)
    return 0


def _reliability(args: argparse.Namespace, ev, measures) -> dict:  # type: ignore[no-untyped-def]
    from service.metrics.stats.reliability import stability, swap_rates

    out: dict = {}
    if args.stability:
        out["stability"] = []
        for m in measures:
            st = stability(ev.per_topic(m).T, samples=args.resamples, fuzziness=args.fuzziness, seed=args.seed)
            out["stability"].append({"metric": str(m), "minority_rate": st.minority_rate, "tie_rate": st.tie_rate,
                                     "observations": st.observations})
    if args.swap:
        sizes = [int(v) for v in args.swap_sizes.split(",")] if args.swap_sizes else None
        out["swap"] = []
        for m in measures:
            try:
                sw = swap_rates(ev.per_topic(m).T, sizes=sizes, trials=args.resamples, bin_width=args.bin_width,
                                sampling=args.swap_sampling, seed=args.seed)
            except ValueError as exc:
                raise InvalidMeasure(f"--swap: {exc}") from None
            rates = sw.rates
            out["swap"].append({
                "metric": str(m),
                "difference_required": sw.difference_required if np.isfinite(sw.difference_required) else None,
                "sensitivity": sw.sensitivity,
                "sizes": list(sw.sizes), "bin_low": sw.bin_low.tolist(),
                "swap_rates": [[None if np.isnan(v) else float(v) for v in row] for row in rates],
                "extrapolated": [None if np.isnan(v) else float(v) for v in sw.extrapolated],
            })
    return out


def _heaviness_rows(args: argparse.Namespace, measures) -> dict:  # type: ignore[no-untyped-def]
    from service.metrics.stats.reliability import top_heaviness

    values = top_heaviness([str(m) for m in measures], args.top_heaviness, args.depth)
    return {"num_rel": args.top_heaviness, "ranks": list(range(1, args.depth + 1)),
            "values": {k: v.tolist() for k, v in values.items()}}


def _write_heaviness(h: dict, out: TextIO) -> None:
    out.write(f"\n# top-heaviness: one relevant document at rank r, R = {h['num_rel']}\nrank\t"
              + "\t".join(h["values"]) + "\n")
    for i, r in enumerate(h["ranks"]):
        out.write(f"{r}\t" + "\t".join(f"{v[i]:.4f}" for v in h["values"].values()) + "\n")


def _top_heaviness(args: argparse.Namespace, measures, out: TextIO) -> int:  # type: ignore[no-untyped-def]
    h = _heaviness_rows(args, measures)
    if args.format == "json":
        write_json({"top_heaviness": h}, out)
    else:
        _write_heaviness(h, out)
    return 0
