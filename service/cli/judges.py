"""``cranfield judges compare``: how far two qrels agree (judging the judges, issue 16).

Two modes, one printout (:func:`write_comparison`):

* database: ``--collection NAME --from V --to W`` compares two stored qrels versions through
  the use case (``judge_comparison.compare_versions``), reading the stored scores and tests;
* files: ``--qrels A --qrels B RUN...`` evaluates the runs under both qrels with the core and
  compares them the same way on the topics both judged, the significance verdicts from a
  collection's default stored test (the paired bootstrap, B = 10,000 settled sequentially, seed 0,
  no correction, alpha 0.05). No service is needed.

The first version or file is the reference (a), the second the compared one (b): differences
are b - a, rank changes a's rank - b's rank.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from service.cli.arguments import positive_int
from service.cli.common import cli_principal, database_url, sessions
from service.cli.output import local_time, write_json
from service.cli.registry import command
from service.errors import InvalidMeasure

FILE_METRIC = "AP"  # the default metric of the file mode (a collection's default official metric)
#: The file mode's test: a collection's default stored test (service.evaluation.organising.setup.DEFAULT_SIGNIFICANCE:
#: B = 10,000, settled sequentially up to max_resamples), so both modes give the same verdicts on the same files.
FILE_TEST = {"test": "bootstrap", "resamples": 10_000, "seed": 0, "alpha": 0.05, "correction": "none",
             "max_resamples": 10_000_000}


def _judges_arguments(jd: argparse.ArgumentParser) -> None:
    jsub = jd.add_subparsers(dest="judges_command", required=True)
    c = jsub.add_parser("compare", help="the agreement of two qrels: labels, system rankings, significance, topics",
                        description="Compare two qrels versions of a collection (--collection, --from, --to) or "
                                    "two qrels files on the same runs (--qrels A --qrels B RUN...). The first is "
                                    "the reference: differences are second - first.")
    c.add_argument("--collection", help="database mode: the collection")
    c.add_argument("--from", dest="version_a", metavar="REF",
                   help="the reference: a qrels version, a judgment set's name (its newest version), name:N, or "
                        "assessor@name (one assessor's labels: label figures only)")
    c.add_argument("--to", dest="version_b", metavar="REF", help="the compared one (as --from)")
    c.add_argument("--qrels", action="append", metavar="FILE",
                   help="file mode: a qrels file, given twice (the reference first)")
    c.add_argument("runs", nargs="*", metavar="RUN", help="file mode: TREC run files (or folders of them)")
    c.add_argument("-m", "--metric", help=f"the metric (default: the collection's official one; {FILE_METRIC} "
                                          "for files)")
    c.add_argument("--top-k", type=positive_int, default=10, help="k of the tau over the top k runs (default 10)")
    c.add_argument("--topics", type=positive_int, default=10,
                   help="the disagreeing topics printed (default 10; --format json has all)")
    c.add_argument("--format", choices=("text", "json"), default="text")
    ag = jsub.add_parser("agreement", help="how far several assessors agree: alpha, pairwise kappas, per topic",
                         description="The agreement of several assessors' labels: Krippendorff's alpha over every "
                                     "assessor (nominal, ordinal, interval; missing labels allowed), per topic, who "
                                     "disagrees most (alpha without each, mean kappa) and every pair's Cohen's and "
                                     "weighted kappas. The labels of a stored set (--collection, --set), a label "
                                     "file (--labels: topic docno assessor level) or one qrels file per assessor "
                                     "(--qrels, repeated; the assessor is the file's name without '-qrels' and "
                                     "its extensions).")
    ag.add_argument("--collection", help="database mode: the collection")
    ag.add_argument("--set", dest="judgment_set", metavar="NAME", help="database mode: the judgment set")
    ag.add_argument("--labels", metavar="FILE", help="file mode: a label file")
    ag.add_argument("--qrels", action="extend", nargs="+", metavar="FILE",
                    help="file mode: one qrels file per assessor (several after one --qrels, or --qrels repeated)")
    ag.add_argument("--format", choices=("text", "json"), default="text")
    ls = jsub.add_parser("sets", help="a collection's judgment sets, with provenance and evaluation",
                         description="List a collection's judgment sets (the official one first).")
    ls.add_argument("--collection", required=True)
    ls.add_argument("--format", choices=("text", "json"), default="text")
    bd = jsub.add_parser("board", help="a judges track's stored board",
                         description="The judge board as the workers stored it (every row: organisers' view).")
    bd.add_argument("--collection", required=True)
    bd.add_argument("--format", choices=("text", "json"), default="text")


@command("judges", "judgment sets: compare two (versions, sets or files), the agreement of several assessors, list "
                   "them, read the judge board",
         _judges_arguments)
def cmd_judges(args: argparse.Namespace, out: TextIO) -> int:
    if args.judges_command in ("sets", "board"):
        return _stored_listing(args, out)
    if args.judges_command == "agreement":
        doc = assessor_agreement(args)
        if args.format == "json":
            return write_json(doc, out)
        write_agreement(doc, out)
        return 0
    if args.collection is not None:
        if args.qrels or args.runs:
            raise InvalidMeasure("judges compare: --collection compares stored versions; --qrels and run files "
                                 "are the file mode")
        if args.version_a is None or args.version_b is None:
            raise InvalidMeasure("judges compare --collection needs --from V and --to W")
        doc = _compare_stored(args)
    else:
        if not args.qrels or len(args.qrels) != 2 or not args.runs:
            raise InvalidMeasure("judges compare needs --collection NAME --from V --to W, or --qrels A --qrels B "
                                 "and run files")
        doc = compare_files(args.qrels[0], args.qrels[1], args.runs, args.metric or FILE_METRIC, args.top_k)
    if args.format == "json":
        return write_json(doc, out)
    write_comparison(doc, out, args.topics)
    return 0


def _compare_stored(args: argparse.Namespace) -> dict[str, Any]:
    from service.evaluation.judging.judge_comparison import compare_references
    from service.evaluation.organising.setup import get_collection

    with sessions(database_url())() as s:
        coll = get_collection(s, args.collection)
        return compare_references(s, coll, cli_principal(), args.version_a, args.version_b, args.metric, args.top_k)


def _stored_listing(args: argparse.Namespace, out: TextIO) -> int:
    from service.evaluation.judging import judge_track, judgment_sets
    from service.evaluation.organising.setup import get_collection

    with sessions(database_url())() as s:
        coll = get_collection(s, args.collection)
        doc = (judgment_sets.listing(s, coll, cli_principal()) if args.judges_command == "sets"
               else judge_track.board(s, coll, cli_principal()))
    if args.format == "json":
        return write_json(doc, out)
    if args.judges_command == "sets":
        out.write("set\tofficial\tsource\tmodel\tversion\tjudgments\tlabels\tevaluated\tteam\n")
        for js in doc["items"]:
            ev = js["evaluation"]
            # text for people (issue 37): yes/no, nothing for a set without a model, "3 of 5" runs
            out.write(f"{js['name']}\t{'yes' if js['official'] else 'no'}\t{js['source']}\t{js['model'] or ''}\t"
                      f"{js['current_version'] or ''}\t{js['judgments']}\t{js['labels']}\t"
                      f"{ev['evaluated']} of {ev['runs']}\t{js['team'] or ''}\n")
        return 0
    state = "stale" if doc["stale"] else "current"
    out.write(f"# {doc['measure']} on {doc['metric']} against {doc['official_set']} ({doc['level']:.0%} bootstrap "
              f"interval, B = {doc['resamples']}); computed {local_time(doc['computed_at']) or 'never'}, {state}\n")
    out.write("rank\tset\tteam\tmodel\tvalue\tlow\thigh\tbias\ttopics\tleft_out\n")

    def f(v: Any) -> str:
        return "" if v is None else f"{v:.4f}"

    out.writelines(f"{r['rank'] or ''}\t{r['judgment_set']}\t{r['team'] or ''}\t{r['model'] or ''}\t{f(r['value'])}\t"
                  f"{f(r['low'])}\t{f(r['high'])}\t{f(r['bias'])}\t{r['topics']}\t{r.get('topics_left_out', 0)}\n"
                  for r in doc["rows"])
    return 0


def compare_files(qrels_a: str, qrels_b: str, run_paths: list[str], metric: str, top_k: int = 10) -> dict[str, Any]:
    """The comparison document of two qrels files on the same runs (as the database mode's)."""
    import math

    import numpy as np

    from service.cli.common import run_files
    from service.evaluation.judging.judge_comparison import (
        judged_topics,
        label_figures,
        on_common_topics,
        score_figures,
        significance_figures,
    )
    from service.formats.readers import read_qrels, read_run
    from service.metrics.scoring import EvalSettings, evaluate, parse_measures
    from service.metrics.stats.pairwise import pairwise

    (measure,) = parse_measures([metric])  # a bad name fails before any file is read
    qa, qb = read_qrels(qrels_a), read_qrels(qrels_b)
    runs = [read_run(p) for p in run_files(run_paths)]
    tags = [r.tag for r in runs]
    if len(set(tags)) != len(tags):
        dup = next(t for t in tags if tags.count(t) > 1)
        raise InvalidMeasure(f"two run files carry the same tag {dup!r}: tags name runs in the output")

    def judged(q) -> dict[tuple[str, str], int]:  # type: ignore[no-untyped-def]
        return {(t, d.decode("utf-8")): int(lv) for t, docs, levels in zip(q.topics, q.docnos, q.levels)
                for d, lv in zip(docs.tolist(), levels.tolist())}

    ja, jb = judged(qa), judged(qb)
    labels = label_figures(ja, jb)
    ea, eb = evaluate(qa, runs, [measure], EvalSettings()), evaluate(qb, runs, [measure], EvalSettings())
    notes: list[str] = []
    # the board's order: by the mean under a over its own topics (higher first), then by tag
    full_a = ea.means(measure)
    order = sorted(range(len(tags)), key=lambda i: (math.isnan(full_a[i]), -full_a[i] if not math.isnan(full_a[i])
                                                    else 0.0, tags[i]))
    topics = list(dict.fromkeys([*ea.topics, *eb.topics]))

    def matrix(result) -> np.ndarray:  # type: ignore[no-untyped-def]
        where = {t: k for k, t in enumerate(result.topics)}
        per = result.per_topic(measure)
        return np.array([[per[i, where[t]] if t in where else math.nan for i in order] for t in topics],
                        dtype=np.float64).reshape(len(topics), len(order))

    # the ranking, Bland-Altman, the tests and the per-topic figures on the topics both files judge
    names, means_a, means_b, topics, per_a, per_b, compared = on_common_topics(
        [tags[i] for i in order], topics, matrix(ea), matrix(eb), judged_topics(ja), judged_topics(jb), notes)
    changes = {t["topic"]: t for t in labels["topics"]}
    scores = score_figures(names, means_a, means_b, topics, per_a, per_b, top_k=top_k, changes=changes)
    notes.extend(scores.pop("notes"))
    significance, reason = None, None
    if len(names) < 2:
        reason = "fewer than two runs: there is no pair to compare"
    else:
        tests = [pairwise(per, names, "bootstrap", resamples=FILE_TEST["resamples"], alpha=FILE_TEST["alpha"],
                          correction="none", seed=FILE_TEST["seed"], sequential=True,
                          max_resamples=FILE_TEST["max_resamples"]) for per in (per_a, per_b)]
        significance = {**significance_figures(names, means_a, means_b, tests[0].p_adjusted,
                                                tests[1].p_adjusted, FILE_TEST["alpha"], FILE_TEST["alpha"]),
                        **{f"test_{k}": {"test": "bootstrap", "alpha": FILE_TEST["alpha"], "correction": "none",
                                         "resamples": FILE_TEST["resamples"], "topics": t.n_topics}
                           for k, t in zip("ab", tests)}}
    return {"a": {"file": qrels_a, "judgments": len(ja)}, "b": {"file": qrels_b, "judgments": len(jb)},
            "metric": str(measure), "labels": labels, **scores, "compared_topics": compared, "only_a": [],
            "only_b": [],
            "significance": significance, "significance_reason": reason, "notes": notes}


# --------------------------------------------------------------------------- several assessors
def _assessor_name(path: str) -> str:
    from pathlib import Path

    name = Path(path).name
    for suffix in (".gz", ".txt", ".qrels"):
        name = name.removesuffix(suffix)
    return name.removesuffix("-qrels") or name


def assessor_agreement(args: argparse.Namespace) -> dict[str, Any]:
    """The agreement document (``labels.agreement_figures``) of a stored set or of files."""
    from service.evaluation.judging import labels

    modes = [args.collection is not None or args.judgment_set is not None, args.labels is not None,
             bool(args.qrels)]
    if sum(modes) != 1:
        raise InvalidMeasure("judges agreement needs --collection NAME --set NAME, --labels FILE, or --qrels FILE "
                             "given once per assessor (one of the three)")
    if modes[0]:
        if args.collection is None or args.judgment_set is None:
            raise InvalidMeasure("judges agreement --collection needs --set NAME (and the reverse)")
        from service.evaluation.organising.setup import get_collection

        with sessions(database_url())() as s:
            coll = get_collection(s, args.collection)
            return labels.agreement(s, coll, cli_principal(), args.judgment_set)
    topics: list[str] = []
    docnos: list[str] = []
    who: list[str] = []
    levels: list[int] = []
    if args.labels is not None:
        from service.formats.labels import read_labels

        parsed = read_labels(args.labels)
        topics, docnos, who, levels = list(parsed.topics), list(parsed.docnos), list(parsed.assessors), \
            parsed.levels.tolist()
        source = {"labels": args.labels}
    else:
        from service.formats.readers import read_qrels

        names = [_assessor_name(p) for p in args.qrels]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InvalidMeasure(f"two qrels files name the same assessor {dup!r} (the file's name without "
                                 "'-qrels' and its extensions): rename one")
        for path, name in zip(args.qrels, names):
            q = read_qrels(path)
            for t, docs, lv in zip(q.topics, q.docnos, q.levels):
                for d, level in zip(docs.tolist(), lv.tolist()):
                    topics.append(t)
                    docnos.append(d.decode("utf-8"))
                    who.append(name)
                    levels.append(int(level))
        source = {"qrels": list(args.qrels)}
    return {**source, **labels.agreement_figures(topics, docnos, who, levels)}


def write_agreement(doc: dict[str, Any], out: TextIO) -> None:
    """The assessors' agreement document as text."""
    w = out.write
    w(f"{len(doc['assessors'])} assessors, {doc['labels']} labels of {doc['documents']} documents "
      f"({doc['pairable_documents']} with two labels or more); scale {', '.join(map(str, doc['levels']))}\n")
    a = doc["alpha"]
    w(f"Krippendorff's alpha over every assessor: nominal {_f(a['nominal'])}, ordinal {_f(a['ordinal'])}, "
      f"interval {_f(a['interval'])}\n\nWho disagrees most (ordinal alpha of the others without them; "
      "largest rise first)\n")
    w(f"{'assessor':24}{'labels':>8}{'mean kappa':>12}{'alpha w/o':>11}{'change':>9}\n")
    for r in doc["disagreement"]:
        change = "-" if r["ordinal_change_without"] is None else f"{r['ordinal_change_without']:+.4f}"
        w(f"{r['assessor']:24}{r['labels']:>8}{_f(r['mean_kappa']):>12}{_f(r['alpha_without']['ordinal']):>11}"
          f"{change:>9}\n")
    w(f"\nEvery pair, on the documents both labelled\n{'a':24}{'b':24}{'docs':>6}{'kappa':>9}{'linear':>9}"
      f"{'quadratic':>10}{'alpha':>9}\n")
    for p in doc["pairs"]:
        w(f"{p['a']:24}{p['b']:24}{p['documents']:>6}{_f(p['kappa']):>9}{_f(p['kappa_linear']):>9}"
          f"{_f(p['kappa_quadratic']):>10}{_f(p['alpha']):>9}\n")
    w(f"\nPer topic\n{'topic':16}{'docs':>6}{'nominal':>9}{'ordinal':>9}{'interval':>9}\n")
    for t in doc["per_topic"]:
        w(f"{t['topic']:16}{t['documents']:>6}{_f(t['nominal']):>9}{_f(t['ordinal']):>9}{_f(t['interval']):>9}\n")
    for note in doc["notes"]:
        w(f"note: {note}\n")


# --------------------------------------------------------------------------- the printout
def _f(v: float | None, digits: int = 4) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _side(doc: dict[str, Any]) -> str:
    if doc.get("file") is not None:
        return f"{doc['file']} ({doc['judgments']} judgments)"
    if doc.get("assessor") is not None:
        return f"{doc['assessor']}'s labels in {doc['judgment_set']} ({doc['judgments']} judgments)"
    named = f" of {doc['judgment_set']}" if doc.get("judgment_set") else ""
    return f"version {doc['version']}{named} ({doc['judgments']} judgments)"


def write_comparison(doc: dict[str, Any], out: TextIO, topics: int = 10) -> None:
    """The comparison document (of either mode) as text: labels, rankings, significance, topics."""
    w = out.write
    w(f"a (reference): {_side(doc['a'])}\nb (compared):  {_side(doc['b'])}\n\n")
    lab = doc["labels"]
    ov, ch = lab["overlap"], lab["changes"]
    w(f"Label agreement on the {ov['both']} documents both judged ({ov['only_a']} judged by a only, "
      f"{ov['only_b']} by b only; Jaccard {_f(ov['jaccard'])}); from a to b {ch['added']} added, "
      f"{ch['removed']} removed, {ch['changed']} changed\n")
    w(f"{'':10}{'observed':>10}{'kappa':>10}{'linear':>10}{'quadratic':>10}{'alpha':>10}{'higher':>8}{'lower':>8}\n")
    o, m = lab["overall"], lab["macro"]
    w(f"{'overall':10}{_f(o['observed']):>10}{_f(o['kappa']):>10}{_f(o['kappa_linear']):>10}"
      f"{_f(o['kappa_quadratic']):>10}{_f(o['alpha']):>10}{o['higher']:>8}{o['lower']:>8}\n")
    w(f"{'per topic':10}{_f(m['observed']):>10}{_f(m['kappa']):>10}{_f(m['kappa_linear']):>10}"
      f"{_f(m['kappa_quadratic']):>10}{_f(m['alpha']):>10}   (mean over topics)\n")
    w("Confusion (rows: a's level, columns: b's)\n" + " " * 8 + "".join(f"{lv:>8}" for lv in lab["levels"]) + "\n")
    for lv, row in zip(lab["levels"], o["confusion"]):
        w(f"{lv:>8}" + "".join(f"{c:>8}" for c in row) + "\n")
    for note in lab["notes"]:
        w(f"  note: {note}\n")
    ct = doc.get("compared_topics")
    w(f"\nRanking agreement of the {len(doc['runs'])} runs by {doc['metric']}"
      + (f", {ct['sentence']}" if ct else "") + "\n")
    r = doc["ranking"]
    if r is not None:
        w(f"  Kendall tau-b {_f(r['kendall'])}   tau_AP {_f(r['tau_ap'])} (b walked, a reference), "
          f"{_f(r['tau_ap_reverse'])} (reverse)   tau_AP_b {_f(r['tau_ap_b'])}\n")
        w(f"  Spearman {_f(r['spearman'])}   Pearson {_f(r['pearson'])}   tau over a's top {r['top_k']} "
          f"({r['top_k_runs']} runs) {_f(r['tau_top_k'])}\n")
        change = r["largest_change"]
        w(f"  largest rank change: {change['run']} from {change['rank_a']} to {change['rank_b']}\n" if change
          else "  no run changes rank\n")
        for note in r["notes"]:
            w(f"  note: {note}\n")
    ba = doc["bland_altman"]
    if ba is not None:
        w(f"Per-topic means, b - a (Bland-Altman over {ba['topics']} topics): bias {_f(ba['bias'])} "
          f"({ba['direction']}), 95% limits {_f(ba['lower'])} to {_f(ba['upper'])}\n")
    sig = doc["significance"]
    if sig is not None:
        from service.metrics.stats.presentation import correction_name

        named = correction_name(sig["test_a"]["test"], sig["test_a"].get("correction"))
        kept = sig["kept_significant"] + sig["kept_not_significant"]
        w(f"Significance ({sig['test_a']['test']}, alpha {sig['test_a']['alpha']}, correction: {named}): "
          f"{kept} of {sig['pairs']} pair{'s' if sig['pairs'] != 1 else ''} "
          f"{'keeps its' if kept == 1 else 'keep their'} verdict; {sig['kept_significant']} stay significant, "
          f"{sig['lost']} lost, {sig['gained']} gained, "
          f"{sig['flipped']} flipped ({sig['significant_a']} significant under a, {sig['significant_b']} under b)\n")
    else:
        w(f"Significance: none ({doc['significance_reason']})\n")
    tc = doc["topics"]
    if tc is not None:
        w(f"\nPer-topic correlation: tau of the per-topic means {_f(tc['mean_kendall'])}, Pearson "
          f"{_f(tc['mean_pearson'])}\nTopics where a and b disagree most (1 - tau of the runs' order)\n")
        w(f"{'topic':12}{'tau':>8}{'mean b-a':>10}{'added':>7}{'removed':>8}{'changed':>8}\n")
        for t in tc["disagreeing"][:topics]:
            w(f"{t['topic']:12}{_f(t['tau'], 3):>8}{_f(t['mean_difference']):>10}{t['added']:>7}{t['removed']:>8}"
              f"{t['changed']:>8}\n")
    for note in doc["notes"]:
        w(f"note: {note}\n")
