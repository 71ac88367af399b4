"""``cranfield eval`` and ``cranfield metrics``: the computation core on files, no service.

Only the core (``service.formats``, ``service.metrics``: numpy) is imported, inside the
handlers, so that these commands start fast.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from service.cli.arguments import QRELS_FILE_FORMATS, parse_gains, positive_int
from service.cli.output import write_json
from service.cli.registry import command
from service.errors import InvalidMeasure


def _eval_arguments(ev: argparse.ArgumentParser) -> None:
    ev.add_argument("--qrels", required=True,
                    help="qrels file (TREC 'topic iter docno rel' or NTCIR 'topic docno L<n>'; diversity and sampled "
                         "qrels: see --qrels-format); gzipped files are read as they are")
    ev.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files (gzipped or not)")
    ev.add_argument("-m", "--measure", action="append", dest="measures", metavar="METRIC",
                    help="metric, e.g. nDCG@10, 'Q(beta=10)', 'AP(judged_only=true)'; repeatable "
                         "(default: the papers' recommended set; see 'cranfield metrics')")
    ev.add_argument("--per-topic", action="store_true", help="print per-topic values as well as means")
    ev.add_argument("--format", choices=("tsv", "json", "trec", "matrix"), default="tsv")
    ev.add_argument("--order", choices=("score", "rank", "file"), default="score",
                    help="rank order: score (trec_eval: score desc, ties by docno desc), rank column, or file order")
    ev.add_argument("--missing", choices=("zero", "skip"), default="zero",
                    help="a qrels topic the run lacks scores 0 (zero) or is left out of its mean (skip)")
    ev.add_argument("--no-relevant", choices=("skip", "count"), default="skip", dest="no_relevant",
                    help="topics without relevant documents are left out (skip) or scored (count)")
    ev.add_argument("--gains", type=parse_gains, help="gain of each level for every metric, e.g. 1=1,2=5,3=10")
    ev.add_argument("--max-level", type=int, help="the scale's top level H (default: the largest level in the qrels)")
    ev.add_argument("--depth", type=positive_int, help="evaluate only the top K documents of each list")
    ev.add_argument("--qrels-format", choices=QRELS_FILE_FORMATS, default="auto",
                    help="auto (default: from the file's columns and the metrics asked for, docs/formats.md), adhoc "
                         "(TREC or NTCIR ad hoc; trec, ntcir: one of them), diversity-trec (topic subtopic docno rel), "
                         "diversity-ntcir (topic intent docno L<n>) or sampled (topic iteration docno stratum rel)")
    ev.add_argument("--probabilities", metavar="FILE",
                    help="diversity-ntcir: the intent probability file (topic intent probability [inf|nav]); "
                         "without it the intents of a topic weigh alike")
    ev.add_argument("--jobs", "-j", type=positive_int, default=None, metavar="N",
                    help="worker processes reading and scoring the run files (default: every available core)")
    ev.add_argument("--precision", type=int, default=6, help="decimals printed (default 6)")
    ev.add_argument("--session-sep", default=":",
                    help="session metrics (sDCG, nsDCG): run topic ids are SESSION<sep>POSITION (default ':')")


@command("eval", "evaluate runs against qrels", _eval_arguments, description="Evaluate TREC runs against qrels.")
def cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    from service.formats.compressed import read_file
    from service.formats.qrels_files import read_judgments
    from service.metrics.run_files import evaluate_run_files
    from service.metrics.scoring import DEFAULT_MEASURES, EvalSettings, needs_judgments, parse_measures

    measures = parse_measures(args.measures or DEFAULT_MEASURES)  # fail on a bad name before reading files
    needs = {str(m): need for m in measures if (need := needs_judgments(m)) is not None}
    try:
        settings = EvalSettings(
            missing=args.missing, no_relevant=args.no_relevant, depth=args.depth,
            gains=args.gains, max_level=args.max_level, session_sep=args.session_sep,
        )
    except ValueError as exc:
        raise InvalidMeasure(str(exc)) from None
    probabilities = read_file(args.probabilities) if args.probabilities else None
    judgments = read_judgments(read_file(args.qrels), args.qrels, args.qrels_format, needs=needs,
                               probabilities=probabilities, probabilities_source=args.probabilities or "")
    # Each run file read and scored in worker processes (every core; --jobs): the same floats
    # as one call in this process (service/metrics/run_files.py).
    result = evaluate_run_files(judgments.qrels, args.runs, measures, settings, extra=judgments.extra,
                                order=args.order, processes=args.jobs)
    tags = list(result.runs)
    if len(set(tags)) != len(tags):
        dup = next(t for t in tags if tags.count(t) > 1)
        raise InvalidMeasure(f"two run files carry the same tag {dup!r}: tags name runs in the output")
    write_evaluation(result, args.format, args.per_topic, args.precision, out)
    return 0


@command("metrics", "list the metrics, their parameters and aliases")
def cmd_metrics(args: argparse.Namespace, out: TextIO) -> int:
    import service.metrics  # noqa: F401  (registers every metric)
    from service.metrics.spec import metric_listing

    out.write(metric_listing() + "\n")
    return 0


def write_evaluation(result, fmt: str, per_topic: bool, decimals: int, out: TextIO) -> None:  # type: ignore[no-untyped-def]
    """Print an :class:`Evaluation` as tsv, json, trec (trec_eval -q) or matrix."""
    import numpy as np

    def num(v: float) -> str:
        return "nan" if np.isnan(v) else f"{v:.{decimals}f}"

    means = {m: result.means(m) for m in result.measures}
    if fmt == "json":
        doc = {
            "topics": list(result.topics),
            "settings": {
                "missing": result.settings.missing,
                "no_relevant": result.settings.no_relevant,
                "depth": result.settings.depth,
                "gains": dict(result.settings.gains) if result.settings.gains else None,
            },
            "runs": {
                run: {
                    str(m): {
                        "mean": _json_num(means[m][i]),
                        **({"per_topic": {t: _json_num(v) for t, v in zip(result.topics, result.per_topic(m)[i])}}
                           if per_topic else {}),
                    }
                    for m in result.measures
                }
                for i, run in enumerate(result.runs)
            },
        }
        write_json(doc, out)
        return
    if fmt == "matrix":
        for m in result.measures:
            s = result.per_topic(m)
            out.write(f"#metric\t{m}\n#topic\t" + "\t".join(result.runs) + "\n")
            for j, t in enumerate(result.topics):
                out.write(t + "\t" + "\t".join(num(v) for v in s[:, j]) + "\n")
        return
    lines: list[str] = []
    for i, run in enumerate(result.runs):
        if fmt == "trec":
            lines.append(f"runid\tall\t{run}")
        for m in result.measures:
            name = str(m)
            if per_topic or fmt == "trec":
                for t, v in zip(result.topics, result.per_topic(m)[i]):
                    if np.isnan(v):
                        continue
                    lines.append(f"{name}\t{t}\t{num(v)}" if fmt == "trec" else f"{run}\t{t}\t{name}\t{num(v)}")
            lines.append(f"{name}\tall\t{num(means[m][i])}" if fmt == "trec" else f"{run}\tall\t{name}\t{num(means[m][i])}")
    out.write("\n".join(lines) + "\n")


def _json_num(v: float) -> float | None:
    return None if v != v else float(v)
