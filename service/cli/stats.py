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
    cmp_.add_argument("--B", type=int, default=1000, dest="resamples",
                      help="resamples / permutations: the first stage of the settled rule, or every pair's with "
                           "--fixed (default 1000)")
    cmp_.add_argument("--exact", action="store_true", help="randomisation: enumerate all 2^n sign flips")
    cmp_.add_argument("--fixed", action="store_true",
                      help="resampling tests: exactly B resamples per pair, as most tools do (a verdict near alpha "
                           "may then depend on the seed). By default the pairs whose verdict straddles alpha are "
                           "resampled until it settles, the stored tests' rule (docs/statistics.md, 'Monte Carlo "
                           "precision'); a pair still straddling at --max-B is reported undecided")
    cmp_.add_argument("--sequential", action="store_true", help=argparse.SUPPRESS)  # the default since issue 37
    cmp_.add_argument("--max-B", type=int, default=None, dest="max_resamples", metavar="N",
                      help="the settled rule: at most N resamples per pair (default 10000000)")
    cmp_.add_argument("--alpha", type=float, default=0.05)
    cmp_.add_argument("--correction", choices=("none", "holm", "bh"), default="none")
    cmp_.add_argument("--baseline", action="append", dest="baselines", metavar="RUN",
                      help="test each run against this run only (repeatable: against each baseline; "
                           "--scores: the file's stem); the correction covers the pairs tested")
    cmp_.add_argument("--interval", choices=("t", "anova"), default="t",
                      help="each run's 95%% interval: t from its own scores, or the ANOVA margin of error")
    cmp_.add_argument("--seed", type=int, default=0)
    cmp_.add_argument("--format", choices=("tsv", "json"), default="tsv")
    from service.cli.rag import add_judgment_arguments  # (standard library only at its top)

    add_judgment_arguments(cmp_, compare=True)  # generated answers' judgments: docs/rag.md


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
    metrics, tables, runs, _ = _score_tables_with_topics(args)
    return metrics, tables, runs


def _score_tables_with_topics(
        args: argparse.Namespace) -> tuple[list[str], dict[str, np.ndarray], list[str], list[str]]:
    """:func:`_score_tables` and the topic of each row of the matrices."""
    if getattr(args, "scores", None):
        if args.qrels or args.runs:
            raise InvalidMeasure("give either --qrels with runs or --scores files, not both")
        names, matrix, topics = read_score_files([Path(p) for p in args.scores], with_topics=True)
        return ["score"], {"score": matrix}, names, topics
    if getattr(args, "assignments", None) or getattr(args, "support", None):
        if args.qrels or args.runs:
            raise InvalidMeasure("give either --qrels with runs or RAG judgments (--assignments, --support), not both")
        from service.cli.rag import rag_score_tables

        return rag_score_tables(args)
    if not args.qrels or not args.runs:
        raise InvalidMeasure("give --qrels QRELS and at least two RUN files (or --scores FILE...)")
    from service.formats.readers import read_qrels, read_run
    from service.metrics import EvalSettings, evaluate, parse_measures

    measures = parse_measures(args.measures or ["AP"])
    gains = _gains(args.gains)
    qrels = read_qrels(args.qrels)
    runs = [read_run(p, args.order) for p in args.runs]
    ev = evaluate(qrels, runs, measures, EvalSettings(missing=args.missing, gains=gains))
    return [str(m) for m in measures], {str(m): ev.per_topic(m).T for m in measures}, list(ev.runs), list(ev.topics)


def _gains(text: str | None) -> tuple[tuple[int, float], ...] | None:
    if not text:
        return None
    try:
        return parse_gains(text)
    except argparse.ArgumentTypeError as exc:
        raise InvalidMeasure(str(exc)) from None


def score_file_topics(paths: list[Path]) -> list[str]:
    """The topics of :func:`read_score_files`' matrix rows, in its order."""
    return read_score_files(paths, with_topics=True)[2]  # type: ignore[misc]


def read_score_files(paths: list[Path], with_topics: bool = False):  # type: ignore[no-untyped-def]
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
    return (names, matrix, topics) if with_topics else (names, matrix)


@command("compare", "significance tests between runs", _compare_arguments,
         description="Test every pair of runs (or each run against the --baseline runs) on each metric.")
def cmd_compare(args: argparse.Namespace, out: TextIO) -> int:
    from service.metrics.stats.anova import run_intervals
    from service.metrics.stats.common import as_score_matrix
    from service.metrics.stats.pairwise import pair_effects, pair_t_intervals, pairwise_many
    from service.metrics.stats.presentation import correction_name, interval_name

    metrics, tables, runs, topics = _score_tables_with_topics(args)
    if len(runs) < 2:
        raise InvalidMeasure("compare needs at least two runs")
    unknown = sorted(set(args.baselines or ()) - set(runs))
    if unknown:
        raise InvalidMeasure(f"--baseline {', '.join(unknown)}: not among the runs compared "
                             f"({', '.join(runs[:5])}{', ...' if len(runs) > 5 else ''})")
    report = []
    kept_of: dict[str, tuple[np.ndarray, list[str]]] = {}
    # Every metric at once: --sequential settles them together (one resampling matrix per stage for
    # all, the guarantee over every pair of every metric; issue 38).
    try:  # (a setting out of range for every metric alike: --B 0, --alpha 1)
        tested = pairwise_many({m: tables[m] for m in metrics}, runs, args.test, resamples=args.resamples,
                               alpha=args.alpha, correction=args.correction, seed=args.seed, exact=args.exact,
                               baselines=args.baselines, sequential=not args.fixed,
                               max_resamples=args.max_resamples)
    except ValueError as exc:
        raise InvalidMeasure(str(exc)) from None
    for metric in metrics:
        try:
            res = tested[metric]
            if isinstance(res, ValueError):
                raise res
            kept = as_score_matrix(tables[metric], runs).values
            complete = ~np.isnan(np.asarray(tables[metric], dtype=np.float64)).any(axis=1)
            kept_of[metric] = (kept, [t for t, keep in zip(topics, complete.tolist()) if keep])
            ci = run_intervals(kept, method=args.interval)
            if args.test == "t":  # the t-test's own interval, in closed form: no bootstrap (issue 25, item 7)
                eff = pair_t_intervals(kept, res.a, res.b, t=res)
            else:  # anova.effect_sizes' values, for the pairs tested only and a block of pairs at a time.
                eff = pair_effects(kept, res.a, res.b, resamples=args.resamples, seed=args.seed)
        except ValueError as exc:
            raise InvalidMeasure(f"{metric}: {exc}") from None
        report.append((metric, res, ci, eff))
    explained = {metric: _disagreements(kept_of[metric], res, eff, args) for metric, res, _, eff in report}
    # Every interval named by its kind, the same names in JSON and TSV (docs/statistics.md, "How
    # verdicts are printed"): runs' t_ci_* (or anova_ci_*), pairs' diff_t_ci_* or diff_percentile_ci_*.
    run_kind = "anova" if args.interval == "anova" else "t"
    pair_kind = report[0][3].kind if report else "percentile"
    intervals = {"runs": f"{run_kind}_ci: " + ("95% interval of each run's mean from the ANOVA margin of error "
                                               "(pooled residual variance, t quantile)" if run_kind == "anova"
                                               else interval_name("t") + " of each run's mean"),
                 "pairs": f"diff_{pair_kind}_ci: " + interval_name(pair_kind, 0.95, args.resamples)
                 + (f", seed {args.seed}" if pair_kind != "t" else "") + " of the mean difference a - b"}
    if args.format == "json":
        doc = {
            "test": args.test, "resamples": args.resamples, "alpha": args.alpha, "correction": args.correction,
            "rule": _rule(args),
            "correction_name": correction_name(args.test, args.correction), "intervals": intervals,
            "seed": args.seed, "interval": args.interval, **({"baselines": args.baselines} if args.baselines else {}),
            "metrics": {
                metric: {
                    "topics": res.n_topics, "notes": list(res.notes),
                    "runs": [{"run": r, "mean": float(ci.mean[i]), f"{run_kind}_ci_low": float(ci.low[i]),
                              f"{run_kind}_ci_high": float(ci.high[i])} for i, r in enumerate(res.runs)],
                    "pairs": _PAIRS.format(k),
                    "disagreements": [{"run_a": a, "run_b": b, "explanation": why, "differences": diffs}
                                      for a, b, why, diffs in explained[metric]],
                }
                for k, (metric, res, ci, _) in enumerate(report)
            },
        }
        return _write_json_streaming_pairs(doc, [(res, eff) for _, res, _, eff in report], out)
    out.write(f"run\tmetric\tmean\t{run_kind}_ci_low\t{run_kind}_ci_high\ttopics\n")
    for metric, res, ci, _ in report:
        out.writelines(f"{r}\t{metric}\t{ci.mean[i]:.6f}\t{ci.low[i]:.6f}\t{ci.high[i]:.6f}\t{res.n_topics}\n"
                       for i, r in enumerate(res.runs))
    # The TSV is data (issue 37): p and p_adjusted at full precision (the text view and pages
    # round them with format_p's rule), booleans true/false, the JSON's fields in the JSON's order.
    a = args.alpha
    out.write("\n" + "\t".join(("run_a", "run_b", "metric", "test", "mean_a", "mean_b", "diff", "statistic", "p",
                                 "p_adjusted", "significant", "verdict", f"diff_{pair_kind}_ci_low",
                                 f"diff_{pair_kind}_ci_high", "effect_size", "resamples")) + "\n")
    for metric, res, _, eff in report:
        # The lines are built of sanitised names and numbers: written as they are (SafeOutput).
        write = getattr(out, "write_sanitised", out.write)
        for lo in range(0, len(res.a), PAIRS_PER_WRITE):
            write(_pair_lines(res, eff, metric, slice(lo, lo + PAIRS_PER_WRITE)))
    out.write(f"# p: raw; p_adjusted: correction {correction_name(args.test, args.correction)}; both at full "
              f"precision; significant: p_adjusted < alpha = {a:g} (false where undecided); verdict: significant, "
              f"not significant or undecided at the pair's resamples (B, empty for an exact test)\n")
    out.write(f"# resamples: {_rule_words(args)}\n")
    out.writelines(f"# {name}\n" for name in intervals.values())
    for metric, res, _, _ in report:
        out.writelines(f"# {metric}: {note}\n" for note in res.notes)
        for a, b, why, diffs in explained[metric]:
            out.write(f"# {metric}: {a} vs {b}: {why}\n")
            if diffs:
                out.write(f"# {metric}: {a} - {b} per topic, sorted: "
                          + " ".join(f"{t}:{d:+.4f}" for t, d in sorted(diffs.items(), key=lambda kv: kv[1]))
                          + "\n")
    return 0


def _rule(args: argparse.Namespace) -> str:
    """How a resampling test's B was chosen: settled (the default), fixed, or none (exact tests)."""
    if args.test not in ("bootstrap", "randomisation", "tukey") or (args.test == "randomisation" and args.exact):
        return "exact"
    return "fixed" if args.fixed else "settled"


def _rule_words(args: argparse.Namespace) -> str:
    rule = _rule(args)
    if rule == "exact":
        return "none (an exact test)"
    if rule == "fixed":
        return f"B = {args.resamples} for every pair (--fixed): a verdict near alpha may depend on the seed"
    cap = args.max_resamples or 10_000_000
    return (f"settled: B = {args.resamples} first, then more for the pairs whose verdict straddles alpha, up to "
            f"{cap:,}; with probability at least 99% every settled verdict is the B -> infinity one")


#: At most this many pairs per metric get a written explanation of a test/interval disagreement.
MAX_EXPLAINED = 50


def _disagreements(table: tuple[np.ndarray, list[str]], res, eff,  # type: ignore[no-untyped-def]
                   args: argparse.Namespace) -> list[tuple[str, str, str, dict[str, float]]]:
    """(run a, run b, explanation, per-topic differences) for the pairs whose test verdict and
    interval verdict differ (:func:`service.metrics.stats.differences.explain_disagreement`).
    Pairs are screened with whole-array operations (the t interval excludes 0 exactly when
    |t| > t crit, t = effect size x sqrt(n); the printed bootstrap interval excludes 0), so only
    the candidates are examined."""
    from service.metrics.stats.common import t_ppf

    kept, topics = table
    n = kept.shape[0]
    significant = np.asarray(res.significant)
    with np.errstate(invalid="ignore"):
        t_excludes = np.abs(eff.standardised) * np.sqrt(n) > t_ppf(1 - args.alpha / 2, n - 1)
    boot_excludes = (eff.ci_low > 0) | (eff.ci_high < 0)
    candidates = np.flatnonzero((significant != t_excludes) | (significant != boot_excludes))
    out: list[tuple[str, str, str, dict[str, float]]] = []
    if not len(candidates):
        return out
    from service.metrics.stats.differences import explain_disagreement, paired_difference

    for k in candidates.tolist():
        a, b = int(res.a[k]), int(res.b[k])
        # The bootstrap interval the rows print (pair_effects: percentile, the same B, seed and draw), not BCa.
        d = paired_difference(kept[:, a], kept[:, b], level=1 - args.alpha, resamples=args.resamples,
                              seed=args.seed, topics=topics, method="percentile")
        why = explain_disagreement(float(res.p_adjusted[k]), args.alpha, args.test, d,
                                   correction=args.correction, n_comparisons=len(res.a))
        if why:
            why = why.replace("\u2212", "-")  # one minus sign in a line of CLI text: the ASCII one
            diffs = dict(zip(topics, (kept[:, a] - kept[:, b]).tolist()))
            out.append((res.runs[a], res.runs[b], why, diffs))
        if len(out) == MAX_EXPLAINED:
            out.append(("…", "…", f"more pairs may disagree; explanations stop at {MAX_EXPLAINED} per metric", {}))
            break
    return out


_PAIRS = "@@cranfield-pairs-{}@@"


def _pair_keys(kind: str) -> tuple[str, ...]:
    """A pair's JSON fields; the interval named by its kind (t or percentile)."""
    return ("run_a", "run_b", "mean_a", "mean_b", "diff", "statistic", "p", "p_adjusted", "significant", "verdict",
            f"diff_{kind}_ci_low", f"diff_{kind}_ci_high", "effect_size", "resamples")


#: The TSV's pairs are made and written this many at a time.
PAIRS_PER_WRITE = 65536


def _pair_lines(res, eff, metric: str, sl: slice) -> str:  # type: ignore[no-untyped-def]
    """The TSV lines of the pairs ``sl``, a column at a time (``service.cli.columns``): the JSON's
    pair fields (:func:`_pair_rows`) as data: figures f"{v:.6f}", p and p_adjusted exact
    (``repr``), significant ``true``/``false`` (the settled verdict), the verdict in words, the
    pair's B; its names through ``terminal_safe``: the text ``SafeOutput.write`` sent."""
    from service.cli.columns import constant, exact, fixed, lines, put, texts, whole
    from service.cli.output import terminal_safe

    # terminal_safe escapes control characters, NUL among them (which the columns cannot carry)
    runs, metric, test = tuple(terminal_safe(r) for r in res.runs), terminal_safe(metric), terminal_safe(res.test)
    significant = res.p_adjusted[sl] < res.alpha
    rows = len(significant)
    verdict = texts(["significant", "not significant"])[np.where(significant, 0, 1)]
    flag = texts(["true", "false"])[np.where(significant, 0, 1)]
    if res.undecided is not None and res.undecided[sl].any():
        undecided = np.flatnonzero(res.undecided[sl])
        verdict = put(verdict, undecided, "undecided")
        flag = put(flag, undecided, "false")
    names = texts(runs)
    return lines([
        names[res.a[sl]], names[res.b[sl]], constant(metric, rows), constant(test, rows),
        fixed(res.mean_a[sl], 6), fixed(res.mean_b[sl], 6), fixed(res.mean_a[sl] - res.mean_b[sl], 6),
        _statistics(res.test, res.statistic[sl]), exact(res.p[sl]), exact(res.p_adjusted[sl]), flag, verdict,
        fixed(eff.ci_low[sl], 6), fixed(eff.ci_high[sl], 6), fixed(eff.standardised[sl], 6),
        whole(None if res.pair_resamples is None else res.pair_resamples[sl], rows)])


def _statistics(test: str, values: np.ndarray) -> np.ndarray:
    """The statistic column: f"{v:.6f}", but the whole numbers of the Wilcoxon and sign tests (a
    rank sum, a count of wins) as integers ("372", not "372.000000"; a tied rank sum keeps its .5)."""
    from service.cli.columns import fixed, put

    column = fixed(values, 6)
    if test in ("wilcoxon", "sign"):
        v = np.asarray(values, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            integral = np.flatnonzero(np.isfinite(v) & (v == np.rint(v)))
        column = put(column, integral, [str(int(x)) for x in v[integral].tolist()])
    return column


def _pair_rows(res, eff):  # type: ignore[no-untyped-def]
    """Each pair's output fields as Python values, a block of pairs at a time (the columns are
    converted once per block, not looked up per pair: ``res.diff`` is a whole-array property):
    significant is the settled verdict, verdict "significant", "not significant" or "undecided"
    (at the pair's B, the last field: None for an exact test)."""
    step = 65536
    n = len(res.a)
    undecided = res.undecided if res.undecided is not None else np.zeros(n, dtype=bool)
    b = res.pair_resamples if res.pair_resamples is not None else None
    for lo in range(0, n, step):
        sl = slice(lo, lo + step)
        significant = (res.p_adjusted[sl] < res.alpha).tolist()
        verdicts = ["undecided" if u else "significant" if s else "not significant"
                    for s, u in zip(significant, undecided[sl].tolist())]
        yield from zip([res.runs[i] for i in res.a[sl].tolist()], [res.runs[i] for i in res.b[sl].tolist()],
                       res.mean_a[sl].tolist(), res.mean_b[sl].tolist(), res.diff[sl].tolist(),
                       res.statistic[sl].tolist(), res.p[sl].tolist(), res.p_adjusted[sl].tolist(),
                       [v == "significant" for v in verdicts], verdicts, eff.ci_low[sl].tolist(), eff.ci_high[sl].tolist(),
                       eff.standardised[sl].tolist(), [None] * len(verdicts) if b is None else b[sl].tolist())


def _write_json_streaming_pairs(doc: dict, pairs: list, out: TextIO) -> int:  # type: ignore[type-arg]
    """``write_json(doc)`` with each metric's "pairs" list (a placeholder in ``doc``) written one
    pair at a time: the same text, without a dict per pair of all pairs in memory."""
    import json

    text = json.dumps(doc, indent=1)
    for k, (res, eff) in enumerate(pairs):
        head, text = text.split(json.dumps(_PAIRS.format(k)), 1)
        out.write(head)
        first = True
        for row in _pair_rows(res, eff):
            item = json.dumps(dict(zip(_pair_keys(eff.kind), row)), indent=1).replace("\n", "\n    ")
            out.write(("[\n    " if first else ",\n    ") + item)
            first = False
        out.write("[]" if first else "\n   ]")
    out.write(text + "\n")
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
        # tau-b is undefined (NaN) where a metric ties every run (RR when each run finds a relevant
        # document first everywhere): null in JSON, which has no NaN (the API's meta-evaluation too)
        from service.evaluation.organising.results import json_safe

        return write_json(json_safe({
            "alpha": args.alpha, "resamples": args.resamples, "seed": args.seed, "runs": len(runs),
            "discriminative_power": rows, "kendall_tau": {"metrics": names, "matrix": tau.tolist(),
                                                          "significant_at_0.01_above": threshold},
            **reliability, **({"top_heaviness": heaviness} if heaviness is not None else {})}), out)
    out.write("kept\tmetric\tdiscriminative_power\tsignificant_pairs\tpairs\tdifference_required\ttau_vs_full\n")
    out.writelines(f"{r['kept']:g}\t{r['metric']}\t{r['power']:.4f}\t{r['significant_pairs']}\t{r['pairs']}\t"
                  f"{r['difference_required']:.4f}\t{r['tau_vs_full']:.4f}\n" for r in rows)
    out.write(f"\n# Kendall's tau between system rankings ({len(runs)} runs; |tau| > {threshold:.3f} "
              "is significant at alpha = 0.01)\nmetric\t" + "\t".join(names) + "\n")
    out.writelines(n + "\t" + "\t".join(f"{v:.4f}" for v in tau[i]) + "\n" for i, n in enumerate(names))
    if "stability" in reliability:
        out.write(f"\n# stability (Buckley & Voorhees; B = {args.resamples} bootstrap samples, fuzziness "
                  f"{args.fuzziness:g})\nmetric\tminority_rate\ttie_rate\tobservations\n")
        out.writelines(f"{r['metric']}\t{r['minority_rate']:.4f}\t{r['tie_rate']:.4f}\t{r['observations']}\n"
                       for r in reliability["stability"])
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
    out.writelines(f"{r}\t" + "\t".join(f"{v[i]:.4f}" for v in h["values"].values()) + "\n"
                   for i, r in enumerate(h["ranks"]))


def _top_heaviness(args: argparse.Namespace, measures, out: TextIO) -> int:  # type: ignore[no-untyped-def]
    h = _heaviness_rows(args, measures)
    if args.format == "json":
        write_json({"top_heaviness": h}, out)
    else:
        _write_heaviness(h, out)
    return 0
