"""``cranfield rag eval``, ``rag compare`` and ``rag validate``: generated answers in file mode,
no service (docs/rag.md).

``rag eval`` scores nugget assignments (and citation-support judgments) with the RAG metrics
of the registry, printing ``run<TAB>topic<TAB>metric<TAB>value`` (topic ``all``: the mean
over the run's topics) or a JSON document; an undefined value is printed ``undefined``
(never 0). ``rag compare`` compares two assessments of the same answers (nugget assignments or
citation support: label agreement and run-ranking agreement). ``rag validate`` checks answer runs as the tracks' validators do. Only the core
(``service.formats``, ``service.metrics``) is imported, inside the handlers.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, TextIO

from service.cli.output import say, write_json
from service.cli.registry import command
from service.errors import InvalidMeasure
from service.formats.text import counted

#: The RAG metrics printed when none is asked for: the six nugget scores, then the support ones.
DEFAULT_RAG_MEASURES = ("A", "A_strict", "V", "V_strict", "W", "W_strict")
DEFAULT_SUPPORT_MEASURES = ("support_precision", "support_recall")
#: The answers' references as ranked lists (--answers): the RAG track's retrieval measures.
DEFAULT_REFERENCE_MEASURES = ("nDCG@20", "Recall@20")
ANSWER_FORMATS = ("auto", "rag24", "rag25", "rag26")  # service.formats.rag_answers (no import here)


def _run_map(text: str) -> tuple[str, str]:
    sid, sep, run = text.partition("=")
    if not sep or not sid or not run:
        raise argparse.ArgumentTypeError(f"--run-map takes SUPPORT_ID=RUN, not {text!r}")
    return sid, run


def _arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rag_command", required=True)
    ev = sub.add_parser("eval", help="score nugget assignments and citation support",
                        description="Score answers: nugget assignments (--assignments) and citation-support "
                                    "judgments (--support) with the RAG metrics (docs/rag.md).")
    add_judgment_arguments(ev)
    ev.add_argument("--answers", nargs="+", default=[], metavar="RUN",
                    help="answer runs (TREC RAG 2024/2025/2026 formats): each answer's references scored as a "
                         "ranked list against --qrels with the retrieval metrics asked for (nDCG@20, Recall@20, ...)")
    ev.add_argument("--answers-format", choices=ANSWER_FORMATS, default="auto", help="the answer runs' format")
    ev.add_argument("--qrels", metavar="FILE", help="retrieval qrels for the answers' references (TREC or NTCIR)")
    ev.add_argument("-m", "--measure", action="append", dest="measures", metavar="METRIC",
                    help="metric, e.g. V_strict, A, W_strict, support_precision, 'support_recall(citations=every)'; "
                         "repeatable (default: the six nugget scores, and support precision and recall with --support)")
    ev.add_argument("--per-topic", action="store_true", help="print per-topic values as well as means")
    ev.add_argument("--missing", choices=("zero", "skip"), default="zero",
                    help="a topic a judged run did not answer scores 0 (zero, the track's rule) or is left out of "
                         "its mean (skip, as nuggetizer averages its records)")
    ev.add_argument("--format", choices=("tsv", "json"), default="tsv")
    ev.add_argument("--precision", type=int, default=4, help="decimals printed (default 4)")
    co = sub.add_parser("compare", help="compare two nugget assignment sets (or two support judgment sets)",
                        description="Compare two assessments of the same answers: --assignments A --to B (nugget "
                                    "assignments) or --support A --to B (citation support). Label agreement "
                                    "(confusion matrix, Cohen's kappa, weighted kappa, Krippendorff's ordinal "
                                    "alpha, each side's share of partial support, per topic) and the agreement of "
                                    "the run rankings on each score over the topics both assessed (Kendall's tau, "
                                    "tau_AP, Spearman, with bootstrap intervals over topics; Kendall's tau per "
                                    "topic). A is the reference (NIST's, say). docs/rag.md.")
    first = co.add_mutually_exclusive_group(required=True)
    first.add_argument("--assignments", metavar="FILE", help="the reference nugget assignments (gzipped or not)")
    first.add_argument("--support", metavar="FILE", help="the reference citation-support judgments")
    first.add_argument("--collection", metavar="NAME",
                       help="compare two judgment sets of a collection of answers in the database (--from, --to)")
    co.add_argument("--to", required=True, metavar="FILE|SET",
                    help="the other set, of the same kind: a file, or with --collection a set's name (name:N, N)")
    co.add_argument("--from", dest="reference", default="official", metavar="SET",
                    help="with --collection: the reference set (default official)")
    co.add_argument("--kind", choices=("assignments", "support"), default="assignments",
                    help="with --collection: what is compared (default assignments)")
    co.add_argument("--nuggets", metavar="FILE", help="the topics' nuggets, matched to both sets' by text")
    co.add_argument("--grades", choices=("auto", "2", "3"), default="auto", help="the assignments' scale (default auto)")
    co.add_argument("-m", "--measure", action="append", dest="measures", metavar="METRIC",
                    help="a score whose run rankings are compared; repeatable (default: the six nugget scores, or "
                         "support precision and recall)")
    co.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples over topics (default 1000)")
    co.add_argument("--level", type=float, default=0.95, help="the intervals' level (default 0.95)")
    co.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    co.add_argument("--format", choices=("text", "json"), default="text",
                    help="text for people (rounded), json for programs (full precision); default text")
    va = sub.add_parser("validate", help="check answer runs as the track's validator does",
                        description="Check answer runs (TREC RAG 2024, 2025, 2026 formats) as the tracks' "
                                    "validators do; every problem names the file, the line and the field.")
    va.add_argument("--format", choices=ANSWER_FORMATS, default="auto", dest="answer_format",
                    help="rag24, rag25 (citations as indices or segment ids), rag26, or auto (from the first line)")
    va.add_argument("--topics", metavar="FILE",
                    help="the topic ids, one a line (the first column of a TSV topic file, or a JSON line's id, "
                         "qid or topic_id): an unknown topic is an error, a missing one a warning")
    va.add_argument("--words", type=int, help="most words an answer may have (default: the format's, 400; 1024 in 2026)")
    va.add_argument("--references", type=int, help="most references an answer may have (default: 20; 100 from 2025)")
    va.add_argument("--citations-per-sentence", type=int, dest="citations",
                    help="most citations a sentence may have (default: none; 3 in 2026)")
    va.add_argument("runs", nargs="+", metavar="RUN", help="answer runs (JSON lines, gzipped or not)")


@command("rag", "generated answers: score nuggets and citation support, validate answer runs", _arguments,
         description="Generated answers (TREC RAG): score nugget assignments and citation support (rag eval), "
                     "check answer runs (rag validate). docs/rag.md.")
def cmd_rag(args: argparse.Namespace, out: TextIO) -> int:
    if args.rag_command == "compare":
        return _compare(args, out)
    return _evaluate(args, out) if args.rag_command == "eval" else _validate(args, out)


def _compare(args: argparse.Namespace, out: TextIO) -> int:
    from service.formats.compressed import read_file
    from service.formats.rag_judgments import read_assignments, read_nuggets, read_support
    from service.metrics.rag_agreement import (
        NUGGET_SCORES,
        SUPPORT_SCORES,
        compare_assignments,
        compare_support,
        comparison_document,
    )
    from service.metrics.scoring import parse_measures

    options = {"resamples": args.resamples, "level": args.level, "seed": args.seed}
    if args.collection:
        return _compare_stored(args, out)
    if args.assignments:
        nuggets = read_nuggets(read_file(args.nuggets), args.nuggets) if args.nuggets else None
        grades: Any = args.grades if args.grades == "auto" else int(args.grades)
        first = read_assignments(read_file(args.assignments), args.assignments, nuggets, grades)
        second = read_assignments(read_file(args.to), args.to, nuggets, grades)
        metrics = [str(m) for m in parse_measures(args.measures or list(NUGGET_SCORES))]
        result = compare_assignments(first, second, metrics=metrics, **options)
    else:
        metrics = [str(m) for m in parse_measures(args.measures or list(SUPPORT_SCORES))]
        result = compare_support(read_support(read_file(args.support), args.support),
                                 read_support(read_file(args.to), args.to), metrics=metrics, **options)
    doc = comparison_document(result)
    if args.format == "json":
        write_json(doc, out)
        return 0
    out.write(comparison_text(doc))
    return 0


def _compare_stored(args: argparse.Namespace, out: TextIO) -> int:
    """--collection: the service's use case on the database (the API's compareAnswerJudgmentSets)."""
    from service.cli.common import cli_principal, database_url, sessions
    from service.evaluation.judging.answer_comparison import compare_answer_sets
    from service.evaluation.organising.setup import get_collection

    with sessions(database_url())() as s:
        doc = compare_answer_sets(s, get_collection(s, args.collection), cli_principal(), args.reference, args.to,
                                  args.kind, args.measures)
    if args.format == "json":
        write_json(doc, out)
    else:
        out.write(f"{args.collection}: set {doc['b']['judgment_set']} (version {doc['b']['version']}) against "
                  f"{doc['a']['judgment_set']} (version {doc['a']['version']})\n" + comparison_text(doc))
    return 0


def comparison_text(doc: dict[str, Any]) -> str:
    """A set comparison (``rag_agreement.comparison_document``) for people: rounded, in words."""
    def f(x: float | None, digits: int = 3) -> str:
        return "undefined" if x is None else f"{x:.{digits}f}"

    def pct(x: float | None) -> str:
        return "undefined" if x is None else f"{100 * x:.1f}%"

    what = "nugget labels" if doc["kind"] == "assignments" else "citation support labels"
    a = doc["agreement"]
    lines = [f"Compared {doc['cells']:,} {what} of {doc['answers']:,} answers both sets assessed"
             f" ({len(doc['only_first'])} assessed by the first set only, {len(doc['only_second'])} by the second "
             f"only; {doc['unmatched_cells']:,} labels one set has and the other lacks, not compared).", ""]
    width = max(len(label) for label in doc["labels"])
    corner = "first \\ second"
    lines.append(f"{corner:<{width}}  " + "  ".join(f"{label:>{width}}" for label in doc["labels"]))
    for label, row in zip(doc["labels"], a["confusion"]):
        lines.append(f"{label:<{width}}  " + "  ".join(f"{n:>{width},}" for n in row))
    lines += ["", f"Same label: {pct(a['observed'])}. Cohen's kappa {f(a['kappa'])}, linear-weighted kappa "
                  f"{f(a['kappa_linear'])}, Krippendorff's alpha (ordinal) {f(a['alpha_ordinal'])}.",
              f"Partial support: {pct(a['partial_share_first'])} of the first set's labels, "
              f"{pct(a['partial_share_second'])} of the second's.",
              f"The second set labels {a['second_higher']:,} higher and {a['second_lower']:,} lower than the first."]
    topics = [(t, v["kappa"]) for t, v in doc["per_topic"].items() if v["kappa"] is not None]
    if topics:
        low = sorted(topics, key=lambda tv: tv[1])[:3]
        lines.append(f"Per topic: Cohen's kappa {f(doc['macro']['kappa'])} on average over {len(topics)} topics; "
                     "lowest " + ", ".join(f"{t} ({f(k)})" for t, k in low) + ".")
    lines += ["", "Run rankings on the runs' means over the topics both sets assessed (intervals: percentile "
                  "bootstrap over topics):"]
    for metric, r in doc["rankings"].items():
        if "kendall" not in r:
            lines.append(f"  {metric}: not compared ({counted(r['runs'], 'run')}, "
                         f"{counted(r['topics']['compared'], 'topic')})")
            continue
        k, ap, sp = r["kendall"], r["tau_ap"], r["spearman"]
        level = round(100 * k["level"])
        lines.append(f"  {metric}: Kendall's tau {f(k['value'])} ({level}% interval {f(k['low'])} to {f(k['high'])}), "
                     f"tau_AP {f(ap['value'])}, Spearman {f(sp['value'])}; per topic, Kendall's tau "
                     f"{f(r['mean_per_topic_kendall'])} on average; {r['runs']} runs, {r['topics']['sentence']}.")
    lines += [f"Note: {n}" for n in doc["notes"]]
    return "\n".join(lines) + "\n"


def _evaluate(args: argparse.Namespace, out: TextIO) -> int:
    from service.metrics.rag_scoring import evaluate_rag
    from service.metrics.scoring import parse_measures

    if args.assignments is None and not args.support and not args.answers:
        raise InvalidMeasure("give --assignments FILE, --support FILE, --answers RUN... --qrels FILE, or several")
    if bool(args.answers) != bool(args.qrels):
        raise InvalidMeasure("--answers and --qrels go together (the answers' references scored against the qrels)")
    names = args.measures or ((DEFAULT_RAG_MEASURES if args.assignments else ())
                              + (DEFAULT_SUPPORT_MEASURES if args.support else ())
                              + (DEFAULT_REFERENCE_MEASURES if args.answers else ()))
    every = parse_measures(names)  # a bad name fails before any file is read
    measures = tuple(m for m in every if m.definition.family == "rag")
    ranked = tuple(m for m in every if m.definition.family != "rag")
    if ranked and not args.answers:
        raise InvalidMeasure(f"{ranked[0]} is not a RAG metric: it scores the answers' references (--answers RUN... "
                             "--qrels FILE)")
    reference_scores = _reference_scores(args, ranked) if ranked else None
    if not measures:
        return _print_references(reference_scores, args, out)
    assignments, support = read_rag_judgments(args)
    result = evaluate_rag(measures, assignments, support, missing=args.missing, run_map=dict(args.run_map))
    for sid in result.unmatched:
        say(f"cranfield: note: support run {sid!r} matches no assignments run: its support scores are printed under "
            "its own id (--run-map SUPPORT_ID=RUN to match it)")
    for family, runs in result.not_judged.items():
        if runs:
            say(f"cranfield: note: no {family} judgments for {counted(len(runs), 'run')}, not scored on those metrics: "
                + ", ".join(runs))
    for name, cells in result.undefined.items():
        if cells:
            say(f"cranfield: note: {name} is undefined on {counted(len(cells), '(run, topic) answer')} ({cells[0][2]}, "
                f"e.g. run {cells[0][0]!r} topic {cells[0][1]!r}); left out of the means")
    if args.format == "json":
        doc = rag_document(result, args.per_topic)
        if reference_scores is not None:
            doc["references"] = _references_document(reference_scores, args.per_topic)
        return write_json(doc, out)
    write_rag_tsv(result, args.per_topic, args.precision, out)
    if reference_scores is not None:
        _references_tsv(reference_scores, args.per_topic, args.precision, out)
    return 0


def add_judgment_arguments(p: argparse.ArgumentParser, compare: bool = False) -> None:
    """The RAG judgments' options, shared by ``rag eval`` and ``compare``."""
    what = "; compare: its runs tested on the RAG metrics (-m V_strict ...)" if compare else ""
    p.add_argument("--assignments", metavar="FILE",
                   help="nugget assignments, a JSON line per (topic, run): {qid, run_id, nuggets: [{text, "
                        f"importance, assignment}}]}} (NIST's, nuggetizer's assign output); gzipped or not{what}")
    p.add_argument("--nuggets", metavar="FILE",
                   help="the topics' nuggets ({qid, query, nuggets: [{text, importance}]}); the assignments' "
                        "nuggets are matched to them by text. Without it, each topic's list is the one its "
                        "assignment rows repeat")
    p.add_argument("--support", action="append", default=[], metavar="FILE",
                   help="citation-support judgments (NIST's format), repeatable")
    p.add_argument("--run-map", action="append", default=[], type=_run_map, metavar="SUPPORT_ID=RUN",
                   help="a support file's run id that is not TEAM.RUN of an assignments run, and the run it is "
                        "(e.g. webis.webis-manual=webis-manual-manual); repeatable")
    p.add_argument("--grades", choices=("auto", "2", "3"), default="auto",
                   help="the assignments' scale: 3 (support, partial_support, not_support), 2 (no partial "
                        "support) or auto")


def read_rag_judgments(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    """The assignments (or None) and the support answers named by the judgment options."""
    from service.formats.compressed import read_file
    from service.formats.rag_judgments import read_assignments, read_nuggets, read_support

    nuggets = read_nuggets(read_file(args.nuggets), args.nuggets) if args.nuggets else None
    grades: Any = args.grades if args.grades == "auto" else int(args.grades)
    assignments = (read_assignments(read_file(args.assignments), args.assignments, nuggets, grades)
                   if args.assignments else None)
    support: list[Any] = []
    for path in args.support:
        support.extend(read_support(read_file(path), path))
    return assignments, support


def rag_score_tables(args: argparse.Namespace) -> tuple[list[str], dict[str, Any], list[str], list[str]]:
    """``cranfield compare`` on RAG judgments: (metric names, {metric: (topics, runs) matrix},
    runs, topics). Each matrix holds the topics its metric is evaluated on; an undefined value
    is NaN (compare leaves its topic out, as it does a missing score). A run a judgment file
    does not cover is left out of the comparison, named on standard error."""
    import numpy as np

    from service.metrics.rag_scoring import evaluate_rag
    from service.metrics.scoring import parse_measures

    measures = parse_measures(args.measures or ["V_strict"])
    assignments, support = read_rag_judgments(args)
    result = evaluate_rag(measures, assignments, support, missing=args.missing, run_map=dict(args.run_map))
    ev = result.evaluation
    covered = np.ones(len(ev.runs), dtype=bool)
    for m in ev.measures:
        covered &= result.evaluated[m].any(axis=1)
    left = [r for r, keep in zip(ev.runs, covered.tolist()) if not keep]
    if left:
        say(f"cranfield: note: {counted(len(left), 'run')} not judged on every metric asked, left out: "
            f"{', '.join(left)}")
    rows = np.zeros(len(ev.topics), dtype=bool)
    for m in ev.measures:
        rows |= result.evaluated[m][covered].any(axis=0)
    topics = [t for t, keep in zip(ev.topics, rows.tolist()) if keep]
    tables = {}
    for m in ev.measures:
        table = ev.per_topic(m)[covered][:, rows].T.copy()
        table[~result.evaluated[m][covered][:, rows].T] = np.nan  # a topic outside the metric's judgments
        tables[str(m)] = table
    return [str(m) for m in ev.measures], tables, [r for r, keep in zip(ev.runs, covered.tolist()) if keep], topics


def _reference_scores(args: argparse.Namespace, ranked: tuple[Any, ...]) -> Any:
    """The answers' references as ranked lists, scored against --qrels (service.metrics.evaluate)."""
    from service.formats.compressed import read_file
    from service.formats.rag_answers import read_answers, references_run
    from service.formats.readers import parse_qrels
    from service.metrics.scoring import EvalSettings, evaluate

    qrels = parse_qrels(read_file(args.qrels), args.qrels)
    runs = []
    for path in args.answers:
        answers = read_answers(read_file(path), path, args.answers_format)
        for w in answers.warnings:
            say(f"cranfield: warning: {w}")
        runs.append(references_run(answers, path))
    tags = [r.tag for r in runs]
    if len(set(tags)) != len(tags):
        raise InvalidMeasure(f"two answer runs carry the run_id {next(t for t in tags if tags.count(t) > 1)!r}")
    return evaluate(qrels, runs, ranked, EvalSettings(missing=args.missing))


def _print_references(scores: Any, args: argparse.Namespace, out: TextIO) -> int:
    if args.format == "json":
        return write_json({"references": _references_document(scores, args.per_topic)}, out)
    _references_tsv(scores, args.per_topic, args.precision, out)
    return 0


def _references_document(ev: Any, per_topic: bool) -> dict[str, Any]:
    def num(v: float) -> float | None:
        return None if math.isnan(v) else float(v)

    return {"topics": list(ev.topics), "runs": {run: {str(m): {
        "mean": num(float(ev.means(m)[i])),
        **({"per_topic": {t: num(float(v)) for t, v in zip(ev.topics, ev.per_topic(m)[i])}} if per_topic else {})}
        for m in ev.measures} for i, run in enumerate(ev.runs)}}


def _references_tsv(ev: Any, per_topic: bool, decimals: int, out: TextIO) -> None:
    lines: list[str] = []
    for i, run in enumerate(ev.runs):
        for m in ev.measures:
            if per_topic:
                lines.extend(f"{run}\t{t}\t{m}\t{v:.{decimals}f}" for t, v in zip(ev.topics, ev.per_topic(m)[i])
                             if not math.isnan(v))
            mean = float(ev.means(m)[i])
            lines.append(f"{run}\tall\t{m}\t{'undefined' if math.isnan(mean) else f'{mean:.{decimals}f}'}")
    out.write("\n".join(lines) + ("\n" if lines else ""))


def rag_document(result: Any, per_topic: bool) -> dict[str, Any]:
    """The JSON answer of ``rag eval``: per run and metric its mean and (``per_topic``) each
    evaluated topic's value; null is undefined."""
    ev = result.evaluation

    def num(v: float) -> float | None:
        return None if math.isnan(v) else float(v)

    runs: dict[str, Any] = {}
    for i, run in enumerate(ev.runs):
        entry: dict[str, Any] = {}
        for m in ev.measures:
            done = result.evaluated[m][i]
            if not done.any():
                continue
            values = ev.per_topic(m)[i]
            entry[str(m)] = {"mean": num(float(ev.means(m)[i])), "topics": int(done.sum()),
                             **({"per_topic": {t: num(float(values[j])) for j, t in enumerate(ev.topics) if done[j]}}
                                if per_topic else {})}
        runs[run] = entry
    return {
        "settings": {"missing": ev.settings.missing},
        "topics": list(ev.topics),
        "runs": runs,
        "undefined": {name: [{"run": r, "topic": t, "why": why} for r, t, why in cells]
                      for name, cells in result.undefined.items() if cells},
        "unjudged": [{"run": r, "topic": t, "first": {"pairs": c["first"][0], "sentences": c["first"][1]},
                      "every": {"pairs": c["every"][0], "sentences": c["every"][1]}}
                     for (r, t), c in sorted(result.unjudged.items()) if any(sum(v) for v in c.values())],
        "unmatched_support_runs": list(result.unmatched),
        "not_judged": {k: list(v) for k, v in result.not_judged.items() if v},
    }


def write_rag_tsv(result: Any, per_topic: bool, decimals: int, out: TextIO) -> None:
    """``run<TAB>topic<TAB>metric<TAB>value``, topic ``all`` for the mean; a run's metric its
    judgments do not cover is not printed; an undefined value is ``undefined``."""
    ev = result.evaluation

    def num(v: float) -> str:
        return "undefined" if math.isnan(v) else f"{v:.{decimals}f}"

    lines: list[str] = []
    for i, run in enumerate(ev.runs):
        for m in ev.measures:
            done = result.evaluated[m][i]
            if not done.any():
                continue
            name = str(m)
            if per_topic:
                values = ev.per_topic(m)[i]
                lines.extend(f"{run}\t{t}\t{name}\t{num(float(values[j]))}" for j, t in enumerate(ev.topics) if done[j])
            lines.append(f"{run}\tall\t{name}\t{num(float(ev.means(m)[i]))}")
    out.write("\n".join(lines) + ("\n" if lines else ""))


def _topic_ids(path: str) -> dict[str, str]:
    """Topic ids of a topic file and their texts: a TSV's first two columns, or each JSON
    line's id/qid/topic_id/narrative_id and its title/query/text ("" when absent)."""
    import json

    from service.errors import InvalidInput
    from service.formats.compressed import read_file

    ids: dict[str, str] = {}
    for number, raw in enumerate(bytes(read_file(path)).decode("utf-8", errors="replace").splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                raise InvalidInput(path, number, "not JSON") from None
            value = next((obj[k] for k in ("id", "qid", "topic_id", "narrative_id") if isinstance(obj, dict)
                          and k in obj), None)
            if value is None:
                raise InvalidInput(path, number, "a topic line needs an id (id, qid, topic_id or narrative_id)")
            text = next((obj[k] for k in ("title", "query", "text") if isinstance(obj.get(k), str)), "")
            ids[str(value)] = text
        else:
            first, _, rest = line.partition("\t")
            ids[first.split()[0]] = rest.strip() if "\t" in line else ""
    return ids


def _validate(args: argparse.Namespace, out: TextIO) -> int:
    from service.cli.common import run_files
    from service.formats.compressed import read_file
    from service.formats.rag_answers import validate_answers

    topics = _topic_ids(args.topics) if args.topics else None
    overrides = {k: v for k, v in (("words", args.words), ("references", args.references),
                                   ("citations_per_sentence", args.citations)) if v is not None}
    failed = 0
    for path in run_files(args.runs):  # (the limits given over the format's, the detected one's with auto)
        errors, warnings = validate_answers(read_file(path), str(path), args.answer_format, topics,
                                            overrides=overrides)
        out.writelines(f"warning: {w}\n" for w in warnings)
        out.writelines(f"error: {e}\n" for e in errors)
        out.write(f"{path}: {'refused, ' + counted(len(errors), 'error') if errors else 'valid'}"
                  f"{', ' + counted(len(warnings), 'warning') if warnings else ''}\n")
        failed += bool(errors)
    return 1 if failed else 0
