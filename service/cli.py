"""The ``cranfield`` command line.

``cranfield eval`` imports only the computation core (formats, metrics: numpy),
never the service stack, so that it starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from service.errors import CranfieldError, InvalidMeasure


def _parse_gains(text: str) -> tuple[tuple[int, float], ...]:
    """``1=1,2=5,3=10`` (or ``1:1,...``) -> ((1, 1.0), (2, 5.0), (3, 10.0))."""
    pairs = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        sep = "=" if "=" in part else ":"
        level, _, gain = part.partition(sep)
        try:
            pairs.append((int(level), float(gain)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"--gains: {part!r} is not LEVEL=GAIN") from None
    if not pairs:
        raise argparse.ArgumentTypeError("--gains: give LEVEL=GAIN pairs, e.g. 1=1,2=5,3=10")
    return tuple(sorted(pairs))


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return v


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cranfield", description="Cranfield: IR evaluation for shared tasks.")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="evaluate runs against qrels", description="Evaluate TREC runs against qrels.")
    ev.add_argument("--qrels", required=True, help="qrels file (TREC 'topic iter docno rel' or NTCIR 'topic docno L<n>')")
    ev.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files")
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
    ev.add_argument("--gains", type=_parse_gains, help="gain of each level for every metric, e.g. 1=1,2=5,3=10")
    ev.add_argument("--max-level", type=int, help="the scale's top level H (default: the largest level in the qrels)")
    ev.add_argument("--depth", type=_positive_int, help="evaluate only the top K documents of each list")
    ev.add_argument("--qrels-format", choices=("auto", "trec", "ntcir"), default="auto")
    ev.add_argument("--precision", type=int, default=6, help="decimals printed (default 6)")
    ev.add_argument("--session-sep", default=":",
                    help="session metrics (sDCG, nsDCG): run topic ids are SESSION<sep>POSITION (default ':')")

    sub.add_parser("metrics", help="list the metrics, their parameters and aliases")

    from service import cli_service, cli_stats

    cli_stats.add_parsers(sub)
    cli_service.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from service.runtime import tune_allocator

    tune_allocator()
    try:
        if args.command == "eval":
            return _cmd_eval(args, sys.stdout)
        from service import cli_service

        if args.command in cli_service.COMMANDS:
            return cli_service.run(args, sys.stdout)
        if args.command in ("compare", "metaeval"):
            from service import cli_stats

            return getattr(cli_stats, f"cmd_{args.command}")(args, sys.stdout)
        if args.command == "metrics":
            from service.metrics.spec import unknown_metric_message

            import service.metrics  # noqa: F401

            print(unknown_metric_message("").split("\n", 1)[1])
            return 0
    except InvalidMeasure as exc:
        print(f"cranfield: {exc}", file=sys.stderr)
        return 2
    except CranfieldError as exc:
        print(f"cranfield: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    return 2  # pragma: no cover - argparse enforces a command


def _cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    from service.formats.readers import read_qrels, read_run
    from service.metrics.scoring import DEFAULT_MEASURES, EvalSettings, evaluate, parse_measures

    measures = parse_measures(args.measures or DEFAULT_MEASURES)  # fail on a bad name before reading files
    try:
        settings = EvalSettings(
            missing=args.missing, no_relevant=args.no_relevant, depth=args.depth,
            gains=args.gains, max_level=args.max_level, session_sep=args.session_sep,
        )
    except ValueError as exc:
        raise InvalidMeasure(str(exc)) from None
    qrels = read_qrels(args.qrels, args.qrels_format)
    # Sequential on purpose: reading runs in two threads was slower here (the
    # tokeniser's many short numpy calls contend for the GIL).
    runs = [read_run(p, args.order) for p in args.runs]
    tags = [r.tag for r in runs]
    if len(set(tags)) != len(tags):
        dup = next(t for t in tags if tags.count(t) > 1)
        raise InvalidMeasure(f"two run files carry the same tag {dup!r}: tags name runs in the output")
    result = evaluate(qrels, runs, measures, settings)
    write_evaluation(result, args.format, args.per_topic, args.precision, out)
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
        json.dump(doc, out, indent=1)
        out.write("\n")
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
