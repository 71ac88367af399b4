"""``cranfield repro``: how well runs reproduce others, on files, no service.

The measures of Breuer et al. (SIGIR 2020) as repro_eval computes them
(:mod:`service.metrics.stats.reproducibility`, docs/reproducibility.md), on per-topic scores
from Cranfield's own metric registry (as ``cranfield eval`` gives them). Only the standard
library and the CLI are imported at the top; the core inside the handler.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, TextIO

from service.cli.arguments import positive_int
from service.cli.output import write_json
from service.cli.registry import command
from service.errors import BadRequest, InvalidMeasure

#: The metrics compared when none is named: the ones reproducibility studies report, as
#: trec_eval (and so repro_eval) computes them (its ndcg_cut.10 is Cranfield's MSnDCG@10).
DEFAULT_REPRO_METRICS = ("AP", "MSnDCG@10", "P@10", "RR")
PARTS = ("baseline", "advanced")


def _probability(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError("must lie strictly between 0 and 1")
    return v


def _repro_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--qrels", required=True, help="qrels of the original runs (TREC or NTCIR ad hoc)")
    p.add_argument("--orig", nargs="+", required=True, metavar="RUN",
                   help="the original run, or its baseline and advanced runs (B A)")
    p.add_argument("--rep", nargs="+", required=True, metavar="RUN",
                   help="the reproduction, in the same roles (B' or B' A')")
    p.add_argument("--rep-qrels", metavar="QRELS",
                   help="qrels of another collection the reproduction was run on: the unpaired case "
                        "(no KTU, RBO or RMSE; means over each collection's own topics)")
    p.add_argument("-m", "--metric", "--measure", action="append", dest="metrics", metavar="METRIC",
                   help=f"metric (see 'cranfield metrics'); repeatable (default: {' '.join(DEFAULT_REPRO_METRICS)})")
    p.add_argument("--per-topic", action="store_true", help="print per-topic values as well")
    p.add_argument("--format", choices=("tsv", "json"), default="tsv")
    p.add_argument("--order", choices=("score", "rank", "file"), default="score",
                   help="rank order of each list, for the scores and for KTU/RBO (default score: score desc, "
                        "ties by docno desc, which is repro_eval's order for a file sorted by score)")
    p.add_argument("--ktu-variant", choices=("repro_eval", "ranks"), default="repro_eval",
                   help="repro_eval (default: its position-by-position tau) or ranks (tau-b of the two "
                        "rankings over their union); docs/reproducibility.md")
    p.add_argument("--ktu-depth", type=positive_int, default=1000, help="documents of each list KTU compares")
    p.add_argument("--rbo-p", type=_probability, default=0.95, help="RBO's persistence p (default 0.95)")
    p.add_argument("--rbo-depth", type=positive_int, default=1000, help="RBO's depth (default 1000)")
    p.add_argument("--welch", action="store_true",
                   help="unpaired case: Welch's t-test instead of Student's (repro_eval's)")
    p.add_argument("--resamples", type=positive_int, default=10_000, help="bootstrap resamples of ER/DeltaRI")
    p.add_argument("--level", type=_probability, default=0.95, help="level of the bootstrap intervals")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resampling")
    p.add_argument("--precision", type=int, default=6, help="decimals printed (tsv; default 6)")


@command("repro", "how well runs reproduce others (KTU, RBO, RMSE, ER, DeltaRI, t-tests)", _repro_arguments,
         description="Compare original runs with their reproductions (Breuer et al., SIGIR 2020; as repro_eval).")
def cmd_repro(args: argparse.Namespace, out: TextIO) -> int:
    from service.formats.compressed import read_file
    from service.formats.qrels_files import read_judgments
    from service.formats.readers import parse_run
    from service.metrics.scoring import EvalSettings, evaluate, needs_judgments, parse_measures
    from service.metrics.stats import reproducibility as rp

    if len(args.orig) > 2 or len(args.rep) != len(args.orig):
        raise BadRequest("--orig takes a run or a baseline and an advanced run (B A), and --rep as many "
                         f"in the same roles; got {len(args.orig)} and {len(args.rep)}")
    measures = parse_measures(args.metrics or DEFAULT_REPRO_METRICS)
    for m in measures:
        if needs_judgments(m) is not None:
            raise InvalidMeasure(f"{m}: cranfield repro reads ad hoc qrels only")
    same = args.rep_qrels is None
    settings = EvalSettings()

    def qrels_of(path: str):  # type: ignore[no-untyped-def]
        return read_judgments(read_file(path), path, "adhoc").qrels

    def run_of(path: str):  # type: ignore[no-untyped-def]
        return parse_run(read_file(path), path, args.order)

    qrels = qrels_of(args.qrels)
    orig_runs = [run_of(p) for p in args.orig]
    rep_runs = [run_of(p) for p in args.rep]
    if same:
        ev = evaluate(qrels, [*orig_runs, *rep_runs], measures, settings)
        orig_eval, rep_eval, k = ev, ev, len(orig_runs)
    else:
        orig_eval = evaluate(qrels, orig_runs, measures, settings)
        rep_eval = evaluate(qrels_of(args.rep_qrels), rep_runs, measures, settings)
        k = 0

    def scores(ev, row: int, m) -> dict[str, float]:  # type: ignore[no-untyped-def]
        return dict(zip(ev.topics, ev.per_topic(m)[row].tolist()))

    doc: dict[str, Any] = {
        "same_collection": same,
        "runs": {part: {"original": args.orig[i], "reproduction": args.rep[i]} for i, part in enumerate(PARTS[:len(args.orig)])},
        "topics": {"original": list(orig_eval.topics), "reproduction": list(rep_eval.topics)},
        "settings": {"order": args.order, "ktu_variant": args.ktu_variant, "ktu_depth": args.ktu_depth,
                     "rbo_p": args.rbo_p, "rbo_depth": args.rbo_depth, "welch": args.welch,
                     "resamples": args.resamples, "level": args.level, "seed": args.seed},
    }
    if same:
        order: dict[str, Any] = {}
        for i, part in enumerate(PARTS[:len(args.orig)]):
            d = rp.document_order(orig_runs[i].to_rankings(), rep_runs[i].to_rankings(),
                                  ktu_depth=args.ktu_depth, ktu_variant=args.ktu_variant,
                                  rbo_p=args.rbo_p, rbo_depth=args.rbo_depth)
            order[part] = {"KTU": d.ktu_mean, "RBO": d.rbo_mean, "left_out": list(d.left_out),
                           **({"per_topic": {t: {"KTU": d.ktu[t], "RBO": d.rbo[t]} for t in d.topics}}
                              if args.per_topic else {})}
        doc["document_order"] = order
    metrics: dict[str, Any] = {}
    for m in measures:
        entry: dict[str, Any] = {}
        per_run = [(scores(orig_eval, i, m), scores(rep_eval, k + i, m)) for i in range(len(args.orig))]
        for part, (o, r) in zip(PARTS, per_run):
            c = rp.compare_run(o, r, same_collection=same, welch=args.welch)
            entry[part] = {"mean_original": c.original_mean, "mean_reproduction": c.reproduction_mean,
                           "RMSE": c.rmse, "nRMSE": c.nrmse, "p_value": c.p_value, "test": c.test}
            if args.per_topic:
                entry[part]["per_topic"] = {
                    "original": o, "reproduction": r,
                    **({"difference": {t: r[t] - o[t] for t in o}} if same else {}),
                }
        if len(per_run) == 2:
            (ob, rb), (oa, ra) = per_run
            e = rp.compare_effect(ob, oa, rb, ra, same_collection=same, resamples=args.resamples,
                                  level=args.level, seed=args.seed)
            iv = e.intervals
            entry["effect"] = {"ER": e.er, "ER_interval": [iv.er_low, iv.er_high], "DeltaRI": e.delta_ri,
                               "DeltaRI_interval": [iv.dri_low, iv.dri_high], "RI_original": e.ri_original,
                               "RI_reproduction": e.ri_reproduction, "undefined_resamples":
                               {"ER": iv.er_undefined, "DeltaRI": iv.dri_undefined}}
        metrics[str(m)] = entry
    doc["metrics"] = metrics
    if args.format == "json":
        return write_json(_finite(doc), out)
    _write_tsv(doc, args.precision, out)
    return 0


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: null stands for them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _write_tsv(doc: dict[str, Any], decimals: int, out: TextIO) -> None:
    """One value a line: measure, metric ('-' for document order), run role, topic ('all'), value."""

    def num(v: float | None) -> str:
        return "-" if v is None else ("nan" if math.isnan(v) else f"{v:.{decimals}f}")

    lines = ["#measure\tmetric\trun\ttopic\tvalue"]
    for part, d in doc.get("document_order", {}).items():
        for name in ("KTU", "RBO"):
            for t, v in d.get("per_topic", {}).items():
                lines.append(f"{name}\t-\t{part}\t{t}\t{num(v[name])}")
            lines.append(f"{name}\t-\t{part}\tall\t{num(d[name])}")
        if d["left_out"]:
            lines.append(f"# {part}: topics of one run only, left out of KTU/RBO: {' '.join(d['left_out'])}")
    for metric, entry in doc["metrics"].items():
        for part in PARTS:
            if part not in entry:
                continue
            e = entry[part]
            for name in ("original", "reproduction", "difference"):
                for t, v in e.get("per_topic", {}).get(name, {}).items():
                    lines.append(f"{name}\t{metric}\t{part}\t{t}\t{num(v)}")
            for name in ("mean_original", "mean_reproduction", "RMSE", "nRMSE"):
                if e[name] is not None:
                    lines.append(f"{name}\t{metric}\t{part}\tall\t{num(e[name])}")
            lines.append(f"p_value({e['test']})\t{metric}\t{part}\tall\t{num(e['p_value'])}")
        if "effect" in entry:
            f = entry["effect"]
            for name, v in (("ER", f["ER"]), ("ER_low", f["ER_interval"][0]), ("ER_high", f["ER_interval"][1]),
                            ("DeltaRI", f["DeltaRI"]), ("DeltaRI_low", f["DeltaRI_interval"][0]),
                            ("DeltaRI_high", f["DeltaRI_interval"][1]), ("RI_original", f["RI_original"]),
                            ("RI_reproduction", f["RI_reproduction"])):
                lines.append(f"{name}\t{metric}\tpair\tall\t{num(v)}")
    out.write("\n".join(lines) + "\n")
