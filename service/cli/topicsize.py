"""``cranfield topicsize``: Sakai's topic set size design for the next round of a task.

From each metric's variance estimate on the current topic-by-run matrix (computed from a
qrels file and runs as ``cranfield compare`` does, or read from per-topic score files), the
number of topics the paired t test, one-way ANOVA over m systems and a confidence interval
need (``service/metrics/stats/topicsize.py``; docs/statistics.md, "Topic set size design").
The core's statistics (scipy) are imported inside the handler.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from service.cli.arguments import positive_int
from service.cli.output import write_json
from service.cli.registry import command
from service.cli.stats import _inputs, _score_tables
from service.errors import InvalidMeasure
from service.formats.text import counted

DEFAULT_MIN_DIFFS = (0.02, 0.05, 0.10)  # the core's defaults, kept here so --help needs no scipy
DEFAULT_WIDTHS = (0.05, 0.10)


def _probability(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError("must be between 0 and 1 (exclusive)")
    return v


def _numbers(text: str) -> tuple[float, ...]:
    """``0.02,0.05,0.1`` -> (0.02, 0.05, 0.1); every value positive."""
    values = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            v = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part.strip()!r} is not a number") from None
        if not v > 0.0 or v == float("inf"):
            raise argparse.ArgumentTypeError(f"{part.strip()!r} is not a positive number")
        values.append(v)
    if not values:
        raise argparse.ArgumentTypeError("give one or more numbers, e.g. 0.02,0.05,0.1")
    return tuple(values)


def _arguments(p: argparse.ArgumentParser) -> None:
    _inputs(p)
    p.add_argument("--alpha", type=_probability, default=0.05, help="significance level (default 0.05)")
    risk = p.add_mutually_exclusive_group()
    risk.add_argument("--beta", type=_probability, help="type II error rate (default 0.20)")
    risk.add_argument("--power", type=_probability, help="the power 1 - beta (default 0.80)")
    p.add_argument("--min-diff", type=_numbers, action="append", metavar="D[,D...]",
                   help="minimum differences to detect (t test; ANOVA: the range of the system means); "
                        "default 0.02,0.05,0.1")
    p.add_argument("--systems", type=positive_int, metavar="M",
                   help="systems compared by one-way ANOVA (default: the number of runs)")
    p.add_argument("--ci-width", type=_numbers, action="append", metavar="W[,W...]",
                   help="largest expected width of the confidence interval of a difference; default 0.05,0.1")
    p.add_argument("--variance", choices=("residual", "within"), default="residual",
                   help="sigma^2: the two-way ANOVA residual V_E (default) or the pooled within-system variance")
    p.add_argument("--format", choices=("tsv", "json"), default="tsv")


def _flat(lists: list[tuple[float, ...]] | None, default: tuple[float, ...]) -> list[float]:
    if not lists:
        return list(default)
    return list(dict.fromkeys(v for values in lists for v in values))  # in order, once each


@command("topicsize", "topic set size design: topics needed for a power or an interval width", _arguments,
         description="Sakai's topic set size design (IRJ 2016) from each metric's variance on the given runs: "
                     "topics needed by the paired t test, one-way ANOVA and a confidence interval.")
def cmd_topicsize(args: argparse.Namespace, out: TextIO) -> int:
    from service.metrics.stats.topicsize import topic_set_sizes

    beta = args.beta if args.beta is not None else (1.0 - args.power if args.power is not None else 0.20)
    min_diffs, widths = _flat(args.min_diff, DEFAULT_MIN_DIFFS), _flat(args.ci_width, DEFAULT_WIDTHS)
    if args.systems is not None and args.systems < 2:
        raise InvalidMeasure("--systems: one-way ANOVA compares at least 2 systems")
    metrics, tables, _ = _score_tables(args)
    report = {}
    for metric in metrics:
        try:
            report[metric] = topic_set_sizes(tables[metric], min_diffs=min_diffs, widths=widths, alpha=args.alpha,
                                             beta=beta, systems=args.systems, estimator=args.variance)
        except ValueError as exc:
            raise InvalidMeasure(f"{metric}: {exc}") from None
    if args.format == "json":
        return write_json({"alpha": args.alpha, "beta": beta, "power": 1.0 - beta, "estimator": args.variance,
                           "min_diffs": min_diffs, "ci_widths": widths,
                           "metrics": {m: document(r) for m, r in report.items()}}, out)
    # data (issue 37): a figure a design has not (the t test's systems, the interval's power) is empty
    out.write("metric\ttopics\truns\tvariance\tsigma2\tdesign\talpha\tpower\tsystems\tmin_diff\tci_width\tn"
              "\tachieved\n")
    for metric, r in report.items():
        head = f"{metric}\t{r.topics}\t{r.runs}\t{r.estimator}\t{r.variance:.6f}"
        out.writelines(f"{head}\tttest\t{t.alpha:g}\t{1 - t.beta:g}\t\t{t.min_diff:g}\t\t{t.n}\t{t.power:.4f}\n"
                       for t in r.ttest)
        out.writelines(f"{head}\tanova\t{a.alpha:g}\t{1 - a.beta:g}\t{a.systems}\t{a.min_diff:g}\t\t{a.n}"
                       f"\t{a.power:.4f}\n" for a in r.anova)
        out.writelines(f"{head}\tci\t{c.alpha:g}\t\t\t\t{c.max_width:g}\t{c.n}\t{c.width:.4f}\n" for c in r.ci)
    for metric, r in report.items():
        if r.dropped_topics:
            out.write(f"# {metric}: {counted(r.dropped_topics, 'topic')} without a score for every run left out\n")
    return 0


def document(r: Any) -> dict[str, Any]:
    """One metric's :class:`~service.metrics.stats.topicsize.TopicSetSizes` as JSON."""
    return {
        "topics": r.topics, "runs": r.runs, "dropped_topics": r.dropped_topics, "variance": r.variance,
        "residual_variance": r.residual_variance, "within_variance": r.within_variance, "systems": r.systems,
        "ttest": [{"min_diff": t.min_diff, "n": t.n, "power": t.power, "min_dt": t.min_dt, "approx_n": t.approx_n}
                  for t in r.ttest],
        "anova": [{"min_diff": a.min_diff, "systems": a.systems, "n": a.n, "power": a.power,
                   "noncentrality": a.noncentrality} for a in r.anova],
        "ci": [{"width": c.max_width, "n": c.n, "expected_width": c.width} for c in r.ci],
    }
