"""Leaderboards and tables as files: CSV and LaTeX, from the documents the use cases return
(:func:`boards.leaderboard_doc` and the others named below). Every CSV export of the service is
written here, through :func:`_csv`.

CSV cells hold names chosen by participants and organisers (run tags, team names, topic ids). A
spreadsheet opening the file would run a text cell that starts like a formula (``=``, ``+``,
``-``, ``@``, a tab or a carriage return), so such a cell is written with a leading single
quote, which spreadsheets show as text (OWASP's advice on CSV injection). Numbers (a negative
score) stay numbers.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np

from service.evaluation.publishing.board_intervals import bounds_of, interval_label, interval_view, truncated_ends
from service.metrics.stats.presentation import correction_name

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """A text cell that a spreadsheet would read as a formula, as text ('=1+2 for =1+2);
    anything else (numbers, booleans, empty cells, other text) unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _limits(doc: dict[str, Any]) -> tuple[float, float]:
    """The board metric's range; unbounded for a document that names no metric."""
    return bounds_of(doc["metric"]) if doc.get("metric") else (-math.inf, math.inf)


def board_csv(doc: dict[str, Any]) -> str:
    """The board as CSV, the intervals named by their kind as in the API (issue 25, item 5):
    ``t_ci_low``/``t_ci_high`` the 95% Student t interval with an end beyond the metric's range
    truncated at it (``t_ci_truncated`` says which: low, high or both); ``boot_ci_*`` the stored
    bootstrap interval, its method (bca or percentile) and its B, empty for results stored before
    them. No cell holds a value the metric cannot take. Means and interval ends are written as
    the API holds them (full precision: no rounding)."""
    limits = _limits(doc)
    rows = []
    for r in doc["rows"]:
        v = interval_view(r, limits)
        boot = ((v["low"], v["high"], r.get("boot_method"), r.get("boot_resamples")) if v["kind"] == "bootstrap"
                else (None, None, None, None))
        rows.append([r["rank"], r["run"], r["team"], r["mean"], v["t_low"], v["t_high"], r["n_topics"],
                     r["baseline"], r.get("groups", ""), truncated_ends(v), *boot])
    return _csv(["rank", "run", "team", "mean", "t_ci_low", "t_ci_high", "n_topics", "baseline", "groups",
                 "t_ci_truncated", "boot_ci_low", "boot_ci_high", "boot_ci_method", "boot_ci_resamples"], rows)


def board_latex(doc: dict[str, Any]) -> str:
    """A LaTeX table of the leaderboard; superscript letters mark statistically tied groups. The
    interval column is the one the board draws (bootstrap when stored, else t), the last the t
    interval with an end beyond the metric's range truncated there and marked with a dagger; a
    line under the table says which interval is drawn."""
    def esc(text: str) -> str:
        special = {"\\": "\\textbackslash{}", "^": "\\^{}", "~": "\\~{}"}
        return "".join(special.get(c) or ("\\" + c if c in "&%$#_{}" else c) for c in str(text))

    def end(x: float, clipped: bool) -> str:
        return f"{x:.4f}" + ("$^\\dagger$" if clipped else "")

    def span(low: float | None, high: float | None, low_cut: bool = False, high_cut: bool = False) -> str:
        return "" if low is None or high is None else f"[{end(low, low_cut)}, {end(high, high_cut)}]"

    limits = _limits(doc)
    sig = doc.get("significance")
    kinds = {interval_view(r, limits)["kind"] for r in doc["rows"]} - {None}
    drawn_head = ("Bootstrap interval" if kinds == {"bootstrap"} else "t interval" if kinds == {"t"}
                  else "Interval")
    lines = ["\\begin{tabular}{rllrll}", "\\hline",
             f"Rank & Run & Team & {esc(doc['metric'])} & {drawn_head} & 95\\% t interval \\\\", "\\hline"]
    truncated = False
    for r in doc["rows"]:
        v = interval_view(r, limits)
        truncated = truncated or v["t_low_clipped"] or v["t_high_clipped"]
        mark = f"$^{{{r['groups']}}}$" if r.get("groups") else ""
        drawn = span(v["low"], v["high"], v["low_clipped"], v["high_clipped"])
        t = span(v["t_low"], v["t_high"], v["t_low_clipped"], v["t_high_clipped"])
        base = " (baseline)" if r["baseline"] else ""
        lines.append(f"{r['rank']} & {esc(r['run'])}{base} & {esc(r['team'])} & {r['mean']:.4f}{mark} & {drawn} & "
                     f"{t} \\\\")
    lines += ["\\hline", "\\end{tabular}"]
    note = f"Interval: {interval_label(doc['rows'])}."
    if truncated:
        low, high = limits
        rng = f"[{low:g}, {high:g}]" if math.isfinite(high) else f"[{low:g}, \\infty)"
        note += f" $^\\dagger$ t interval truncated at the metric's range ${rng}$."
    if sig:
        b = f", the test's $B = {sig['resamples']}$" if sig.get("resamples") else ""
        correction = correction_name(sig["test"], sig.get("correction"))
        note += (f" Runs that share a superscript letter are not significantly different ({esc(sig['test'])}{b}, "
                 f"$\\alpha = {sig['alpha']}$, correction: {esc(correction)}); runs with no letter in common are.")
    note = note.replace("%", "\\%")  # the label's "95%"; its math ($^\\dagger$, the range) stays
    lines.append(f"\\par\\smallskip{{\\footnotesize {note}}}")
    return "\n".join(lines) + "\n"


def _csv(header: list[Any], rows: list[list[Any]]) -> str:
    """Rows as CSV, data (issue 37): booleans ``true``/``false`` (not Python's ``True``), every
    text cell neutralised (:func:`spreadsheet_safe`), numbers unrounded."""
    out = io.StringIO()
    w = csv.writer(out)
    for row in [header, *rows]:
        w.writerow([("true" if cell else "false") if isinstance(cell, (bool, np.bool_)) else spreadsheet_safe(cell)
                    for cell in row])
    return out.getvalue()


def _stated(value: bool | None) -> str:
    """A run's stated yes/no field: true, false, or empty where the team did not say."""
    return "" if value is None else "true" if value else "false"


def metrics_board_csv(doc: dict[str, Any]) -> str:
    """The multi-metric board (:func:`boards.metrics_board`) as CSV: one row per run in the
    board's order, its rank on the sort metric, then one column of means per metric (official
    first); an empty cell where the run has no mean."""
    names = [m["metric"] for m in doc["metrics"]]
    return _csv(["rank", "run", "team", "run_type", "uses_training_data", "uses_external_resources", *names],
                [[r["rank"], r["run"], r["team"], r.get("run_type"), _stated(r.get("uses_training_data")),
                  _stated(r.get("uses_external_resources")), *(r["means"].get(m) for m in names)]
                 for r in doc["rows"]])


def matrix_csv(doc: dict[str, Any]) -> str:
    """The run x topic matrix (:func:`topic_analysis.score_matrix`) as CSV: a row per run (board
    order), a column per topic; an empty cell where the run was not scored on the topic."""
    return _csv(["run", "team", *doc["topics"]],
                [[r["run"], r["team"], *r["scores"]] for r in doc["rows"]])


def topics_csv(doc: dict[str, Any]) -> str:
    """The topic analysis (:func:`topic_analysis.topic_analysis`) as CSV, hardest topic first:
    runs scored, median, quartiles, least and best score, the best runs (space-separated), the
    runs scored on the topic that have no line for it (``missing_runs``: their score is the
    missing-topic rule's) and the least score of the runs that submitted it."""
    return _csv(["topic", "runs", "median", "q1", "q3", "min", "best", "best_runs", "missing_runs", "min_submitted"],
                [[i["topic"], i["runs"], i["median"], i["q1"], i["q3"], i["min"], i["best"], " ".join(i["best_runs"]),
                  i.get("missing", 0), i.get("min_submitted")]
                 for i in doc["items"]])


def disagreeing_topics_csv(doc: dict[str, Any]) -> str:
    """The topics where two qrels versions or judgment sets disagree most
    (:func:`judge_comparison.compare_references`), most first, with the judgments changed in
    each and the label agreement (kappa) on it; figures as the JSON has them (data, issue 37: not
    rounded), an empty cell where one is undefined."""
    labels = {t["topic"]: t for t in doc["labels"]["topics"]}
    rows = []
    for t in (doc["topics"] or {}).get("disagreeing", []):
        lab = labels.get(t["topic"], {})
        rows.append([t["topic"], *(t[k] for k in ("tau", "disagreement", "mean_a", "mean_b", "mean_difference",
                                                  "added", "removed", "changed")),
                     lab.get("kappa"), lab.get("documents")])
    return _csv(["topic", "tau", "disagreement", "mean_a", "mean_b", "mean_difference", "added", "removed", "changed",
                 "kappa", "documents_both"], rows)


# ---------------------------------------------------------------- the reproducibility board
#: The reproducibility board's CSV columns (service.evaluation.reproducing.board.board's rows).
REPRODUCIBILITY_COLUMNS = (
    "reproduction", "kind", "team", "run", "advanced_run", "original_run", "original_advanced_run",
    "same_collection", "metric", "KTU_baseline", "RBO_baseline", "KTU_advanced", "RBO_advanced",
    "mean_original_baseline", "mean_reproduction_baseline", "RMSE_baseline", "nRMSE_baseline", "p_baseline",
    "mean_original_advanced", "mean_reproduction_advanced", "RMSE_advanced", "nRMSE_advanced", "p_advanced",
    "ER", "ER_low", "ER_high", "DeltaRI", "DeltaRI_low", "DeltaRI_high", "verdict", "topics", "withheld")


def _tag(run: dict[str, Any] | None) -> str:
    return run["tag"] if run else ""


def _reproduction_cells(r: dict[str, Any], metric: str) -> dict[str, Any]:
    order = r.get("order") or {}
    cells: dict[str, Any] = {
        "reproduction": r["id"], "kind": r["kind"], "team": r["run"]["team"] if r["run"] else "",
        "run": _tag(r["run"]), "advanced_run": _tag(r["advanced_run"]), "original_run": _tag(r["original"]["run"]),
        "original_advanced_run": _tag(r["original"]["advanced_run"]), "same_collection": r["same_collection"],
        "metric": metric, "verdict": r["verdict"], "topics": r.get("topics", "all"), "withheld": r.get("withheld") or ""}
    for part in ("baseline", "advanced"):
        for k in ("KTU", "RBO"):
            cells[f"{k}_{part}"] = (order.get(part) or {}).get(k)
        for k, col in (("mean_original", "mean_original"), ("mean_reproduction", "mean_reproduction"),
                       ("RMSE", "RMSE"), ("nRMSE", "nRMSE"), ("p_value", "p")):
            cells[f"{col}_{part}"] = (r.get(part) or {}).get(k)
    for k in ("ER", "ER_low", "ER_high", "DeltaRI", "DeltaRI_low", "DeltaRI_high"):
        cells[k] = (r.get("effect") or {}).get(k)
    return cells


def reproducibility_csv(doc: dict[str, Any]) -> str:
    """The reproducibility board as CSV: a line per reproduction, full floats, empty where a
    measure is undefined (or does not apply: KTU and RBO on another collection) or not shown to
    the caller (``withheld`` says why; ``topics`` over which topics the figures are)."""
    rows = []
    for r in doc["rows"]:
        cells = _reproduction_cells(r, doc["metric"])
        rows.append([cells.get(c) for c in REPRODUCIBILITY_COLUMNS])
    return _csv(list(REPRODUCIBILITY_COLUMNS), rows)


def reproducibility_latex(doc: dict[str, Any]) -> str:
    """The reproducibility board as a LaTeX table: per reproduction its team and runs, what it
    reproduces, KTU and RBO (same collection), the reproduction's mean against the original's,
    RMSE, the t-test's p, ER and DeltaRI with their bootstrap intervals, and the verdict."""
    def esc(text: Any) -> str:
        special = {"\\": "\\textbackslash{}", "^": "\\^{}", "~": "\\~{}"}
        return "".join(special.get(c) or ("\\" + c if c in "&%$#_{}" else c) for c in str(text))

    def num(x: float | None, digits: int = 3) -> str:
        return "--" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"

    def span(x: float | None, low: float | None, high: float | None) -> str:
        return num(x) if low is None or high is None else f"{num(x)} [{num(low)}, {num(high)}]"

    lines = ["\\begin{tabular}{lllrrrrrll}", "\\hline",
             "Team & Reproduction & Original & KTU & RBO & Mean (orig.) & RMSE & $p$ & ER & $\\Delta$RI \\\\",
             "\\hline"]
    for r in doc["rows"]:
        c = _reproduction_cells(r, doc["metric"])
        runs = esc(c["run"] + (f" + {c['advanced_run']}" if c["advanced_run"] else ""))
        original = esc(c["original_run"] + (f" + {c['original_advanced_run']}" if c["original_advanced_run"] else ""))
        part = "advanced" if c["advanced_run"] else "baseline"
        mean = (f"{num(c[f'mean_reproduction_{part}'], 4)} ({num(c[f'mean_original_{part}'], 4)})"
                if c[f"mean_reproduction_{part}"] is not None else "--")
        runs += "*" if c["topics"] != "all" else ""
        lines.append(f"{esc(c['team'])} & {runs} & {original} & {num(c[f'KTU_{part}'])} & {num(c[f'RBO_{part}'])} & "
                     f"{mean} & {num(c[f'RMSE_{part}'], 4)} & {num(c[f'p_{part}'], 4)} & "
                     f"{span(c['ER'], c['ER_low'], c['ER_high'])} & "
                     f"{span(c['DeltaRI'], c['DeltaRI_low'], c['DeltaRI_high'])} \\\\")
    lines += ["\\hline", "\\end{tabular}"]
    note = (f"Metric: {esc(doc['metric'])}. KTU and RBO compare document orders (same collection only); for a pair "
            "the figures are the advanced run's, ER and $\\Delta$RI compare the two effects, with 95\\% bootstrap "
            "intervals over topics (docs/reproducibility.md).")
    if any(r.get("topics", "all") != "all" for r in doc["rows"]):
        note += " Figures marked * are over the visible topics of an unrevealed public/private split."
    if any(r.get("withheld") for r in doc["rows"]):
        note += " -- marks a figure withheld from this reader (the verdict says why)."
    verdicts = [f"{esc(r['run']['team'] if r['run'] else '')}: {esc(r['verdict'])}" for r in doc["rows"]]
    lines.append(f"\\par\\smallskip{{\\footnotesize {note}}}")
    if verdicts:
        lines.append("\\par{\\footnotesize Verdicts: " + "; ".join(verdicts) + ".}")
    return "\n".join(lines) + "\n"
